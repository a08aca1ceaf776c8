#!/usr/bin/env bash
# Fails when the binary `make install` installs could be made to fail on
# purpose: it builds guestmode the way `make install` does (the flags are
# this script's arguments, RELEASE_FLAGS in the Makefile) and looks for the
# names of the fault hooks' environment variables in it
# (Sources/guestmode/Support/FaultHooks.swift). The debug binary next to the
# tests must hold them, or this check could not see them. Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
if [ "$#" -eq 0 ]; then
    echo "usage: $0 RELEASE-BUILD-FLAGS… (the Makefile passes RELEASE_FLAGS)" >&2
    exit 64
fi
names=$(grep -oE '"GUESTMODE_[A-Z_]+"' Sources/guestmode/Support/FaultHooks.swift | tr -d '"' | sort -u)
if [ -z "$names" ]; then
    echo "check-release-hooks: no hook names found in Sources/guestmode/Support/FaultHooks.swift" >&2
    exit 1
fi
debug=.build/debug/guestmode
for name in $names; do
    if ! grep -qaF "$name" "$debug"; then
        echo "check-release-hooks: $name is not in the debug build $debug, so its absence proves nothing" >&2
        exit 1
    fi
done
started=$(date +%s)
"$swift" build "$@"
release="$("$swift" build "$@" --show-bin-path)/guestmode"
found=""
for name in $names; do
    if grep -qaF "$name" "$release"; then found="$found $name"; fi
done
if [ -n "$found" ]; then
    echo "check-release-hooks: the release binary $release holds fault hooks:$found" >&2
    exit 1
fi
echo "release hooks: none of $(echo $names) in $release ($(($(date +%s) - started)) s)"
