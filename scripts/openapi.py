#!/usr/bin/env python3
"""Writes the OpenAPI 3.1 document of `guestmode serve` (guestmode-serve(1), ROUTES) from the route
table below and the JSON Schemas of schemas/, which it includes under components/schemas (each
command's --json document is the answer of its route):

    python3 scripts/openapi.py           write schemas/openapi.json and the copy the binary serves
                                         (Sources/GuestModeServer/Support/OpenAPIDocument.swift)
    python3 scripts/openapi.py --check   exit 1 when either is not what this script writes

ServerTests runs --check, so a route or schema changed without running this script fails `make test`.

The document is written for client generators (scripts/check-openapi-clients.py regenerates a Python
client from it in `make test` and fails on any warning): components named as types (TYPE_NAMES), one
operationId and one tag per operation, error codes as an enum read from GuestModeError.Code, only the
schemas a route uses, and JSON Schema in the forms generators handle (`for_generators`): `null` for
nothing as a type list (`"type": ["string", "null"]`), never `anyOf` with a null branch nor `const`,
`format: date-time` on every time.
"""
import copy
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "schemas")
DOCUMENT = os.path.join(SCHEMAS, "openapi.json")
SWIFT = os.path.join(ROOT, "Sources", "GuestModeServer", "Support", "OpenAPIDocument.swift")
CODES = os.path.join(ROOT, "Sources", "GuestModeKit", "Store", "GuestModeError.swift")


def ref(name):
    return {"$ref": "#/components/schemas/" + name}


def nullable(schema):
    """A value or null (nothing): a type list, the form generators read as an optional (an anyOf with a
    null branch is dropped by some)."""
    if "$ref" in schema or "type" not in schema:
        return {"anyOf": [schema, {"type": "null"}]}  # for_generators refuses it: give the type a null
    result = dict(schema)
    result["type"] = [schema["type"], "null"]
    if "enum" in schema:
        result["enum"] = schema["enum"] + [None]
    return result


STRING = {"type": "string"}
AMOUNT = {"anyOf": [{"type": "number"}, {"type": "string"}], "description": "A number, or a string holding a decimal."}

