import Foundation

/// What `BackupRowValidator` must compare across rows (a user's state
/// against its identities, a counter against its events, values that must
/// be unique), kept in sorted `RecordSpool`s instead of dictionaries: an
/// archive of millions of users, events and counters is checked in constant
/// memory. Each fact goes under a key that gathers what must be compared
/// (one user, one user's action, one unique value); `check` reads the facts
/// back key by key and finds each violation the row-by-row checker found
/// when it held everything in memory, reporting the same one first.
///
/// Facts of users, of actions and of unique values go to a spool each: an
/// export writes each table in id order, so each spool mostly receives its
/// keys in order and sorts and merges little (one spool took them
/// interleaved, and sorted and merged every one).
final class CrossRowFacts {
    /// The facts keyed `u` (users), `e` (actions) and `=` (unique values).
    private let users: RecordSpool
    private let actions: RecordSpool
    private let uniques: RecordSpool
    /// Numbers the facts in the order the rows noted them, so of several
    /// repeated values the first repetition in the archive is reported.
    private var sequence: UInt64 = 0
    /// The archive entries facts were noted in, in archive order; a fact
    /// keeps its entry's number in this list, not its name.
    private var entries: [String] = []
    /// Each table's surrogate ids while they rise, as runs of consecutive
    /// ids: an export writes a table in id order, so a rising id is new
    /// without a fact in the spool (a fact an id was a third of the
    /// client's cross-row work). The first id that does not rise, or a run
    /// past `risingRunLimit`, sends the table's ids to the spool.
    private var risingIDs: [RisingIDs] = []
    private let risingRunLimit: Int

    private enum Kind: UInt8 {
        case anonymousUser = 1, linkedUser, identityOfUser
        case unique = 10
        case event = 20, counter
    }

    /// Where a fact's row is in the archive.
    struct Place {
        var entry: String
        var line: Int

        /// As messages name a row.
        var description: String { "line \(line) of \(entry)" }
    }

    /// A set of values of which the archive may hold each once.
    enum UniqueSpace: Equatable {
        /// The surrogate ids of a table's rows.
        case rowIDs(table: String)
        /// Identities, by provider and subject (the value is `provider\0subject`).
        case identities
        /// Users with a credentials row.
        case credentialOwners
        /// Usernames of credentials rows.
        case usernames

        var name: String {
            switch self {
            case .rowIDs(let table): table + ".id"
            case .identities: "identities"
            case .credentialOwners: "credentials.user_id"
            case .usernames: "credentials.username"
            }
        }

        init(name: Substring) {
            switch name {
            case "identities": self = .identities
            case "credentials.user_id": self = .credentialOwners
            case "credentials.username": self = .usernames
            default: self = .rowIDs(table: String(name.dropLast(".id".count)))
            }
        }

        /// What a second `value` in this space is.
        func repeated(_ value: String) -> String {
            switch self {
            case .rowIDs(let table):
                // Without the zeros `noteRowID` put before it.
                let digits = value.drop { $0 == "0" }
                return "\(table).id \(digits.isEmpty ? "0" : digits) appears twice in the archive"
            case .identities:
                let parts = value.split(separator: "\0", maxSplits: 1, omittingEmptySubsequences: false)
                return "the identity \(parts[0])/\(parts.count > 1 ? parts[1] : "") appears twice in the archive"
            case .credentialOwners: return "user '\(value)' has two credentials rows in the archive"
            case .usernames: return "the username '\(value)' appears twice in the archive"
            }
        }
    }

    /// The facts spill to temporary files past `memoryLimit` bytes in all,
    /// in sorted runs: half of it for the actions' facts, the most numerous.
    init(memoryLimit: Int = 2 << 20, risingRunLimit: Int = 4_096) {
        self.risingRunLimit = risingRunLimit
        func spool(_ share: Int) -> RecordSpool {
            let limit = max(1, memoryLimit / share)
            return RecordSpool(
                holding: "the archive's rows being compared", fileTag: "import-check", memoryLimit: limit,
                sorted: true, runLimit: limit)
        }
        users = spool(4)
        actions = spool(2)
        uniques = spool(4)
    }

    /// A users row: the user's state, at `place`. A later row for the same user replaces it.
    func noteUser(_ user: String, state: UserState, at place: Place) throws {
        try note("u", user, kind: state == .linked ? .linkedUser : .anonymousUser, at: place)
    }

