#!/usr/bin/env bash
# Runs swift-openapi-generator 1.14.3 (the tool the build plugin runs, from this package's .build) on the
# client's copy of the document, with the client's configuration and without its operation filter (every
# route of the served document): a warning in either fails (exit 1). `make client-test` runs it after the
# build.
set -euo pipefail
package=$(cd "$(dirname "$0")/.." && pwd)
tool="$package/.build/debug/swift-openapi-generator-tool"
document="$package/Sources/GuestModeClient/openapi.json"
config="$package/Sources/GuestModeClient/openapi-generator-config.yaml"
work=$(mktemp -d /tmp/guestmode-generator.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/client" "$work/all"
"$tool" generate --config "$config" --output-directory "$work/client" "$document" > "$work/client.log" 2>&1
client=$(grep -c 'warning:' "$work/client.log" || true)
sed '/^filter:/,$d' "$config" > "$work/all.yaml"
"$tool" generate --config "$work/all.yaml" --output-directory "$work/all" "$document" > "$work/all.log" 2>&1
all=$(grep -c 'warning:' "$work/all.log" || true)
echo "swift-openapi-generator 1.14.3: $client warnings for the client's operations, $all for every route"
grep -o 'warning:.*' "$work/all.log" | cut -c1-200 | sort | uniq -c || true
if [ "$client" != 0 ] || [ "$all" != 0 ]; then
    grep -h 'warning:' "$work/client.log" "$work/all.log" >&2
    exit 1
fi
