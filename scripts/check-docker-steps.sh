#!/usr/bin/env bash
# No Docker engine runs on the CI machines, so this replays the Dockerfile's steps in a scratch
# folder with the same inputs (only what the Dockerfile COPYs) and checks the result runs:
# npm ci → build → prune to production dependencies → the CLI and the health check command.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Build stage: COPY package*.json, npm ci, COPY tsconfig*.json src, build, prune.
cp "$repo/package.json" "$repo/package-lock.json" "$work/"
(cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
cp "$repo/tsconfig.json" "$repo/tsconfig.build.json" "$work/"
cp -r "$repo/src" "$work/src"
(cd "$work" && npm run build --silent && npm prune --omit=dev --no-audit --no-fund --loglevel=error)

# Runtime stage: node_modules, dist, package.json, config only.
run="$work/runtime"
mkdir -p "$run"
cp -r "$work/node_modules" "$work/dist" "$work/package.json" "$run/"
cp -r "$repo/config" "$run/config"
cd "$run"
node dist/src/cli/index.js --help >/dev/null
UPSTREAM_JWT_SECRET="$(head -c 32 /dev/urandom | base64)" node dist/src/cli/index.js check -c config/outrigger.example.yaml

# The HEALTHCHECK command against a running instance (embedded Redis, dummy upstream).
port=$(node -e "const s=require('net').createServer().listen(0,()=>{console.log(s.address().port);s.close()})")
printf 'service: { id: docker-check }\nlisten: { host: 127.0.0.1, port: %s }\nupstream: { url: "http://127.0.0.1:9" }\nredis: { url: embedded }\n' "$port" > check.yaml
node dist/src/cli/index.js start -c check.yaml > start.log 2>&1 &
pid=$!
for _ in $(seq 1 50); do
  if OUTRIGGER_PORT=$port node -e "fetch('http://127.0.0.1:'+(process.env.OUTRIGGER_PORT||8080)+'/_health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"; then
    kill -TERM "$pid"; wait "$pid"
    echo "docker steps: OK (production install builds, the CLI runs, the health check passes)"
    exit 0
  fi
  sleep 0.2
done
kill -9 "$pid" 2>/dev/null || true
cat start.log
echo "docker steps: the health check never passed" >&2
exit 1
