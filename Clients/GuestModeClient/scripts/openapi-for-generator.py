#!/usr/bin/env python3
"""The document GuestModeClient's build plugin reads, made from the served one.

    python3 scripts/openapi-for-generator.py           # writes Sources/GuestModeClient/openapi.json
    python3 scripts/openapi-for-generator.py --check   # exits 1 when the copy is not what it would write

Input: the repository's schemas/openapi.json, the document `guestmode serve` serves at /v1/openapi.json.
swift-openapi-generator 1.14.3 reads it badly in a few known ways (issue 34); until the served document
is itself in the forms the generator reads, this script rewrites exactly those, and nothing else:

1. `anyOf: [X, {"type": "null"}]` becomes X with `"null"` added to its `type` (the generator drops
   such members silently: apple/swift-openapi-generator#558, #817, #906).
2. `not` is removed (inside body-identity's second `oneOf` branch it makes the generator drop the
   schema it still references, and the client does not compile).
3. A string whose pattern is the server's time (ISO 8601, UTC, milliseconds) gets `format: date-time`,
   so it is a `Date` in Swift (the client's date transcoder reads the milliseconds).
4. Operation ids are readable camelCase names (createGuest, signIn, ...), as the served document is to
   have them.
5. The refusal's `error` answered with 402 and 403 (`code`, `message`, `prompt`) is one component,
   `Refusal`, instead of one inline type per route (each route keeps its own `result`).

6. A member whose schema is only `{"type": "null"}` (always null) becomes `{}` (any JSON), which the
   generator reads (it skips the null type with a warning).

Each rewrite is a no-op on a document that already has the form: since the served document has them
all (issue 34), the copy is the served document byte for byte, and the rewrites guard against a form
coming back. `--check` (run by `make client-test`) keeps the copy from drifting. A copy rather than a
symlink: a build plugin reads its package's own files, and an app may build this package on its own.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
SOURCE = os.path.join(PACKAGE, "..", "..", "schemas", "openapi.json")
TARGET = os.path.join(PACKAGE, "Sources", "GuestModeClient", "openapi.json")
TIME_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$"

OPERATION_IDS = {
    "post_v1_guests": "createGuest",
    "post_v1_sessions_refresh": "refreshSession",
    "post_v1_sessions": "signIn",
    "post_v1_sessions_revoke": "signOut",
    "get_v1_me": "getMe",
    "get_v1_users": "listUsers",
    "get_v1_users_user": "getUser",
    "delete_v1_users_user": "deleteUser",
    "delete_v1_users_user_sessions": "revokeUserSessions",
    "post_v1_users_user_merges": "mergeGuest",
    "post_v1_users_user_migrations": "migrateGuest",
    "get_v1_users_user_merge-conflicts": "listMergeConflicts",
    "post_v1_users_user_merge-conflicts_id_restore": "restoreMergeConflict",
    "put_v1_users_user_records_collection_key": "putRecord",
    "get_v1_users_user_records_collection_key": "getRecord",
    "delete_v1_users_user_records_collection_key": "deleteRecord",
    "get_v1_users_user_records_collection": "listRecords",
    "get_v1_users_user_limits": "getLimits",
    "get_v1_users_user_meters": "listMeters",
    "get_v1_users_user_meters_meter": "getMeter",
    "get_v1_users_user_meters_meter_check": "checkMeter",
    "post_v1_users_user_meters_meter_use": "useMeter",
    "get_v1_users_user_meters_meter_grants": "listMeterGrants",
    "post_v1_users_user_meters_meter_grants": "grantMeter",
    "get_v1_users_user_prompts_next": "nextPrompt",
    "post_v1_users_user_prompts": "recordPrompt",
    "post_v1_users_user_prompts_reset": "resetPrompts",
    "get_v1_users_user_prompts_history": "promptHistory",
    "get_v1_users_user_plans": "getPlans",
    "post_v1_users_user_plans": "grantPlan",
    "delete_v1_users_user_plans_plan": "revokePlan",
    "post_v1_users_user_experiments": "assignExperiments",
    "get_v1_users_user_counters": "getCounters",
    "post_v1_users_user_events": "trackEvent",
    "get_v1_users_user_events": "listEvents",
    "post_v1_users_user_identities": "linkIdentity",
    "delete_v1_users_user_identities_provider": "unlinkIdentity",
    "post_v1_events_bulk": "ingestEvents",
    "post_v1_records_bulk": "putRecords",
    "get_v1_users_user_backup": "exportBackup",
    "put_v1_backup": "importBackup",
    "get_v1_users_user_backups": "listPushedBackups",
    "put_v1_users_user_backups_name": "pushBackup",
    "get_v1_users_user_backups_name": "getPushedBackup",
    "move_v1_users_user_backups_name": "settlePushedBackup",
    "get_v1_reports_report": "getReport",
    "get_v1_profile": "getProfile",
    "get_v1_openapi_json": "getOpenAPIDocument",
    "get_healthz": "healthz",
    "get_readyz": "readyz",
    "get_metrics": "metrics",
}


def is_null(schema):
    return isinstance(schema, dict) and schema == {"type": "null"}


def rewrite(node):
    if isinstance(node, list):
        return [rewrite(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: rewrite(value) for key, value in node.items()}
    node.pop("not", None)
    for name, member in list(node.get("properties", {}).items()):
        if is_null(member):
            node["properties"][name] = {}
    for combinator in ("anyOf", "oneOf"):
        members = node.get(combinator)
        if isinstance(members, list) and len(members) == 2 and any(is_null(m) for m in members):
            other = next(m for m in members if not is_null(m))
            del node[combinator]
            if "$ref" in other:
                # A reference cannot carry a type: a one-member oneOf beside the null type.
                node["oneOf"] = [other]
                node["type"] = ["object", "null"]
            else:
                merged = dict(other)
                kind = merged.get("type")
                if isinstance(kind, str):
                    merged["type"] = [kind, "null"]
                if "enum" in merged and None not in merged["enum"]:
                    merged["enum"] = merged["enum"] + [None]
                merged.update({k: v for k, v in node.items() if k not in merged})
                node = merged
    kind = node.get("type")
    if node.get("pattern") == TIME_PATTERN and kind in ("string", ["string", "null"], ["null", "string"]):
        node["format"] = "date-time"
    return node


def is_refusal(schema):
    error = schema.get("properties", {}).get("error", {}) if isinstance(schema, dict) else {}
    return (
        schema.get("type") == "object"
        and set(error.get("properties", {})) == {"code", "message", "prompt"}
    )


def transform(document):
    document = rewrite(document)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    refusal = None
    for path in document["paths"].values():
        for operation in path.values():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            operation["operationId"] = OPERATION_IDS.get(operation["operationId"], operation["operationId"])
            for response in operation.get("responses", {}).values():
                media = response.get("content", {}).get("application/json")
                if media and is_refusal(media.get("schema", {})):
                    properties = media["schema"]["properties"]
                    refusal = refusal or properties["error"]
                    properties["error"] = {"$ref": "#/components/schemas/Refusal"}
    if refusal is not None:
        refusal = dict(refusal)
        refusal["title"] = "A 402 or 403 refusal: its code, its message and the prompt to show"
        schemas["Refusal"] = refusal
    return document


def main():
    with open(SOURCE) as handle:
        served = handle.read()
    document = transform(json.loads(served))
    # A document already in the generator's forms is copied byte for byte.
    text = served if document == json.loads(served) else json.dumps(document, indent=1, sort_keys=True) + "\n"
    if "--check" in sys.argv:
        with open(TARGET) as handle:
            if handle.read() != text:
                print(f"{TARGET} is not made from schemas/openapi.json: run {sys.argv[0]}", file=sys.stderr)
                sys.exit(1)
        return
    with open(TARGET, "w") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
