#!/usr/bin/env bash
# Builds the static Linux release binaries of tuls and their SHA-256 sums.
#
#   dist/build.sh                      # both targets, `--profile dist` (fat LTO, ~11 min each on 2 cores)
#   TULS_PROFILE=release dist/build.sh # the faster thin-LTO release profile (what CI uses)
#   TULS_TARGETS=x86_64-unknown-linux-musl dist/build.sh   # one target
#
# Tools: cargo-zigbuild and zig, both from PyPI (`pip install ziglang
# cargo-zigbuild`: prebuilt, nothing to compile; cargo-zigbuild finds zig
# through `python3 -m ziglang`). zig is the C compiler and linker for both musl
# targets, so no cross toolchain or sysroot is needed. The rustup targets must be
# installed (`rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-musl`).
#
# Writes dist/out/tuls-<target> (stripped) and dist/out/SHA256SUMS.
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${TULS_PROFILE:-dist}"
targets="${TULS_TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl}"
out=dist/out
# cargo puts the `dev` profile in target/<triple>/debug, every other one under its own name.
profdir="$profile"
[ "$profile" = dev ] && profdir=debug

command -v cargo-zigbuild >/dev/null || { echo "build.sh: cargo-zigbuild not found (pip install cargo-zigbuild)" >&2; exit 1; }
python3 -m ziglang version >/dev/null 2>&1 || command -v zig >/dev/null || {
    echo "build.sh: zig not found (pip install ziglang)" >&2; exit 1; }

mkdir -p "$out"
for t in $targets; do
    rustup target list --installed 2>/dev/null | grep -qx "$t" || rustup target add "$t"
    echo "==> cargo zigbuild --profile $profile --target $t" >&2
    # Stripped by rustc through the linker (zig's), whatever the profile says:
    # binutils' strip does not know aarch64 and zig's objcopy cannot strip.
    env "CARGO_PROFILE_$(echo "$profile" | tr a-z- A-Z_)_STRIP=symbols" \
        cargo zigbuild --locked --profile "$profile" --target "$t" --bin tuls
    cp "${CARGO_TARGET_DIR:-target}/$t/$profdir/tuls" "$out/tuls-$t"
    case "$(file -b "$out/tuls-$t")" in
        *"not stripped"*) echo "build.sh: $out/tuls-$t is not stripped" >&2; exit 1 ;;
    esac
    chmod 0755 "$out/tuls-$t"
done

(cd "$out" && sha256sum tuls-*-linux-musl > SHA256SUMS && cat SHA256SUMS)
