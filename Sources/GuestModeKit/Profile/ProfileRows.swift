import Foundation

/// The rows a profile upgrade reads and rewrites inside one transaction (see
/// `StoreTransaction`): every owner's records at once, and the binding of
/// the store to its profile.
package protocol ProfileRows {
    /// Holds the store's profile binding until the transaction ends, so one
    /// profile upgrade runs at a time: a second one waits until the first
    /// has committed, then sees the data as the first left it.
    func lockProfileBinding() throws

    /// Records of every owner in `collection`.
    func countRecords(in collection: String) throws -> Int

    /// Records of every owner in `collection` whose JSON object has all of
    /// `fields` at its top level.
    func countRecords(in collection: String, havingFields fields: [String]) throws -> Int

    /// Moves every owner's records of `collection` to `newName`.
    func renameCollection(_ collection: String, to newName: String) throws

    /// Renames the top-level member `field` of every record of `collection`
    /// that has it to `newName`, as SQLite's
    /// `json_remove(json_set(data, '$.new', data -> '$.field'), '$.field')`
    /// does: the member moves to the end of the object, the document comes
    /// out minified, every other string, number and member as it was.
    func renameField(_ field: String, to newName: String, in collection: String) throws

    /// Binds the store to the profile `text` read from `origin`, at `time`.
    func setBoundProfile(text: String, origin: String, at time: Date) throws
}
