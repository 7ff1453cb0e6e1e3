#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build script: builds every cargo-fuzz target in
# fuzz/ (resolve, tool_calls, edit, selectors, session) with the platform's
# sanitizer flags, copies them to $OUT with their committed seed corpora
# (<target>_seed_corpus.zip), and puts a release `tuls` binary beside them
# for the session target, which drives it as a child process.
#
# The platform runs this in the image of .clusterfuzzlite/Dockerfile with
# $SRC, $OUT and the sanitizer environment set. To check it without docker:
#   SRC=/path/above/the/repo OUT=/tmp/cflite-out bash .clusterfuzzlite/build.sh
# (needs cargo-fuzz; where the default toolchain is stable, add
# FUZZ_TOOLCHAIN=+nightly, or FUZZ_SANITIZER=none to build on stable
# without AddressSanitizer).
set -euo pipefail
cd "${SRC:?}/tuls"
: "${OUT:?}"
mkdir -p "$OUT"

# As OSS-Fuzz documents for Rust: `cargo fuzz build -O`, the platform's
# cargo wrapper and RUSTFLAGS add the sanitizer of the build ($SANITIZER).
# A local check without nightly may set FUZZ_SANITIZER=none (stable, no
# sanitizer).
args=(fuzz build -O --debug-assertions)
toolchain="${FUZZ_TOOLCHAIN:-}"
if [ "${FUZZ_SANITIZER:-}" = none ]; then
  args+=(-s none)
  toolchain="${toolchain:-+stable}"
fi
cargo ${toolchain:+"$toolchain"} "${args[@]}"

triple="$(rustc -vV | sed -n 's/^host: //p')"
built="${CARGO_TARGET_DIR:-fuzz/target}/$triple/release"  # cargo-fuzz honours CARGO_TARGET_DIR
for t in $(cargo ${toolchain:+"$toolchain"} fuzz list); do
  cp "$built/$t" "$OUT/$t"
  if [ -d "fuzz/corpus/$t" ] && [ -n "$(ls -A "fuzz/corpus/$t")" ]; then
    (cd "fuzz/corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
  fi
done

# The server the session target drives: an ordinary release build, without
# the fuzzing flags (RUSTFLAGS from the platform would instrument it; the
# target judges it from the outside).
env -u RUSTFLAGS cargo build --locked --release --bin tuls
cp "${CARGO_TARGET_DIR:-target}/release/tuls" "$OUT/tuls"
echo "build.sh: $(ls "$OUT")"
