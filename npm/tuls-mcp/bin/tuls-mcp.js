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
    fail(`the platform package ${pkg} is not installed. It is an optional dependency of tuls-mcp: ` +
      "reinstall without --no-optional / --omit=optional.");
  }
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
