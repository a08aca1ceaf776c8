#!/usr/bin/env python3
"""Writes the OpenAPI 3.1 document of `guestmode serve` (guestmode-serve(1), ROUTES) from the route
table below and the JSON Schemas of schemas/, which it includes under components/schemas (each
command's --json document is the answer of its route):

    python3 scripts/openapi.py           write schemas/openapi.json and the copy the binary serves
                                         (Sources/GuestModeServer/Support/OpenAPIDocument.swift)
    python3 scripts/openapi.py --check   exit 1 when either is not what this script writes

ServerTests runs --check, so a route or schema changed without running this script fails `make test`.
"""
import copy
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "schemas")
DOCUMENT = os.path.join(SCHEMAS, "openapi.json")
SWIFT = os.path.join(ROOT, "Sources", "GuestModeServer", "Support", "OpenAPIDocument.swift")


def ref(name):
    return {"$ref": "#/components/schemas/" + name}


def nullable(schema):
    return {"anyOf": [schema, {"type": "null"}]}


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
            "overage": nullable({"type": "string", "enum": ["allow", "refuse"]}),
        },
        "required": ["amount"],
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
    "identity": {
        "oneOf": [
            {
                "description": "An identity the app's backend verified (a server key with user-data).",
                "type": "object",
                "properties": {"provider": STRING, "subject": STRING, "email": nullable(STRING)},
                "required": ["provider", "subject"],
            },
            {
                "description": "The provider's OpenID Connect ID token, which the server verifies (serve --oidc); "
                               "the guest's own session may send it.",
                "type": "object",
                "properties": {"provider": STRING, "id_token": STRING, "nonce": STRING},
                "required": ["provider", "id_token"],
                "not": {"required": ["subject"]},
            },
        ],
    },
}

# Documents only the server answers (the others are schemas/*.json as the commands print them).
SERVER_SCHEMAS = {
    "status": {
        "type": "object",
        "properties": {"status": STRING},
        "required": ["status"],
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
    ("get", "/v1/users", "user list: every user.", "admin", {}, None, {"200": "user-list"}),
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
    ("get", "/v1/users/{user}/records/{collection}", "record list.", "session", {}, None, {"200": "record-list"}),
    ("get", "/v1/users/{user}/limits", "limit: every capped collection, or one.", "session",
     {"collection": STRING}, None, {"200": "limit"}),
    ("get", "/v1/users/{user}/meters", "meter status: every meter.", "session", {}, None, {"200": "meter-status"}),
    ("get", "/v1/users/{user}/meters/{meter}", "meter status of one meter.", "session", {}, None,
     {"200": "meter-status-one"}),
    ("get", "/v1/users/{user}/meters/{meter}/check", "meter check: the gate before a paid call; records nothing.",
     "session", {"amount": {"type": "string", "description": "A positive decimal; default: anything left."}},
     None, {"200": "meter-check", "402": ("refusal", "meter-check")}),
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
    ("post", "/v1/users/{user}/experiments", "experiment assign: sticky variants.", "session",
     {"experiment": STRING}, None, {"200": "experiment-assign"}),
    ("get", "/v1/users/{user}/counters", "counters.", "session", {}, None, {"200": "counters"}),
    ("post", "/v1/users/{user}/events", "track.", "session", {}, "event", {"200": "track", "422": "error"}),
    ("get", "/v1/users/{user}/events", "user events.", "session",
     {"action": STRING, "since": {"type": "string", "format": "date-time"}, "limit": {"type": "integer"}}, None,
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
    "key": "A record key, percent-encoded (a / is %2F).",
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
    result["migration"] = {"anyOf": [ref("migrate-run"), ref("migrate-plan")]}
    result["prompt-next-or-explain"] = {"anyOf": [ref("prompt-next"), ref("prompt-explain")]}
    result["report"] = {"anyOf": [ref("report-" + name) for name in REPORTS]}
    result["openapi"] = {"type": "object", "required": ["openapi", "paths"]}
    result.update(SERVER_SCHEMAS)
    for name, body in BODIES.items():
        result["body-" + name] = body
    return result


def refusal(result_schema):
    """A refusal the app acts on: the error with the prompt it raised, and the refused call's document."""
    return {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string", "minLength": 1},
                    "prompt": nullable(ref("prompt-next")),
                },
                "required": ["code", "message", "prompt"],
                "additionalProperties": False,
            },
            "result": ref(result_schema),
        },
        "required": ["error", "result"],
        "additionalProperties": False,
    }


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
               "--max-requests requests already, a key set could not be fetched, or the store's schema is not current.",
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
            response["content"] = json_content(refusal(schema))
        else:
            response["content"] = json_content({"anyOf": [refusal(schema), ref("error")]})
        return response
    if "/" in spec:
        response["content"] = {spec: {"schema": {"type": "string"}}}
        return response
    response["content"] = json_content(ref(spec))
    return response


