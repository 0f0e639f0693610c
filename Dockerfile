# Hearth as a container. Build: docker build -t hearth .   Run: see compose.yaml and README.
# Dependencies are installed in a full image (better-sqlite3 may need to compile) and copied
# into a slim one; the service runs TypeScript through tsx's loader, as `make start` does.
FROM node:20-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The partner SDK is a devDependency linked from sdk/; npm wants its manifest to read the lock.
COPY sdk/package.json sdk/package.json
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY generated ./generated
COPY src ./src
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form, node as PID 1 with no shell or npm in between: SIGTERM from `docker stop` reaches
# the server, which finishes in-flight requests and closes the database before it exits.
STOPSIGNAL SIGTERM
CMD ["node", "--import", "tsx", "src/main.ts", "start"]
