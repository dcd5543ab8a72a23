#!/bin/sh
# Entry point of `npm start` / `npm test` (`sh scripts/bootstrap.sh <script> [args...]`): installs the
# dependencies when node_modules is missing or older than package-lock.json (on a fresh clone the `node` on PATH
# may be older than the Node 24 the project needs; the `node` devDependency provides it), then runs
# scripts/<script>.ts with node_modules/.bin/node.
set -eu

cd "$(dirname "$0")/.."

if [ "$#" -lt 1 ]; then
  echo "usage: sh scripts/bootstrap.sh <script> [args...]   (runs scripts/<script>.ts)" >&2
  exit 2
fi
script=$1
shift
case $script in
  '' | */* | *..*)
    echo "bootstrap: invalid script name '$script'" >&2
    exit 2
    ;;
esac
if [ ! -f "scripts/$script.ts" ]; then
  echo "bootstrap: scripts/$script.ts does not exist" >&2
  exit 2
fi

stale() {
  [ ! -x node_modules/.bin/node ] && return 0
  [ ! -f node_modules/.package-lock.json ] && return 0
  # POSIX spelling of `package-lock.json -nt node_modules/.package-lock.json`.
  [ -n "$(find package-lock.json -newer node_modules/.package-lock.json 2>/dev/null)" ] && return 0
  return 1
}

if stale; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: npm is required to install the dependencies (install Node.js >= 20 with npm)" >&2
    exit 1
  fi
  if [ "${CI:-}" = "true" ]; then
    echo "bootstrap: installing dependencies (npm ci)" >&2
    if ! npm ci --no-audit --no-fund; then
      # e.g. a lock file missing other platforms' optional packages: npm ci refuses it, npm install copes.
      echo "bootstrap: WARNING: npm ci failed (package-lock.json out of sync?); falling back to npm install" >&2
      npm install --no-audit --no-fund
    fi
  else
    echo "bootstrap: installing dependencies (npm install)" >&2
    npm install --no-audit --no-fund
  fi
  if [ ! -x node_modules/.bin/node ]; then
    echo "bootstrap: node_modules/.bin/node is missing after the install (the 'node' devDependency provides Node 24)" >&2
    exit 1
  fi
  # npm may rewrite package-lock.json after its hidden lockfile; don't reinstall on every run because of that.
  if [ -f node_modules/.package-lock.json ]; then
    touch node_modules/.package-lock.json
  fi
fi

# Child processes (api, worker, tools) must find Node 24 and the local binaries first too.
PATH="$(pwd)/node_modules/.bin:$PATH"
export PATH

# The platform's processes allocate briskly per request: 64 MiB semi-spaces for the young generation (V8 sizes them
# from the heap limit, smaller) let most of it die before a scavenge: a quarter less main-thread CPU per completion
# (docs/benchmarks.md).
case $script in
  start) exec node_modules/.bin/node --max-semi-space-size=64 "scripts/$script.ts" "$@" ;;
  *) exec node_modules/.bin/node "scripts/$script.ts" "$@" ;;
esac
