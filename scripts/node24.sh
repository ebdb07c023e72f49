#!/usr/bin/env bash
# Prints the directory of a Node 24 `node` binary, for `PATH="$(bash scripts/node24.sh):$PATH" npm test`.
# The machine's own node when it is already 24; otherwise Node 24 from the npm registry's `node`
# package, installed once into a cache directory (MIMIC_NODE24_CACHE, default
# ~/.cache/mimic/node24) and reused after that. Nothing outside that directory changes. Only the
# directory goes to stdout; npm's output goes to stderr.
set -euo pipefail

major_of() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || true; }

if command -v node >/dev/null 2>&1 && [ "$(major_of node)" = 24 ]; then
  dirname "$(command -v node)"
  exit 0
fi

cache="${MIMIC_NODE24_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mimic/node24}"
platform="$(node -p 'process.platform')"
arch="$(node -p 'process.arch')"
# The name the `node` package's own installer uses for the binary package.
binary_package="node-$platform-$arch"
[ "$platform-$arch" = darwin-arm64 ] && binary_package="node-bin-$platform-$arch"

cached_bin() {
  local dir
  for dir in "$cache/node_modules/node/bin" "$cache/node_modules/$binary_package/bin"; do
    if [ "$(major_of "$dir/node")" = 24 ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

if ! cached_bin >/dev/null; then
  mkdir -p "$cache"
  echo "node24.sh: installing node@24 from the npm registry into $cache" >&2
  npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error node@24 >&2
  # The `node` package fetches its binary (the package above) in a preinstall script; where npm
  # runs no install scripts, install that package directly, at the same version.
  if ! cached_bin >/dev/null; then
    version="$(node -p "require(process.argv[1]).version" "$cache/node_modules/node/package.json")"
    npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error "$binary_package@$version" >&2
  fi
fi
if ! cached_bin; then
  echo "node24.sh: no Node 24 binary in $cache" >&2
  exit 1
fi
