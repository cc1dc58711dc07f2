# syntax=docker/dockerfile:1
# aer1-anchord: multi-stage build. The build stage compiles TypeScript and prunes dev
# dependencies (nothing is compiled natively: no package needs python3, make or g++; the
# optional msgpackr-extract ships prebuilt binaries); the runtime stage copies the result
# and runs as `node`. Logs are JSON lines (`docker logs`; `docker run -t` makes them
# human-readable, AER1_LOG_FORMAT forces one).
#
#   docker build -t aer1-anchor .
#   docker run --rm -e REDIS_URL=redis://redis:6379 -e AER1_HTTP_TOKEN=... -p 127.0.0.1:8787:8787 aer1-anchor
#
# See docker-compose.yml for Redis (persistence, noeviction) and the local/public profiles.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# package-lock.json points the `fs` override at this local placeholder package
COPY package.json package-lock.json tsconfig.json ./
COPY test/stubs/fs-placeholder ./test/stubs/fs-placeholder
COPY bin ./bin
# config/local.json: the compose file's local profile (the defaults are in the code)
COPY config ./config
COPY src ./src
# the /verify page's bundle is built by scripts/build-verify-bundle.mjs (esbuild, a dev dependency)
COPY scripts ./scripts
# npm ci also runs `prepare` (tsc, then the bundle); the explicit build keeps the step visible
RUN npm ci --no-audit --no-fund \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    AER1_HTTP_HOST=0.0.0.0 \
    AER1_HTTP_PORT=8787 \
    AER1_REDIS_EMBEDDED=false
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/bin ./bin
COPY --from=build /app/config ./config
COPY --from=build /app/src/adapters/http/static ./src/adapters/http/static
COPY --from=build /app/src/adapters/state/lua ./src/adapters/state/lua
# ./var holds the signing keys (created on first start, mode 0600) and the anchor log: mount a volume there
RUN mkdir -p /app/var /data && chown node:node /app/var /data
USER node
VOLUME ["/app/var"]
EXPOSE 8787
# /livez needs no token, even when reads require one
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.AER1_HTTP_PORT || '8787') + '/livez').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/aer1-anchord.js"]
