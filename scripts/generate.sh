#!/usr/bin/env bash
# Regenerates everything under generated/ from openapi/ and proto/ (area C's OpenAPI document
# included, from the proto annotations), and docs/configuration.md from the schema in
# src/config.ts. Deterministic: running it twice changes nothing, which is what CI's drift check
# relies on.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p generated
npx --no-install tsx scripts/bundle-openapi.ts
npx --no-install openapi-ts --file openapi-ts.config.ts >/dev/null
npx --no-install buf generate
# After buf: it reads the descriptors buf has just written.
npx --no-install tsx scripts/generate-chain-openapi.ts
npx --no-install tsx scripts/generate-operations.ts
npx --no-install tsx scripts/generate-db-types.ts
npx --no-install tsx scripts/generate-config-doc.ts
