import Foundation

/// A record's JSON document: kept as the text it was stored as, handed out as the object it is.
///
/// The store keeps a record's data as text, byte for byte as it was written. Every document
/// guestmode prints or answers (`record get --json`, `GET /v1/users/{user}/records/…`, the merge
/// conflicts) writes it as a JSON object, the form `record put` and `PUT` take, so a client never
/// decodes a string holding JSON.
///
/// ```swift
/// let record = try engine.record(user: userID, collection: "settings", key: "theme")
/// print(record.data)                                  // {"dark":true}
/// print(try JSONDocument.encode(record, pretty: false)) // …,"data":{"dark":true},…
/// ```
@propertyWrapper
public struct RecordJSON: Codable, Sendable, Equatable {
    /// The document's text, exactly as stored.
    public var wrappedValue: String

    /// Wraps the text of a record's document.
    ///
    /// ```swift
    /// let data = RecordJSON(wrappedValue: #"{"price":8.99}"#)
    /// ```
    public init(wrappedValue: String) {
        self.wrappedValue = wrappedValue
    }

    /// Writes the document as the JSON value it holds; a stored text that is not JSON (which
    /// `guestmode db check` would name) fails the encoding rather than going out as a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(try value(at: encoder.codingPath))
    }

    /// The document as a value, for a writer at `codingPath`.
    func value(at codingPath: [any CodingKey]) throws -> JSONValue {
        do {
            return try StrictJSON.parse(wrappedValue)
        } catch {
            throw EncodingError.invalidValue(
                wrappedValue,
                EncodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "a stored record's data is not valid JSON (\(error)); run guestmode db check"))
        }
    }

    /// Reads the document, which must be a JSON object as every record is.
    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(JSONValue.self)
        guard case .object = value else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "a record's data must be a JSON object, not \(value.kindDescription)"))
        }
        wrappedValue = value.canonicalText
    }
}

extension StoredRecord: JSONWritable {
    /// Writes the record as `record get --json` prints it, without `Codable` (`JSONWritable`).
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("collection", in: &object)
        writer.write(collection)
        writer.member("created_at", in: &object)
        writer.write(createdAt)
        writer.member("data", in: &object)
        writer.write(try RecordJSON(wrappedValue: data).value(at: []))
        writer.member("key", in: &object)
        writer.write(key)
        writer.member("updated_at", in: &object)
        writer.write(updatedAt)
        writer.member("user_id", in: &object)
        writer.write(owner)
        writer.close(object)
    }
}