# A request body each route takes, as guestmode-serve(1) shows it (schemathesis's examples phase sends them).
EXAMPLES = {
    "guest-new": {"device": "phone-1"},
    "session-refresh": {"refresh_token": "a-refresh-token"},
    "session-new": {"provider": "apple", "id_token": "an-id-token", "nonce": "a-nonce"},
    "merge": {"guest_token": "the-guest-access-token", "policy": "keep-account", "dry_run": True},
    "migration": {"guest_token": "the-guest-access-token", "dry_run": True},
    "conflict-restore": {"key": "theme~kept"},
    "record": {"name": "Netflix", "price": 15.49},
    "meter-use": {"amount": 12.5, "id": "call-7", "overage": "allow"},
    "meter-grant": {"amount": 30, "expires": "P30D", "reason": "referral", "id": "referral-1"},
    "prompt-record": {"context": "guest_cap_reached", "outcome": "dismissed"},
    "plan-grant": {"plan": "premium", "trial": "P7D"},
    "event": {"action": "app_opened", "count": 1, "id": "open-7", "props": {"screen": "home"}},
    "identity": {"provider": "apple", "subject": "001234.abcd", "email": None},
}
NDJSON_EXAMPLES = {
    "/v1/events/bulk": '{"user_id": "guest-1", "action": "app_opened", "id": "open-1"}\n',
    "/v1/records/bulk": '{"user_id": "guest-1", "collection": "settings", "key": "theme", "data": {"dark": true}}\n',
}


def operation(method, path, summary, caller, query, body, answers):
    operation = {"operationId": method + path.replace("/", "_").replace("{", "").replace("}", "").replace(".", "_"),
                 "summary": summary}
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
        parameters.append({"name": name, "in": "query", "required": False, "schema": schema})
    if method == "post" and body != "application/x-ndjson" and not path.startswith(("/v1/guests", "/v1/sessions")):
        parameters.append({
            "name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"},
            "description": "Answer this change once: a retry with the same key gets the kept answer."})
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        if "/" in body:
            content = {body: {"schema": {"type": "string"}}}
            if path in NDJSON_EXAMPLES:
                content[body]["example"] = NDJSON_EXAMPLES[path]
        else:
            content = json_content(ref("body-" + body))
            content["application/json"]["example"] = EXAMPLES[body]
        operation["requestBody"] = {"required": body in ("record", "session-refresh") or "/" in body,
                                    "content": content}
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
    if any(parameter["name"] == "Idempotency-Key" for parameter in parameters):
        for status, response in operation["responses"].items():
            if status < "500":
                response["headers"]["Idempotent-Replayed"] = {
                    "description": "true when this is the answer kept for the Idempotency-Key.",
                    "schema": {"const": "true"}}
    return operation


def document():
    paths = {}
    for method, path, summary, caller, query, body, answers in ROUTES:
        paths.setdefault(path, {})[method] = operation(method, path, summary, caller, query, body, answers)
    # OpenAPI has no MOVE operation: it is described as an extension of its path.
    for item in paths.values():
        if "move" in item:
            item["x-move"] = item.pop("move")
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": "guestmode serve",
            "version": "1",
            "description": "The engine over HTTP (guestmode-serve(1)): every route under /v1 answers the "
            "document its command prints with --json; a failure answers the error document of schemas/error.json "
            "with one HTTP status per code.",
        },
        "servers": [{"url": "http://127.0.0.1:8080"}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "sessionToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                                 "description": "A guest's access token (POST /v1/guests): reaches its own user."},
                "serverKey": {"type": "http", "scheme": "bearer",
                              "description": "A server key (guestmode serve key create): the roles are its "
                              "scopes, user-data or admin (which covers user-data)."},
            },
            "schemas": components(load_schemas()),
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
