import Foundation
import GuestModeKit
import NIOPosix

/// What every route shares: the engine, the bounded pool its blocking calls
/// run on, the clock, and the access-token signer.
final class Services: Sendable {
    let engine: GuestMode
    let pool: NIOThreadPool
    let clock: @Sendable () throws -> Date
    let tokens: AccessTokens
    let bodyLimit: Int

    init(
        engine: GuestMode, pool: NIOThreadPool, clock: @escaping @Sendable () throws -> Date, tokens: AccessTokens,
        bodyLimit: Int
    ) {
        self.engine = engine
        self.pool = pool
        self.clock = clock
        self.tokens = tokens
        self.bodyLimit = bodyLimit
    }

    /// Runs a blocking engine call on the pool, never on an event loop; at
    /// most the pool's size run at once and the rest wait their turn.
    func perform<T: Sendable>(_ body: @escaping @Sendable (GuestMode, Date) throws -> T) async throws -> T {
        let engine = self.engine
        let clock = self.clock
        return try await pool.runIfActive { try body(engine, try clock()) }
    }

    func now() throws -> Date { try clock() }
}
