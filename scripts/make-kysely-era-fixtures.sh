#!/usr/bin/env bash
# Makes the databases made and filled by Hearth at 3cd5342 (the last main on Kysely) that
# test/platform/migrations.test.ts upgrades: test/fixtures/kysely-era.sqlite (SQLite, "a SQLite
# database made by an earlier Hearth") and test/fixtures/kysely-era.pg.sql (PostgreSQL, "a
# PostgreSQL database made by an earlier Hearth"). Both are filled the same way, and nothing is
# inserted by hand: 3cd5342 migrates a new database, its CLI creates the keys, its own HTTP API
# writes the rows (entities, a collection, KPT claims verified with their credentials, one
# pending, one rejected, a credential suspended, agent preferences) and its `ussd-demo` walks two
# households through the USSD menus (accounts, sessions, fuel logs, verified claims). No
# VALIDATOR_PRIVATE_KEY or PIN_ENCRYPTION_KEY is set: the validator key each fixture holds, and the
# key its PINs were sealed with (left in a DATA_DIR that is deleted), are throwaways of its own.
# SQLite: the file under DATA_DIR that 3cd5342 uses when DATABASE_URL is unset, its write-ahead
# log checkpointed into it once the server has stopped, copied as it is (still in WAL mode).
# PostgreSQL: the database is dumped (pg_dump --inserts of schema public) and rewritten to load
# into any schema: the test runs it with search_path set to a scratch schema of its own.
#
#   bash scripts/make-kysely-era-fixtures.sh            # both
#   bash scripts/make-kysely-era-fixtures.sh sqlite     # or only one: sqlite, pg
#
# Needs curl, jq and node, the npm registry (npm ci of 3cd5342) and, for pg, psql and pg_dump and a
# PostgreSQL at PGHOST (127.0.0.1) as PGUSER (postgres). OLD_CHECKOUT=<dir> uses a checkout of
# 3cd5342 with its node_modules already installed instead of a worktree of its own. The database
# it creates is dropped, and its worktree removed, when it ends. PORT (3917): where 3cd5342
# serves while it fills a database.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
fixtures="$root/test/fixtures"
commit=3cd5342
if [ $# -gt 0 ]; then kinds=("$@"); else kinds=(sqlite pg); fi
for kind in "${kinds[@]}"; do
  case "$kind" in sqlite | pg) ;; *) echo "usage: $0 [sqlite] [pg]" >&2; exit 2 ;; esac
done
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGPORT="${PGPORT:-5432}"
port="${PORT:-3917}"
db=""
work="$(mktemp -d)"
server=""
worktree=""

cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ -n "$db" ]; then psql -q -d postgres -c "drop database if exists $db with (force)" || true; fi
  if [ -n "$worktree" ]; then git -C "$root" worktree remove --force "$worktree" || true; fi
  rm -rf "$work"
  git -C "$root" worktree prune
}
trap cleanup EXIT

if [ -n "${OLD_CHECKOUT:-}" ]; then
  old="$(cd "$OLD_CHECKOUT" && pwd)"
  [ "$(git -C "$old" rev-parse HEAD)" = "$(git -C "$root" rev-parse "$commit")" ] || { echo "$old is not a checkout of $commit" >&2; exit 1; }
else
  worktree="$work/old"
  old="$worktree"
  git -C "$root" worktree add --detach "$worktree" "$commit"
  (cd "$old" && npm ci --no-audit --no-fund)
fi

cd "$old"
base="http://127.0.0.1:$port"


post() { # path body [extra curl args]: the JSON answer; fails on a status other than 2xx
  local path="$1" body="$2"; shift 2
  curl -sS --fail-with-body -H "Authorization: Bearer $key" -H 'Content-Type: application/json' "$@" "$base$path" -d "$body"
}

claim() { # household group total logs
  printf '{"type":"KPTClaim","collectionId":"kisumu-2026","householdId":"did:ixo:entity:%s","testGroup":"%s","fuelMeasurements":{"total":%s,"dailyLogs":%s},"testPeriod":{"startDate":"2026-03-02","endDate":"2026-03-04","durationDays":3},"evidence":[{"type":"photo","uri":"ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"}],"externalFactors":{"season":"long-rains","culturalEvents":["none"],"occupationalFactors":["smallholder farming"]}}' "$@"
}

