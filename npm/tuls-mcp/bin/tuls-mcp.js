#!/usr/bin/env node
// Launcher for the tuls binary shipped in a per-platform optional dependency
// (@tuls-mcp/linux-x64, ...), the way esbuild and biome ship theirs. It
// passes stdin, stdout and stderr straight through (stdio "inherit": the child
// gets this process's file descriptors, so nothing is copied or buffered),
// forwards termination signals, and exits with the child's status or dies of
// the child's signal. It never writes to stdout: stdout carries the MCP stream.
"use strict";

const { spawn } = require("node:child_process");
const { constants } = require("node:os");

const PLATFORMS = {
  "linux x64": "@tuls-mcp/linux-x64",
  "linux arm64": "@tuls-mcp/linux-arm64",
};

function fail(message) {
  process.stderr.write(`tuls-mcp: ${message}\n`);
  process.exit(1);
}

function binaryPath() {
  // For testing a local build: TULS_BINARY=/path/to/tuls npx tuls-mcp ...
  if (process.env.TULS_BINARY) return process.env.TULS_BINARY;
  const key = `${process.platform} ${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    fail(`no tuls binary for ${key}; supported: ${Object.keys(PLATFORMS).join(", ")}. ` +
      "tuls needs Linux (openat2, Landlock); other systems can build it from source once supported.");
  }
  try {
    return require.resolve(`${pkg}/bin/tuls`);
  } catch {
    fail(missingBinary(pkg));
  }
}

// Says what is really missing, and the likely reason, instead of guessing one.
function missingBinary(pkg) {
  let wanted = "";
  try {
    wanted = require("../package.json").optionalDependencies[pkg] ?? "";
  } catch {
    // the version is only for the message
  }
  const spec = wanted ? `${pkg}@${wanted}` : pkg;
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    // not installed at all
  }
  if (manifest) {
    const dir = require("node:path").dirname(manifest);
    return `${spec} is installed (${dir}) but has no bin/tuls: the install is incomplete; reinstall tuls-mcp.`;
  }
  const looked = (require.resolve.paths(pkg) ?? []).slice(0, 3).join(", ");
  return `the tuls binary for ${process.platform} ${process.arch} comes in the package ${spec}, ` +
    `which is not installed (looked in: ${looked}). npm installs it as an optional dependency of ` +
    "tuls-mcp and skips it when optional dependencies are omitted (--omit=optional, or npm_config_omit), " +
    "when a package-lock.json written on another platform leaves it out, or when the registry has no " +
    `${spec}. Install ${spec} next to tuls-mcp, or set TULS_BINARY to a tuls binary.`;
}

const bin = binaryPath();
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });

const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"];
const handlers = new Map();
for (const sig of FORWARDED) {
  const h = () => {
    try {
      child.kill(sig);
    } catch {
      // the child has already gone; its exit event ends this process
    }
  };
  handlers.set(sig, h);
  process.on(sig, h);
}

child.on("error", (err) => fail(`cannot start ${bin}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the parent sees what it would have seen
    // without the launcher. Drop our handler first, or it would be caught.
    const h = handlers.get(signal);
    if (h) process.removeListener(signal, h);
    try {
      process.kill(process.pid, signal);
    } catch {
      // fall through to the shell convention below
    }
    // A signal whose default action does not end the process: report it as a shell would.
    setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 100);
    return;
  }
  process.exit(code ?? 1);
});
