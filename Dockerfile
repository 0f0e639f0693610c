# Hearth as a container. Build: docker build -t hearth .   Run: see compose.yaml and README.
# The service is compiled (scripts/build.sh, as `make build`) in a full image with every
# dependency; the slim image gets the compiled dist/ and the production dependencies only
# (better-sqlite3 may need to compile, hence the full image for installs too).
FROM node:20-bookworm AS build
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

FROM node:20-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/package.json
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
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
