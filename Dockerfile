# syntax=docker/dockerfile:1
# Multi-stage: build with dev dependencies, run with production ones only, as a non-root user.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/build-assets.mjs scripts/extract-data-fonts.mjs ./scripts/
RUN npm run build && npm prune --omit=dev

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
# redis-server only for `redis.url: embedded` (demos, single-replica setups).
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config ./config
# `redis.url: embedded` keeps its data under ./.outrigger, which the non-root user must own.
RUN mkdir -p /app/.outrigger && chown node:node /app/.outrigger
USER node
EXPOSE 8080
# The health check reads listen.port and routes.health from the same config `start` uses. If you
# mount the config elsewhere, change both the CMD and this path.
HEALTHCHECK --interval=10s --timeout=4s --start-period=10s --retries=3 \
  CMD ["node", "dist/src/cli/index.js", "health", "-c", "/etc/outrigger/outrigger.yaml"]
ENTRYPOINT ["node", "dist/src/cli/index.js"]
CMD ["start", "-c", "/etc/outrigger/outrigger.yaml"]