# Request bodies: what each route reads (members it does not know are ignored).
BODIES = {
    "guest-new": {
        "type": "object",
        "properties": {"device": nullable(STRING)},
        "description": "Empty, or the device the guest signs in from: an attribute of the new guest, never a way back to an existing one (a device keeps its refresh token for that).",
    },
    "session-refresh": {
        "type": "object",
        "properties": {"refresh_token": STRING},
        "required": ["refresh_token"],
    },
    "merge": {
        "type": "object",
        "properties": {
            "guest_token": nullable(STRING),
            "guest": nullable(STRING),
            "policy": {"type": "string", "enum": ["keep-guest", "keep-account", "union"]},
            "dry_run": nullable({"type": "boolean"}),
        },
        "required": ["policy"],
        "description": "The guest proven by its own access or refresh token (guest_token), or, with a "
                       "user-data key, named (guest); dry_run answers what a merge would do and changes nothing.",
    },
    "migration": {
        "type": "object",
        "properties": {
            "guest_token": nullable(STRING),
            "guest": nullable(STRING),
            "dry_run": nullable({"type": "boolean"}),
            "resume": nullable({"type": "boolean"}),
        },
        "description": "The guest proven as for a merge; dry_run answers the plan and changes nothing; resume "
                       "continues an unfinished migration from its first unfinished step.",
    },
    "conflict-restore": {
        "type": "object",
        "properties": {"key": nullable(STRING)},
        "description": "Empty, or the key to restore the record under (default: KEY~restored, KEY~restored2, ...).",
    },
    "session-new": {
        "type": "object",
        "properties": {
            "provider": STRING,
            "id_token": nullable(STRING),
            "nonce": nullable(STRING),
            "subject": nullable(STRING),
            "email": nullable(STRING),
        },
        "required": ["provider"],
        "description": "The identity: an OpenID Connect ID token of a provider --oidc names (no credential "
                       "needed), or, with a user-data key, the subject a backend verified itself.",
    },
    "record": {"type": "object", "description": "The record: any JSON object."},
    "meter-use": {
        "type": "object",
        "properties": {
            "amount": AMOUNT,
            "id": nullable(STRING),
            "overage": {"type": "string", "enum": ["allow", "refuse"]},
        },
        "required": ["amount"],
    },
    "meter-check": {
        "type": "object",
        "properties": {"amount": {"type": ["number", "string", "null"],
                                  "description": "A number, or a string holding a decimal."}},
        "description": "Empty, or the amount about to be used (default: anything left); the query's amount instead.",
    },
    "meter-grant": {
        "type": "object",
        "properties": {
            "amount": AMOUNT,
            "expires": nullable({"type": "string", "description": "A duration: P30D, 30d."}),
            "until": nullable({"type": "string", "format": "date-time"}),
            "reason": nullable(STRING),
            "id": nullable(STRING),
        },
        "required": ["amount"],
    },
    "prompt-record": {
        "type": "object",
        "properties": {
            "context": STRING,
            "outcome": {"type": "string", "enum": ["shown", "dismissed", "later", "never", "completed"]},
        },
        "required": ["context", "outcome"],
    },
    "purchase": {
        "type": "object",
        "properties": {
            "signed_transaction": {"type": "string", "description": "StoreKit 2's jwsRepresentation of the "
                                   "transaction: a JWS the App Store signed (ES256, x5c)."},
        },
        "required": ["signed_transaction"],
        "additionalProperties": False,
    },
    "app-store-notification": {
        "type": "object",
        "properties": {
            "signedPayload": {"type": "string", "description": "The notification: a JWS the App Store signed "
                              "(responseBodyV2DecodedPayload)."},
        },
        "required": ["signedPayload"],
    },
    "plan-grant": {
        "type": "object",
        "properties": {
            "plan": STRING,
            "trial": nullable({"type": "string", "description": "A duration: P7D, 24h."}),
            "until": nullable({"type": "string", "format": "date-time"}),
        },
        "required": ["plan"],
    },
    "event": {
        "type": "object",
        "properties": {
            "action": STRING,
            "count": nullable({"type": "integer", "minimum": 1, "maximum": 1000000000}),
            "id": nullable(STRING),
            "props": nullable({
                "type": "object",
                "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            }),
        },
        "required": ["action"],
    },
    # One object, as the server reads it (IdentityBody): a oneOf of the two ways needed a `not` to keep
    # them apart, which generators cannot read.
    "identity": {
        "type": "object",
        "properties": {
            "provider": STRING,
            "id_token": nullable(STRING),
            "nonce": nullable(STRING),
            "subject": nullable(STRING),
            "email": nullable(STRING),
        },
        "required": ["provider"],
        "description": "The identity, one of two ways: the provider's OpenID Connect ID token (id_token, "
                       "and nonce), which the server verifies (serve --oidc) and the guest's own session may "
                       "send; or, with a user-data key, the subject (and email) the app's backend verified. "
                       "Not both.",
    },
}

# RevenueCat's webhook body (POST /v1/integrations/revenuecat): the members guestmode reads, as RevenueCat
# documents them; every other member (RevenueCat adds some without notice) is ignored.
MILLISECONDS = {"type": ["integer", "null"], "minimum": 0, "description": "Milliseconds since 1970."}
BODIES["revenuecat-event"] = {
    "type": "object",
    "properties": {
        "api_version": {"type": "string", "description": "1.0; any 1.x is read."},
        "event": {
            "type": "object",
            "properties": {
                "id": STRING,
                "type": {"type": "string", "description": "INITIAL_PURCHASE, RENEWAL, PRODUCT_CHANGE, CANCELLATION, "
                         "UNCANCELLATION, NON_RENEWING_PURCHASE, BILLING_ISSUE, EXPIRATION, TRANSFER, "
                         "SUBSCRIPTION_EXTENDED, TEST; any other is acknowledged and changes nothing."},
                "app_user_id": nullable(STRING),
                "original_app_user_id": nullable(STRING),
                "aliases": nullable({"type": "array", "items": STRING}),
                "transferred_from": nullable({"type": "array", "items": STRING}),
                "transferred_to": nullable({"type": "array", "items": STRING}),
                "entitlement_ids": nullable({"type": "array", "items": STRING}),
                "entitlement_id": nullable(STRING),
                "product_id": nullable(STRING),
                "period_type": nullable({"type": "string", "description": "TRIAL, INTRO, NORMAL, PROMOTIONAL, PREPAID."}),
                "purchased_at_ms": MILLISECONDS,
                "expiration_at_ms": MILLISECONDS,
                "event_timestamp_ms": {"type": "integer", "minimum": 0},
                "environment": {"type": "string", "enum": ["PRODUCTION", "SANDBOX"]},
                "original_transaction_id": nullable(STRING),
                "transaction_id": nullable(STRING),
                "store": nullable(STRING),
                "cancel_reason": nullable(STRING),
                "grace_period_expiration_at_ms": MILLISECONDS,
            },
            "required": ["id", "type", "event_timestamp_ms", "environment"],
        },
    },
    "required": ["api_version", "event"],
    "description": "A RevenueCat webhook event as RevenueCat sends it.",
}

# Documents only the server answers (the others are schemas/*.json as the commands print them).
SERVER_SCHEMAS = {
    "revenuecat-receipt": {
        "type": "object",
        "title": "POST /v1/integrations/revenuecat: what became of the event",
        "properties": {
            "event_id": STRING,
            "type": STRING,
            "outcome": {"type": "string", "enum": ["applied", "duplicate", "superseded", "unknown_user", "ignored"]},
            "user_id": {"type": ["string", "null"]},
            "plans": {"type": "array", "items": STRING},
            "note": {"type": ["string", "null"]},
        },
        "required": ["event_id", "type", "outcome", "user_id", "plans", "note"],
        "additionalProperties": False,
    },
    "app-store-outcome": {
        "type": "object",
        "title": "POST /v1/integrations/app-store: what was done with the notification",
        "properties": {"outcome": {"type": "string", "enum": [
            "applied", "duplicate", "superseded", "unknown_user", "acknowledged"]}},
        "required": ["outcome"],
        "additionalProperties": False,
    },
    "status": {
        "type": "object",
        "properties": {"status": STRING},
        "required": ["status"],
        "additionalProperties": False,
    },
    "pushed-backup": {
        "type": "object",
        "title": "POST /v1/users/{user}/backups: the backup the server made of the user and kept",
        "properties": {"name": STRING, "sequence": {"type": "integer", "minimum": 1},
                       "size": {"type": "integer", "minimum": 0}},
        "required": ["name", "sequence", "size"],
        "additionalProperties": False,
    },
    "pushed-backups": {
        "type": "array",
        "title": "GET /v1/users/{user}/backups: the archives the user pushed, oldest first",
        "items": {
            "type": "object",
            "properties": {"name": STRING, "sequence": {"type": "integer", "minimum": 1},
                           "size": {"type": "integer", "minimum": 0}},
            "required": ["name", "sequence", "size"],
            "additionalProperties": False,
        },
    },
    "sessions-revoked": {
        "type": "object",
        "title": "POST /v1/sessions/revoke and DELETE /v1/users/{user}/sessions: the sessions revoked",
        "properties": {"user_id": STRING, "revoked": {"type": "integer", "minimum": 0}},
        "required": ["user_id", "revoked"],
        "additionalProperties": False,
    },
    "jwks": {
        "type": "object",
        "title": "GET /.well-known/jwks.json: the public keys access tokens are verified with (RFC 7517)",
        "properties": {"keys": {"type": "array", "items": {
            "type": "object",
            "properties": {"kty": {"const": "EC"}, "crv": {"const": "P-256"}, "use": {"const": "sig"},
                           "alg": {"const": "ES256"}, "kid": STRING, "x": STRING, "y": STRING},
            "required": ["kty", "crv", "use", "alg", "kid", "x", "y"],
            "additionalProperties": False,
        }}},
        "required": ["keys"],
        "additionalProperties": False,
    },
}

# Each route: method, path, summary, who may call it (None: no credential; "session": a session of the
# user or a user-data key; "user-data", "admin": a server key of that scope; "any": any credential),
# its query parameters, its body, and its answers by status besides the errors every route may answer.
# An answer is a schema name, ("refusal", schema) for an error document carrying the refused call's
# document, or a media type for a body that is not JSON.
ROUTES = [
    ("post", "/v1/guests", "Sign a guest in: guest new and a session.", None, {}, "guest-new",
     {"201": "session", "200": "session", "429": "error"}),
    ("post", "/v1/sessions/refresh", "Spend a refresh token for a new session.", None, {}, "session-refresh",
     {"200": "session", "401": "error"}),
    ("post", "/v1/sessions", "Sign a person in by an identity: the session of the user holding it, or a new "
     "account user with it.", None, {}, "session-new", {"201": "session", "200": "session", "401": "error",
                                                        "403": "error", "429": "error"}),
    ("post", "/v1/sessions/revoke", "Sign out: revoke the refresh token's session.", None, {}, "session-refresh",
     {"200": "sessions-revoked", "401": "error"}),
    ("get", "/v1/me", "user show of the session's own user (a server key has none: 400).", "session", {}, None,
     {"200": "user-show", "400": "error", "404": "error"}),
    ("get", "/v1/users", "user list: every user; with one of identity, email or device, user find: the users a "
     "person names (an empty list when none).", "admin",
     {"identity": {"type": "string", "description": "PROVIDER:SUBJECT, such as apple:001234.abcd."},
      "email": {"type": "string", "description": "An email an identity carries, or an email identity's subject "
                "when it carries none; ASCII letters in either case."},
      "device": {"type": "string", "description": "The device id guests were created with."}},
     None, {"200": "user-list"}),
    ("get", "/v1/users/{user}", "user show.", "session", {}, None, {"200": "user-show"}),
    ("delete", "/v1/users/{user}", "user delete: every row of the user, its pushed backups and sessions.",
     "session", {}, None, {"200": "user-delete"}),
    ("delete", "/v1/users/{user}/sessions", "Revoke every session of the user.", "user-data", {}, None,
     {"200": "sessions-revoked"}),
    ("post", "/v1/users/{user}/merges", "merge: a guest folded into this account, with proof of the guest.",
     "session", {}, "merge", {"200": "merge", "403": "error", "409": "error", "422": "error"}),
    ("post", "/v1/users/{user}/migrations", "migrate: a guest moved into this account step by step, with proof "
     "of the guest, after a safety backup (with --backups-dir).", "session", {}, "migration",
     {"200": "migration", "403": "error", "409": "error", "422": "error"}),
    ("get", "/v1/users/{user}/merge-conflicts", "merge conflicts list: the user's records that lost a merge.",
     "session", {}, None, {"200": "merge-conflicts-list"}),
    ("post", "/v1/users/{user}/merge-conflicts/{id}/restore", "merge conflicts restore: one back under a new key.",
     "session", {}, "conflict-restore", {"200": "merge-conflicts-restore", "409": "error", "422": "error"}),
    ("put", "/v1/users/{user}/records/{collection}/{key}", "record put: the body is the record.", "session", {},
     "record", {"201": "record-put", "200": "record-put", "403": ("refusal", "record-put"),
                "402": ("refusal", "record-put"), "422": "error"}),
    ("get", "/v1/users/{user}/records/{collection}/{key}", "record get.", "session", {}, None,
     {"200": "record-get"}),
    ("delete", "/v1/users/{user}/records/{collection}/{key}", "record delete.", "session", {}, None,
     {"200": "record-delete"}),
    ("get", "/v1/users/{user}/records/{collection}", "record list, a page at a time.", "session",
     {"after": {"type": "string",
                "description": "Only the records whose key comes after this one (byte order): the last key of the "
                               "page before."},
      "limit": {"type": "integer", "minimum": 1, "maximum": 1000,
                "description": "At most this many; 1000 when not given. A page shorter than its limit is the last."}},
     None, {"200": "record-list"}),
    ("get", "/v1/users/{user}/limits", "limit: every capped collection, or one.", "session",
     {"collection": STRING}, None, {"200": "limit"}),
    ("get", "/v1/users/{user}/meters", "meter status: every meter.", "session", {}, None, {"200": "meter-status"}),
    ("get", "/v1/users/{user}/meters/{meter}", "meter status of one meter.", "session", {}, None,
     {"200": "meter-status-one"}),
    ("get", "/v1/users/{user}/meters/{meter}/check", "meter check: the gate before a paid call; a pure read: "
     "a refusal raises nothing, and names the prompt an earlier refusal left due.",
     "session", {"amount": {"type": "string", "description": "A positive decimal; default: anything left."}},
     None, {"200": "meter-check", "402": ("refusal", "meter-check")}),
    ("post", "/v1/users/{user}/meters/{meter}/check", "meter check --raise-prompt: the gate, whose refusal raises "
     "the meter's prompt triggers and meter.exhausted webhook and names the prompt due.",
     "session", {"amount": {"type": "string", "description": "A positive decimal; or the body's amount."}},
     "meter-check", {"200": "meter-check", "402": ("refusal", "meter-check")}),
    ("post", "/v1/users/{user}/meters/{meter}/use", "meter use.", "session", {}, "meter-use",
     {"200": "meter-use", "402": ("refusal", "meter-use"), "422": "error"}),
    ("get", "/v1/users/{user}/meters/{meter}/grants", "meter grants.", "session", {}, None,
     {"200": "meter-grants"}),
    ("post", "/v1/users/{user}/meters/{meter}/grants", "meter grant: billing's or support's work.", "admin", {},
     "meter-grant", {"200": "meter-grant", "422": "error"}),
    ("get", "/v1/users/{user}/prompts/next", "prompt next: the prompt due, or the decision when none is.",
     "session", {"trigger": STRING, "explain": {"type": "string", "enum": ["true", "false"]}}, None,
     {"200": "prompt-next-or-explain"}),
    ("post", "/v1/users/{user}/prompts", "prompt record.", "session", {}, "prompt-record",
     {"200": "prompt-record", "422": "error"}),
    ("post", "/v1/users/{user}/prompts/reset", "prompt reset.", "session", {}, None, {"200": "prompt-reset"}),
    ("get", "/v1/users/{user}/prompts/history", "prompt history.", "session", {}, None,
     {"200": "prompt-history"}),
    ("get", "/v1/users/{user}/plans", "plan status: the tier and every plan the user held.", "session", {}, None,
     {"200": "plan-status"}),
    ("post", "/v1/users/{user}/plans", "plan grant: billing's work.", "admin", {}, "plan-grant",
     {"200": "plan-change", "409": "error", "422": "error"}),
    ("delete", "/v1/users/{user}/plans/{plan}", "plan revoke.", "admin", {}, None, {"200": "plan-change"}),
    ("post", "/v1/users/{user}/purchases", "A StoreKit 2 transaction the app just made (its jwsRepresentation), "
     "verified as Apple signs it (serve --app-store-root-ca) and applied to the user's plan: the plan status.",
     "session", {}, "purchase", {"200": "plan-status", "401": "error", "403": "error", "404": "error",
                                 "409": "error", "422": "error"}),
    ("post", "/v1/integrations/app-store", "App Store Server Notifications V2, as Apple posts them: the signature "
     "is the credential; 200 with what was done for every notification that verifies, 401 for one that does not.",
     None, {}, "app-store-notification", {"200": "app-store-outcome", "401": "error", "403": "error",
                                          "404": "error"}),
    ("post", "/v1/users/{user}/experiments", "experiment assign: sticky variants.", "session",
     {"experiment": STRING}, None, {"200": "experiment-assign"}),
    ("get", "/v1/users/{user}/counters", "counters.", "session", {}, None, {"200": "counters"}),
    ("post", "/v1/users/{user}/events", "track.", "session", {}, "event", {"200": "track", "422": "error"}),
    ("get", "/v1/users/{user}/events", "user events.", "session",
     {"action": STRING, "since": {"type": "string", "format": "date-time"},
      "limit": {"type": "integer", "minimum": 1, "maximum": 1000,
                "description": "The latest this many, listed oldest first; 1000 when not given, and at most 1000 "
                               "(the whole history is in GET /v1/users/{user}/backup)."}}, None,
     {"200": "user-events"}),
    ("post", "/v1/users/{user}/identities",
     "link: an app backend that verified the provider's sign-in, or the guest with the provider's ID token.",
     "session", {}, "identity", {"201": "identity-change", "200": "identity-change", "403": "error", "409": "error",
                                 "422": "error"}),
    ("delete", "/v1/users/{user}/identities/{provider}", "unlink.", "user-data", {}, None,
     {"200": "identity-change"}),
    ("post", "/v1/events/bulk", "track --from: an NDJSON event log, all or nothing.", "admin",
     {"create_users": {"type": "string", "enum": ["true", "false"]},
      "skip_invalid": {"type": "string", "enum": ["true", "false"]}},
     "application/x-ndjson", {"200": "track-ingest", "422": ("refusal-or-error", "track-ingest")}),
    ("post", "/v1/records/bulk", "record put --from: an NDJSON file of records, all or nothing.", "admin",
     {"on_conflict": {"type": "string", "enum": ["replace", "skip", "fail"]}}, "application/x-ndjson",
     {"200": "record-put-from", "404": "error", "409": "error", "422": "error", "403": "error", "402": "error"}),
    ("get", "/v1/users/{user}/backup", "backup export: the user's data, a signed tar.zst archive.", "session", {},
     None, {"200": "application/zstd"}),
    ("put", "/v1/backup", "backup import.", "admin",
     {"on_conflict": {"type": "string", "enum": ["fail", "skip", "replace"]}}, "application/octet-stream",
     {"200": "backup-import", "409": "error", "422": "error"}),
    ("get", "/v1/users/{user}/backups", "The archives the user pushed, oldest first (with --backups-dir).",
     "session", {}, None, {"200": "pushed-backups"}),
    ("post", "/v1/users/{user}/backups", "Back the user up now: the server exports the user's data and keeps it with "
     "the pushed archives (with --backups-dir); a retry with the same Idempotency-Key answers the backup kept.",
     "session", {}, None, {"201": "pushed-backup", "200": "pushed-backup"}),
    ("put", "/v1/users/{user}/backups/{name}", "A pushed archive, kept as an upload (with --backups-dir).",
     "session", {}, "application/octet-stream", {"201": None, "409": "error", "422": "error"}),
    ("move", "/v1/users/{user}/backups/{name}", "Keep an upload as the user's latest archive (with --backups-dir).",
     "session", {}, None, {"201": None}),
    ("get", "/v1/users/{user}/backups/{name}", "A kept archive, or the latest (with --backups-dir).", "session",
     {}, None, {"200": "application/octet-stream"}),
    ("get", "/v1/reports/{report}", "report funnel, prompts, experiments, usage or migrations.", "admin",
     {"since": {"type": "string", "format": "date-time"}, "until": {"type": "string", "format": "date-time"}},
     None, {"200": "report"}),
    ("get", "/v1/profile", "profile show: the profile the store is bound to.", "any", {}, None,
     {"200": "profile-show"}),
    ("post", "/v1/integrations/revenuecat", "RevenueCat's webhook (serve --revenuecat-authorization-file): the "
     "event changes the plans its entitlements map to, once per event id, never over a newer event; 200 whatever "
     "became of it (RevenueCat retries anything else), 401 without the Authorization value set in RevenueCat's "
     "dashboard, 404 revenuecat_not_configured on a server that takes none.", "revenuecat", {}, "revenuecat-event",
     {"200": "revenuecat-receipt", "404": "error", "422": "error"}),
    ("get", "/v1/openapi.json", "This document.", None, {}, None, {"200": "openapi"}),
    ("get", "/.well-known/jwks.json", "The public keys access tokens are verified with: every signing key not "
     "retired (Cache-Control: public, max-age=300).", None, {}, None, {"200": "jwks"}),
    ("get", "/healthz", "The process answers.", None, {}, None, {"200": "status"}),
    ("get", "/readyz", "The store answers and its schema is current.", None, {}, None, {"200": "status"}),
    ("get", "/metrics", "Request and store-pool metrics in Prometheus's text format.", None, {}, None,
     {"200": "text/plain"}),
]

PATH_PARAMETERS = {
    "user": "A user id; a session reaches only its own.",
    "collection": "A collection of the profile.",
    "key": "A record key, any text: as every path segment it travels percent-encoded (a / as %2F), which a "
           "generated client does itself.",
    "meter": "A meter of the profile.",
    "plan": "A plan of the profile.",
    "provider": "An identity provider: apple, google...",
    "name": "The archive's name (latest: the latest of any name).",
    "report": "The report.",
    "id": "A conflict_id, as the user's merge-conflicts list gives it.",
}

STORE_FREE = {"/healthz", "/metrics", "/v1/openapi.json"}

# The reports GET /v1/reports/{report} answers, each the document of `guestmode report NAME --json`.
REPORTS = ["funnel", "prompts", "experiments", "usage", "migrations"]

# Each operation's id: what a generated client names the call. A route without one here is named by its
# method and literal path segments (postUsersMetersCheck); ids must be unique.
OPERATION_IDS = {
    "POST /v1/guests": "createGuest",
    "POST /v1/sessions/refresh": "refreshSession",
    "POST /v1/sessions": "signIn",
    "POST /v1/sessions/revoke": "signOut",
    "GET /v1/me": "getMe",
    "GET /v1/users": "listUsers",
    "GET /v1/users/{user}": "getUser",
    "DELETE /v1/users/{user}": "deleteUser",
    "DELETE /v1/users/{user}/sessions": "revokeUserSessions",
    "POST /v1/users/{user}/merges": "mergeGuest",
    "POST /v1/users/{user}/migrations": "migrateGuest",
    "GET /v1/users/{user}/merge-conflicts": "listMergeConflicts",
    "POST /v1/users/{user}/merge-conflicts/{id}/restore": "restoreMergeConflict",
    "PUT /v1/users/{user}/records/{collection}/{key}": "putRecord",
    "GET /v1/users/{user}/records/{collection}/{key}": "getRecord",
    "DELETE /v1/users/{user}/records/{collection}/{key}": "deleteRecord",
    "GET /v1/users/{user}/records/{collection}": "listRecords",
    "GET /v1/users/{user}/limits": "getLimits",
    "GET /v1/users/{user}/meters": "listMeters",
    "GET /v1/users/{user}/meters/{meter}": "getMeter",
    "GET /v1/users/{user}/meters/{meter}/check": "checkMeter",
    "POST /v1/users/{user}/meters/{meter}/check": "checkMeterRaisingPrompt",
    "POST /v1/users/{user}/meters/{meter}/use": "useMeter",
    "GET /v1/users/{user}/meters/{meter}/grants": "listMeterGrants",
    "POST /v1/users/{user}/meters/{meter}/grants": "grantMeter",
    "GET /v1/users/{user}/prompts/next": "nextPrompt",
    "POST /v1/users/{user}/prompts": "recordPrompt",
    "POST /v1/users/{user}/prompts/reset": "resetPrompts",
    "GET /v1/users/{user}/prompts/history": "getPromptHistory",
    "GET /v1/users/{user}/plans": "getPlans",
    "POST /v1/users/{user}/plans": "grantPlan",
    "DELETE /v1/users/{user}/plans/{plan}": "revokePlan",
    "POST /v1/users/{user}/purchases": "recordPurchase",
    "POST /v1/integrations/app-store": "receiveAppStoreNotification",
    "POST /v1/users/{user}/experiments": "assignExperiment",
    "GET /v1/users/{user}/counters": "getCounters",
    "POST /v1/users/{user}/events": "trackEvent",
    "GET /v1/users/{user}/events": "listUserEvents",
    "POST /v1/users/{user}/identities": "linkIdentity",
    "DELETE /v1/users/{user}/identities/{provider}": "unlinkIdentity",
    "POST /v1/events/bulk": "importEvents",
    "POST /v1/records/bulk": "importRecords",
    "GET /v1/users/{user}/backup": "exportBackup",
    "PUT /v1/backup": "importBackup",
    "GET /v1/users/{user}/backups": "listBackups",
    "POST /v1/users/{user}/backups": "backUpUser",
    "PUT /v1/users/{user}/backups/{name}": "uploadBackup",
    "MOVE /v1/users/{user}/backups/{name}": "keepBackup",
    "GET /v1/users/{user}/backups/{name}": "downloadBackup",
    "GET /v1/reports/{report}": "getReport",
    "GET /v1/profile": "getProfile",
    "POST /v1/integrations/revenuecat": "receiveRevenueCatEvent",
    "GET /v1/openapi.json": "getOpenAPIDocument",
    "GET /healthz": "checkHealth",
    "GET /readyz": "checkReadiness",
    "GET /metrics": "getMetrics",
    "GET /.well-known/jwks.json": "getSigningKeys",
}

# One tag per area, by the path's first word after /v1 (or after /v1/users/{user}).
TAGS = {
    "guests": "guests", "sessions": "sessions", "me": "users", "users": "users", "merges": "identities",
    "migrations": "identities", "merge-conflicts": "identities",
    "identities": "identities", "records": "records", "limits": "records", "meters": "meters",
    "prompts": "prompts", "plans": "plans", "experiments": "experiments", "counters": "events",
    "events": "events", "backup": "backups", "backups": "backups", "reports": "reports", "profile": "profile",
    "purchases": "purchases", "integrations": "purchases",
}
TAG_DESCRIPTIONS = {
    "guests": "Signing a guest in.",
    "sessions": "Sessions: sign in, refresh, sign out.",
    "users": "Users: show, list, delete.",
    "identities": "An account's identities: link, unlink, a guest merged or migrated into the account, and the "
                  "merge conflicts.",
    "records": "A user's records and the caps on them.",
    "meters": "Metered usage: check, use, grants.",
    "prompts": "The sign-in and upgrade prompts.",
    "plans": "Plans and tiers.",
    "purchases": "Purchases: a StoreKit 2 transaction the app sends, the App Store's own notifications "
                 "(serve --app-store-root-ca) and RevenueCat's webhooks (serve --revenuecat-authorization-file) "
                 "become plans.",
    "experiments": "Experiments' sticky variants.",
    "events": "Events and counters.",
    "backups": "Backup archives: export, import, push and pull.",
    "reports": "Reports over every user.",
    "profile": "The profile the store is bound to.",
    "service": "The server itself: this document, health, readiness, metrics, the keys its tokens are signed with.",
}


def tag(path):
    words = [word for word in path.split("/") if word and word != "v1" and not word.startswith("{")]
    if path.startswith("/v1/users/{user}/") and len(words) > 1:
        words = words[1:]
    return TAGS.get(words[0] if words else "", "service")


def operation_id(method, path):
    known = OPERATION_IDS.get(method.upper() + " " + path)
    if known:
        return known
    words = [word for word in re.split(r"[/._-]", path) if word and word != "v1" and not word.startswith("{")]
    return method.lower() + "".join(word[:1].upper() + word[1:] for word in words)


# Component names as generated clients name the types: a schema of schemas/NAME.json, of the server's
# documents or of a request body is served under the name here, or else its words in CamelCase.
TYPE_NAMES = {
    "session": "Session",
    "error": "ErrorDocument",  # not Error (swift-openapi-generator: _Error) nor ErrorResponse (openapi-generator swift6 reserves it)
    "error-code": "ErrorCode",
    "refusal": "Refusal",
    "refusal-prompt": "RefusalPrompt",
    "user-show": "UserDetails",
    "user-list": "UserList",
    "user-delete": "UserDeletion",
    "sessions-revoked": "SessionsRevoked",
    "jwks": "JSONWebKeySet",
    "merge": "MergeResult",
    "migration": "Migration",
    "migrate-run": "MigrationRun",
    "migrate-plan": "MigrationPlan",
    "merge-conflicts-list": "MergeConflictList",
    "merge-conflicts-restore": "MergeConflictRestore",
    "body-migration": "MigrateGuestRequest",
    "body-conflict-restore": "RestoreConflictRequest",
    "record-put": "RecordWrite",
    "record-get": "Record",
    "record-delete": "RecordDeletion",
    "record-list": "RecordList",
    "limit": "LimitList",
    "meter-status": "MeterStatusList",
    "meter-status-one": "MeterStatus",
    "meter-check": "MeterCheck",
    "meter-use": "MeterUse",
    "meter-grants": "MeterGrantList",
    "meter-grant": "MeterGrant",
    "prompt-next": "Prompt",
    "prompt-content": "PromptContent",
    "prompt-variant": "PromptVariant",
    "prompt-explain": "PromptExplanation",
    "prompt-next-or-explain": "PromptDecision",
    "prompt-record": "PromptOutcome",
    "prompt-reset": "PromptReset",
    "prompt-history": "PromptHistory",
    "plan-status": "PlanStatus",
    "plan-change": "PlanChange",
    "experiment-assign": "ExperimentAssignment",
    "counters": "Counters",
    "track": "TrackedEvent",
    "user-events": "UserEventList",
    "identity-change": "IdentityChange",
    "track-ingest": "EventImport",
    "record-put-from": "RecordImport",
    "backup-import": "BackupImport",
    "pushed-backups": "PushedBackupList",
    "pushed-backup": "PushedBackup",
    "report": "Report",
    "report-funnel": "FunnelReport",
    "report-prompts": "PromptsReport",
    "report-experiments": "ExperimentsReport",
    "report-usage": "UsageReport",
    "report-migrations": "MigrationsReport",
    "profile-show": "Profile",
    "openapi": "OpenAPIDocument",
    "status": "HealthStatus",
    "body-guest-new": "CreateGuestRequest",
    "body-session-refresh": "RefreshTokenRequest",
    "body-merge": "MergeRequest",
    "body-session-new": "SignInRequest",
    "body-record": "RecordData",
    "body-meter-use": "UseMeterRequest",
    "body-meter-grant": "GrantMeterRequest",
    "body-prompt-record": "RecordPromptRequest",
    "body-plan-grant": "GrantPlanRequest",
    "body-revenuecat-event": "RevenueCatEvent",
    "revenuecat-receipt": "RevenueCatReceipt",
    "body-purchase": "RecordPurchaseRequest",
    "body-app-store-notification": "AppStoreNotificationRequest",
    "app-store-outcome": "AppStoreNotificationOutcome",
    "body-event": "TrackEventRequest",
    "body-identity": "LinkIdentityRequest",
}


def type_name(name):
    """The served name of component `name`; a refused call's envelope is named after its document."""
    if name.endswith("-refused"):
        return type_name(name[: -len("-refused")]) + "Refused"
    return TYPE_NAMES.get(name) or "".join(word.capitalize() for word in re.split(r"[-_]", name))


def load_schemas():
    schemas = {}
    for file in sorted(os.listdir(SCHEMAS)):
        if not file.endswith(".json") or file == "openapi.json":
            continue
        with open(os.path.join(SCHEMAS, file), encoding="utf-8") as handle:
            schema = json.load(handle)
        # Under components/schemas the document's dialect (JSON Schema 2020-12) applies: draft-07's
        # keywords used here mean the same there.
        schema.pop("$schema", None)
        schema.pop("$id", None)
        schemas[file[: -len(".json")]] = schema
    return schemas


def error_codes():
    """Every code of GuestModeError.Code, as scripts/error-codes.py reads the catalogue."""
    with open(CODES, encoding="utf-8") as handle:
        catalogue = handle.read()
    codes = sorted(set(re.findall(r'case \w+ = "([a-z0-9_]+)"', catalogue[catalogue.index("public enum Code"):])))
    assert codes, "no error codes in " + os.path.relpath(CODES, ROOT)
    return codes


# Components whose inline copies elsewhere become references to them.
SHARED_TYPES = ["meter-status-one", "prompt-content", "prompt-variant", "body-record", "pushed-backup"]


def canonical(schema):
    """A schema's meaning as text: without its title and comments, type lists in one order."""
    def strip(node):
        if isinstance(node, dict):
            return {key: sorted(value, key=str) if key == "type" and isinstance(value, list) else strip(value)
                    for key, value in node.items() if key not in ("title", "$comment")}
        if isinstance(node, list):
            return [strip(value) for value in node]
        return node
    return json.dumps(strip(schema), sort_keys=True)


def deduplicated(node, shared, top=False):
    if isinstance(node, dict):
        if not top and canonical(node) in shared:
            return ref(shared[canonical(node)])
        return {key: deduplicated(value, shared) for key, value in node.items()}
    if isinstance(node, list):
        return [deduplicated(value, shared) for value in node]
    return node


def refused_results():
    """The documents of the calls a refusal answers with (("refusal", NAME) in ROUTES)."""
    return sorted({spec[1] for route in ROUTES for spec in route[6].values() if isinstance(spec, tuple)})


def components(schemas):
    result = dict(schemas)
    guest = copy.deepcopy(schemas["guest"])
    guest["title"] = "POST /v1/guests, /v1/sessions and /v1/sessions/refresh: the user and the session"
    guest["properties"].update({
        "access_token": {"type": "string", "description": "A JWT (ES256, kid in its header; verify it with "
                         "/.well-known/jwks.json): iss, aud, sub, is_anonymous, iat, exp."},
        "token_type": {"const": "bearer"},
        "expires_in": {"type": "integer"},
        "expires_at": {"type": "string", "format": "date-time"},
        "refresh_token": {"type": "string"},
    })
    guest["required"] = sorted(guest["required"] + [
        "access_token", "token_type", "expires_in", "expires_at", "refresh_token"])
    result["session"] = guest
    result["meter-status-one"] = copy.deepcopy(schemas["meter-status"]["items"])
    result["meter-status-one"]["title"] = "guestmode meter status USER METER --json"
    result["meter-status"] = dict(schemas["meter-status"], items=ref("meter-status-one"))
    result["migration"] = {"anyOf": [ref("migrate-run"), ref("migrate-plan")],
                           "description": "The migration run (MigrationRun), or its plan with dry_run (MigrationPlan)."}
    result["prompt-next-or-explain"] = {"anyOf": [ref("prompt-next"), ref("prompt-explain")],
                                        "description": "The prompt due (Prompt), or the decision when none is or "
                                                       "with explain (PromptExplanation)."}
    result["report"] = {"anyOf": [ref("report-" + name) for name in REPORTS]}
    result["openapi"] = {"type": "object", "properties": {"openapi": STRING, "paths": {"type": "object"}},
                         "required": ["openapi", "paths"]}
    result.update(SERVER_SCHEMAS)
    for name, body in BODIES.items():
        result["body-" + name] = body
    # The error document, its code one of the catalogue's.
    error = copy.deepcopy(schemas["error"])
    error["properties"]["error"]["properties"]["code"] = ref("error-code")
    result["error"] = error
    result["error-code"] = {
        "type": "string", "enum": error_codes(),
        "description": "A stable name of a failure, from the catalogue of guestmode(1), EXIT STATUS, Error codes; "
                       "a later server may add codes.",
    }
    # A refusal the app acts on: the error with the prompt it raised (Refusal), and the refused call's
    # document (one envelope per call, named after the document: MeterUseRefused).
    result["refusal"] = {
        "type": "object",
        "description": "Why a call was refused (needs_account, needs_premium, meter_exhausted...) and the prompt "
                       "the refusal raised, null when none is due.",
        "properties": {
            "code": ref("error-code"),
            "message": {"type": "string", "minLength": 1},
            "prompt": ref("refusal-prompt"),
        },
        "required": ["code", "message", "prompt"],
        "additionalProperties": False,
    }
    # A Prompt or null: a type list on a schema of its own, the nullable reference both Apple's and
    # Python's generators read (an anyOf of a $ref and null is dropped by swift-openapi-generator).
    # Its inner objects are components of their own, which Prompt shares (openapi-python-client makes a
    # nullable object's inline objects twice, and fails).
    result["prompt-next"] = copy.deepcopy(schemas["prompt-next"])
    result["prompt-content"] = result["prompt-next"]["properties"]["content"]
    result["prompt-next"]["properties"]["content"] = ref("prompt-content")
    result["prompt-variant"] = result["prompt-next"]["properties"]["variants"]["items"]
    result["prompt-next"]["properties"]["variants"]["items"] = ref("prompt-variant")
    prompt = copy.deepcopy(result["prompt-next"])
    prompt.pop("title", None)
    prompt["type"] = ["object", "null"]
    prompt["description"] = "The prompt a refusal raised (a Prompt), or null."
    result["refusal-prompt"] = prompt
    # An inline copy of a shared type is a reference to it: a meter check's and a meter use's status is a
    # MeterStatus, and so on (one type in a generated client, not one per place).
    shared = {canonical(result[name]): name for name in SHARED_TYPES}
    for name in list(result):
        result[name] = deduplicated(result[name], shared, top=True)
    for name in refused_results():
        result[name + "-refused"] = {
            "type": "object",
            "description": "A refused call: the refusal, and the call's document (nothing was done).",
            "properties": {"error": ref("refusal"), "result": ref(name)},
            "required": ["error", "result"],
            "additionalProperties": False,
        }
    return result


BINARY = {"type": "string", "format": "binary"}


def media(media_type):
    """The content of a body that is not JSON: bytes (a compressed archive also as
    application/octet-stream, the binary type every generator reads), or text."""
    if media_type.startswith("text/"):
        return {media_type: {"schema": {"type": "string"}}}
    content = {media_type: {"schema": dict(BINARY)}}
    content.setdefault("application/octet-stream", {"schema": dict(BINARY)})
    return content


def json_content(schema):
    return {"application/json": {"schema": schema}}


def answer(status, spec):
    descriptions = {
        "200": "Done.", "201": "Created.", "400": "A usage error: a bad parameter, a missing member.",
        "401": "No valid credential (WWW-Authenticate: Bearer).",
        "402": "needs_premium or meter_exhausted.", "403": "needs_account or insufficient_scope.",
        "404": "Not found: no such user (or another user's, for a session), record, route...",
        "408": "request_timeout: the body did not arrive within --body-timeout, or came slower than "
               "--min-body-rate; nothing was done.",
        "409": "A conflict.", "413": "body_too_large.", "422": "Bad data.",
        "429": "rate_limited (Retry-After): too many guests created, or requests being answered, from this address.", "500": "An internal failure; the message says nothing of the inside.",
        "503": "Try again later (Retry-After: 1): the store is busy, no connection was free, the server is answering "
               "--max-requests requests already or holds --body-memory bytes of request bodies (--upload-space of pushed "
               "archives), a key set could not be fetched, or the store's schema is not current.",
    }
    response = {"description": descriptions.get(status, "")}
    headers = {
        "401": {"WWW-Authenticate": {"schema": {"const": "Bearer"}, "required": True}},
        "429": {"Retry-After": {"description": "Seconds until a guest may be created again; 1 past "
                                               "--requests-per-address.",
                                "schema": {"type": "string", "pattern": "^[0-9]+$"}, "required": True}},
        "503": {"Retry-After": {"schema": {"const": "1"}, "required": True}},
    }.get(status, {})
    headers["X-Request-Id"] = {"description": "The request's id, as the access log names it.",
                               "schema": {"type": "string"}}
    response["headers"] = headers
    if spec is None:
        return response
    if isinstance(spec, tuple):
        kind, schema = spec
        if kind == "refusal":
            response["content"] = json_content(ref(schema + "-refused"))
        else:
            response["content"] = json_content({"anyOf": [ref(schema + "-refused"), ref("error")]})
        return response
    if "/" in spec:
        response["content"] = media(spec)
        return response
    response["content"] = json_content(ref(spec))
    return response


EXAMPLE_USER_ID = "4b1e5c7a-0d2f-4f8e-9a51-3c6d2b7e8f10"
# A request body each route takes, as guestmode-serve(1) shows it (schemathesis's examples phase sends them).
EXAMPLES = {
    "guest-new": {"device": "phone-1"},
    "session-refresh": {"refresh_token": "a-refresh-token"},
    "session-new": {"provider": "apple", "id_token": "an-id-token", "nonce": "a-nonce"},
    "merge": {"guest_token": "the-guest-access-token", "policy": "keep-account", "dry_run": True},
    "migration": {"guest_token": "the-guest-access-token", "dry_run": True},
    "conflict-restore": {"key": "theme~kept"},
    "record": {"name": "Netflix", "price": 15.49},
    "meter-check": {"amount": 20},
    "meter-use": {"amount": 12.5, "id": "call-7", "overage": "allow"},
    "meter-grant": {"amount": 30, "expires": "P30D", "reason": "referral", "id": "referral-1"},
    "prompt-record": {"context": "guest_cap_reached", "outcome": "dismissed"},
    "plan-grant": {"plan": "premium", "trial": "P7D"},
    "revenuecat-event": {"api_version": "1.0", "event": {
        "id": "CD489E0E-5D52-4E03-966B-A7F17788E432", "type": "INITIAL_PURCHASE", "app_user_id": EXAMPLE_USER_ID,
        "original_app_user_id": EXAMPLE_USER_ID, "aliases": [EXAMPLE_USER_ID], "entitlement_ids": ["premium"],
        "product_id": "voice_premium_monthly", "period_type": "TRIAL", "purchased_at_ms": 1793527200000,
        "expiration_at_ms": 1796205600000, "event_timestamp_ms": 1793527201000, "environment": "PRODUCTION",
        "original_transaction_id": "2000000123456789", "transaction_id": "2000000123456789",
        "store": "APP_STORE"}},
    "purchase": {"signed_transaction": "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF...In0.eyJ0cmFuc2FjdGlvbklkIjoi...In0.c2ln"},
    "app-store-notification": {"signedPayload": "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF...In0.eyJub3RpZmljYXRpb25UeXBlIjoi...In0.c2ln"},
    "event": {"action": "app_opened", "count": 1, "id": "open-7", "props": {"screen": "home"}},
    "identity": {"provider": "apple", "subject": "001234.abcd", "email": None},
}
# An answer of each main route, as a voice app's guest gets it (scripts/check-openapi-clients.py checks
# each against its schema).
EXAMPLE_USER = "4b1e5c7a-0d2f-4f8e-9a51-3c6d2b7e8f10"
EXAMPLE_SESSION = {
    "access_token": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0YjFlNWM3YSJ9.c2lnbmF0dXJl",
    "created_at": "2026-11-01T10:00:00.000Z", "device": "phone-1", "expires_at": "2026-11-01T11:00:00.000Z",
    "expires_in": 3600, "last_seen_at": "2026-11-01T10:00:00.000Z", "linked_at": None, "new": True,
    "prompt_state": "anonymous", "refresh_token": "gmr_58ccaa7dd9451e1c26fa9a69d1c48586",
    "state": "anonymous", "token_type": "bearer", "user_id": EXAMPLE_USER,
}
EXAMPLE_METER = {
    "allowance": 60, "granted": 0, "grants": [], "level": "none", "meter": "api_minutes", "percent_used": 20.833333,
    "period_start": None, "remaining": 47.5, "tier": "guest", "unit": "minutes", "used": 12.5,
}
EXAMPLE_USE = {"allowed": True, "duplicate": False, "overage": False, "recorded": True, "status": EXAMPLE_METER,
               "warnings": []}
EXAMPLE_PROMPT = {
    "content": {"benefits": ["Unlimited minutes", "A free first month"],
                "message": "You have 47.5 free minutes left, not enough for that. Premium has no limit.",
                "primary_action": "Start my free month", "secondary_action": "Not now", "style": "sheet",
                "title": "Not enough minutes left"},
    "context": "session_refused", "priority": "high", "trigger": "minutes_refused", "user_id": EXAMPLE_USER,
    "variants": [],
}
RESPONSE_EXAMPLES = {
    "POST /v1/guests": {"201": EXAMPLE_SESSION},
    "POST /v1/sessions/refresh": {"200": dict(EXAMPLE_SESSION, new=False)},
    "PUT /v1/users/{user}/records/{collection}/{key}": {"201": {
        "limit": {"cap": None, "collection": "settings", "outcome": "allowed", "tier": "guest", "used": None},
        "outcome": "allowed", "replacement": False}},
    "GET /v1/users/{user}/records/{collection}/{key}": {
        "200": {"collection": "settings", "created_at": "2026-11-01T10:00:00.000Z", "data": {"dark": True},
                "key": "theme", "updated_at": "2026-11-01T10:00:00.000Z", "user_id": EXAMPLE_USER},
        "404": {"error": {"code": "record_not_found", "message": "no record settings/theme"}}},
    "GET /v1/users/{user}/meters/{meter}/check": {"200": {
        "allowed": True, "requested": 30, "status": EXAMPLE_METER}},
    "POST /v1/users/{user}/meters/{meter}/use": {
        "200": EXAMPLE_USE,
        "402": {"error": {"code": "meter_exhausted",
                          "message": "60 minutes asked, 47.5 left of api_minutes",
                          "prompt": EXAMPLE_PROMPT},
                "result": dict(EXAMPLE_USE, allowed=False, recorded=False)}},
    "GET /v1/users/{user}/prompts/next": {"200": EXAMPLE_PROMPT},
}
NDJSON_EXAMPLES = {
    "/v1/events/bulk": '{"user_id": "guest-1", "action": "app_opened", "id": "open-1"}\n',
    "/v1/records/bulk": '{"user_id": "guest-1", "collection": "settings", "key": "theme", "data": {"dark": true}}\n',
}


def operation(method, path, summary, caller, query, body, answers):
    operation = {"operationId": operation_id(method, path), "summary": summary, "tags": [tag(path)]}
    parameters = []
    for segment in path.split("/"):
        if segment.startswith("{"):
            name = segment[1:-1]
            schema = {"type": "string", "minLength": 1}
            if name == "report":
                schema = {"type": "string", "enum": REPORTS}
            parameters.append({"name": name, "in": "path", "required": True, "description": PATH_PARAMETERS[name],
                               "schema": schema})
    for name, schema in query.items():
        if schema == {"type": "string", "enum": ["true", "false"]}:
            schema = {"type": "boolean"}  # a flag: generated clients write true or false, as the server reads
        parameters.append({"name": name, "in": "query", "required": False, "schema": schema})
    if method == "post" and body != "application/x-ndjson" and not path.startswith(
            ("/v1/guests", "/v1/sessions", "/v1/integrations/")):
        parameters.append({
            "name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"},
            "description": "Answer this change once: a retry with the same key gets the kept answer."})
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        if body == "application/x-ndjson":
            # NDJSON as bytes: the server reads the body whatever its Content-Type, and generators have no
            # NDJSON type (openapi-python-client leaves out an operation whose only body is one).
            content = {"application/octet-stream": {"schema": dict(
                BINARY, description="NDJSON: one JSON object a line (sent as any Content-Type).")}}
            if path in NDJSON_EXAMPLES:
                content["application/octet-stream"]["example"] = NDJSON_EXAMPLES[path]
        elif "/" in body:
            content = media(body)
        else:
            content = json_content(ref("body-" + body))
            content["application/json"]["example"] = EXAMPLES[body]
        # Required whenever the body has required members: a generator sends nothing for an optional
        # body left out.
        required = "/" in body or body == "record" or bool(BODIES[body].get("required"))
        operation["requestBody"] = {"required": required, "content": content}
    statuses = dict(answers)
    uses_store = path not in STORE_FREE
    if caller is not None:
        statuses.setdefault("401", "error")
        if caller in ("admin", "user-data") or path == "/v1/users":
            statuses.setdefault("403", "error")
        operation["security"] = {
            "session": [{"sessionToken": []}, {"serverKey": ["user-data"]}],
            "user-data": [{"serverKey": ["user-data"]}],
            "admin": [{"serverKey": ["admin"]}],
            "any": [{"sessionToken": []}, {"serverKey": []}],
            "revenuecat": [{"revenueCatAuthorization": []}],
        }[caller]
    else:
        operation["security"] = []
    if "{" in path or query or body is not None:
        statuses.setdefault("400", "error")
    # The text rule (valid UTF-8, no U+0000: nul_in_text) runs on every path segment and query value.
    if "{" in path or query:
        statuses.setdefault("422", "error")
    if "{" in path:
        statuses.setdefault("404", "error")
    if body is not None:
        statuses.setdefault("408", "error")
        statuses.setdefault("413", "error")
        if "/" not in body:
            statuses.setdefault("422", "error")
    if "Idempotency-Key" in json.dumps(parameters):
        statuses.setdefault("422", "error")
    statuses.setdefault("500", "error")
    # Every route but the ones a monitor reads can be turned away by --requests-per-address (rate_limited).
    if path not in ("/healthz", "/readyz", "/metrics"):
        statuses.setdefault("429", "error")
    # Every route but the two a monitor reads can be turned away by --max-requests (server_busy).
    if uses_store or path not in ("/healthz", "/metrics"):
        statuses.setdefault("503", "error")
    operation["responses"] = {status: answer(status, statuses[status]) for status in sorted(statuses)}
    for status, example in RESPONSE_EXAMPLES.get(method.upper() + " " + path, {}).items():
        operation["responses"][status]["content"]["application/json"]["example"] = example
    if any(parameter["name"] == "Idempotency-Key" for parameter in parameters):
        for status, response in operation["responses"].items():
            if status < "500":
                response["headers"]["Idempotent-Replayed"] = {
                    "description": "true when this is the answer kept for the Idempotency-Key.",
                    "schema": {"const": "true"}}
    return operation


TIME_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$"
JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}
NOT_SCHEMAS = {"enum", "required", "example", "examples", "default", "$comment", "description", "pattern", "format"}


