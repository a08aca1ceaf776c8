import Foundation

/// What `BackupRowValidator` must compare across rows (a user's state
/// against its identities, a counter against its events, values that must
/// be unique), kept in a sorted `RecordSpool` instead of dictionaries: an
/// archive of millions of users, events and counters is checked in constant
/// memory. Each fact goes under a key that gathers what must be compared
/// (one user, one user's action, one unique value); `check` reads the facts
/// back key by key and finds each violation the row-by-row checker found
/// when it held everything in memory, reporting the same one first.
final class CrossRowFacts {
    private let spool: RecordSpool
    /// Numbers the facts in the order the rows noted them, so of several
    /// repeated values the first repetition in the archive is reported.
    private var sequence: UInt64 = 0

    private enum Kind: UInt8 {
        case anonymousUser = 1, linkedUser, identityOfUser
        case unique = 10
        case event = 20, counter
    }

    /// The facts spill to a temporary file past `memoryLimit` bytes, in
    /// sorted runs of as many.
    init(memoryLimit: Int = 2 << 20) {
        spool = RecordSpool(
            holding: "the archive's rows being compared", fileTag: "import-check", memoryLimit: memoryLimit,
            sorted: true, runLimit: memoryLimit)
    }

    /// A users row: the user's state, at `location`. A later row for the same user replaces it.
    func noteUser(_ user: String, state: UserState, location: String) throws {
        try note(key: "u\0" + user, kind: state == .linked ? .linkedUser : .anonymousUser, location: location)
    }

    /// An identities row of `user`.
    func noteIdentity(of user: String, location: String) throws {
        try note(key: "u\0" + user, kind: .identityOfUser, location: location)
    }

    /// A value that must appear once in the archive: `value` names it within
    /// `space` (a table's ids, usernames), and `message` says what a second
    /// one is.
    func noteUnique(_ value: String, in space: String, message: String, location: String) throws {
        try note(key: "=\0" + space + "\0" + value, kind: .unique, location: location, text: message)
    }

    /// An events row: `count` more of `action` for `user`.
    func noteEvent(user: String, action: String, count: Int64, location: String) throws {
        try note(key: "e\0" + user + "\0" + action, kind: .event, value: count, location: location)
    }

    /// A counters row: the total of `action` for `user`. A later row for the same counter replaces it.
    func noteCounter(user: String, action: String, total: Int64, location: String) throws {
        try note(key: "e\0" + user + "\0" + action, kind: .counter, value: total, location: location)
    }

    private func note(key: String, kind: Kind, value: Int64 = 0, location: String, text: String = "") throws {
        sequence += 1
        try spool.append { writer in
            writer.put(key)
            writer.byte(kind.rawValue)
            writer.put64(sequence)
            writer.put64(UInt64(bitPattern: value))
            writer.put(location)
            writer.put(text)
        }
    }

    /// A violation found by `check`, with what orders it among the others.
    struct Violation {
        enum Rank: Int, Comparable {
            /// A repeated unique value or an event total past the largest:
            /// found at a row, the first in the archive wins.
            case atRow
            /// A user's state against its identities: the first user by id wins.
            case userState
            /// A counter that is not the sum of its events: the first by location wins.
            case counterMismatch
            /// Events without a counter: the first by location wins.
            case eventsWithoutCounter

            static func < (left: Rank, right: Rank) -> Bool { left.rawValue < right.rawValue }
        }

        var rank: Rank
        var sequence: UInt64
        var userKey: String
        var location: String
        var error: GuestModeError

        func precedes(_ other: Violation) -> Bool {
            if rank != other.rank { return rank < other.rank }
            switch rank {
            case .atRow: return sequence < other.sequence
            case .userState: return userKey < other.userKey
            case .counterMismatch, .eventsWithoutCounter: return location < other.location
            }
        }
    }

    /// Everything `check` needs to word a violation.
    struct Wording {
        /// A row that breaks a rule of its own, at a location.
        var invalid: (_ location: String, _ message: String) -> GuestModeError
        /// A row that repeats another.
        var duplicate: (_ location: String, _ message: String) -> GuestModeError
        /// Rows that disagree with each other.
        var inconsistent: (_ location: String, _ message: String) -> GuestModeError
        /// The largest counter total.
        var maximumTotal: Int64
    }

