import GuestModeKit
import Hummingbird
import Logging

extension GuestModeServer {
    /// Every route of guestmode-serve(1), one controller per route group, behind the middleware every
    /// request passes in this order: the access line and metrics (outermost, so they see the status
    /// the client got), the body limit, the per-address and the server-wide in-flight limits, and the
    /// failure document. `run` serves it; the in-process tests (GuestModeServerTests) answer it
    /// without a socket.
    static func buildRouter(
        services: Services, configuration: ServerConfiguration, accessLogger: Logger
    )
        -> PathRouter<ServerContext>
    {
        let router = PathRouter(context: ServerContext.self)
        router.add(middleware: ObservabilityMiddleware(services: services, logger: accessLogger))
        router.add(middleware: BodyLimitMiddleware(limit: configuration.bodyLimit, budget: services.bodyBudget))
        if configuration.requestsPerAddress > 0 {
            router.add(
                middleware: AddressInFlightLimitMiddleware(limit: configuration.requestsPerAddress, services: services))
        }
        router.add(middleware: InFlightLimitMiddleware(limit: configuration.maximumRequests))
        router.add(middleware: FailureMiddleware())
        router.addRoutes(OperationController(services: services).endpoints)
        router.addRoutes(GuestController(services: services).endpoints, atPath: "/v1")
        router.addRoutes(UserController(services: services).endpoints, atPath: "/v1/users")
        router.get("/v1/me", use: UserController(services: services).me)
        router.addRoutes(EventController(services: services).endpoints, atPath: "/v1/users")
        router.addRoutes(RecordController(services: services).endpoints, atPath: "/v1/users/:user/records")
        router.addRoutes(LimitController(services: services).endpoints, atPath: "/v1/users/:user/limits")
        router.addRoutes(MeterController(services: services).endpoints, atPath: "/v1/users/:user/meters")
        router.addRoutes(PromptController(services: services).endpoints, atPath: "/v1/users/:user/prompts")
        router.addRoutes(IdentityController(services: services).endpoints, atPath: "/v1/users/:user/identities")
        router.addRoutes(PlanController(services: services).endpoints, atPath: "/v1/users/:user/plans")
        router.addRoutes(PurchaseController(services: services).endpoints, atPath: "/v1/users/:user/purchases")
        router.addRoutes(AppStoreController(services: services).endpoints, atPath: "/v1/integrations")
        router.addRoutes(MergeController(services: services).endpoints, atPath: "/v1/users/:user")
        router.addRoutes(ExperimentController(services: services).endpoints, atPath: "/v1/users/:user/experiments")
        router.addRoutes(ReportController(services: services).endpoints, atPath: "/v1/reports")
        router.addRoutes(BulkController(services: services).endpoints, atPath: "/v1")
        router.addRoutes(BackupController(services: services, accessLogger: accessLogger).endpoints, atPath: "/v1")
        router.addRoutes(RevenueCatController(services: services).endpoints, atPath: "/v1/integrations")
        return router
    }
}
