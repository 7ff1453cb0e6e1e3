#!/usr/bin/env bash
# Packs the npm packages: copies the static binaries built by dist/build.sh
# (dist/out/tuls-<target>) into the platform packages and runs `npm pack` on
# each, writing the tarballs to dist/out/npm/. A platform whose binary was not
# built is skipped with a note (CI builds only x86_64). The package versions
# must match Cargo.toml's.
#
#   dist/build.sh && npm/pack.sh
#   npm publish dist/out/npm/tuls-mcp-linux-x64-*.tgz ...   # platforms first, then tuls-mcp
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
out=dist/out/npm
rm -rf "$out"
mkdir -p "$out"

for pair in linux-x64:x86_64-unknown-linux-musl linux-arm64:aarch64-unknown-linux-musl; do
    dir="npm/${pair%%:*}" bin="dist/out/tuls-${pair#*:}"
    if [ ! -f "$bin" ]; then
        echo "pack.sh: $bin not built; skipping ${dir#npm/}" >&2
        continue
    fi
    mkdir -p "$dir/bin"
    install -m 0755 "$bin" "$dir/bin/tuls"
    pkgs+=("$dir")
done
pkgs+=(npm/tuls-mcp)

for dir in "${pkgs[@]}"; do
    v="$(node -p "require('./$dir/package.json').version")"
    [ "$v" = "$version" ] || { echo "pack.sh: $dir is $v, Cargo.toml is $version" >&2; exit 1; }
    (cd "$dir" && npm pack --silent --pack-destination "$OLDPWD/$out" >/dev/null)
done
# The launcher pins its platform packages to the same version.
node -e '
  const p = require("./npm/tuls-mcp/package.json");
  for (const [n, v] of Object.entries(p.optionalDependencies))
    if (v !== p.version) { console.error(`pack.sh: ${n} is pinned to ${v}, not ${p.version}`); process.exit(1); }'
ls -l "$out"