    /// An identities row of `user`.
    func noteIdentity(of user: String, at place: Place) throws {
        try note("u", user, kind: .identityOfUser, at: place)
    }

    /// A value that must appear once in `space`.
    func noteUnique(_ value: String, in space: UniqueSpace, at place: Place) throws {
        try note("=", space.name, value, kind: .unique, at: place)
    }

    /// The surrogate id of a row of `table`, which must appear once in the
    /// table. Kept as runs while the table's ids rise (`RisingIDs`); in the
    /// spool, with leading zeros to a fixed width, so ids in numeric order
    /// are in the spool's byte order too.
    func noteRowID(_ id: Int64, of table: String, at place: Place) throws {
        let index = risingIDsIndex(of: table)
        if risingIDs[index].add(id, runLimit: risingRunLimit) { return }
        // Every id the table had so far goes to the spool before this one, so a repetition is found at its
        // row. They go under this row's place: a repetition is reported at its second row, never its first.
        let earlier = risingIDs[index].stopRising()
        for run in earlier {
            for earlierID in run { try noteUnique(Self.rowIDText(earlierID), in: .rowIDs(table: table), at: place) }
        }
        try noteUnique(Self.rowIDText(id), in: .rowIDs(table: table), at: place)
    }

    /// The runs of ids held in memory, in all tables: at most `risingRunLimit` a table.
    var keptRisingRuns: Int { risingIDs.reduce(0) { $0 + ($1.runs?.count ?? 0) } }