def for_generators(schema, member="", direct=False):
    """The schema in the forms client generators read, meaning the same to a validator: no title (which
    generators take for a type's name), `const` as a one-value enum, an anyOf/oneOf of a type and null as
    a type list, `format: date-time` on every time (the pattern of schemas/ or a member named *_at), and a
    member that is always null as a described any-value (generators have no null-only type)."""
    if isinstance(schema, list):
        return [for_generators(item, member) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema == {"type": "null"} and direct:
        return {"description": "Always null: the member's name is what it says."}
    result = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key == "properties":
            result[key] = {name: for_generators(item, name, direct=True) for name, item in value.items()}
        elif key in NOT_SCHEMAS:
            result[key] = value
        else:
            result[key] = for_generators(value, member if key in ("items", "anyOf", "oneOf") else "")
    if "const" in result:
        value = result.pop("const")
        result.update(type=JSON_TYPES[type(value)], enum=[value])
    for key in ("anyOf", "oneOf"):
        members = result.get(key, [])
        if {"type": "null"} in members:
            others = [item for item in members if item != {"type": "null"}]
            assert len(others) == 1 and isinstance(others[0].get("type"), str), \
                "a nullable reference or union (give it a schema with a type list, as refusal-prompt): %s" % schema
            merged = dict(others[0], type=[others[0]["type"], "null"])
            if "enum" in merged:
                merged["enum"] = merged["enum"] + [None]
            del result[key]
            result = dict(merged, **result)
    types = result.get("type")
    types = types if isinstance(types, list) else [types]
    if "string" in types and (result.get("pattern") == TIME_PATTERN or member.endswith("_at")):
        result["format"] = "date-time"
    return result


def referenced(node, names):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                names.add(value.rsplit("/", 1)[1])
            else:
                referenced(value, names)
    elif isinstance(node, list):
        for value in node:
            referenced(value, names)
    return names


def renamed(node):
    """`$ref`s to the components' served names (type_name)."""
    if isinstance(node, dict):
        return {key: "#/components/schemas/" + type_name(value.rsplit("/", 1)[1]) if key == "$ref" else renamed(value)
                for key, value in node.items()}
    if isinstance(node, list):
        return [renamed(value) for value in node]
    return node


def schemas_for_generators(node):
    """Every `schema` of the paths (bodies, parameters, headers) through for_generators."""
    if isinstance(node, dict):
        return {key: for_generators(value) if key == "schema" else schemas_for_generators(value)
                for key, value in node.items()}
    if isinstance(node, list):
        return [schemas_for_generators(value) for value in node]
    return node


def document():
    paths = {}
    ids = set()
    for method, path, summary, caller, query, body, answers in ROUTES:
        paths.setdefault(path, {})[method] = operation(method, path, summary, caller, query, body, answers)
        assert paths[path][method]["operationId"] not in ids, "two operations named " + operation_id(method, path)
        ids.add(paths[path][method]["operationId"])
    # OpenAPI has no MOVE operation: it is described as an extension of its path.
    for item in paths.values():
        if "move" in item:
            item["x-move"] = item.pop("move")
    # The schemas a route uses, and the ones they use: the command line's others are not served.
    every = components(load_schemas())
    served = referenced(paths, set())
    pending = list(served)
    while pending:
        for name in referenced(every[pending.pop()], set()) - served:
            served.add(name)
            pending.append(name)
    schemas = {}
    for name in sorted(served, key=type_name):
        schema = every[name]
        if "title" in schema and "description" not in schema:
            schema = dict(schema, description=schema["title"] + ".")
        schemas[type_name(name)] = for_generators(schema)
    assert len(schemas) == len(served), "two components with one name"
    tags = sorted({operation["tags"][0] for item in paths.values() for operation in item.values()})
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": "guestmode serve",
            "version": "1",
            "description": "The engine over HTTP (guestmode-serve(1)): every route under /v1 answers the "
            "document its command prints with --json; a failure answers the error document of schemas/error.json "
            "with one HTTP status per code. A member that is nothing is null in an answer; in a request it may "
            "be left out (or null). Times are ISO 8601 in UTC with milliseconds (2026-11-01T10:00:00.000Z: swift-openapi-runtime "
            "reads them with Configuration(dateTranscoder: .iso8601WithFractionalSeconds)).",
        },
        "servers": [{"url": "http://127.0.0.1:8080"}],
        "tags": [{"name": name, "description": TAG_DESCRIPTIONS.get(name, "")} for name in tags],
        "paths": renamed(schemas_for_generators(paths)),
        "components": {
            "securitySchemes": {
                "sessionToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                                 "description": "A guest's access token (POST /v1/guests): reaches its own user."},
                "revenueCatAuthorization": {
                    "type": "apiKey", "in": "header", "name": "Authorization",
                    "description": "The Authorization header value set in RevenueCat's webhook settings, exactly "
                    "(serve --revenuecat-authorization-file)."},
                "serverKey": {"type": "http", "scheme": "bearer",
                              "description": "A server key (guestmode serve key create): the roles are its "
                              "scopes, user-data or admin (which covers user-data)."},
            },
            "schemas": renamed(schemas),
        },
    }