# Fills a new database, the one DATABASE_URL names (unset: SQLite, $DATA_DIR/hearth.sqlite), by
# 3cd5342's own CLI, HTTP API and ussd-demo; its server is stopped when it returns.
fill() {
  # 3cd5342's CLI with only the settings given here (nothing of the caller's environment, whose
  # variables would change the rows): no VALIDATOR_PRIVATE_KEY or PIN_ENCRYPTION_KEY among them.
  local old_hearth=(env -i PATH="$PATH" HOME="$HOME" PORT="$port" HOST=127.0.0.1 GRPC_ENABLED=false LOG_LEVEL=warn
    PUBLIC_BASE_URL="http://localhost:$port" NODE_ENV=development DATA_DIR="$DATA_DIR"
    ${DATABASE_URL:+DATABASE_URL="$DATABASE_URL"} node_modules/.bin/tsx src/main.ts)
  # Keys, by 3cd5342's CLI (which migrates the database first): a partner's, and an operator's that
  # may suspend credentials.
  local partner_did=did:ixo:entity:0123456789abcdef0123456789abcdef
  key="$("${old_hearth[@]}" keys create --name kysely-era --principal "$partner_did" | tail -n 1)"
  operator="$("${old_hearth[@]}" keys create --name kysely-era-operator --principal "$partner_did" --scopes credentials:revoke | tail -n 1)"

  if curl -sf "$base/health" > /dev/null 2>&1; then echo "something already answers on port $port: set PORT" >&2; exit 1; fi
  # env execs tsx: $! is the server's process, which the kill below stops.
  "${old_hearth[@]}" start > "$DATA_DIR/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 120); do
    curl -sf "$base/health" > /dev/null && break
    kill -0 "$server" 2>/dev/null || { cat "$DATA_DIR/server.log" >&2; exit 1; }
    sleep 0.5
  done
  curl -sf "$base/health" > /dev/null
  kill -0 "$server"

  protocol="$(post /v1/entities '{"type":"Protocol","properties":{"model":"string","ratedPowerW":"number"},"relationships":{"verifier":"OracleEntity"}}' -H 'Idempotency-Key: kysely-era-protocol' | jq -r .did)"
  oracle="$(post /v1/entities '{"type":"OracleEntity"}' | jq -r .did)"
  post /v1/entities "{\"type\":\"CleanCookingDevice\",\"protocol\":\"$protocol\",\"properties\":{\"model\":\"EcoStove 2\",\"ratedPowerW\":1200},\"relationships\":{\"verifier\":\"$oracle\"},\"services\":[{\"id\":\"#data\",\"type\":\"LinkedDomains\",\"endpoint\":\"https://example.org/d/1\"}]}" > /dev/null
  post /v1/collections '{"id":"kisumu-2026","name":"Kisumu 2026","selectionMethod":"Random draw of 60 households from the programme register","submitters":["did:ixo:entity:5e55d0a7e3c14a1f9b0e6c2d8f4a7b31"]}' > /dev/null

  # Reference first (pending), then intervention: both verified, each with its credential.
  post /v1/claims "$(claim 00000000000000000000000000000042 reference 7.5 '[2.5,2.4,2.6]')" -H 'Idempotency-Key: visit-0001' > /dev/null
  intervention="$(post /v1/claims "$(claim 00000000000000000000000000000043 intervention 4.5 '[1.5,1.4,1.6]')" | jq -r .id)"
  # In the default collection (no selection method): a claim left pending (its selection documented,
  # no claim of the other group), and one rejected (KPT rule 5: no selection documented).
  post /v1/claims '{"type":"KPTClaim","householdId":"did:ixo:entity:00000000000000000000000000000044","testGroup":"reference","fuelMeasurements":{"total":6,"dailyLogs":[2,2,2]},"testPeriod":{"startDate":"2026-03-09","endDate":"2026-03-11","durationDays":3},"evidence":[{"type":"selection-methodology","uri":"https://example.org/selection"}],"externalFactors":{"season":"long-rains","culturalEvents":["none"],"occupationalFactors":["none"]}}' > /dev/null
  post /v1/claims '{"type":"KPTClaim","householdId":"did:ixo:entity:00000000000000000000000000000045","testGroup":"reference","fuelMeasurements":{"total":6,"dailyLogs":[2,2,2]},"testPeriod":{"startDate":"2026-03-09","endDate":"2026-03-11","durationDays":3},"externalFactors":{"season":"long-rains","culturalEvents":["none"],"occupationalFactors":["none"]}}' > /dev/null
  # A credential suspended by the operator (its status on the claim, and the event that records it).
  curl -sS --fail-with-body -H "Authorization: Bearer $operator" -H 'Content-Type: application/json' \
    "$base/v1/claims/$intervention/credential/status" -d '{"action":"suspend","reason":"scale sent for calibration"}' > /dev/null
  post /agent/tools/set_user_preferences/invoke '{"roomId":"!kitchen:example.org","arguments":{"userName":"Mama Amina","language":"sw","length":"brief"}}' > /dev/null

  # Two households over USSD: accounts, sessions, fuel logs, a reference and an intervention claim.
  "${old_hearth[@]}" ussd-demo --url "$base" > "$DATA_DIR/ussd-demo.log"

  kill "$server"
  wait "$server" || true
  server=""
}

