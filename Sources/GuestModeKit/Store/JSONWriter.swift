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
///
/// Into a buffer of its own, not a `[UInt8]`: an array checks that it is unique and has room on every append,
/// about 15 instructions a byte, and copies a run in about 120 whatever its length, which made the member
/// names alone half of a `prompt next` document's cost (bench/results.md, "Serving, round 20"). Noncopyable,
/// so the buffer has one owner, which frees it.
package struct JSONWriter: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int
    package let pretty: Bool
    /// The level of the innermost open container's members.
    private var level = 0

    package init(pretty: Bool) {
        self.pretty = pretty
        capacity = 1024
        start = .allocate(capacity: capacity)
    }

    deinit { start.deallocate() }

    /// The bytes written so far.
    package var text: String { String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self) }

    /// The document `value` writes, with a line break after it when `lineEnd`.
    package static func document(_ value: some JSONWritable, pretty: Bool = true, lineEnd: Bool) throws -> String {
        var writer = JSONWriter(pretty: pretty)
        try value.write(to: &writer)
        if lineEnd { writer.put(UInt8(ascii: "\n")) }
        return writer.text
    }

    package mutating func openObject() -> JSONContainer {
        put(UInt8(ascii: "{"))
        level += 1
        return JSONContainer(closing: UInt8(ascii: "}"))
    }

    package mutating func openArray() -> JSONContainer {
        put(UInt8(ascii: "["))
        level += 1
        return JSONContainer(closing: UInt8(ascii: "]"))
    }

    /// Starts the member `name` of `object`; the value written next is its value. `name` is written as it is:
    /// a literal of letters, digits and underscores, which need no escape.
    package mutating func member(_ name: StaticString, in object: inout JSONContainer) {
        let length = name.utf8CodeUnitCount
        reserve(length + 2 * level + 6)
        open(&object)
        unsafePut(UInt8(ascii: "\""))
        (start + count).initialize(from: name.utf8Start, count: length)
        count += length
        unsafePut(UInt8(ascii: "\""))
        if pretty {
            unsafePut(UInt8(ascii: " "))
            unsafePut(UInt8(ascii: ":"))
            unsafePut(UInt8(ascii: " "))
        } else {
            unsafePut(UInt8(ascii: ":"))
        }
    }

    /// Starts the next element of `array`.
    package mutating func element(in array: inout JSONContainer) {
        reserve(2 * level + 2)
        open(&array)
    }

    /// Ends `container`; an empty one is `{}` or `[]`, as the encoder writes it.
    package mutating func close(_ container: JSONContainer) {
        level -= 1
        reserve(2 * level + 2)
        if container.count > 0 { unsafeNewline() }
        unsafePut(container.closing)
    }

    package mutating func writeNull() { put("null") }

    /// A text with the escapes `JSONValue` writes (`JSONValue.escape`).
    package mutating func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            reserve(bytes.count + 2)
            unsafePut(UInt8(ascii: "\""))
            JSONValue.escape(bytes) { run in
                put(run)
            } escaped: { byte in
                put(byte)
            }
        }
        put(UInt8(ascii: "\""))
    }

    package mutating func write(_ flag: Bool) { put(flag ? "true" : "false") }

    /// A time as its text (`Timestamp.format`), which needs no escape.
    package mutating func write(_ date: Date) {
        reserve(Timestamp.textLength + 2)
        unsafePut(UInt8(ascii: "\""))
        Timestamp.withText(of: date) { put($0) }
        put(UInt8(ascii: "\""))
    }

    /// An amount as its own digits (`MeterAmount.withText`), written without a string.
    package mutating func write(_ amount: MeterAmount) { amount.withText { put($0) } }

    package mutating func write(_ number: Int64) {
        if number < 0 { put(UInt8(ascii: "-")) }
        writeDigits(of: number.magnitude)
    }

    /// Six decimals at most, as `JSONValue.number` writes a `Double`.
    package mutating func write(_ number: Double) { write(JSONValue.number(number)) }

    /// A JSON value at this position, laid out a level deeper than the container it is in.
    package mutating func write(_ value: JSONValue) {
        var bytes: [UInt8] = []
        value.write(to: &bytes, pretty: pretty, indent: level)
        bytes.withUnsafeBufferPointer { put($0) }
    }

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

    /// `thousandths / 1000` as `Double.description` writes that number below 2^53: `0.0`, `12.5`, `0.052`,
    /// `-3.0`. Digits, not a `Double` made and described: the access log writes a duration this way on
    /// every request (bench/results.md, "Serving, round 21").
    package mutating func write(thousandths: Int64) {
        if thousandths < 0 { put(UInt8(ascii: "-")) }
        let magnitude = thousandths.magnitude
        writeDigits(of: magnitude / 1000)
        put(UInt8(ascii: "."))
        var fraction = magnitude % 1000
        guard fraction > 0 else { return put(UInt8(ascii: "0")) }
        var divisor: UInt64 = 100
        while fraction > 0 {
            put(UInt8(ascii: "0") + UInt8(fraction / divisor))
            fraction %= divisor
            divisor /= 10
        }
    }

    /// A line break, after a document written compactly as a line of its own.
    package mutating func endLine() { put(UInt8(ascii: "\n")) }

    /// The bytes written so far.
    package func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: start, count: count))
    }

    /// `value`, or `null` when it is nil, as the encoder writes an absent value.
    package mutating func write<Value>(_ value: Value?, _ writeValue: (inout JSONWriter, Value) throws -> Void) rethrows
    {
        guard let value else { return writeNull() }
        try writeValue(&self, value)
    }

    /// A comma before all but the first member or element, and `pretty`'s line break and indentation; room
    /// reserved.
    private mutating func open(_ container: inout JSONContainer) {
        if container.count > 0 { unsafePut(UInt8(ascii: ",")) }
        container.count += 1
        unsafeNewline()
    }

    private mutating func unsafeNewline() {
        guard pretty else { return }
        unsafePut(UInt8(ascii: "\n"))
        (start + count).initialize(repeating: UInt8(ascii: " "), count: 2 * level)
        count += 2 * level
    }

    private mutating func writeDigits(of number: UInt64) {
        reserve(20)
        guard number >= 10 else { return unsafePut(UInt8(ascii: "0") + UInt8(number)) }
        var digits = 1
        var power: UInt64 = 10
        while digits < 20, number >= power {
            digits += 1
            power = power.multipliedReportingOverflow(by: 10).partialValue
        }
        var remaining = number
        for offset in stride(from: digits - 1, through: 0, by: -1) {
            start[count + offset] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
        }
        count += digits
    }

    private mutating func put(_ literal: StaticString) {
        put(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (start + count).initialize(from: base, count: bytes.count)
        count += bytes.count
    }

    private mutating func put(_ byte: UInt8) {
        reserve(1)
        unsafePut(byte)
    }

    /// A byte where room was reserved.
    private mutating func unsafePut(_ byte: UInt8) {
        start[count] = byte
        count += 1
    }

    /// Room for `needed` more bytes.
    private mutating func reserve(_ needed: Int) {
        guard count + needed > capacity else { return }
        let grown = max(capacity * 2, count + needed)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.initialize(from: start, count: count)
        start.deallocate()
        start = moved
        capacity = grown
    }
}
