import Foundation

// The documents of a meter's reads, written without `Codable` (`JSONWritable`): members in the encoder's
// order, under its names.

extension MeterDecision: JSONWritable {
    /// Writes the decision as `meter check --json` prints it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("allowed", in: &object)
        writer.write(isAllowed)
        writer.member("requested", in: &object)
        writer.write(requested)
        writer.member("status", in: &object)
        try writer.write(status)
        writer.close(object)
    }
}

extension MeterStatus: JSONWritable {
    /// Writes the status as `meter status --json` prints it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("allowance", in: &object)
        writer.write(allowance) { $0.write($1) }
        writer.member("granted", in: &object)
        writer.write(granted)
        writer.member("grants", in: &object)
        try writer.write(grants)
        writer.member("level", in: &object)
        writer.write(level)
        writer.member("meter", in: &object)
        writer.write(meter)
        writer.member("percent_used", in: &object)
        writer.write(percentUsed) { $0.write($1) }
        writer.member("period_start", in: &object)
        writer.write(periodStart) { $0.write($1) }
        writer.member("remaining", in: &object)
        writer.write(remaining) { $0.write($1) }
        writer.member("tier", in: &object)
        writer.write(tier)
        writer.member("unit", in: &object)
        writer.write(unit)
        writer.member("used", in: &object)
        writer.write(used)
        writer.close(object)
    }
}

extension MeterGrant: JSONWritable {
    /// Writes the grant as `meter grants --json` prints it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("amount", in: &object)
        writer.write(amount)
        writer.member("expires_at", in: &object)
        writer.write(expiresAt) { $0.write($1) }
        writer.member("grant_id", in: &object)
        writer.write(id)
        writer.member("granted_at", in: &object)
        writer.write(grantedAt)
        writer.member("meter", in: &object)
        writer.write(meter)
        writer.member("reason", in: &object)
        writer.write(reason) { $0.write($1) }
        writer.member("remaining", in: &object)
        writer.write(remaining)
        writer.member("revoked_at", in: &object)
        writer.write(revokedAt) { $0.write($1) }
        writer.member("state", in: &object)
        writer.write(state)
        writer.member("used", in: &object)
        writer.write(used)
        writer.member("user_id", in: &object)
        writer.write(userID)
        writer.close(object)
    }
}
