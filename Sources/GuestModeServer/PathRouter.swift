import Foundation
import HTTPTypes
import Hummingbird

/// The routes of `guestmode serve`, found by comparing the request path's bytes: Hummingbird's `Router`, with its
/// trie walked over `Substring`s a `Character` at a time and the endpoint's path made into a string again on every
/// request, was 23–32 k instructions of every served read (bench/results.md, "Serving, round 20").
///
/// It takes routes as `Router` does (`RouterMethods`, so `addRoutes` hands it every controller's
/// `RouteCollection`), wraps each in the middlewares added before it, and finds a request's route as `Router`
/// would: path components split at `/` with empty ones skipped, matched level by level against the routes'
/// constants (by their bytes), then their `:captures` (any component), each in the order added, backtracking when a
/// branch ends without matching the whole path; then the request's method, or the middlewares' 404. It knows constant and capture
/// segments only, which is every route `guestmode serve` has (`PathRouterTests` holds it to `Router` on them).
///
/// ```swift
/// let router = PathRouter(context: ServerContext.self)
/// router.add(middleware: FailureMiddleware())
/// router.addRoutes(MeterController(services: services).endpoints, atPath: "/v1/users/:user/meters")
/// let app = Application(router: router)
/// ```
final class PathRouter<Context: RequestContext>: RouterMethods, HTTPResponderBuilder {
    private let root = Node(segment: .constant([]))
    private var middlewares: [any MiddlewareProtocol<Request, Response, Context>] = []
    /// Every route added, in order, as `Router.routes` lists them.
    private(set) var routes: [(path: RouterPath, method: HTTPRequest.Method)] = []

    init(context: Context.Type = Context.self) {}

    @discardableResult func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == Context {
        var node = root
        for element in path.components {
            let segment = Segment(element)
            if let child = node.children.first(where: { $0.segment == segment }) {
                node = child
            } else {
                let child = Node(segment: segment)
                node.children.append(child)
                node = child
            }
        }
        let wrapped = wrap(responder)
        if let index = node.responders.firstIndex(where: { $0.method == method }) {
            node.responders[index].responder = wrapped
        } else {
            node.responders.append((method, wrapped))
        }
        node.path = path.description
        routes.append((path, method))
        return self
    }

    @discardableResult func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        middlewares.append(middleware)
        return self
    }

    /// `responder` behind the middlewares added so far, the first added outermost, as `Router` wraps a route.
    private func wrap(_ responder: some HTTPResponder<Context>) -> any HTTPResponder<Context> {
        var wrapped: any HTTPResponder<Context> = responder
        for middleware in middlewares.reversed() {
            wrapped = MiddlewareStep(middleware: middleware, next: wrapped)
        }
        return wrapped
    }

    func buildResponder() -> PathResponder<Context> {
        PathResponder(
            root: root.frozen(),
            notFound: wrap(NotFoundResponder<Context>()))
    }

    /// A path segment a route names.
    enum Segment: Equatable, Sendable {
        /// A component that is exactly these bytes.
        case constant([UInt8])
        /// Any component, the parameter `name`.
        case capture(Substring)

        init(_ element: RouterPath.Element) {
            let text = element.description
            if element == text {
                self = .constant(Array(text.utf8))
            } else if text.hasPrefix("{"), text.hasSuffix("}"), text.count > 2 {
                self = .capture(text.dropFirst().dropLast())
            } else {
                // A wildcard or a capture inside a component: no route of guestmode serve has one, and adding one is
                // a change to the route table its tests run on start-up of every test server.
                preconditionFailure("PathRouter has constant and {capture} segments only, not \(text)")
            }
        }
    }

    /// A node of the routes' tree while routes are added.
    private final class Node {
        let segment: Segment
        var children: [Node] = []
        var responders: [(method: HTTPRequest.Method, responder: any HTTPResponder<Context>)] = []
        var path = ""

        init(segment: Segment) { self.segment = segment }

        /// The node for requests, its constants ahead of its captures and each in the order added, as Hummingbird
        /// ranks a node's children: a constant is the more specific.
        func frozen() -> PathResponder<Context>.Branch {
            let constantsFirst =
                children.filter { if case .constant = $0.segment { true } else { false } }
                + children.filter { if case .capture = $0.segment { true } else { false } }
            return PathResponder.Branch(
                segment: segment, children: constantsFirst.map { $0.frozen() }, responders: responders, path: path)
        }
    }
}

