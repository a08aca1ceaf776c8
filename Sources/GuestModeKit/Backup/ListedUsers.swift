import Foundation

/// The users an archive's header.json lists, as an import needs them: what
/// becomes of each (added, replaced, kept, skipped) and whether its users
/// row was seen, in constant memory for any number of users.
///
/// The list streams into a sorted `RecordSpool` (`add`); `classify` reads it
/// back once in id order (byte order, as the stores compare ids), finds a
/// user listed twice, asks the caller the fate of each user and writes the
/// answers in blocks of a few KiB, in memory and past `memoryLimit` to an
/// unlinked temporary file; only each block's first id stays in memory.
/// `entry(of:)` finds a user by a binary search over those ids and reads
/// one block, keeping the last one read: an archive's rows come grouped by
/// user, so a run of rows costs one read.
///
/// ```swift
/// let listed = ListedUsers()
/// for user in ["u2", "u1"] { try listed.add(user) }
/// let repeated = try listed.classify { user in (.added, nil) }   // nil: no user twice
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

    private struct Block {
        var first: [UInt8]
        var offset: Int
        var length: Int
        var firstPosition: Int
    }

    private var blocks: [Block] = []
    private var inMemory: [UInt8] = []
    private var file: FileHandle?
    private var fileLength = 0
    private var seen: [UInt64] = []
    private static let blockSize = 4 << 10

    private var cachedBlock = -1
    private var cachedEntries: [(user: [UInt8], entry: Entry)] = []
    private var lastUser: [UInt8] = []
    private var lastEntry: Entry?

    /// `sampleLimit` users of each fate (the first by id) are kept for the report.
    package init(memoryLimit: Int = 2 << 20, sampleLimit: Int = 1000) {
        self.memoryLimit = memoryLimit
        self.sampleLimit = sampleLimit
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

    /// Reads the list back in id order, once: `decide` says the fate of each
    /// distinct user (and the store's creation time of a user it holds).
    /// Returns the user listed twice whose second mention comes first, or nil.
    package func classify(_ decide: (String) throws -> (Fate, created: String?)) throws -> Repeat? {
        var repeated: Repeat?
        var previous: [UInt8]?
        var previousMentions = 0
        var block: [UInt8] = []
        var blockFirst: [UInt8] = []
        var blockFirstPosition = 0
        block.reserveCapacity(Self.blockSize + 512)
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
            let (fate, created) = try decide(user)
            counts[Int(fate.rawValue)] += 1
            if samples[Int(fate.rawValue)].count < sampleLimit { samples[Int(fate.rawValue)].append(user) }
            if block.isEmpty {
                blockFirst = bytes
                blockFirstPosition = distinct
            }
            block.append(fate.rawValue)
            Self.put(bytes, to: &block)
            if let created { Self.put(Array(created.utf8), to: &block, plusOne: true) } else { Self.put32(0, to: &block) }
            distinct += 1
            if block.count >= Self.blockSize {
                try store(block, first: blockFirst, firstPosition: blockFirstPosition)
                block.removeAll(keepingCapacity: true)
            }
        }
        if !block.isEmpty { try store(block, first: blockFirst, firstPosition: blockFirstPosition) }
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
            if let lastEntry, lastUser.elementsEqual(bytes) { return lastEntry }
            // The last block whose first id is not after `user`.
            var low = 0
            var high = blocks.count
            while low < high {
                let middle = (low + high) / 2
                if Self.compare(blocks[middle].first, bytes) <= 0 { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { return nil }
            if cachedBlock != low - 1 {
                cachedEntries = try readBlock(low - 1)
                cachedBlock = low - 1
            }
            low = 0
            high = cachedEntries.count
            while low < high {
                let middle = (low + high) / 2
                if Self.compare(cachedEntries[middle].user, bytes) < 0 { low = middle + 1 } else { high = middle }
            }
            guard low < cachedEntries.count, Self.compare(cachedEntries[low].user, bytes) == 0 else { return nil }
            lastUser = Array(bytes)
            lastEntry = cachedEntries[low].entry
            return lastEntry
        }
    }

    /// Notes that the user's users row was seen; false when it was seen before.
    package func markSeen(_ entry: Entry) -> Bool {
        let (word, bit) = entry.position.quotientAndRemainder(dividingBy: 64)
        let mask = UInt64(1) << UInt64(bit)
        guard seen[word] & mask == 0 else { return false }
        seen[word] |= mask
        return true
    }

    /// The first user by id whose fate is one of `fates` and whose users row was never seen.
    package func firstUnseen(among fates: Set<Fate>) throws -> String? {
        for index in blocks.indices {
            for (user, entry) in try readBlock(index) where fates.contains(entry.fate) {
                let (word, bit) = entry.position.quotientAndRemainder(dividingBy: 64)
                if seen[word] & (UInt64(1) << UInt64(bit)) == 0 { return String(decoding: user, as: UTF8.self) }
            }
        }
        return nil
    }

    private static func compare(_ left: [UInt8], _ right: UnsafeBufferPointer<UInt8>) -> Int {
        left.withUnsafeBufferPointer { compare($0, right) }
    }

    private static func compare(_ left: [UInt8], _ right: [UInt8]) -> Int {
        left.withUnsafeBufferPointer { l in right.withUnsafeBufferPointer { compare(l, $0) } }
    }

    private static func compare(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(left.count, right.count)
        if common > 0, let l = left.baseAddress, let r = right.baseAddress {
            let order = memcmp(l, r, common)
            if order != 0 { return Int(order) }
        }
        return left.count - right.count
    }

    private static func put32(_ value: UInt32, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    /// A length (plus one when `plusOne`, so 0 can mean "none"), then the bytes.
    private static func put(_ bytes: [UInt8], to buffer: inout [UInt8], plusOne: Bool = false) {
        put32(UInt32(truncatingIfNeeded: bytes.count + (plusOne ? 1 : 0)), to: &buffer)
        buffer.append(contentsOf: bytes)
    }

    private func store(_ block: [UInt8], first: [UInt8], firstPosition: Int) throws {
        if file == nil, inMemory.count + block.count > memoryLimit {
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
            try write(inMemory, to: handle)
            fileLength = inMemory.count
            inMemory = []
        }
        blocks.append(
            Block(first: first, offset: file == nil ? inMemory.count : fileLength, length: block.count,
                firstPosition: firstPosition))
        if let file {
            try write(block, to: file)
            fileLength += block.count
        } else {
            inMemory.append(contentsOf: block)
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
        GuestModeError(
            .ioError,
            "cannot use the temporary file holding the users the archive lists: \(error.localizedDescription); check the space in the temporary directory (TMPDIR)"
        )
    }

    private func readBlock(_ index: Int) throws -> [(user: [UInt8], entry: Entry)] {
        let block = blocks[index]
        let bytes: [UInt8]
        if let file {
            do {
                try file.seek(toOffset: UInt64(block.offset))
                bytes = [UInt8](try file.read(upToCount: block.length) ?? Data())
            } catch {
                throw ioError(error)
            }
        } else {
            bytes = Array(inMemory[block.offset..<(block.offset + block.length)])
        }
        guard bytes.count == block.length else { throw RecordSpool.damaged("the users the archive lists") }
        var entries: [(user: [UInt8], entry: Entry)] = []
        var offset = 0
        var position = block.firstPosition
        func length() throws -> Int {
            guard bytes.count - offset >= 4 else { throw RecordSpool.damaged("the users the archive lists") }
            var value: UInt32 = 0
            for shift in 0..<4 { value |= UInt32(bytes[offset + shift]) << UInt32(8 * shift) }
            offset += 4
            return Int(value)
        }
        func take(_ count: Int) throws -> [UInt8] {
            guard count >= 0, bytes.count - offset >= count else {
                throw RecordSpool.damaged("the users the archive lists")
            }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }
        while offset < bytes.count {
            guard let fate = Fate(rawValue: bytes[offset]) else { throw RecordSpool.damaged("the users the archive lists") }
            offset += 1
            let user = try take(try length())
            let createdLength = try length()
            let created = createdLength == 0 ? nil : String(decoding: try take(createdLength - 1), as: UTF8.self)
            entries.append((user, Entry(fate: fate, created: created, position: position)))
            position += 1
        }
        return entries
    }
}
