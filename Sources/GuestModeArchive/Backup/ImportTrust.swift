import Foundation
import GuestModeKit

/// What an import takes on trust from `header.json`, and no more:
/// the header names the users whose rows may be written, and only the
/// profile's own guest owner may own records beside them. Replacing deletes
/// nothing but those users' rows and the guest owner's records.
enum ImportTrust {
    static func checkGuestOwner(_ header: BackupHeader, profile: Profile, path: String) throws {
        if let owner = header.guestOwner, owner != profile.guestOwner {
            throw GuestModeError(
                .guestOwnerMismatch,
                "the header.json of the archive '\(path)' says its guest owner is '\(owner)' but profile '\(profile.name)' writes guest records under '\(profile.guestOwner)'; refusing rows that would belong to someone else, nothing was changed"
            )
        }
    }

    /// Refuses the list for whichever comes first in it: a user that is empty
    /// or the profile's guest owner (`misfit`), or the second mention of a
    /// user (`repeated`).
    static func checkList(
        misfit: (index: Int, user: String)?, repeated: ListedUsers.Repeat?, profile: Profile, path: String
    ) throws {
        if let misfit, repeated.map({ misfit.index < $0.index }) ?? true {
            throw GuestModeError(
                .badHeader,
                "the archive '\(path)' lists '\(misfit.user)' as a user in header.json, which is the profile's guest owner, not a user id; nothing was changed"
            )
        }
        if let repeated {
            throw GuestModeError(
                .badHeader,
                "the archive '\(path)' lists user '\(repeated.user)' twice in header.json; nothing was changed")
        }
    }

    /// A guest owner that is also a user id in the store would let `replace` delete that user's rows.
    static func checkGuestOwnerInStore(
        _ header: BackupHeader, profile: Profile, path: String, rows: any BackupRowImport
    ) throws {
        if header.guestOwner != nil, try rows.creationTimes(ofUsers: [profile.guestOwner])[profile.guestOwner] != nil {
            throw GuestModeError(
                .guestOwnerMismatch,
                "the store has a user whose id '\(profile.guestOwner)' is the profile's guest owner; the archive '\(path)' cannot be imported over it, nothing was changed"
            )
        }
    }

    /// Whether a key collision on `table` can only be with a row this import
    /// wrote: the store's rows of the users being written were deleted
    /// (`replace`) or never existed (`added`), except for keys that span
    /// users (identities, usernames), which are real conflicts.
    static func duplicateIsInArchive(_ table: BackupTable) -> Bool {
        table.name != "identities" && table.name != "credentials"
    }
}