def render():
    text = json.dumps(document(), indent=2, sort_keys=False, ensure_ascii=True) + "\n"
    # The binary's copy without the indentation: the same document, a third of the size to compile.
    compact = json.dumps(document(), separators=(",", ":"), ensure_ascii=True) + "\n"
    assert '"##' not in compact, "the document would end the raw string literal"
    swift = (
        "// swift-format-ignore-file\n"
        "// Written by scripts/openapi.py from schemas/openapi.json's sources: do not edit (nor format: the\n"
        "// literal is the document byte for byte).\n\n"
        "/// The OpenAPI 3.1 document of the routes (schemas/openapi.json), served at `/v1/openapi.json`.\n"
        "enum OpenAPIDocument {\n"
        "    static let text = ##\"\"\"\n" + compact + "\"\"\"##\n}\n"
    )
    return text, swift


def main():
    text, swift = render()
    if "--check" in sys.argv[1:]:
        stale = []
        for path, expected in [(DOCUMENT, text), (SWIFT, swift)]:
            try:
                with open(path, encoding="utf-8") as handle:
                    current = handle.read()
            except FileNotFoundError:
                current = None
            if current != expected:
                stale.append(os.path.relpath(path, ROOT))
        if stale:
            print("openapi: stale, run python3 scripts/openapi.py: " + ", ".join(stale), file=sys.stderr)
            sys.exit(1)
        print("openapi: up to date", file=sys.stderr)
        return
    for path, content in [(DOCUMENT, text), (SWIFT, swift)]:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(content)


if __name__ == "__main__":
    main()
