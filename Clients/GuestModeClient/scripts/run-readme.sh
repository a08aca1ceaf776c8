#!/usr/bin/env bash
# Runs the README's "## Apps in Swift" block as written (its first sh block), from the repository's root:
# it builds, starts a server on 127.0.0.1:8181 and plays the voice app's journey. `make client-test` runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
block=$(python3 - "$root/README.md" <<'PYTHON'
import sys
readme = open(sys.argv[1]).read()
start = readme.index("\n## Apps in Swift\n")
opening = readme.index("```sh\n", start) + len("```sh\n")
print(readme[opening:readme.index("\n```\n", opening)])
PYTHON
)
cd "$root"
sh -c "$block"
