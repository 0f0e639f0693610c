# Hearth. `make start` and `make test` work on a machine with only Node (20 or later) and the
# compiler better-sqlite3 may need: they install what is missing first. See README.md.
SHELL := /bin/bash
# The stamp holds the hash of the lock file node_modules was installed from: comparing content
# (not mtimes, which every checkout changes) keeps installs to when dependencies really changed.
LOCK_HASH := $(shell sha256sum package-lock.json | cut -c1-64)
NPM_STAMP := node_modules/.hearth-lock-$(LOCK_HASH)


.PHONY: install generate sdk typecheck lint build migrate start test bench keys ussd ussd-demo

$(NPM_STAMP):
	npm ci --no-audit --no-fund
	@touch $(NPM_STAMP)

install: $(NPM_STAMP)

generate: install
	bash scripts/generate.sh
	$(MAKE) sdk

# The partner SDK package (sdk/dist), built from generated/openapi; its tests import it by name.
# Its copy of the KPT JSON-LD context is the one Hearth serves and pins, copied here so the two
# cannot differ (CI fails on an uncommitted difference, as for generated/).
sdk: install
	rm -rf sdk/dist
	cp src/twins/credentials/contexts/kpt-v1.jsonld sdk/contexts/kpt-v1.jsonld
	cd sdk && ../node_modules/.bin/tsc -p tsconfig.json

typecheck: install sdk
	npx --no-install tsc --noEmit

# typescript-eslint's type-checked rules (eslint.config.js), knip's unused files, exports and
# dependencies (knip.jsonc), and madge's import circles in src/ (type imports too: a module's
# types belong where neither side needs the other). eslint and knip need sdk/dist for the types
# its tests import; all three always run.
lint: install sdk
	status=0; npx --no-install eslint . || status=1; npx --no-install knip || status=1; \
	npx --no-install madge --circular --extensions ts src || status=1; exit $$status

# src/ compiled to dist/ (scripts/build.sh): production runs node on dist/src/main.js, not tsx.
# Rebuilt only when a source changes.
BUILD_SOURCES := $(shell find src generated -type f) tsconfig.json tsconfig.build.json scripts/build.sh
dist/.built: $(NPM_STAMP) $(BUILD_SOURCES)
	bash scripts/build.sh
	@touch $@

build: dist/.built

# Knex's CLI with knexfile.ts (TypeScript, hence tsx): the app's database and every area's
# migrations. Other Knex commands run the same way, e.g. a new migration in an area's folder:
# NODE_OPTIONS='--import tsx' npx knex migrate:make <what> --migrations-directory src/<area>/migrations
migrate: install
	NODE_OPTIONS='--import tsx' npx --no-install knex migrate:latest

# exec: node itself is make's child, so the SIGTERM that make passes on to its children reaches
# the server, which shuts down cleanly (through npx and a wrapper it was lost, orphaning it).
start: build
	exec node dist/src/main.js start

# The suite's files are named here so `npx mocha test/x.test.ts` runs that file alone. After
# the run it says which suites a variable left out (they are not counted as passing).
test: install typecheck
	status=0; npx --no-install mocha 'test/**/*.test.ts' || status=$$?; \
	[ -n "$$TEST_DATABASE_URL" ] || echo "Not run: the PostgreSQL variant of every database suite, and the PostgreSQL outage suite (TEST_DATABASE_URL is unset)."; \
	[ -n "$$TEST_REDIS_URL" ] || echo "Not run: the Redis rate-limit suite (TEST_REDIS_URL is unset)."; \
	exit $$status

bench: install build
	npx --no-install tsx test/bench/run.ts
	npx --no-install tsx test/bench/chain-grpc.ts

# make keys ARGS="create --name partner --principal did:ixo:entity:..."
keys: install
	npx --no-install tsx src/main.ts keys $(ARGS)

# A terminal USSD phone against a running server (make start in another terminal):
# make ussd ARGS="--url http://127.0.0.1:3000 --phone +254712345678 --code '*384*1234#'"
ussd: install
	npx --no-install tsx src/main.ts ussd-sim $(ARGS)

# The household journey (two households, English and Kiswahili) against a running server:
# make ussd-demo ARGS="--url http://127.0.0.1:3000"
ussd-demo: install
	npx --no-install tsx src/main.ts ussd-demo $(ARGS)
