import Foundation

/// A value that writes its own JSON document, byte for byte as `JSONDocument` encodes it through `Codable`.
///
/// The answers a server sends most (`meter check`, `prompt next`, `record get`) go through it: built as a tree
/// of nodes, their members named by reflection on their coding keys and sorted, then written, they cost a
/// served `prompt next` about 130 k instructions (bench/results.md, "Serving, round 20"). A conforming type
/// writes its members in the order the encoder would sort them, under the names it would give them;
/// `JSONWriterTests` holds every conformance equal to the `Codable` document.
///
/// ```swift
/// extension MeterDecision: JSONWritable {
///     package func write(to writer: inout JSONWriter) throws {
///         var object = writer.openObject()
///         writer.member("allowed", in: &object)
///         writer.write(isAllowed)
///         writer.close(object)
///     }
/// }
/// ```
package protocol JSONWritable {
    /// Writes the value at the writer's position.
    func write(to writer: inout JSONWriter) throws
}

/// An object or array being written: how many members or elements it has so far.
package struct JSONContainer {
    fileprivate var count = 0
    fileprivate let closing: UInt8
}

/// Writes a JSON document in the layout of `JSONValue.text(pretty:)`: a member or element a line, two spaces a
/// level, `"name" : value`.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    package let pretty: Bool
    /// The level of the innermost open container's members.
    private var level = 0

    package init(pretty: Bool) {
        self.pretty = pretty
        bytes.reserveCapacity(512)
    }

    /// The document `value` writes, with a line break after it when `lineEnd`.
    package static func document(_ value: some JSONWritable, pretty: Bool = true, lineEnd: Bool) throws -> String {
        var writer = JSONWriter(pretty: pretty)
        try value.write(to: &writer)
        if lineEnd { writer.bytes.append(UInt8(ascii: "\n")) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    package mutating func openObject() -> JSONContainer {
        bytes.append(UInt8(ascii: "{"))
        level += 1
        return JSONContainer(closing: UInt8(ascii: "}"))
    }

    package mutating func openArray() -> JSONContainer {
        bytes.append(UInt8(ascii: "["))
        level += 1
        return JSONContainer(closing: UInt8(ascii: "]"))
    }

    /// Starts the member `name` of `object`; the value written next is its value. `name` is written as it is:
    /// a literal of letters, digits and underscores, which need no escape.
    package mutating func member(_ name: StaticString, in object: inout JSONContainer) {
        JSONValue.open(object.count, name: nil, in: &bytes, pretty: pretty, indent: level)
        object.count += 1
        bytes.append(UInt8(ascii: "\""))
        JSONValue.append(name, to: &bytes)
        if pretty {
            JSONValue.append("\" : ", to: &bytes)
        } else {
            JSONValue.append("\":", to: &bytes)
        }
    }

    /// Starts the next element of `array`.
    package mutating func element(in array: inout JSONContainer) {
        JSONValue.open(array.count, name: nil, in: &bytes, pretty: pretty, indent: level)
        array.count += 1
    }

    /// Ends `container`; an empty one is `{}` or `[]`, as the encoder writes it.
    package mutating func close(_ container: JSONContainer) {
        level -= 1
        guard container.count > 0 else { return bytes.append(container.closing) }
        JSONValue.close(container.closing, in: &bytes, pretty: pretty, indent: level)
    }

    package mutating func writeNull() { JSONValue.append("null", to: &bytes) }

    package mutating func write(_ text: String) { JSONValue.writeString(text, to: &bytes) }

    package mutating func write(_ flag: Bool) { JSONValue.append(flag ? "true" : "false", to: &bytes) }

    /// A time as its text (`Timestamp.format`), which needs no escape.
    package mutating func write(_ date: Date) {
        bytes.append(UInt8(ascii: "\""))
        Timestamp.withText(of: date) { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// An amount as its own digits (`MeterAmount.description`), written without a string.
    package mutating func write(_ amount: MeterAmount) {
        let magnitude = amount.millionths.magnitude
        let scale = UInt64(MeterAmount.scale)
        if amount.millionths < 0 { bytes.append(UInt8(ascii: "-")) }
        writeDigits(of: magnitude / scale)
        var fraction = magnitude % scale
        guard fraction > 0 else { return }
        var digits = MeterAmount.fractionDigits
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        bytes.append(UInt8(ascii: "."))
        var divisor: UInt64 = 1
        for _ in 1..<digits { divisor *= 10 }
        // The fraction's leading zeros, then its digits.
        while divisor > fraction {
            bytes.append(UInt8(ascii: "0"))
            divisor /= 10
        }
        writeDigits(of: fraction)
    }

    package mutating func write(_ number: Int64) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        writeDigits(of: number.magnitude)
    }

    /// Six decimals at most, as `JSONValue.number` writes a `Double`.
    package mutating func write(_ number: Double) { JSONValue.number(number).write(to: &bytes, pretty: pretty, indent: 0) }

    /// A JSON value at this position, laid out a level deeper than the container it is in.
    package mutating func write(_ value: JSONValue) { value.write(to: &bytes, pretty: pretty, indent: level) }

    /// An enumeration as its name, the way its `Codable` writes it.
    package mutating func write<Name: RawRepresentable>(_ name: Name) where Name.RawValue == String {
        write(name.rawValue)
    }

    package mutating func write(_ value: some JSONWritable) throws { try value.write(to: &self) }

    package mutating func write(_ texts: [String]) {
        var array = openArray()
        for text in texts {
            element(in: &array)
            write(text)
        }
        close(array)
    }

    package mutating func write(_ values: [some JSONWritable]) throws {
        var array = openArray()
        for value in values {
            element(in: &array)
            try value.write(to: &self)
        }
        close(array)
    }

    /// `value`, or `null` when it is nil, as the encoder writes an absent value.
    package mutating func write<Value>(_ value: Value?, _ writeValue: (inout JSONWriter, Value) throws -> Void) rethrows {
        guard let value else { return writeNull() }
        try writeValue(&self, value)
    }

    private mutating func writeDigits(of number: UInt64) {
        guard number >= 10 else { return bytes.append(UInt8(ascii: "0") + UInt8(number)) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var remaining = number
            var start = 20
            while remaining > 0 {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
