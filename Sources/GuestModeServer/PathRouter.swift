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
    private var endpoints: [PathResponder<Context>.Endpoint] = []
    /// Every route added, in order, as `Router.routes` lists them.
    private(set) var routes: [(path: RouterPath, method: HTTPRequest.Method)] = []

    init(context: Context.Type = Context.self) {}

    @discardableResult func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == Context {
        var node = root
        for element in path.components {
            let segment = PathSegment(element)
            if let child = node.children.first(where: { $0.segment == segment }) {
                node = child
            } else {
                let child = Node(segment: segment)
                node.children.append(child)
                node = child
            }
        }
        let endpoint = node.endpoint ?? endpoints.count
        if endpoint == endpoints.count { endpoints.append(.init(responders: [], path: path.description)) }
        node.endpoint = endpoint
        let wrapped = wrap(responder)
        if let index = endpoints[endpoint].responders.firstIndex(where: { $0.method == method }) {
            endpoints[endpoint].responders[index].responder = wrapped
        } else {
            endpoints[endpoint].responders.append((method, wrapped))
        }
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
        PathResponder(root: root.frozen(), endpoints: endpoints, notFound: wrap(NotFoundResponder<Context>()))
    }

    /// A node of the routes' tree while routes are added.
    private final class Node {
        let segment: PathSegment
        var children: [Node] = []
        var endpoint: Int?

        init(segment: PathSegment) { self.segment = segment }

        /// The node for requests, its constants ahead of its captures and each in the order added, as Hummingbird
        /// ranks a node's children: a constant is the more specific.
        func frozen() -> PathBranch {
            let constantsFirst =
                children.filter { if case .constant = $0.segment { true } else { false } }
                + children.filter { if case .capture = $0.segment { true } else { false } }
            return PathBranch(segment: segment, children: constantsFirst.map { $0.frozen() }, endpoint: endpoint)
        }
    }
}

/// A path segment a route names.
enum PathSegment: Equatable, Sendable {
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
            // a change to the route table, which every test server is built from.
            preconditionFailure("PathRouter has constant and {capture} segments only, not \(text)")
        }
    }
}

/// A node of the routes' tree as requests read it: not generic, so walking it makes no type metadata at run
/// time (a generic node's tuples and optionals were 1 k instructions a request).
final class PathBranch: Sendable {
    let segment: PathSegment
    let children: [PathBranch]
    /// Where in `PathResponder.endpoints` this node's route is; nil when no route ends here.
    let endpoint: Int?

    init(segment: PathSegment, children: [PathBranch], endpoint: Int?) {
        self.segment = segment
        self.children = children
        self.endpoint = endpoint
    }

    /// The branch the whole of `path` leads to, with its captures' names and where their values are in `path`'s
    /// UTF-8; nil when none does.
    func branch(for path: inout String) -> (branch: PathBranch, captures: [(name: Substring, range: Range<Int>)])? {
        path.withUTF8 { bytes in
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
            guard let branch = descend(bytes: bytes, components: components, at: 0, captures: &captures) else {
                return nil
            }
            return (branch, captures)
        }
    }

    /// The branch below this one that components `index…` lead to, trying the children in their rank (constants
    /// first) and backtracking, as Hummingbird's trie does: the first branch the whole path reaches, whether or not
    /// it has a route.
    private func descend(
        bytes: UnsafeBufferPointer<UInt8>, components: [Range<Int>], at index: Int,
        captures: inout [(name: Substring, range: Range<Int>)]
    ) -> PathBranch? {
        guard index < components.count else { return self }
        let component = components[index]
        for child in children {
            switch child.segment {
            case .constant(let constant):
                guard constant.count == component.count,
                    constant.withUnsafeBufferPointer({
                        memcmp($0.baseAddress!, bytes.baseAddress! + component.lowerBound, component.count) == 0
                    })
                else { continue }
                if let found = child.descend(bytes: bytes, components: components, at: index + 1, captures: &captures) {
                    return found
                }
            case .capture(let name):
                captures.append((name, component))
                if let found = child.descend(bytes: bytes, components: components, at: index + 1, captures: &captures) {
                    return found
                }
                captures.removeLast()
            }
        }
        return nil
    }
}

/// `PathRouter`'s responder: the routes' tree, read by every request at once, and what each route runs.
struct PathResponder<Context: RequestContext>: HTTPResponder {
    struct Endpoint: Sendable {
        var responders: [(method: HTTPRequest.Method, responder: any HTTPResponder<Context>)]
        /// The route's path as `RouterPath.description` writes it (`/v1/users/{user}`), the request's endpoint.
        let path: String
    }

    let root: PathBranch
    let endpoints: [Endpoint]
    let notFound: any HTTPResponder<Context>

    func respond(to request: Request, context: Context) async throws -> Response {
        do {
            var path = request.uri.path
            guard let found = root.branch(for: &path), let index = found.branch.endpoint,
                let responder = endpoints[index].responders.first(where: { $0.method == request.method })?.responder
            else {
                return try await notFound.respond(to: request, context: context)
            }
            var context = context
            // Made at once, not a member at a time: each `FlatDictionary` insertion hashed its key and grew two
            // arrays.
            let utf8 = path.utf8
            context.coreContext.parameters = Parameters(
                found.captures.map { capture in
                    let lower = utf8.index(utf8.startIndex, offsetBy: capture.range.lowerBound)
                    return (capture.name, path[lower..<utf8.index(lower, offsetBy: capture.range.count)])
                })
            context.coreContext.endpointPath.value = endpoints[index].path
            return try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
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
