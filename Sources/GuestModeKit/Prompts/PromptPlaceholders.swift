import Foundation

/// A value from the user's state written into a prompt's text, e.g.
/// `{limit.subscriptions.max}` (see guestmode-profile(5), PLACEHOLDERS).
/// `{{` and `}}` write literal braces.
package enum PromptPlaceholder: Sendable, Equatable {
    package enum LimitField: String, Sendable, CaseIterable {
        case used, max, remaining
    }

    package enum MeterField: String, Sendable, CaseIterable {
        case used, remaining, allowance
        case percentUsed = "percent_used"
    }

    case counter(action: String)
    case limit(collection: String, field: LimitField)
    case meter(meter: String, field: MeterField)
    case daysSinceFirstSeen

    /// The forms a placeholder can take, for messages.
    package static let forms =
        "{counter.ACTION}, {limit.COLLECTION.used|max|remaining}, {meter.METER.used|remaining|allowance|percent_used}, {days_since_first_seen}"

    /// Reads the text between the braces; nil when it is none of the forms.
    package init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch (parts.first, parts.count) {
        case ("days_since_first_seen", 1): self = .daysSinceFirstSeen
        case ("counter", 2) where !parts[1].isEmpty: self = .counter(action: parts[1])
        case ("limit", 3) where !parts[1].isEmpty:
            guard let field = LimitField(rawValue: parts[2]) else { return nil }
            self = .limit(collection: parts[1], field: field)
        case ("meter", 3) where !parts[1].isEmpty:
            guard let field = MeterField(rawValue: parts[2]) else { return nil }
            self = .meter(meter: parts[1], field: field)
        default: return nil
        }
    }

    /// Why this placeholder cannot be filled under `profile`, or nil.
    func problem(actions: Set<String>, freeForm: Bool, collections: Set<String>, meters: Set<String>) -> String? {
        switch self {
        case let .counter(action) where !actions.contains(action) && !freeForm:
            "counts unknown action '\(action)'; declare it under actions"
        case let .limit(collection, _) where !collections.contains(collection):
            "names unknown collection '\(collection)'; collections: \(collections.sorted().joined(separator: ", "))"
        case let .meter(meter, _) where !meters.contains(meter):
            "names unknown meter '\(meter)'; meters: \(meters.isEmpty ? "none" : meters.sorted().joined(separator: ", "))"
        default: nil
        }
    }

    func value(for facts: PromptFacts, now: Date) -> String {
        switch self {
        case let .counter(action): return String(facts.counters[action] ?? 0)
        case .daysSinceFirstSeen: return String(Int(Condition.daysSince(facts.firstSeen, now: now)))
        case let .limit(collection, field):
            guard let limit = facts.limits[collection] else { return "?" }
            switch field {
            case .used: return limit.used.map(String.init) ?? "?"
            case .max: return limit.cap.map(String.init) ?? "unlimited"
            case .remaining:
                guard let cap = limit.cap else { return "unlimited" }
                return limit.used.map { String(max(0, cap - $0)) } ?? "?"
            }
        case let .meter(meter, field):
            guard let status = facts.meters[meter] else { return "?" }
            switch field {
            case .used: return status.used.description
            case .remaining: return status.remaining?.description ?? "unlimited"
            case .allowance: return status.allowance?.description ?? "unlimited"
            case .percentUsed: return status.percentUsed.map { FiredWarning.format(percent: $0) } ?? "0"
            }
        }
    }
}

/// Prompt text split into literal pieces and placeholders.
package enum PromptText {
    package enum Piece: Sendable, Equatable {
        case text(String)
        case placeholder(String)
    }

    /// The pieces of `text`, or a message saying what is malformed.
    package static func pieces(of text: String) -> Result<[Piece], PromptTextProblem> {
        var pieces: [Piece] = []
        var literal = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            if character == "{" || character == "}", next < text.endIndex, text[next] == character {
                literal.append(character)
                index = text.index(after: next)
                continue
            }
            if character == "}" {
                return .failure(PromptTextProblem(message: "a '}' closes no placeholder; write '}}' for a brace"))
            }
            guard character == "{" else {
                literal.append(character)
                index = next
                continue
            }
            guard let close = text[next...].firstIndex(of: "}") else {
                return .failure(
                    PromptTextProblem(message: "a '{' opens a placeholder that is never closed; write '{{' for a brace")
                )
            }
            if !literal.isEmpty { pieces.append(.text(literal)) }
            literal = ""
            pieces.append(.placeholder(String(text[next..<close])))
            index = text.index(after: close)
        }
        if !literal.isEmpty { pieces.append(.text(literal)) }
        return .success(pieces)
    }

    /// `text` with every placeholder filled from the user's state. Text
    /// that was validated at load always splits; anything else is returned as it is.
    package static func fill(_ text: String, facts: PromptFacts, now: Date) -> String {
        guard case let .success(pieces) = pieces(of: text) else { return text }
        return pieces.map { piece in
            switch piece {
            case let .text(literal): literal
            case let .placeholder(token): PromptPlaceholder(token: token)?.value(for: facts, now: now) ?? "{\(token)}"
            }
        }.joined()
    }
}

package struct PromptTextProblem: Error, Sendable, Equatable {
    package var message: String
}

extension PromptContent {
    /// The content with every placeholder filled.
    package func filled(facts: PromptFacts, now: Date) -> PromptContent {
        func fill(_ text: String) -> String { PromptText.fill(text, facts: facts, now: now) }
        return PromptContent(
            title: fill(title), message: fill(message), benefits: benefits.map(fill),
            primaryAction: fill(primaryAction), secondaryAction: fill(secondaryAction), style: style)
    }
}
