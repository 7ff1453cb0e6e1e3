#!/usr/bin/env bash
# Fuzz smoke for CI: build every fuzz target, run each for N seconds (first
# argument, default 30) from its committed seed corpus, and fail on any crash,
# escape, timeout or out-of-memory.
#
#   fuzz/smoke.sh        # 30 s per target
#   fuzz/smoke.sh 10     # 10 s per target
#
# Uses nightly with AddressSanitizer (through cargo-fuzz) when a nightly
# toolchain and cargo-fuzz are installed. Otherwise, on stable without a
# sanitizer, it builds the targets with plain cargo and the flags
# cargo-fuzz 0.13.2 passes for `-s none` (below), and runs the binaries
# itself: no cargo-fuzz install (minutes of CI on a fresh machine), the same
# binaries in the same place (fuzz/target/<host>/release/), so
# `cargo fuzz run -s none` reuses them. FUZZ_TOOLCHAIN=stable or FUZZ_TOOLCHAIN=nightly forces the
# choice. Runs two targets at a time (the CI machines have two cores).
# New corpus entries go to a temp dir, so the committed seeds stay as they
# are; a crashing input is saved under fuzz/artifacts/<target>/.
set -euo pipefail

secs="${1:-30}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

want="${FUZZ_TOOLCHAIN:-}"
if [ -z "$want" ]; then
    if rustup toolchain list 2>/dev/null | grep -q '^nightly' && cargo fuzz --help >/dev/null 2>&1; then
        want=nightly
    else
        want=stable
    fi
fi
host="$(rustc -vV | sed -n 's/^host: //p')"
mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | tail -n +2)
start=$SECONDS
if [ "$want" = nightly ]; then
    if ! cargo fuzz --help >/dev/null 2>&1; then
        echo "smoke: cargo-fuzz is missing; installing it (takes a few minutes)" >&2
        cargo install cargo-fuzz --locked
    fi
    mode="nightly, AddressSanitizer (cargo fuzz)"
    cargo +nightly fuzz build
else
    mode="stable, no sanitizer (cargo-fuzz's flags, plain cargo)"
    # What `cargo fuzz build -s none` passes (cargo-fuzz 0.13.2, project.rs):
    # the sancov instrumentation libFuzzer needs, `--cfg fuzzing`, debug
    # assertions, one codegen unit; `--target` keeps them off build scripts.
    # (The dev profile took as much CPU here, 5 min against 4, and ran the
    # targets up to 9 times slower.)
    RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing \
-Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Cllvm-args=-sanitizer-coverage-stack-depth \
-Cdebug-assertions -Ccodegen-units=1" \
        cargo +stable build --locked --manifest-path fuzz/Cargo.toml --target "$host" --release \
        --config 'profile.release.debug="line-tables-only"' --bins
fi
echo "smoke: ${#targets[@]} targets (${targets[*]}), ${secs}s each, $mode" >&2
echo "smoke: built in $((SECONDS - start))s" >&2
start=$SECONDS

work="$(mktemp -d "${TMPDIR:-/tmp}/tuls-fuzz-smoke.XXXXXX")"
trap 'rm -rf "$work"' EXIT

run() {
    local t="$1"
    mkdir -p "$work/corpus/$t"
    mkdir -p "fuzz/artifacts/$t"
    local args=(-artifact_prefix="fuzz/artifacts/$t/" -max_total_time="$secs" -timeout=20
        -rss_limit_mb=2048 -print_final_stats=1 "$work/corpus/$t" "fuzz/corpus/$t")
    if [ "$want" = nightly ]; then
        cargo +nightly fuzz run "$t" "$work/corpus/$t" "fuzz/corpus/$t" -- "${args[@]:0:5}" \
            >"$work/$t.log" 2>&1
    else
        "fuzz/target/$host/release/$t" "${args[@]}" >"$work/$t.log" 2>&1
    fi
}

failed=()
report() {
    local t="$1" rc="$2"
    local runs
    runs="$(grep -aoE 'Done [0-9]+ runs in [0-9]+ second' "$work/$t.log" | tail -1 || true)"
    if [ "$rc" -eq 0 ]; then
        echo "smoke: $t ok (${runs:-no stats})" >&2
    else
        echo "smoke: $t FAILED (exit $rc)" >&2
        grep -a -m1 -A6 -E 'panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer' "$work/$t.log" >&2 || true
        echo "smoke: last lines of the $t log:" >&2
        tail -n 25 "$work/$t.log" >&2
        failed+=("$t")
    fi
}

# Two at a time.
i=0
while [ "$i" -lt "${#targets[@]}" ]; do
    a="${targets[$i]}"
    b="${targets[$((i + 1))]:-}"
    run "$a" & pa=$!
    if [ -n "$b" ]; then run "$b" & pb=$!; fi
    rc=0; wait "$pa" || rc=$?; report "$a" "$rc"
    if [ -n "$b" ]; then rc=0; wait "$pb" || rc=$?; report "$b" "$rc"; fi
    i=$((i + 2))
done

echo "smoke: done in $((SECONDS - start))s" >&2
if [ "${#failed[@]}" -ne 0 ]; then
    echo "smoke: FAILED: ${failed[*]} (crash inputs under fuzz/artifacts/)" >&2
    exit 1
fi