    /// Throws the first violation, as ordered by `Violation.precedes`.
    func check(_ wording: Wording) throws {
        var first: Violation?
        func consider(_ violation: Violation) {
            if first.map({ violation.precedes($0) }) ?? true { first = violation }
        }
        var group = Group(key: "")
        func close() {
            for violation in group.violations(wording) { consider(violation) }
        }
        try spool.forEach { reader in
            let key = try reader.string()
            let rawKind = try reader.byte()
            let sequence = try reader.uint64()
            let value = Int64(bitPattern: try reader.uint64())
            let location = try reader.string()
            let text = try reader.string()
            guard let kind = Kind(rawValue: rawKind) else {
                throw RecordSpool.damaged("the archive's rows being compared")
            }
            if key != group.key {
                close()
                group = Group(key: key)
            }
            group.add(kind: kind, sequence: sequence, value: value, location: location, text: text, wording: wording)
        }
        close()
        if let first { throw first.error }
    }

    /// The facts under one key, as they are read back.
    private struct Group {
        let key: String
        var count = 0
        var state: (linked: Bool, location: String)?
        var hasIdentity = false
        var repeated: Violation?
        var eventTotal: Int64 = 0
        var firstEventLocation: String?
        var overflow: Violation?
        var counter: (total: Int64, location: String)?

        init(key: String) { self.key = key }

        /// The user and the action of an `e` key, the user of a `u` key.
        private var parts: [Substring] { key.split(separator: "\0", omittingEmptySubsequences: false) }

        mutating func add(kind: Kind, sequence: UInt64, value: Int64, location: String, text: String, wording: Wording)
        {
            count += 1
            switch kind {
            case .anonymousUser, .linkedUser: state = (kind == .linkedUser, location)
            case .identityOfUser: hasIdentity = true
            case .unique:
                if count == 2 {
                    repeated = Violation(
                        rank: .atRow, sequence: sequence, userKey: "", location: location,
                        error: wording.duplicate(location, text))
                }
            case .event:
                if firstEventLocation == nil { firstEventLocation = location }
                let (sum, overflowed) = eventTotal.addingReportingOverflow(value)
                if overflow == nil, overflowed || sum > wording.maximumTotal {
                    let parts = self.parts
                    overflow = Violation(
                        rank: .atRow, sequence: sequence, userKey: "", location: location,
                        error: wording.invalid(
                            location,
                            "the counts of '\(parts[2])' events of user '\(parts[1])' add up past the largest total, \(wording.maximumTotal)"
                        ))
                }
                eventTotal = overflowed ? .max : sum
            case .counter: counter = (value, location)
            }
        }

        func violations(_ wording: Wording) -> [Violation] {
            var found: [Violation] = []
            if let repeated { found.append(repeated) }
            if let overflow { found.append(overflow) }
            if let state {
                let user = String(parts[1])
                if state.linked && !hasIdentity {
                    found.append(
                        Violation(
                            rank: .userState, sequence: 0, userKey: user, location: state.location,
                            error: wording.inconsistent(
                                state.location, "user '\(user)' is linked but the archive has no identity for them")))
                } else if !state.linked && hasIdentity {
                    found.append(
                        Violation(
                            rank: .userState, sequence: 0, userKey: user, location: state.location,
                            error: wording.inconsistent(
                                state.location, "user '\(user)' is anonymous but the archive has an identity for them")
                        ))
                }
            }
            if overflow == nil, let counter, counter.total != eventTotal {
                let parts = self.parts
                found.append(
                    Violation(
                        rank: .counterMismatch, sequence: 0, userKey: "", location: counter.location,
                        error: wording.inconsistent(
                            counter.location,
                            "the counter of '\(parts[2])' for user '\(parts[1])' is \(counter.total) but the archive's events of that action count \(eventTotal)"
                        )))
            }
            if counter == nil, let firstEventLocation {
                let parts = self.parts
                found.append(
                    Violation(
                        rank: .eventsWithoutCounter, sequence: 0, userKey: "", location: firstEventLocation,
                        error: wording.inconsistent(
                            firstEventLocation,
                            "user '\(parts[1])' has events of '\(parts[2])' (\(eventTotal) in all) but the archive has no counter for them"
                        )))
            }
            return found
        }
    }
}