# SQLite: the file 3cd5342 keeps under DATA_DIR when DATABASE_URL is unset. Its write-ahead log is
# checkpointed into it (the server stopped, no other connection), so the file alone holds every
# row; it is copied as 3cd5342 left it otherwise (in WAL mode: a Hearth upgrading it meets that).
make_sqlite() {
  local out="$fixtures/kysely-era.sqlite"
  unset DATABASE_URL
  export DATA_DIR="$work/sqlite"
  mkdir -p "$DATA_DIR"
  fill
  local file="$DATA_DIR/hearth.sqlite"
  node - "$file" <<'EOF'
const Database = require('better-sqlite3');
const [file] = process.argv.slice(2);
const db = new Database(file, { fileMustExist: true });
const [checkpoint] = db.pragma('wal_checkpoint(TRUNCATE)');
if (checkpoint.busy) throw new Error(`${file}: the checkpoint was blocked: ${JSON.stringify(checkpoint)}`);
const integrity = db.pragma('integrity_check', { simple: true });
if (integrity !== 'ok') throw new Error(`${file}: ${integrity}`);
db.close();
EOF
  if [ -s "$file-wal" ]; then echo "$file-wal is not empty after the checkpoint" >&2; exit 1; fi
  rm -f "$out-wal" "$out-shm"
  cp "$file" "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$out: $(wc -c < "$out") bytes"
}

# PostgreSQL: a database of its own, dumped (the rows as INSERTs) and rewritten to load into any
# schema, then dropped.
make_pg() {
  local out="$fixtures/kysely-era.pg.sql"
  db="fx_$(node -p "require('node:crypto').randomBytes(6).toString('hex')")"
  psql -q -d postgres -c "create database $db"
  export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db"
  export DATA_DIR="$work/pg"
  mkdir -p "$DATA_DIR"
  fill
  pg_dump --no-owner --no-privileges --inserts --schema=public --dbname="$DATABASE_URL" > "$work/dump.sql"
  psql -q -d postgres -c "drop database $db"
  db=""
  # The dump as statements that load into the schema first in the search path: psql's
  # meta-commands, SET lines, the search_path reset and comments left out, `public.` qualifiers
  # taken off (in an INSERT, only the table's: its values are the rows' own text).
  node --input-type=module - "$work/dump.sql" "$out" "$commit" <<'EOF'
import { readFileSync, writeFileSync } from 'node:fs';
const [dumpFile, outFile, commit] = process.argv.slice(2);
const dump = readFileSync(dumpFile, 'utf8');
const statements = [];
let current = '';
for (let i = 0; i < dump.length; ) {
  const c = dump[i];
  if (c === "'") { // a literal to its closing quote ('' is a quote inside it)
    let j = i + 1;
    for (;;) {
      j = dump.indexOf("'", j);
      if (j < 0) throw new Error('unterminated literal');
      if (dump[j + 1] === "'") j += 2; else break;
    }
    current += dump.slice(i, j + 1);
    i = j + 1;
  } else if (c === '$') {
    throw new Error('a dollar-quoted body: not handled');
  } else if (c === '-' && dump[i + 1] === '-') {
    i = dump.indexOf('\n', i) + 1 || dump.length;
  } else if (c === '\\' && !current.trim()) { // a psql meta-command (\restrict, \connect)
    i = dump.indexOf('\n', i) + 1 || dump.length;
  } else if (c === ';') {
    statements.push(current.trim());
    current = '';
    i++;
  } else {
    current += c;
    i++;
  }
}
if (current.trim()) throw new Error(`text after the last statement: ${current}`);
const kept = statements
  .filter((s) => !/^SET\s/i.test(s) && !/^SELECT pg_catalog\.set_config\('search_path'/.test(s) && !/^(CREATE|COMMENT ON) SCHEMA\b/.test(s))
  .map((s) => (s.startsWith('INSERT INTO ') ? s.replace(/^INSERT INTO public\./, 'INSERT INTO ') : s.replace(/\bpublic\./g, '')));
const unqualified = kept.filter((s) => !s.startsWith('INSERT INTO ') && /\bpublic\b/.test(s));
if (unqualified.length) throw new Error(`schema public still named: ${unqualified.join('\n')}`);
const header = `-- A PostgreSQL database made by Hearth at ${commit} (the last main on Kysely): migrated by it, keys
-- made by its CLI, rows written by its HTTP API and its ussd-demo. Made by
-- scripts/make-kysely-era-fixtures.sh (pg_dump --no-owner --no-privileges --inserts --schema=public,
-- rewritten to load into the schema first in the search path); do not edit by hand. Its
-- twin_validator_keys row holds the throwaway key 3cd5342 generated for this database (no
-- VALIDATOR_PRIVATE_KEY was set): it signs nothing outside this fixture.
`;
writeFileSync(outFile, header + kept.map((s) => `${s};\n`).join(''));
console.log(`${outFile}: ${kept.length} statements`);
EOF
}

for kind in "${kinds[@]}"; do
  "make_$kind"
done
