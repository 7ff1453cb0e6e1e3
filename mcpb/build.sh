#!/usr/bin/env bash
# Builds the MCP Bundle mcpb/out/tuls.mcpb from the binaries dist/build.sh
# built (no second compile), mcpb/server/start.sh and mcpb/manifest.json,
# validated and packed with the @anthropic-ai/mcpb CLI pinned in
# mcpb/package.json. mcpb/test.mjs unpacks and checks it.
#
#   TULS_PROFILE=release TULS_TARGETS="x86_64-unknown-linux-musl aarch64-unknown-linux-musl \
#       x86_64-apple-darwin aarch64-apple-darwin" dist/build.sh && mcpb/build.sh
#
# The bundle holds server/<os>/tuls-<cpu> for each binary below, named as the
# host's platform (process.platform) and `uname -m` name them, since start.sh
# picks by those; every one must be there. The manifest's
# compatibility.platforms must list exactly the operating systems they cover,
# each with its platform_overrides entry. The macOS binaries are checked with
# dist/macho.mjs first (CPU, executable, system libraries only, signature).
set -euo pipefail
cd "$(dirname "$0")"
binaries=(
    "x86_64-unknown-linux-musl linux x86_64"
    "aarch64-unknown-linux-musl linux aarch64"
    "x86_64-apple-darwin darwin x86_64"
    "aarch64-apple-darwin darwin arm64"
)
for b in "${binaries[@]}"; do
    read -r target _ _ <<<"$b"
    [ -f "../dist/out/tuls-$target" ] || {
        echo "mcpb/build.sh: ../dist/out/tuls-$target not found: build it with dist/build.sh (TULS_TARGETS=$target)" >&2; exit 1; }
done
[ -x node_modules/.bin/mcpb ] || npm install --no-audit --no-fund --loglevel=error
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' ../Cargo.toml | head -n 1)"
manifest_version="$(node -p 'require("./manifest.json").version')"
[ "$version" = "$manifest_version" ] || { echo "mcpb/build.sh: manifest.json says $manifest_version, Cargo.toml $version" >&2; exit 1; }
oses=$(printf '%s\n' "${binaries[@]}" | awk '{print $2}' | sort -u | paste -sd, -)
node -e '
    const m = require("./manifest.json");
    const want = process.argv[1];
    const platforms = [...(m.compatibility?.platforms ?? [])].sort().join(",");
    const overrides = Object.keys(m.server.mcp_config.platform_overrides ?? {}).sort().join(",");
    if (platforms !== want || overrides !== want) {
        console.error(`mcpb/build.sh: the bundle holds binaries for ${want}, but manifest.json lists platforms [${platforms}] and platform_overrides [${overrides}]`);
        process.exit(1);
    }' "$oses"
rm -rf out && mkdir -p out/stage/server
cp manifest.json out/stage/
cp server/start.sh out/stage/server/start.sh
for b in "${binaries[@]}"; do
    read -r target os cpu <<<"$b"
    if [ "$os" = darwin ]; then node ../dist/macho.mjs "../dist/out/tuls-$target" "$cpu" >/dev/null; fi
    install -D -m 0755 "../dist/out/tuls-$target" "out/stage/server/$os/tuls-$cpu"
done
node_modules/.bin/mcpb validate out/stage/manifest.json
node_modules/.bin/mcpb pack out/stage out/tuls.mcpb
node_modules/.bin/mcpb info out/tuls.mcpb
