#!/usr/bin/env bash
# Compiles src/ (and the generated code it imports) to dist/, with the files the code reads at
# run time beside it (src/**'s non-TypeScript files, generated/openapi.json and
# chain-openapi.json). `make build` and the Dockerfile run it; production then runs
# `node dist/src/main.js start`.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist
npx --no-install tsc -p tsconfig.build.json
# ts-worker.mjs loads TypeScript workers under tsx; dist/ starts its compiled workers directly.
(cd src && find . -type f ! -name '*.ts' ! -name 'ts-worker.mjs' -exec cp --parents {} ../dist/src/ \;)
cp generated/openapi.json generated/chain-openapi.json dist/generated/
