#!/usr/bin/env bash
# install.sh — installs npm's s3rver (the S3-compatible server of the remote-shard tests) with `npm ci` from the
# committed package.json + package-lock.json of this folder into DEST (default: build-node/s3rver/ at the top of the
# source tree, git-ignored). setup.sh runs it; tests/remote/s3rver_fixture.py starts DEST/node_modules/s3rver.
#
#   tests/remote/s3rver/install.sh [DEST]
#
# Idempotent and quiet: when DEST already holds an install of this very lockfile (DEST/installed.lock, written only
# after a successful `npm ci`) and s3rver's version there is the pinned one, it does nothing and prints nothing.
# Otherwise it prints one line, reinstalls from scratch and, on failure, prints npm's log and exits non-zero.
# Needs `npm` and `node` on PATH (setup.sh installs Debian's nodejs and npm when npm is missing). Network: only the
# npm registry npm is configured for. npm's cache is DEST/.npm-cache, so the install does not depend on HOME (root
# under sudo never writes into a user's ~/.npm); --ignore-scripts: no package of the tree has an install script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:-$here/../../../build-node/s3rver}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

pinned="$(sed -n 's/^ *"s3rver": "\([0-9.]*\)".*/\1/p' "$here/package.json")"
installed=""
if [[ -f "$dest/node_modules/s3rver/package.json" ]]; then
  installed="$(sed -n 's/^ *"version": "\([^"]*\)".*/\1/p' "$dest/node_modules/s3rver/package.json" | head -n1)"
fi

node_bin="$(command -v node || true)"
npm_bin="$(command -v npm || true)"
if [[ -z "$npm_bin" || -z "$node_bin" ]]; then
  echo "s3rver install: npm and node are not on PATH; install Debian's nodejs and npm (apt-get install nodejs npm)" \
       "or run ./setup.sh, which does" >&2
  exit 1
fi
# The node the tests run s3rver with: the one npm installed it with (the fixture reads DEST/node-path).
if [[ "$(cat "$dest/node-path" 2>/dev/null || true)" != "$node_bin" ]]; then
  echo "$node_bin" >"$dest/node-path"
fi

if [[ -n "$pinned" && "$installed" == "$pinned" ]] && cmp -s "$here/package-lock.json" "$dest/installed.lock"; then
  exit 0
fi

echo "s3rver install: installing s3rver $pinned (npm ci into $dest)"
rm -rf "$dest/node_modules" "$dest/installed.lock"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
log="$dest/npm-ci.log"
if ! (cd "$dest" && "$npm_bin" ci --no-audit --no-fund --ignore-scripts --no-update-notifier \
        --cache "$dest/.npm-cache" --loglevel=warn) >"$log" 2>&1; then
  cat "$log" >&2
  echo "s3rver install: \`npm ci\` failed in $dest (its output above and in $log); check that the npm registry" \
       "($("$npm_bin" config get registry 2>/dev/null)) can be reached, then run ./setup.sh again" >&2
  exit 1
fi
installed="$(sed -n 's/^ *"version": "\([^"]*\)".*/\1/p' "$dest/node_modules/s3rver/package.json" | head -n1)"
if [[ "$installed" != "$pinned" ]]; then
  echo "s3rver install: npm ci installed s3rver '$installed', not the pinned $pinned; package-lock.json in $here" \
       "does not match package.json (regenerate it: npm install --package-lock-only there)" >&2
  exit 1
fi
cp "$here/package-lock.json" "$dest/installed.lock"
