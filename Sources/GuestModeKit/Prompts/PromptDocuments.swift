import Foundation

// The documents of `prompt next`, written without `Codable` (`JSONWritable`): members in the encoder's
// order, under its names.

extension PromptExplanation: JSONWritable {
    /// Writes the explanation as `prompt next --explain --json` prints it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("decided_by", in: &object)
        writer.write(decidedBy) { $0.write($1) }
        writer.member("due", in: &object)
        writer.write(isDue)
        writer.member("offer", in: &object)
        try writer.write(offer) { try $0.write($1) }
        writer.member("reason", in: &object)
        writer.write(quiet) { writer, quiet in
            var reason = writer.openObject()
            writer.member("code", in: &reason)
            writer.write(quiet.code)
            writer.member("eligible_at", in: &reason)
            writer.write(quiet.eligibleAt) { $0.write($1) }
            writer.member("message", in: &reason)
            writer.write(quiet.explanation)
            writer.close(reason)
        }
        writer.member("rules", in: &object)
        try writer.write(rules)
        writer.member("user_id", in: &object)
        writer.write(userID)
        writer.member("variants", in: &object)
        try writer.write(variants)
        writer.close(object)
    }
}

extension RuleExplanation: JSONWritable {
    /// Writes the rule's verdict as the explanation holds it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("condition", in: &object)
        writer.write(condition) { $0.write($1) }
        writer.member("context", in: &object)
        writer.write(context)
        writer.member("eligible", in: &object)
        writer.write(isEligible)
        writer.member("eligible_at", in: &object)
        writer.write(eligibleAt) { $0.write($1) }
        writer.member("kind", in: &object)
        writer.write(kind)
        writer.member("message", in: &object)
        writer.write(message)
        writer.member("priority", in: &object)
        writer.write(priority)
        writer.member("verdict", in: &object)
        writer.write(verdict)
        writer.close(object)
    }
}

extension PromptOffer: JSONWritable {
    /// Writes the offer as `prompt next --json` prints it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("content", in: &object)
        try writer.write(content)
        writer.member("context", in: &object)
        writer.write(context)
        writer.member("priority", in: &object)
        writer.write(priority)
        writer.member("trigger", in: &object)
        writer.write(trigger) { $0.write($1) }
        writer.member("user_id", in: &object)
        writer.write(user)
        writer.member("variants", in: &object)
        try writer.write(variants)
        writer.close(object)
    }
}

extension PromptContent: JSONWritable {
    /// Writes the content as an offer holds it.
    package func write(to writer: inout JSONWriter) throws {
        var object = writer.openObject()
        writer.member("benefits", in: &object)
        writer.write(benefits)
        writer.member("message", in: &object)
        writer.write(message)
        writer.member("primary_action", in: &object)
        writer.write(primaryAction)
        writer.member("secondary_action", in: &object)
        writer.write(secondaryAction)
        writer.member("style", in: &object)
        writer.write(style)
        writer.member("title", in: &object)
        writer.write(title)
        writer.close(object)
    }
}
