#!/usr/bin/env bash
# Installs the tarballs from npm/pack.sh into an empty folder with no registry
# (`npm install --offline`), then:
#   - checks the launcher adds nothing: `tuls-mcp --version` prints what the
#     binary prints, a failing start exits with the binary's status and an
#     empty stdout, and SIGTERM ends the launcher as it ends the binary;
#   - drives `npx tuls-mcp filesystem DIR` with the official MCP TypeScript SDK
#     client (ci/sdk-client/check.mjs).
# Prints "N passed, N failed" twice (launcher checks, then the SDK session).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
[ -d ci/sdk-client/node_modules ] || (cd ci/sdk-client && npm install --no-audit --no-fund --loglevel=error)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm install --offline --no-audit --no-fund --loglevel=error \
    "$repo"/dist/out/npm/tuls-mcp-[0-9]*.tgz "$repo"/dist/out/npm/tuls-mcp-linux-x64-*.tgz
bin="$tmp/node_modules/@tuls-mcp/linux-x64/bin/tuls"
launcher=(node "$tmp/node_modules/.bin/tuls-mcp")
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
nok() { failed=$((failed + 1)); echo "not ok - $1"; }

[ -x "$bin" ] && ok "platform binary installed and executable" || nok "platform binary missing: $bin"
[ "$(npx --offline tuls-mcp --version)" = "$("$bin" --version)" ] && ok "--version through npx is the binary's" || nok "--version differs"

set +e
"$bin" filesystem "$tmp/does-not-exist" >"$tmp/out.direct" 2>/dev/null </dev/null; want=$?
npx --offline tuls-mcp filesystem "$tmp/does-not-exist" >"$tmp/out.npx" 2>/dev/null </dev/null; got=$?
set -e
[ "$want" != 0 ] && [ "$got" = "$want" ] && ok "exit status passed through ($got)" || nok "exit status: binary $want, npx $got"
[ ! -s "$tmp/out.direct" ] && [ ! -s "$tmp/out.npx" ] && ok "nothing on stdout" || nok "stdout not empty"

# SIGTERM while serving (stdin held open): the launcher forwards it and ends as the binary does.
sigterm_status() {
    mkfifo "$tmp/fifo"
    "$@" filesystem "$tmp" <"$tmp/fifo" >/dev/null 2>&1 &
    local pid=$!
    exec 9>"$tmp/fifo"
    sleep 1
    kill -TERM "$pid"
    local st=0
    wait "$pid" || st=$?
    exec 9>&-
    rm -f "$tmp/fifo"
    echo "$st"
}
want="$(sigterm_status "$bin")"
got="$(sigterm_status "${launcher[@]}")"
[ "$got" = "$want" ] && ok "SIGTERM: launcher ends with the binary's status ($got)" || nok "SIGTERM: binary $want, launcher $got"
pgrep -f "$bin filesystem" >/dev/null && nok "a tuls process outlived its launcher" || ok "no tuls process left behind"
# Without the platform package (optional dependencies omitted), the launcher
# says which package is missing, with which version, and why it may be.
# (In a folder of its own, outside $tmp: node would find $tmp/node_modules from a subfolder.)
bare="$(mktemp -d)"
(cd "$bare" && npm install --offline --omit=optional --no-audit --no-fund \
    --loglevel=error "$repo"/dist/out/npm/tuls-mcp-[0-9]*.tgz)
set +e
msg="$(node "$bare/node_modules/.bin/tuls-mcp" --version 2>&1 >/dev/null)"; st=$?
rm -rf "$bare"
set -e
version="$(node -p 'require(process.argv[1]).version' "$repo/npm/tuls-mcp/package.json")"
if [ "$st" = 1 ] && [[ "$msg" == *"comes in the package @tuls-mcp/linux-x64@$version, which is not installed"* ]] \
    && [[ "$msg" == *"--omit=optional"* ]] && [[ "$msg" == *"TULS_BINARY"* ]]; then
    ok "without the platform package: the launcher names it and the reasons ($msg)"
else
    nok "without the platform package: status $st, message: $msg"
fi
# The platform package present but its binary gone: an incomplete install.
mv "$bin" "$bin.away"
set +e
msg="$("${launcher[@]}" --version 2>&1 >/dev/null)"; st=$?
set -e
[ "$st" = 1 ] && [[ "$msg" == *"is installed"*"but has no bin/tuls"* ]] \
    && ok "platform package without its binary: said so" || nok "incomplete install: status $st, message: $msg"
mv "$bin.away" "$bin"
echo "$passed passed, $failed failed"

# The SDK session, through npx as a client config would start it.
node "$repo/ci/sdk-client/check.mjs" npx --offline tuls-mcp
[ "$failed" = 0 ]
