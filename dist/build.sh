#!/usr/bin/env bash
# Builds the static Linux release binaries of tuls and their SHA-256 sums, and
# on request the macOS binaries the MCP Bundle carries.
#
#   dist/build.sh                      # both Linux targets, `--profile dist` (fat LTO, ~11 min each on 2 cores)
#   TULS_PROFILE=release dist/build.sh # the faster thin-LTO release profile (what CI uses)
#   TULS_TARGETS=x86_64-unknown-linux-musl dist/build.sh   # one target
#   TULS_TARGETS="x86_64-apple-darwin aarch64-apple-darwin" dist/build.sh   # the macOS binaries
#
# Tools: cargo-zigbuild and zig, both from PyPI (`pip install ziglang
# cargo-zigbuild`: prebuilt, nothing to compile; cargo-zigbuild finds zig
# through `python3 -m ziglang`). zig is the C compiler and linker for the musl
# targets, so no cross toolchain or sysroot is needed; for the macOS targets
# it links against the stubs of macOS's system libraries it ships, with no
# macOS SDK (tuls has no C code; rustc's warning that `xcrun` is missing is
# expected). The rustup targets must be installed (`rustup target add ...`).
# A macOS binary is built for macOS 11 or later (MACOSX_DEPLOYMENT_TARGET)
# and checked with `node dist/macho.mjs`; none is run here.
#
# Writes dist/out/tuls-<target> (stripped) and dist/out/SHA256SUMS (the Linux
# binaries, the release's downloads).
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
target_args=()
macos=()
for t in $targets; do
    rustup target list --installed 2>/dev/null | grep -qx "$t" || rustup target add "$t"
    target_args+=(--target "$t")
    case "$t" in *-apple-darwin) macos=("MACOSX_DEPLOYMENT_TARGET=${MACOSX_DEPLOYMENT_TARGET:-11.0}") ;; esac
done
# One cargo run for every target: cargo overlaps their builds, so the serial
# end of one (codegen and link of tuls itself) runs beside the other's.
echo "==> cargo zigbuild --profile $profile ${target_args[*]}" >&2
# Stripped by rustc through the linker (zig's), whatever the profile says:
# binutils' strip does not know aarch64 and zig's objcopy cannot strip.
# For macOS, dist/macho.mjs checks that the code signature matches the stripped file.
env "CARGO_PROFILE_$(echo "$profile" | tr a-z- A-Z_)_STRIP=symbols" "${macos[@]}" \
    cargo zigbuild --locked --profile "$profile" "${target_args[@]}" --bin tuls
for t in $targets; do
    cp "${CARGO_TARGET_DIR:-target}/$t/$profdir/tuls" "$out/tuls-$t"
    chmod 0755 "$out/tuls-$t"
    case "$t" in
        x86_64-apple-darwin) node dist/macho.mjs "$out/tuls-$t" x86_64 ;;
        aarch64-apple-darwin) node dist/macho.mjs "$out/tuls-$t" arm64 ;;
        *) case "$(file -b "$out/tuls-$t")" in
               *"not stripped"*) echo "build.sh: $out/tuls-$t is not stripped" >&2; exit 1 ;;
           esac ;;
    esac
done

if compgen -G "$out/tuls-*-linux-musl" >/dev/null; then
    (cd "$out" && sha256sum tuls-*-linux-musl > SHA256SUMS && cat SHA256SUMS)
fi