/// `PathRouter`'s responder: the routes' tree, read by every request at once.
struct PathResponder<Context: RequestContext>: HTTPResponder {
    final class Branch: Sendable {
        let segment: PathRouter<Context>.Segment
        let children: [Branch]
        let responders: [(method: HTTPRequest.Method, responder: any HTTPResponder<Context>)]
        /// The route's path as `RouterPath.description` writes it (`/v1/users/{user}`), the request's endpoint.
        let path: String

        init(
            segment: PathRouter<Context>.Segment, children: [Branch],
            responders: [(method: HTTPRequest.Method, responder: any HTTPResponder<Context>)], path: String
        ) {
            self.segment = segment
            self.children = children
            self.responders = responders
            self.path = path
        }
    }

    let root: Branch
    let notFound: any HTTPResponder<Context>

    func respond(to request: Request, context: Context) async throws -> Response {
        do {
            let path = request.uri.path
            var parameters = Parameters()
            guard let branch = Self.branch(for: path, in: root, parameters: &parameters),
                let responder = branch.responders.first(where: { $0.method == request.method })?.responder
            else {
                return try await notFound.respond(to: request, context: context)
            }
            var context = context
            context.coreContext.parameters = parameters
            context.coreContext.endpointPath.value = branch.path
            return try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
    }

    /// The branch the whole of `path` leads to, with the captures on the way in `parameters`; nil when none does.
    static func branch(for path: String, in root: Branch, parameters: inout Parameters) -> Branch? {
        var text = path
        let found: (branch: Branch, captures: [(name: Substring, range: Range<Int>)])? = text.withUTF8 { bytes in
            var components: [Range<Int>] = []
            components.reserveCapacity(8)
            var start = 0
            while start < bytes.count {
                guard bytes[start] != UInt8(ascii: "/") else {
                    start += 1
                    continue
                }
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "/") { end += 1 }
                components.append(start..<end)
                start = end
            }
            var captures: [(name: Substring, range: Range<Int>)] = []
            guard let branch = descend(root, bytes: bytes, components: components, at: 0, captures: &captures) else {
                return nil
            }
            return (branch, captures)
        }
        guard let found else { return nil }
        let utf8 = path.utf8
        for capture in found.captures {
            let lower = utf8.index(utf8.startIndex, offsetBy: capture.range.lowerBound)
            let upper = utf8.index(lower, offsetBy: capture.range.count)
            parameters[capture.name] = path[lower..<upper]
        }
        return found.branch
    }

    /// The branch below `branch` that components `index…` lead to, trying its children in their rank (constants
    /// first) and backtracking, as Hummingbird's trie does: the first branch the whole path reaches, whether or not
    /// it has a route.
    private static func descend(
        _ branch: Branch, bytes: UnsafeBufferPointer<UInt8>, components: [Range<Int>], at index: Int,
        captures: inout [(name: Substring, range: Range<Int>)]
    ) -> Branch? {
        guard index < components.count else { return branch }
        let component = components[index]
        for child in branch.children {
            switch child.segment {
            case .constant(let constant):
                guard constant.count == component.count,
                    constant.withUnsafeBufferPointer({
                        memcmp($0.baseAddress!, bytes.baseAddress! + component.lowerBound, component.count) == 0
                    })
                else { continue }
                if let found = descend(child, bytes: bytes, components: components, at: index + 1, captures: &captures)
                {
                    return found
                }
            case .capture(let name):
                captures.append((name, component))
                if let found = descend(child, bytes: bytes, components: components, at: index + 1, captures: &captures)
                {
                    return found
                }
                captures.removeLast()
            }
        }
        return nil
    }
}

/// One middleware in front of the responder after it.
private struct MiddlewareStep<Context: RequestContext>: HTTPResponder {
    let middleware: any MiddlewareProtocol<Request, Response, Context>
    let next: any HTTPResponder<Context>

    func respond(to request: Request, context: Context) async throws -> Response {
        try await middleware.handle(request, context: context) { request, context in
            try await next.respond(to: request, context: context)
        }
    }
}

/// What a path no route has, or a method its route does not take, reaches: Hummingbird's 404, through the
/// middlewares, which answer it as every failure is answered.
private struct NotFoundResponder<Context: RequestContext>: HTTPResponder {
    func respond(to request: Request, context: Context) throws -> Response {
        context.coreContext.endpointPath.value = "NotFound"
        throw HTTPError(.notFound)
    }
}
