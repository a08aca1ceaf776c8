import Dispatch
import Foundation
import GuestModeKit
import Synchronization

/// The connections of one `PostgresStore`, shared by every caller of the
/// store: at most `capacity` open at once, each opened when a transaction
/// first needs it, kept for the next one, and lent to one caller at a time.
///
/// A caller holds its connection for a whole transaction (`withTransaction`);
/// a transaction started inside another one on the same thread (a profile
/// bound inside `create`, a batch inside `applyEvents`) joins it on the same
/// connection, as a nested transaction always has. The connection is found
/// through a task-local lease that also names the thread it was lent to: a
/// task started inside a transaction inherits the task-local value but runs
/// on another thread, and takes a connection of its own instead of sharing one.
///
/// A connection that broke (the server restarted, an idle timeout, an
/// administrator's `pg_terminate_backend`) is dropped when it is given back,
/// and one found broken by the first statement of a transaction is replaced
/// there and then, since nothing was done on it yet.
final class PostgresConnectionPool: Sendable {
    /// How the store is named in messages: the URI without its password.
    let location: String
    let capacity: Int
    let wait: Duration
    /// How long opening a connection may take; nil waits as long as it takes.
    let connectTimeout: Duration?
    /// How long one statement may go unanswered; nil waits as long as it takes.
    let statementTimeout: Duration?
    private let conninfo: String
    private let schema: String
    /// One permit per connection that may be open; a caller holds one for as
    /// long as it holds a connection, so waiting for a permit is waiting for a
    /// connection, with a deadline.
    private let permits: DispatchSemaphore
    private let idle = Mutex<[PostgresConnection]>([])

    init(
        conninfo: String, location: String, schema: String, capacity: Int, wait: Duration,
        connectTimeout: Duration?, statementTimeout: Duration?
    ) {
        self.conninfo = conninfo
        self.location = location
        self.schema = schema
        self.capacity = capacity
        self.wait = wait
        self.connectTimeout = connectTimeout
        self.statementTimeout = statementTimeout
        permits = DispatchSemaphore(value: capacity)
    }

    /// A connection lent to the current thread.
    struct Lease: Sendable {
        let pool: ObjectIdentifier
        let thread: ObjectIdentifier
        let connection: PostgresConnection
    }

    @TaskLocal private static var leases: [Lease] = []

    private var currentLease: Lease? {
        let thread = ObjectIdentifier(Thread.current)
        return Self.leases.last { $0.pool == ObjectIdentifier(self) && $0.thread == thread }
    }

    /// The connection of the transaction open on this thread, if any: a
    /// nested transaction runs its body on it.
    var connectionInTransaction: PostgresConnection? {
        currentLease?.connection
    }

    /// Thrown by a transaction whose first statement found the connection
    /// closed: nothing was done, so the pool may run it again on another.
    struct LostBeforeStart: Error {
        let failure: PostgresFailure
    }

    /// Runs `body`, a whole transaction, with a connection no other thread
    /// uses meanwhile: an idle one, else a new one if fewer than `capacity`
    /// are open, else the first one given back within `wait`.
    func withTransaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try takePermit()
        defer { permits.signal() }
        while true {
            let reused = idle.withLock { $0.popLast() }
            let connection = try reused ?? open()
            do {
                let value = try run(body, on: connection)
                giveBack(connection)
                return value
            } catch let lost as LostBeforeStart {
                // Dropped, not given back. An idle connection closed by the server is
                // replaced by the next; a new one that is already closed means the
                // server itself is going away.
                if reused == nil { throw lost.failure.asGuestModeError }
            } catch {
                giveBack(connection)
                throw error
            }
        }
    }

    private func run<T>(_ body: (PostgresConnection) throws -> T, on connection: PostgresConnection) throws -> T {
        try Self.$leases.withValue(Self.leases + [lease(of: connection)]) {
            try body(connection)
        }
    }

    private func lease(of connection: PostgresConnection) -> Lease {
        Lease(
            pool: ObjectIdentifier(self), thread: ObjectIdentifier(Thread.current), connection: connection)
    }

    /// Waits `wait` for a permit, and never past the caller's `StoreDeadline`.
    private func takePermit() throws {
        let (seconds, attoseconds) = max(min(wait, StoreDeadline.remaining ?? wait), .zero).components
        // DispatchTime counts nanoseconds in 64 bits: a wait of centuries is forever.
        let nanoseconds =
            seconds >= Int64.max / 1_000_000_000 - 1
            ? Int64.max / 2 : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        guard permits.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success else {
            throw GuestModeError(
                .poolExhausted,
                "all \(capacity) connection\(capacity == 1 ? "" : "s") to the PostgreSQL store \(location) stayed in use for \(wait); nothing was changed, try again later"
            )
        }
    }

    /// Connects with the session settings every transaction relies on, within
    /// `connectTimeout` and the caller's `StoreDeadline`.
    private func open() throws -> PostgresConnection {
        let connection = try PostgresConnection(
            connecting: conninfo, location: location, deadline: StoreDeadline.bound(connectTimeout),
            statementTimeout: statementTimeout)
        do {
            try connection.executeFirst("SET search_path TO \(schema)")
        } catch let failure as PostgresFailure {
            throw failure.asGuestModeError
        }
        return connection
    }

    private func giveBack(_ connection: PostgresConnection) {
        guard connection.isReusable else { return }
        idle.withLock { idle in
            // After `close`, a connection given back is closed instead of kept.
            if !isClosed.load(ordering: .acquiring) { idle.append(connection) }
        }
    }

    /// Set by `close`: connections given back from then on are closed.
    private let isClosed = Atomic<Bool>(false)

    /// Closes every idle connection (libpq says goodbye to the server, which
    /// ends its backend at once) and, from now on, each connection in use as
    /// its transaction ends. A transaction begun later opens a connection of
    /// its own and closes it when done.
    func close() {
        let closing = idle.withLock { idle in
            isClosed.store(true, ordering: .releasing)
            defer { idle.removeAll() }
            return idle
        }
        // The last reference to each goes here: its deinit calls PQfinish.
        _ = closing
    }
}
