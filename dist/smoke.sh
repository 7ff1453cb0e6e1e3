#!/usr/bin/env bash
# Checks a static tuls binary (default: dist/out/tuls-x86_64-unknown-linux-musl):
#   1. `file` and `ldd` say it is statically linked;
#   2. a smoke MCP session (dist/smoke.py: initialize, tools/list, a read, a
#      write checked on disk) with an empty environment (`env -i`) from an
#      empty working directory;
#   3. the same session inside a chroot that holds only the binary and the
#      fixture (no libc, no /proc, no /dev, no shell): what a FROM scratch
#      image holds. Needs root (CAP_SYS_CHROOT); skipped with a note otherwise.
# A binary for another architecture (dist/out/tuls-aarch64-unknown-linux-musl
# on an x86_64 machine) runs under qemu-user: `qemu-<arch>-static` from
# Debian's qemu-user-static, or the emulator named by TULS_EMULATOR. Without one
# the script fails; it never skips. The chroot then holds the emulator too
# (it is static as well).
# Prints "N passed, N failed" at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${1:-dist/out/tuls-x86_64-unknown-linux-musl}")"
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
nok() { failed=$((failed + 1)); echo "not ok - $1"; }

f="$(file -b "$bin")"
echo "file: $f"
case "$f" in *"statically linked"* | *"static-pie linked"*) ok "file: static" ;; *) nok "file: not static" ;; esac
case "$f" in *"not stripped"*) nok "file: not stripped" ;; *stripped*) ok "file: stripped" ;; *) nok "file: stripped?" ;; esac
case "$f" in
    *"ARM aarch64"*) arch=aarch64 ;;
    *"x86-64"*) arch=x86_64 ;;
    *) arch=unknown ;;
esac
# The command that runs the binary: itself, or an emulator and it.
run=("$bin")
if [ "$arch" != "$(uname -m)" ]; then
    emu="${TULS_EMULATOR:-qemu-$arch-static}"
    emu_path="$(command -v "$emu" || true)"
    if [ -z "$emu_path" ]; then
        echo "smoke: $bin is $arch and this machine $(uname -m): $emu is needed (Debian: apt-get install qemu-user-static)" >&2
        exit 1
    fi
    run=("$emu_path" "$bin")
    echo "emulator: $emu_path ($("$emu_path" --version | head -n 1))"
fi
l="$(ldd "$bin" 2>&1 || true)"
echo "ldd: $l"
case "$l" in *"not a dynamic executable"* | *"statically linked"*) ok "ldd: no shared libraries" ;; *) nok "ldd: $l" ;; esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty" "$tmp/root"
printf 'hello from the fixture\n' > "$tmp/root/hello.txt"
echo "--- env -i, from an empty directory"
# smoke.py starts the server with an empty environment (like `env -i`).
if python3 dist/smoke.py --env-empty --cwd "$tmp/empty" --root "$tmp/root" -- "${run[@]}"; then
    ok "session with env -i from an empty directory"
else
    nok "session with env -i from an empty directory"
fi
[ -z "$(ls -A "$tmp/empty")" ] && ok "nothing written to the working directory" || nok "working directory not empty"

echo "--- chroot holding only the binary and the fixture"
jail="$tmp/jail"
mkdir -p "$jail/work"
cp "$bin" "$jail/tuls"
printf 'hello from the fixture\n' > "$jail/work/hello.txt"
jailed=(/tuls)
if [ "${#run[@]}" -gt 1 ]; then
    cp "${run[0]}" "$jail/emulator"
    jailed=(/emulator /tuls)
fi
if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null && chroot "$jail" "${jailed[@]}" --version >/dev/null 2>&1; then
    echo "jail: $(cd "$jail" && find . | sort | tr '\n' ' ')"
    # chroot's own directory stays the cwd: "/" inside the jail.
    if python3 dist/smoke.py --env-empty --root /work --host-root "$jail/work" -- "$(command -v chroot)" "$jail" "${jailed[@]}"; then
        ok "session in a chroot with only the binary and the fixture"
    else
        nok "session in a chroot with only the binary and the fixture"
    fi
else
    echo "# skipped: chroot needs root and CAP_SYS_CHROOT"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
