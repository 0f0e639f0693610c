# Hearth as a container. Build: docker build -t hearth .   Run: see compose.yaml and docs/operations.md.
# The service is compiled (scripts/build.sh, as `make build`) in a stage with every dependency;
# the final stage gets the compiled dist/ and the production dependencies only.
#
# Node 24 LTS on Debian bookworm, pinned by the digest of the official image's index
# (node:24.19.0-bookworm-slim, also tagged 24-bookworm-slim), so a rebuild gets the same base. To
# move to a newer patch release, replace tag and digest together (docker buildx imagetools inspect).
# 24.19 is the first 24.x whose CommonJS export lexer does not abort the process while many modules
# load at once (nodejs/node#63323; it aborted a CI run on 24.18.0).
ARG NODE_IMAGE=node:24.19.0-bookworm-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df
# better-sqlite3 12 is compiled against the Node 24.18.1 headers: from 24.19 on, the headers'
# node::ObjectWrap registers a cleanup hook whose removal aborts the process when a statement is
# collected (nodejs/node#65446, open). Every 24.x shares one ABI, so the addon runs on the image's
# Node; scripts/test-on-container-node.sh tests exactly this pairing.
ARG ADDON_NODE_HEADERS=24.18.1

# better-sqlite3 is compiled here, against the headers named above (node-gyp fetches them), rather
# than fetched prebuilt against headers of unknown version: python3, make, g++.
FROM ${NODE_IMAGE} AS toolchain
ARG ADDON_NODE_HEADERS
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
ENV npm_config_build_from_source=better-sqlite3 \
    npm_config_target=${ADDON_NODE_HEADERS}

FROM toolchain AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The partner SDK is a devDependency linked from sdk/; npm wants its manifest to read the lock.
COPY sdk/package.json sdk/package.json
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.sh scripts/build.sh
COPY generated ./generated
COPY src ./src
RUN bash scripts/build.sh

FROM toolchain AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/package.json
RUN npm ci --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form, node as PID 1 with no shell or npm in between: SIGTERM from `docker stop` reaches
# the server, which finishes in-flight requests and closes the database before it exits.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js", "start"]
