#!/usr/bin/env bash
# Fuzz smoke for CI: build every fuzz target, run each for N seconds (first
# argument, default 30) from its committed seed corpus, and fail on any crash,
# escape, timeout or out-of-memory.
#
#   fuzz/smoke.sh        # 30 s per target
#   fuzz/smoke.sh 10     # 10 s per target
#
# Uses nightly with AddressSanitizer when a nightly toolchain is installed,
# else stable without a sanitizer (`-s none`); FUZZ_TOOLCHAIN=stable or
# FUZZ_TOOLCHAIN=nightly forces the choice. Installs cargo-fuzz if it is
# missing. Runs two targets at a time (the CI machines have two cores).
# New corpus entries go to a temp dir, so the committed seeds stay as they
# are; a crashing input is saved under fuzz/artifacts/<target>/.
set -euo pipefail

secs="${1:-30}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! cargo fuzz --help >/dev/null 2>&1; then
    echo "smoke: cargo-fuzz is missing; installing it (takes a few minutes)" >&2
    cargo install cargo-fuzz --locked
fi

want="${FUZZ_TOOLCHAIN:-}"
if [ -z "$want" ]; then
    if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
        want=nightly
    else
        want=stable
    fi
fi
if [ "$want" = nightly ]; then
    toolchain=+nightly
    sanitizer=()           # cargo-fuzz's default: AddressSanitizer
    mode="nightly, AddressSanitizer"
else
    toolchain=+stable
    sanitizer=(-s none)
    mode="stable, no sanitizer"
fi
# Otherwise cargo-fuzz's own defaults (release, one codegen unit, debug
# assertions), so the smoke shares fuzz/target with `cargo fuzz run <t>`.
# (Measured on two busy cores, 16 codegen units built slower, not faster.)

mapfile -t targets < <(cargo "$toolchain" fuzz list)
echo "smoke: ${#targets[@]} targets (${targets[*]}), ${secs}s each, $mode" >&2

start=$SECONDS
cargo "$toolchain" fuzz build ${sanitizer[@]+"${sanitizer[@]}"}
echo "smoke: built in $((SECONDS - start))s" >&2

work="$(mktemp -d "${TMPDIR:-/tmp}/tuls-fuzz-smoke.XXXXXX")"
trap 'rm -rf "$work"' EXIT

run() {
    local t="$1"
    mkdir -p "$work/corpus/$t"
    cargo "$toolchain" fuzz run ${sanitizer[@]+"${sanitizer[@]}"} "$t" "$work/corpus/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$work/$t.log" 2>&1
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
