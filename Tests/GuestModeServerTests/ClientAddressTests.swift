import GuestModeKit
import HTTPTypes
import Testing

@testable import GuestModeServer

/// What the per-address limits count a client under. A host on IPv6 is given a whole /64 and takes any
/// address in it at will: counted address by address, one client passed `--guests-per-hour`,
/// `--requests-per-address` and `--connections-per-address` by changing its address each time.
@Suite("client addresses as the per-address limits count them")
struct ClientAddressTests {
    @Test(
        "an IPv6 address counts as its /64, an IPv4 one written as IPv6 as itself, anything else as it is",
        arguments: [
            ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
            ("2001:DB8:1:2::9", "2001:db8:1:2::/64"),
            ("2001:db8:1:3::9", "2001:db8:1:3::/64"),
            ("::1", "0:0:0:0::/64"),
            ("::ffff:10.0.0.1", "10.0.0.1"),
            ("10.0.0.1", "10.0.0.1"),
            ("fe80::1%lo", "fe80::1%lo"),
            ("unknown", "unknown"),
            ("2001:db8::zz", "2001:db8::zz"),
        ])
    func limitKey(address: String, key: String) {
        #expect(Services.limitKey(of: address) == key)
    }

    @Test("guests from two addresses of one /64 draw on one --guests-per-hour; another /64 on its own")
    func signInLimitPerNetwork() async throws {
        // The in-process connection has no address ("unknown"): trusted as a proxy, its X-Forwarded-For
        // names the client, as a load balancer's does.
        let server = try await RouteTester(profile: "habits") {
            $0.trustedProxies = ["unknown"]
            $0.signInLimit = SignInLimit(perHour: 1, burst: 1)
        }
        func signIn(from address: String) async throws -> Int {
            try await server.request(.post, "/v1/guests", headers: [.xForwardedFor: address]).status
        }
        #expect(try await signIn(from: "2001:db8:1:2::1") == 201)
        #expect(try await signIn(from: "2001:db8:1:2::2") == 429)
        #expect(try await signIn(from: "2001:db8:1:3::1") == 201)
        #expect(try await signIn(from: "10.0.0.1") == 201)
    }
}
