import Foundation

extension Profile {
    /// The key a record written under the guest owner gets when `user`
    /// adopts it. Keys of collections with unique fields start with their
    /// owner (`/habit/day` for the guest owner `""`), so the owner segment
    /// is rewritten (`USER/habit/day`); every other key stays as it is.
    package func adoptedKey(_ key: String, collection: String, user: String) -> String {
        let prefix = guestOwner + "/"
        guard self.collection(named: collection)?.uniqueFields.isEmpty == false, key.hasPrefix(prefix) else {
            return key
        }
        return user + "/" + key.dropFirst(prefix.count)
    }
}
