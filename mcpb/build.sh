#!/usr/bin/env bash
# Builds the MCP Bundle mcpb/out/tuls.mcpb: the static x86_64 Linux binary
# that dist/build.sh built (no second compile), mcpb/server/start.sh and
# mcpb/manifest.json, validated and packed with the @anthropic-ai/mcpb CLI
# pinned in mcpb/package.json. mcpb/test.mjs unpacks and starts it.
#
#   dist/build.sh && mcpb/build.sh
set -euo pipefail
cd "$(dirname "$0")"
bin=../dist/out/tuls-x86_64-unknown-linux-musl
[ -f "$bin" ] || { echo "mcpb/build.sh: $bin not found: run dist/build.sh first" >&2; exit 1; }
[ -x node_modules/.bin/mcpb ] || npm install --no-audit --no-fund --loglevel=error
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' ../Cargo.toml | head -n 1)"
manifest_version="$(node -p 'require("./manifest.json").version')"
[ "$version" = "$manifest_version" ] || { echo "mcpb/build.sh: manifest.json says $manifest_version, Cargo.toml $version" >&2; exit 1; }
rm -rf out && mkdir -p out/stage/server
cp manifest.json out/stage/
cp server/start.sh out/stage/server/start.sh
install -m 0755 "$bin" out/stage/server/tuls
node_modules/.bin/mcpb validate out/stage/manifest.json
node_modules/.bin/mcpb pack out/stage out/tuls.mcpb
node_modules/.bin/mcpb info out/tuls.mcpb
