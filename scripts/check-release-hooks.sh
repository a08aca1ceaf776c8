#!/usr/bin/env bash
# Fails when a binary `make install` installs (guestmode, guestmode-serve) could hold a fault hook
# (Sources/GuestModeCommandLine/FaultHooks.swift, which both link): the environment variables
# that make a test build kill itself or break the tour. The arguments are the
# flags `make install` builds each product with (RELEASE_FLAGS in the Makefile).
#
# `make test` runs the quick form, which takes seconds: a cold release build
# takes several minutes on two cores, and these facts decide what it holds:
#   1. the manifest, as SwiftPM reads it, defines GUESTMODE_FAULT_HOOKS only
#      for the debug configuration, and those flags build the release one
#      and define nothing themselves;
#   2. no source file but FaultHooks.swift names a hook variable;
#   3. FaultHooks.swift compiled optimised without the condition holds none
#      of the names, and with it holds them all (so the search can see them).
# With --binary (`make release-hooks`) it also builds both release binaries with
# those flags and searches each for the names.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
binary=false
if [ "${1:-}" = "--binary" ]; then
    binary=true
    shift
fi
if [ "$#" -eq 0 ]; then
    echo "usage: $0 [--binary] RELEASE-BUILD-FLAGS… (the Makefile passes RELEASE_FLAGS)" >&2
    exit 64
fi
hooks=Sources/GuestModeCommandLine/FaultHooks.swift
products="guestmode guestmode-serve"
names=$(grep -oE '"GUESTMODE_[A-Z_]+"' "$hooks" | tr -d '"' | sort -u)
if [ -z "$names" ]; then
    echo "check-release-hooks: no hook variables found in $hooks" >&2
    exit 1
fi
fail() {
    echo "check-release-hooks: $*" >&2
    exit 1
}

# 1. The manifest and the release flags.
case " $* " in
*" -c release "* | *" --configuration release "*) ;;
*) fail "the flags '$*' do not build the release configuration" ;;
esac
case " $* " in
*GUESTMODE_FAULT_HOOKS*) fail "the release flags '$*' define GUESTMODE_FAULT_HOOKS" ;;
*" --product "*) fail "the release flags '$*' name a product; this script builds each of: $products" ;;
esac
"$swift" package dump-package | python3 -c '
import json, sys
manifest = json.load(sys.stdin)
for target in manifest["targets"]:
    for setting in target.get("settings", []):
        if setting["kind"].get("define", {}).get("_0", "").startswith("GUESTMODE_FAULT_HOOKS"):
            if (setting.get("condition") or {}).get("config") != "debug":
                sys.exit("check-release-hooks: Package.swift defines GUESTMODE_FAULT_HOOKS for %s outside debug builds"
                         % target["name"])
'

# 2. Only FaultHooks.swift names the variables.
for name in $names; do
    elsewhere=$(grep -rlF --include='*.swift' "$name" Sources | grep -vxF "$hooks" || true)
    [ -z "$elsewhere" ] || fail "$name is named outside $hooks: $elsewhere"
done

# 3. What the file compiles to with and without the condition.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
compile() {
    "$swift"c -O -parse-as-library -module-name GuestModeCommandLine -package-name guestmode "$@" -c "$hooks" -o "$scratch/hooks.o"
}
compile
for name in $names; do
    ! grep -qaF "$name" "$scratch/hooks.o" || fail "$hooks compiled without GUESTMODE_FAULT_HOOKS still holds $name"
done
compile -D GUESTMODE_FAULT_HOOKS
for name in $names; do
    grep -qaF "$name" "$scratch/hooks.o" || fail "$hooks compiled with GUESTMODE_FAULT_HOOKS lacks $name; the check cannot see it"
done

if $binary; then
    checked=""
    for product in $products; do
        "$swift" build "$@" --product "$product"
        release="$("$swift" build "$@" --show-bin-path)/$product"
        [ -x "$release" ] || fail "building $product made no $release"
        for name in $names; do
            ! grep -qaF "$name" "$release" || fail "the release binary $release holds $name"
        done
        checked="$checked $release"
    done
    echo "release hooks: none of $(echo $names) in$checked"
else
    echo "release hooks: none of $(echo $names) outside debug builds (make release-hooks searches both release binaries)"
fi
