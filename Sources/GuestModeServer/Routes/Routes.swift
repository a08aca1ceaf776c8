import GuestModeKit
import Hummingbird

typealias ServerRouter = Router<ServerContext>

extension Services {
    /// The caller, allowed to reach the user the path names; the user's id.
    func user(of request: Request, context: ServerContext) async throws -> (Caller, String) {
        let caller = try await caller(of: request)
        let userID = try RequestInput.segment("user", of: context)
        try caller.requireAccess(to: userID)
        return (caller, userID)
    }
}