    /// Ids are positive (the validator bounds them); a negative one is noted as it is written.
    private static func rowIDText(_ id: Int64) -> String {
        id < 0
            ? String(id)
            : String(unsafeUninitializedCapacity: Self.rowIDWidth) { digits in
                var rest = id
                for index in stride(from: Self.rowIDWidth - 1, through: 0, by: -1) {
                    digits[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                return Self.rowIDWidth
            }
    }

    /// The place of `table` in `risingIDs`: rows come table by table, so
    /// the last one is nearly always it.
    private func risingIDsIndex(of table: String) -> Int {
        if let last = risingIDs.indices.last, risingIDs[last].table == table { return last }
        if let found = risingIDs.firstIndex(where: { $0.table == table }) { return found }
        risingIDs.append(RisingIDs(table: table))
        return risingIDs.count - 1
    }

    /// One table's ids while each is above the one before it.
    private struct RisingIDs {
        let table: String
        /// Disjoint and in order; nil once the table's ids go to the spool.
        var runs: [ClosedRange<Int64>]? = []

        /// Whether `id` rose above every id before it and was kept here.
        mutating func add(_ id: Int64, runLimit: Int) -> Bool {
            guard var kept = runs else { return false }
            guard let last = kept.last else {
                runs = [id...id]
                return true
            }
            guard id > last.upperBound else { return false }
            runs = nil  // the array is changed in place, not copied
            if id == last.upperBound + 1 {
                kept[kept.count - 1] = last.lowerBound...id
            } else if kept.count < runLimit {
                kept.append(id...id)
            } else {
                runs = kept
                return false
            }
            runs = kept
            return true
        }

        /// The ids kept so far, which from now on go to the spool.
        mutating func stopRising() -> [ClosedRange<Int64>] {
            defer { runs = nil }
            return runs ?? []
        }
    }

    /// The digits of `Int64.max`.
    private static let rowIDWidth = 19

    /// An events row: `count` more of `action` for `user`.
    func noteEvent(user: String, action: String, count: Int64, at place: Place) throws {
        try note("e", user, action, kind: .event, value: count, at: place)
    }

    /// A counters row: the total of `action` for `user`. A second row for the same counter is a repeated row.
    func noteCounter(user: String, action: String, total: Int64, at place: Place) throws {
        try note("e", user, action, kind: .counter, value: total, at: place)
    }

    /// Notes a fact under the key `tag\0first[\0second]`, written without
    /// making that string: an import notes one to three facts a row.
    private func note(
        _ tag: StaticString, _ first: String, _ second: String? = nil, kind: Kind, value: Int64 = 0, at place: Place
    ) throws {
        sequence += 1
        let entry = entryNumber(place.entry)
        let spool =
            switch tag.utf8Start.pointee {
            case UInt8(ascii: "u"): users
            case UInt8(ascii: "e"): actions
            default: uniques
            }
        try spool.append { writer in
            writer.put(tag, first, second)
            writer.byte(kind.rawValue)
            writer.put64(sequence)
            writer.put64(UInt64(bitPattern: value))
            writer.put32(entry)
            writer.put64(UInt64(place.line))
        }
    }

    /// The number of `entry` in `entries`: rows come entry by entry, so a
    /// name other than the last one's starts the next number. Never a search
    /// of the earlier names, which an archive of many small entries would make
    /// quadratic; a name met again later gets a number of its own, still in
    /// archive order.
    private func entryNumber(_ entry: String) -> UInt32 {
        // Compared where the last name lies: `entries.last` copied it, a retain and a release a fact.
        let isLast = entries.withUnsafeBufferPointer { !$0.isEmpty && $0[$0.count - 1] == entry }
        if !isLast { entries.append(entry) }
        return UInt32(entries.count - 1)
    }

    /// A fact's place as the spool keeps it.
    fileprivate struct NotedPlace: Comparable {
        var entry: UInt32
        var line: UInt64

        static func < (left: NotedPlace, right: NotedPlace) -> Bool {
            (left.entry, left.line) < (right.entry, right.line)
        }
    }

    /// A violation found by `check`, with what orders it among the others.
    fileprivate struct Violation {
        enum Rank: Int, Comparable {
            /// A repeated unique value or an event total past the largest:
            /// found at a row, the first in the archive wins.
            case atRow
            /// A user's state against its identities: the first user by id wins.
            case userState
            /// A counter that is not the sum of its events: the first in the archive wins.
            case counterMismatch
            /// Events without a counter: the first in the archive wins.
            case eventsWithoutCounter

            static func < (left: Rank, right: Rank) -> Bool { left.rawValue < right.rawValue }
        }

        var rank: Rank
        var sequence: UInt64
        var userKey: String
        var place: NotedPlace
        /// Worded only for the violation reported.
        var error: () -> GuestModeError

        func precedes(_ other: Violation) -> Bool {
            if rank != other.rank { return rank < other.rank }
            switch rank {
            case .atRow: return sequence < other.sequence
            case .userState: return userKey < other.userKey
            case .counterMismatch, .eventsWithoutCounter: return place < other.place
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
        let entries = self.entries
        let context = Group.Context(
            wording: wording,
            describe: { place in
                Place(
                    entry: entries.indices.contains(Int(place.entry)) ? entries[Int(place.entry)] : "?",
                    line: Int(place.line)
                ).description
            })
        var group = Group(key: [])
        func close() {
            for violation in group.violations(context) { consider(violation) }
        }
        // The spools' keys start with different tags: no key's facts are in two of them.
        for spool in [uniques, users, actions] {
            try spool.forEach { reader in
                let key = try reader.field()
                let rawKind = try reader.byte()
                let sequence = try reader.uint64()
                let value = Int64(bitPattern: try reader.uint64())
                let place = NotedPlace(entry: try reader.uint32(), line: try reader.uint64())
                guard let kind = Kind(rawValue: rawKind) else {
                    throw RecordSpool.damaged("the archive's rows being compared")
                }
                if !group.hasKey(key) {
                    close()
                    // The last key's bytes are reused: a group a key, millions of them.
                    var bytes: [UInt8] = []
                    swap(&bytes, &group.key)
                    bytes.removeAll(keepingCapacity: true)
                    bytes.append(contentsOf: key)
                    group = Group(key: bytes)
                }
                group.add(kind: kind, sequence: sequence, value: value, place: place, context: context)
            }
        }
        close()
        if let first { throw first.error() }
    }

    /// The facts under one key, as they are read back.
    private struct Group {
        struct Context {
            var wording: Wording
            var describe: (NotedPlace) -> String
        }

        var key: [UInt8]
        var count = 0
        var state: (linked: Bool, place: NotedPlace)?
        var hasIdentity = false
        var repeated: Violation?
        var eventTotal: Int64 = 0
        var firstEventPlace: NotedPlace?
        var overflow: Violation?
        var counter: (total: Int64, place: NotedPlace)?

        init(key: [UInt8]) { self.key = key }

        func hasKey(_ other: UnsafeRawBufferPointer) -> Bool {
            guard key.count == other.count else { return false }
            guard let otherStart = other.baseAddress else { return true }
            return key.withUnsafeBytes { memcmp($0.baseAddress!, otherStart, other.count) == 0 }
        }

        /// The fields of the key: its tag, then the user and the action of an
        /// `e` key, the user of a `u` key, the space and the value of a `=` key.
        private static func parts(_ key: [UInt8], maxSplits: Int = .max) -> [String] {
            key.split(separator: 0, maxSplits: maxSplits, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
        }

        mutating func add(kind: Kind, sequence: UInt64, value: Int64, place: NotedPlace, context: Context) {
            count += 1
            switch kind {
            case .anonymousUser, .linkedUser: state = (kind == .linkedUser, place)
            case .identityOfUser: hasIdentity = true
            case .unique:
                if count == 2 {
                    repeated = atRow(sequence, place, maxSplits: 2) { parts in
                        let space = UniqueSpace(name: Substring(parts.count > 1 ? parts[1] : ""))
                        return context.wording.duplicate(
                            context.describe(place), space.repeated(parts.count > 2 ? parts[2] : ""))
                    }
                }
            case .event:
                if firstEventPlace == nil { firstEventPlace = place }
                let (sum, overflowed) = eventTotal.addingReportingOverflow(value)
                if overflow == nil, overflowed || sum > context.wording.maximumTotal {
                    overflow = atRow(sequence, place) { parts in
                        context.wording.invalid(
                            context.describe(place),
                            "the counts of '\(parts[2])' events of user '\(parts[1])' add up past the largest total, \(context.wording.maximumTotal)"
                        )
                    }
                }
                eventTotal = overflowed ? .max : sum
            case .counter:
                // The engine finds a repeated counter itself: a restore into PostgreSQL builds the table's key
                // only after the rows.
                if counter != nil, repeated == nil {
                    repeated = atRow(sequence, place) { parts in
                        context.wording.duplicate(
                            context.describe(place),
                            "user '\(parts[1])' has two counters rows of '\(parts[2])' in the archive")
                    }
                }
                counter = (value, place)
            }
        }

        /// A violation of the row at `place`, worded from the group's key split at its zeros only once reported.
        private func atRow(
            _ sequence: UInt64, _ place: NotedPlace, maxSplits: Int = .max,
            _ word: @escaping (_ parts: [String]) -> GuestModeError
        ) -> Violation {
            let key = self.key
            return Violation(
                rank: .atRow, sequence: sequence, userKey: "", place: place,
                error: { word(Self.parts(key, maxSplits: maxSplits)) })
        }

        func violations(_ context: Context) -> [Violation] {
            var found: [Violation] = []
            if let repeated { found.append(repeated) }
            if let overflow { found.append(overflow) }
            let key = self.key
            if let state, state.linked != hasIdentity {
                let user = Self.parts(key)[1]
                let linked = state.linked
                found.append(
                    Violation(
                        rank: .userState, sequence: 0, userKey: user, place: state.place,
                        error: {
                            context.wording.inconsistent(
                                context.describe(state.place),
                                linked
                                    ? "user '\(user)' is linked but the archive has no identity for them"
                                    : "user '\(user)' is anonymous but the archive has an identity for them")
                        }))
            }
            let eventTotal = self.eventTotal
            if overflow == nil, let counter, counter.total != eventTotal {
                found.append(
                    Violation(
                        rank: .counterMismatch, sequence: 0, userKey: "", place: counter.place,
                        error: {
                            let parts = Self.parts(key)
                            return context.wording.inconsistent(
                                context.describe(counter.place),
                                "the counter of '\(parts[2])' for user '\(parts[1])' is \(counter.total) but the archive's events of that action count \(eventTotal)"
                            )
                        }))
            }
            if counter == nil, let firstEventPlace {
                found.append(
                    Violation(
                        rank: .eventsWithoutCounter, sequence: 0, userKey: "", place: firstEventPlace,
                        error: {
                            let parts = Self.parts(key)
                            return context.wording.inconsistent(
                                context.describe(firstEventPlace),
                                "user '\(parts[1])' has events of '\(parts[2])' (\(eventTotal) in all) but the archive has no counter for them"
                            )
                        }))
            }
            return found
        }
    }
}
