#!/bin/sh
# The plain side of `backup verify --full ARCHIVE`: decompress every byte and
# hash it. Usage: verify.sh archive
set -eu
zstd -q -dc "$1" | sha256sum >/dev/null
