#!/usr/bin/env bash
# No Docker engine runs on the CI machines, so this replays the Dockerfile's steps in a scratch
# folder with the same inputs (only what the Dockerfile COPYs) and checks the result runs:
# npm ci → build → prune to production dependencies → the CLI and the health check command.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Build stage: COPY package*.json, npm ci, COPY tsconfig*.json src scripts/build-assets.mjs scripts/extract-data-fonts.mjs, build, prune.
cp "$repo/package.json" "$repo/package-lock.json" "$work/"
(cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
cp "$repo/tsconfig.json" "$repo/tsconfig.build.json" "$work/"
cp -r "$repo/src" "$work/src"
mkdir -p "$work/scripts" && cp "$repo/scripts/build-assets.mjs" "$repo/scripts/extract-data-fonts.mjs" "$work/scripts/"
(cd "$work" && npm run build --silent && npm prune --omit=dev --no-audit --no-fund --loglevel=error)

# Runtime stage: node_modules, dist, package.json, config only.
run="$work/runtime"
mkdir -p "$run"
cp -r "$work/node_modules" "$work/dist" "$work/package.json" "$run/"
cp -r "$repo/config" "$run/config"
cd "$run"
node dist/src/cli/index.js --help >/dev/null
node dist/src/cli/index.js --version
UPSTREAM_JWT_SECRET="$(head -c 32 /dev/urandom | base64)" node dist/src/cli/index.js check -c config/outrigger.example.yaml

# The HEALTHCHECK command (read from the Dockerfile, with this run's config path) against a
# running instance (embedded Redis, dummy upstream); it must fail before start and pass after.
health_config=$(sed -n 's/^ *CMD \["node", "dist\/src\/cli\/index.js", "health", "-c", "\([^"]*\)"\]/\1/p' "$repo/Dockerfile")
start_config=$(sed -n 's/^CMD \["start", "-c", "\([^"]*\)"\]/\1/p' "$repo/Dockerfile")
if [ -z "$health_config" ] || [ "$health_config" != "$start_config" ]; then
  echo "docker steps: the HEALTHCHECK must run 'health -c' with the config CMD starts ('$health_config' vs '$start_config')" >&2
  exit 1
fi
port=$(node -e "const s=require('net').createServer().listen(0,()=>{console.log(s.address().port);s.close()})")
printf 'service: { id: docker-check }\nlisten: { host: 127.0.0.1, port: %s }\nupstream: { url: "http://127.0.0.1:9" }\nredis: { url: embedded }\n' "$port" > check.yaml
if node dist/src/cli/index.js health -c check.yaml 2>/dev/null; then echo "docker steps: the health check passed with nothing running" >&2; exit 1; fi
node dist/src/cli/index.js start -c check.yaml > start.log 2>&1 &
pid=$!
for _ in $(seq 1 50); do
  if node dist/src/cli/index.js health -c check.yaml >/dev/null 2>&1; then
    # The admin console's page is built into the image (browser assets bundled at build time).
    OUTRIGGER_PORT=$port node -e "fetch('http://127.0.0.1:'+process.env.OUTRIGGER_PORT+'/_admin/console/main.js').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" \
      || { kill -TERM "$pid"; echo "docker steps: the console's assets are missing from the build" >&2; exit 1; }
    kill -TERM "$pid"; wait "$pid"
    echo "docker steps: OK (production install builds, the CLI runs, the health check passes, the console is served)"
    exit 0
  fi
  sleep 0.2
done
kill -9 "$pid" 2>/dev/null || true
cat start.log
echo "docker steps: the health check never passed" >&2
exit 1
