import Foundation

/// The users an archive's header.json lists, as an import needs them: what
/// becomes of each (added, replaced, kept, skipped) and whether its users
/// row was seen, in constant memory for any number of users.
///
/// The list streams into a sorted `RecordSpool` (`add`); `classify` reads it
/// back once in id order (byte order, as the stores compare ids), finds a
/// user listed twice, asks the caller the fate of each user and writes the
/// answers in blocks of 64 users (about a KiB), in memory up to 256 KiB and
/// past that in an unlinked temporary file; only each block's first id stays
/// in memory (about 3 MB for 10 M users). `entry(of:)` finds a user in the
/// block of the last look-up or the one after it (rows come in id order), or
/// else by a binary search over those ids, and one read of a block, from a cache of
/// recently read blocks (at most 1 MiB) or else the file, then by halves
/// within the block, which stays decoded for the next look-up; the same user
/// twice in a row costs nothing (an archive's rows of one user often come
/// together).
///
/// ```swift
/// let listed = ListedUsers()
/// for user in ["u2", "u1"] { try listed.add(user) }
/// let repeated = try listed.classify { users in users.map { _ in (.added, nil) } }  // nil: no one twice
/// let u1 = try listed.entry(of: "u1")                           // .added, position 0
/// _ = listed.markSeen(u1!)                                      // true the first time
/// ```
package final class ListedUsers {
    /// What the import does with a listed user.
    package enum Fate: UInt8, CaseIterable, Sendable {
        /// Not in the store: the archive's rows are written.
        case added = 0
        /// In the store: its rows were deleted and the archive's are written.
        case replaced
        /// In the store, replaced from an untrusted archive: the store's users row stays.
        case kept
        /// In the store and left as it is: the archive's rows are checked, not written.
        case skipped
    }

    /// One listed user.
    package struct Entry: Sendable {
        package var fate: Fate
        /// When the store's user of that id was created, for a user already in the store.
        package var created: String?
        /// The user's place among the listed users in id order.
        package var position: Int
    }

    /// A user listed twice: the one whose second mention comes first in the list.
    package struct Repeat: Sendable, Equatable {
        package var user: String
        /// Where the second mention is in the list (0-based).
        package var index: Int
    }

    private var spool: RecordSpool
    private let memoryLimit: Int
    /// Users added so far (mentions, repeats included).
    package private(set) var count = 0
    /// Distinct users, once classified.
    package private(set) var distinct = 0
    private var counts: [Int] = Array(repeating: 0, count: Fate.allCases.count)
    private var samples: [[String]] = Array(repeating: [], count: Fate.allCases.count)
    private let sampleLimit: Int

    /// Users per block: a look-up reads one block (about a KiB) and scans it.
    private static let blockUsers = 64
    /// The first id of each block.
    private var firstIDs = IDList()
    /// Where each block starts in the index; one more for the end of the last.
    private var blockStarts: [Int] = [0]
    /// The index: in memory up to 256 KiB, then in an unlinked temporary file.
    private var inMemory: [UInt8] = []
    private var file: FileHandle?
    private var fileLength = 0
    /// Where the index file was made, named by a full disk's message.
    private var filePath: String?
    private var seen: [UInt64] = []
    /// Blocks read from the file, by block number modulo `cacheSlots`, at
    /// most `cacheBytes` of them in all: an archive's rows come in store
    /// order, whose neighbouring owners often share a block (ids made in a
    /// sequence, or rows of a few users interleaved), so a row's block is
    /// mostly one read for an earlier row and needs no `pread`. About 1 MiB
    /// at any number of users.
    private let cacheSlots: Int
    private let cacheBytes: Int
    private var cachedBlocks: [Int] = []
    private var cached: [[UInt8]] = []
    private var cachedTotal = 0

    /// The block looked into last, decoded: a look-up in it is a binary
    /// search, and an archive's rows come in store order, so most rows'
    /// owners are in the block of the row before (-1: none yet).
    private var decodedBlock = -1
    /// The users of the decoded block.
    private var decodedUsers = IDList()
    private var decodedEntries: [Entry] = []
    /// Where in the decoded block the last user found is: the same user twice in a row is found without a search.
    private var lastFound: Int?

    /// `sampleLimit` users of each fate (the first by id) are kept for the
    /// report; up to `cacheBytes` of the blocks read from disk, in
    /// `cacheSlots` places, are kept for the next look-ups.
    package init(
        memoryLimit: Int = 2 << 20, sampleLimit: Int = 1000, cacheSlots: Int = 1024, cacheBytes: Int = 1 << 20
    ) {
        self.memoryLimit = memoryLimit
        self.sampleLimit = sampleLimit
        self.cacheSlots = max(1, cacheSlots)
        self.cacheBytes = cacheBytes
        spool = Self.makeSpool(memoryLimit)
    }

    private static func makeSpool(_ memoryLimit: Int) -> RecordSpool {
        RecordSpool(
            holding: "the users the archive lists", fileTag: "import-users", memoryLimit: memoryLimit, sorted: true,
            runLimit: memoryLimit)
    }

    /// The next user of the list.
    package func add(_ user: String) throws {
        let index = UInt64(count)
        try spool.append { writer in
            writer.put(user)
            writer.put64(index)
        }
        count += 1
    }

    /// Forgets the users added so far.
    package func restart() {
        spool = Self.makeSpool(memoryLimit)
        count = 0
    }

    /// Users `classify` asks about at a time: a store answers them in one
    /// statement (one round trip to a PostgreSQL server, not one a user).
    package static let classifyBatch = 1000

    /// Reads the list back in id order, once: `decide` says the fate of each
    /// distinct user (and the store's creation time of a user it holds), for
    /// up to `classifyBatch` users at a time, in id order, one answer a user.
    /// Returns the user listed twice whose second mention comes first, or nil.
    package func classify(_ decide: ([String]) throws -> [(Fate, created: String?)]) throws -> Repeat? {
        var repeated: Repeat?
        var previous: [UInt8]?
        var previousMentions = 0
        var pending: [String] = []
        pending.reserveCapacity(Self.classifyBatch)
        var block: [UInt8] = []
        var blockCount = 0
        block.reserveCapacity(4 << 10)
        func decidePending() throws {
            guard !pending.isEmpty else { return }
            let answers = try decide(pending)
            guard answers.count == pending.count else {
                throw GuestModeError(
                    .internalFailure, "the fates of \(pending.count) listed users came back as \(answers.count)")
            }
            for (user, (fate, created)) in zip(pending, answers) {
                let bytes = Array(user.utf8)
                counts[Int(fate.rawValue)] += 1
                if samples[Int(fate.rawValue)].count < sampleLimit { samples[Int(fate.rawValue)].append(user) }
                if blockCount == 0 { firstIDs.append(bytes) }
                block.append(fate.rawValue)
                Self.put(bytes, to: &block)
                if let created {
                    Self.put(Array(created.utf8), to: &block, plusOne: true)
                } else {
                    Self.put32(0, to: &block)
                }
                distinct += 1
                blockCount += 1
                if blockCount == Self.blockUsers {
                    try store(block)
                    block.removeAll(keepingCapacity: true)
                    blockCount = 0
                }
            }
            pending.removeAll(keepingCapacity: true)
        }
        try spool.forEach { reader in
            let user = try reader.string()
            let index = Int(try reader.uint64())
            let bytes = Array(user.utf8)
            if let previous, previous == bytes {
                previousMentions += 1
                if previousMentions == 2, repeated.map({ index < $0.index }) ?? true {
                    repeated = Repeat(user: user, index: index)
                }
                return
            }
            previous = bytes
            previousMentions = 1
            pending.append(user)
            if pending.count == Self.classifyBatch { try decidePending() }
        }
        try decidePending()
        if blockCount > 0 { try store(block) }
        spool = Self.makeSpool(0)
        seen = Array(repeating: 0, count: distinct / 64 + 1)
        return repeated
    }

    /// How many distinct users have `fate`.
    package func count(_ fate: Fate) -> Int { counts[Int(fate.rawValue)] }

    /// The first users by id (at most the sample limit) that have `fate`.
    package func sample(_ fate: Fate) -> [String] { samples[Int(fate.rawValue)] }

    /// The listed user `user`, or nil when the list does not hold them.
    package func entry(of user: String) throws -> Entry? {
        var user = user
        return try user.withUTF8 { bytes -> Entry? in
            if let lastFound {
                if decodedUsers.compare(lastFound, bytes) == 0 { return decodedEntries[lastFound] }
                // An export writes each table's rows in id order: the user after the last one found comes next.
                let next = lastFound + 1
                if next < decodedUsers.count, decodedUsers.compare(next, bytes) == 0 {
                    self.lastFound = next
                    return decodedEntries[next]
                }
            }
            guard let block = firstIDs.lastNotAfter(bytes, tryingFirst: decodedBlock) else { return nil }
            try decode(block: block)
            guard let found = decodedUsers.index(of: bytes) else { return nil }
            lastFound = found
            return decodedEntries[found]
        }
    }

    /// Decodes block `index` into `decodedUsers` and `decodedEntries`, unless it is the block decoded last.
    private func decode(block index: Int) throws {
        guard index != decodedBlock else { return }
        decodedBlock = -1
        lastFound = nil
        // Filled as locals (their storage taken, not copied): the properties would be checked for exclusive access at every user.
        var users = IDList()
        var entries: [Entry] = []
        swap(&users, &decodedUsers)
        swap(&entries, &decodedEntries)
        defer {
            swap(&users, &decodedUsers)
            swap(&entries, &decodedEntries)
        }
        users.removeAll()
        entries.removeAll(keepingCapacity: true)
        try forEachEntry(inBlock: index) { user, entry in
            users.append(user)
            entries.append(entry())
            return true
        }
        decodedBlock = index
    }

    /// Whether the user's users row was seen (`markSeen`).
    package func hasSeen(_ entry: Entry) -> Bool {
        let (word, mask) = Self.seenBit(entry)
        return seen[word] & mask != 0
    }

    /// Notes that the user's users row was seen; false when it was seen before.
    package func markSeen(_ entry: Entry) -> Bool {
        guard !hasSeen(entry) else { return false }
        let (word, mask) = Self.seenBit(entry)
        seen[word] |= mask
        return true
    }

    /// The word of `seen` and the bit in it that stand for the user's users row.
    private static func seenBit(_ entry: Entry) -> (word: Int, mask: UInt64) {
        let (word, bit) = entry.position.quotientAndRemainder(dividingBy: 64)
        return (word, UInt64(1) << UInt64(bit))
    }

    /// The first user by id whose fate is one of `fates` and whose users row was never seen.
    package func firstUnseen(among fates: Set<Fate>) throws -> String? {
        for index in 0..<firstIDs.count {
            var missing: String?
            try forEachEntry(inBlock: index) { user, entry in
                let found = entry()
                if fates.contains(found.fate), !hasSeen(found) {
                    missing = String(decoding: user, as: UTF8.self)
                    return false
                }
                return true
            }
            if let missing { return missing }
        }
        return nil
    }

    private static func put32(_ value: UInt32, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    /// A length (plus one when `plusOne`, so 0 can mean "none"), then the bytes.
    private static func put(_ bytes: [UInt8], to buffer: inout [UInt8], plusOne: Bool = false) {
        put32(UInt32(truncatingIfNeeded: bytes.count + (plusOne ? 1 : 0)), to: &buffer)
        buffer.append(contentsOf: bytes)
    }

    private func store(_ block: [UInt8]) throws {
        // The index goes to the file early (the spool's memory is given back after `classify`, the index's is
        // held while every row is read).
        if file == nil, inMemory.count + block.count > min(memoryLimit, 256 << 10) {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "guestmode-import-users-\(UUID().uuidString).index")
            guard FileManager.default.createFile(atPath: url.path, contents: nil),
                let handle = FileHandle(forUpdatingAtPath: url.path)
            else {
                throw GuestModeError(
                    .ioError,
                    "cannot create a temporary file in '\(url.deletingLastPathComponent().path)' to hold the users the archive lists; check that the temporary directory (TMPDIR) is writable"
                )
            }
            // Unlinked at once: the open handle keeps it until the process ends.
            try? FileManager.default.removeItem(at: url)
            file = handle
            filePath = url.path
            try write(inMemory, to: handle)
            fileLength = inMemory.count
            inMemory = []
        }
        if let file {
            try write(block, to: file)
            fileLength += block.count
            blockStarts.append(fileLength)
        } else {
            inMemory.append(contentsOf: block)
            blockStarts.append(inMemory.count)
        }
    }

    private func write(_ bytes: [UInt8], to file: FileHandle) throws {
        do {
            try file.write(contentsOf: bytes)
        } catch {
            throw ioError(error)
        }
    }

    private func ioError(_ error: any Error) -> GuestModeError {
        RecordSpool.temporaryFileError(error, path: filePath, holding: "the users the archive lists")
    }

    /// Calls `body` with each user of block `index` in order, and a way to
    /// decode its entry, until `body` returns false.
    private func forEachEntry(
        inBlock index: Int, _ body: (UnsafeBufferPointer<UInt8>, () -> Entry) throws -> Bool
    ) throws {
        let start = blockStarts[index]
        let length = blockStarts[index + 1] - start
        if let file {
            if cachedBlocks.isEmpty {
                cachedBlocks = Array(repeating: -1, count: cacheSlots)
                cached = Array(repeating: [], count: cacheSlots)
            }
            let slot = index % cacheSlots
            var block: [UInt8]
            if cachedBlocks[slot] == index {
                block = cached[slot]
            } else {
                block = [UInt8](repeating: 0, count: length)
                let read = block.withUnsafeMutableBytes {
                    pread(file.fileDescriptor, $0.baseAddress, length, off_t(start))
                }
                guard read == length else {
                    if read < 0 { throw ioError(POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
                    throw RecordSpool.damaged("the users the archive lists")
                }
                let replaced = cached[slot].count
                if cachedTotal - replaced + length <= cacheBytes {
                    cached[slot] = block
                    cachedBlocks[slot] = index
                    cachedTotal += length - replaced
                }
            }
            try block.withUnsafeBufferPointer {
                try Self.scan($0, firstPosition: index * Self.blockUsers, body)
            }
        } else {
            try inMemory.withUnsafeBufferPointer {
                try Self.scan(
                    UnsafeBufferPointer(rebasing: $0[start..<(start + length)]), firstPosition: index * Self.blockUsers,
                    body)
            }
        }
    }

    private static func scan(
        _ bytes: UnsafeBufferPointer<UInt8>, firstPosition: Int,
        _ body: (UnsafeBufferPointer<UInt8>, () -> Entry) throws -> Bool
    ) throws {
        var offset = 0
        var position = firstPosition
        func length() throws -> Int {
            guard bytes.count - offset >= 4 else { throw RecordSpool.damaged("the users the archive lists") }
            var value: UInt32 = 0
            for shift in 0..<4 { value |= UInt32(bytes[offset + shift]) << UInt32(8 * shift) }
            offset += 4
            return Int(value)
        }
        while offset < bytes.count {
            guard let fate = Fate(rawValue: bytes[offset]) else {
                throw RecordSpool.damaged("the users the archive lists")
            }
            offset += 1
            let userLength = try length()
            guard bytes.count - offset >= userLength else { throw RecordSpool.damaged("the users the archive lists") }
            let user = UnsafeBufferPointer(rebasing: bytes[offset..<(offset + userLength)])
            offset += userLength
            let createdLength = try length()
            guard createdLength == 0 || bytes.count - offset >= createdLength - 1 else {
                throw RecordSpool.damaged("the users the archive lists")
            }
            let createdStart = offset
            if createdLength > 0 { offset += createdLength - 1 }
            let here = position
            let more = try body(user) {
                Entry(
                    fate: fate,
                    created: createdLength == 0
                        ? nil
                        : String(
                            decoding: UnsafeBufferPointer(
                                rebasing: bytes[createdStart..<(createdStart + createdLength - 1)]), as: UTF8.self),
                    position: here)
            }
            guard more else { return }
            position += 1
        }
    }
}

/// Ids in byte order, one after another in one array: a look-up compares
/// bytes in place, without a string or an array an id.
private struct IDList {
    private var bytes: [UInt8] = []
    /// Where each id ends in `bytes`.
    private var ends: [Int] = []

    var count: Int { ends.count }

    mutating func append(_ id: some Collection<UInt8>) {
        bytes.append(contentsOf: id)
        ends.append(bytes.count)
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
    }

    /// The order of id `index` against `other`: negative before it, 0 the same, positive after.
    func compare(_ index: Int, _ other: UnsafeBufferPointer<UInt8>) -> Int {
        let start = index == 0 ? 0 : ends[index - 1]
        let length = ends[index] - start
        let common = min(length, other.count)
        if common > 0, let right = other.baseAddress {
            let order = bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + start, right, common) }
            if order != 0 { return Int(order) }
        }
        return length - other.count
    }

    /// The index of `id`, or nil when the list does not hold it.
    func index(of id: UnsafeBufferPointer<UInt8>) -> Int? {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if compare(middle, id) < 0 { low = middle + 1 } else { high = middle }
        }
        return low < count && compare(low, id) == 0 ? low : nil
    }

    /// The last id not after `id` (the block a user is in, for the list of
    /// the blocks' first ids), or nil when `id` comes before them all.
    /// `guess` and the one after it are tried first, each with two
    /// comparisons where the search takes about twenty at 1 M users: rows
    /// in id order move on a block at a time.
    func lastNotAfter(_ id: UnsafeBufferPointer<UInt8>, tryingFirst guess: Int) -> Int? {
        func holds(_ index: Int) -> Bool {
            compare(index, id) <= 0 && (index + 1 == count || compare(index + 1, id) > 0)
        }
        if guess >= 0 {
            if guess < count, holds(guess) { return guess }
            if guess + 1 < count, holds(guess + 1) { return guess + 1 }
        }
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if compare(middle, id) <= 0 { low = middle + 1 } else { high = middle }
        }
        return low > 0 ? low - 1 : nil
    }
}
