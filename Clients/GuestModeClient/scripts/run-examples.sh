#!/usr/bin/env bash
# Runs Examples/AppJourney for each of the four profiles, each against a `guestmode serve` of its own on
# loopback over a new SQLite store. Usage: run-examples.sh GUESTMODE-BINARY APPJOURNEY-BINARY
# (`make client-test` runs it). Exits non-zero when a journey does.
set -euo pipefail
guestmode=$(realpath "$1")
journey=$(realpath "$2")
templates=$(realpath "$(dirname "$0")/../../../Templates")
for profile in subscriptions recipes habits voice; do
    folder=$(mktemp -d /tmp/guestmode-app-journey.XXXXXX)
    (
        cd "$folder"
        export HOME="$folder" GUESTMODE_TEMPLATES="$templates" NO_COLOR=1
        "$guestmode" init --profile "$profile" --store store.sqlite >/dev/null
        "$guestmode" serve --store store.sqlite --listen 127.0.0.1:0 > serve.out 2> serve.err &
        server=$!
        trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$folder"' EXIT
        for _ in $(seq 100); do grep -q listening serve.out 2>/dev/null && break; sleep 0.1; done
        url=$(sed -n 's/^listening on //p' serve.out)
        echo "== $profile ($url)"
        "$journey" "$profile" "$url" "$folder/app"
    )
done
