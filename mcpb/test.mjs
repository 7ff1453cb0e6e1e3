// Unpacks mcpb/out/tuls.mcpb with the mcpb CLI, then:
// - checks what it holds: server/<os>/tuls-<cpu>, the Linux ones static ELF
//   files of that CPU, the macOS ones Mach-O executables checked by
//   dist/macho.mjs (CPU, system libraries only, deployment target, code
//   signature), both macOS CPUs present, and compatibility.platforms and
//   platform_overrides naming exactly the operating systems it holds binaries for;
// - for each platform a host may run on (darwin, linux, win32, as
//   process.platform names them), builds the command as the host does
//   (getMcpConfigForManifest) and runs it against a copy of the bundle whose
//   binaries are stubs, under a `uname` that reports each CPU: the right stub
//   starts, and a platform or CPU without a binary fails with a message that
//   says so (the macOS binaries cannot run here);
// - starts the real server exactly as the manifest tells a host on this
//   machine to (the user's answers: two folders, one named like a flag and
//   with a space; Read-only off, then on) and drives it with the MCP
//   TypeScript SDK client.
// Usage: node mcpb/test.mjs   (after mcpb/build.sh)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";
import { execFileSync, spawnSync } from "node:child_process";
import {
  mkdtempSync, mkdirSync, writeFileSync, readFileSync, realpathSync, existsSync, readdirSync, statSync,
  copyFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { checkMachO } from "../dist/macho.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const bundle = join(here, "out", "tuls.mcpb");
if (!existsSync(bundle)) {
  console.error("run mcpb/build.sh first");
  process.exit(2);
}
let passed = 0;
let failed = 0;
function check(name, cond, detail) {
  if (cond) {
    passed++;
    console.log(`ok - ${name}`);
  } else {
    failed++;
    console.log(`not ok - ${name}: ${detail ?? ""}`);
  }
}

const scratch = realpathSync(mkdtempSync(join(tmpdir(), "tuls-mcpb-")));
const ext = join(scratch, "extension");
execFileSync(join(here, "node_modules", ".bin", "mcpb"), ["unpack", bundle, ext], { stdio: "inherit" });
const manifest = JSON.parse(readFileSync(join(ext, "manifest.json"), "utf8"));

// What the bundle holds: server/<os>/tuls-<cpu>.
const held = [];
for (const os of readdirSync(join(ext, "server"))) {
  const dir = join(ext, "server", os);
  if (!statSync(dir).isDirectory()) continue;
  for (const f of readdirSync(dir)) {
    const m = /^tuls-(.+)$/.exec(f);
    check(`server/${os}/${f} is named tuls-<cpu>`, m, f);
    if (m) held.push({ os, cpu: m[1], path: join(dir, f) });
  }
}
const heldNames = held.map((b) => `${b.os}/${b.cpu}`).sort();
console.log(`# the bundle holds: ${heldNames.join(", ")}`);
for (const want of ["darwin/arm64", "darwin/x86_64", "linux/x86_64"]) {
  check(`the bundle holds a binary for ${want}`, heldNames.includes(want), heldNames.join(", "));
}
const heldOses = [...new Set(held.map((b) => b.os))].sort();
const platforms = [...(manifest.compatibility?.platforms ?? [])].sort();
const overrides = Object.keys(manifest.server.mcp_config.platform_overrides ?? {}).sort();
check("compatibility.platforms lists exactly the operating systems the bundle holds binaries for",
  JSON.stringify(platforms) === JSON.stringify(heldOses), `platforms ${platforms}, binaries for ${heldOses}`);
check("platform_overrides names exactly those operating systems", JSON.stringify(overrides) === JSON.stringify(heldOses), overrides.join(","));
check("no Windows claim", !platforms.includes("win32") && !overrides.includes("win32"), platforms.join(","));

// The Linux binaries: static 64-bit ELF executables (no PT_INTERP) of their CPU.
const ELF_MACHINE = { x86_64: 62, aarch64: 183 };
function elf(path) {
  const b = readFileSync(path);
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1) return { problem: "not a 64-bit little-endian ELF file" };
  const machine = b.readUInt16LE(18);
  const phoff = Number(b.readBigUInt64LE(32));
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  let interp = false;
  for (let i = 0; i < phnum; i++) if (b.readUInt32LE(phoff + i * phentsize) === 3) interp = true;
  return { machine, interp, type: b.readUInt16LE(16) };
}
for (const b of held) {
  const mode = statSync(b.path).mode & 0o777;
  if (b.os === "linux") {
    const e = elf(b.path);
    check(`linux/${b.cpu}: a static ${b.cpu} ELF executable, mode 755`,
      !e.problem && e.machine === ELF_MACHINE[b.cpu] && !e.interp && (e.type === 2 || e.type === 3) && mode === 0o755,
      JSON.stringify({ ...e, mode: mode.toString(8) }));
  } else if (b.os === "darwin") {
    const { problems, info } = checkMachO(b.path, b.cpu);
    console.log(`# darwin/${b.cpu}: ${JSON.stringify({ ...info, path: undefined })}`);
    check(`darwin/${b.cpu}: a Mach-O ${b.cpu} executable for macOS ${info.minos}, linked against ${info.dylibs.join(", ")}, ${info.signature ? "its ad-hoc signature matching" : "unsigned"}, mode 755`,
      problems.length === 0 && mode === 0o755, problems.join("; ") || `mode ${mode.toString(8)}`);
  } else {
    check(`server/${b.os}: an operating system the bundle knows`, false, b.path);
  }
}

// docs/packaging.md's table of platforms names exactly the binaries held.
const doc = readFileSync(join(here, "..", "docs", "packaging.md"), "utf8");
const table = doc.split("<!-- mcpb:platforms -->")[1]?.split("\n\n")[0] ?? "";
const documented = [...table.matchAll(/`server\/(\w+)\/tuls-(\w+)`/g)].map((m) => `${m[1]}/${m[2]}`).sort();
check("docs/packaging.md's platform table names exactly the binaries the bundle holds",
  JSON.stringify(documented) === JSON.stringify(heldNames), `documented ${documented.join(", ")}`);

// The Mach-O checker itself: a copy changed after signing, or naming a library
// outside the system, must fail.
const arm = held.find((b) => b.os === "darwin" && b.cpu === "arm64");
if (arm) {
  const bytes = readFileSync(arm.path);
  const tampered = join(scratch, "tampered");
  const flipped = Buffer.from(bytes);
  flipped[0x4000] ^= 0xff;
  writeFileSync(tampered, flipped, { mode: 0o755 });
  check("dist/macho.mjs refuses a binary changed after it was signed",
    checkMachO(tampered, "arm64").problems.some((p) => p.includes("do not match the code signature")));
  const at = bytes.indexOf("/usr/lib/libiconv.2.dylib");
  const renamed = Buffer.from(bytes);
  renamed.write("/opt/lib/libiconv.2.dylib", at);
  writeFileSync(tampered, renamed, { mode: 0o755 });
  check("dist/macho.mjs refuses a library outside the system",
    at > 0 && checkMachO(tampered, "arm64").problems.some((p) => p.includes("linked against /opt/lib/libiconv.2.dylib")));
}

// The command a host builds on each platform, run against a copy of the bundle
// whose binaries are stubs that say which one ran, under a `uname` that reports
// the CPU asked for.
const stubs = join(scratch, "stubs");
mkdirSync(join(stubs, "server"), { recursive: true });
copyFileSync(join(ext, "manifest.json"), join(stubs, "manifest.json"));
copyFileSync(join(ext, "server", "start.sh"), join(stubs, "server", "start.sh"));
for (const b of held) {
  mkdirSync(join(stubs, "server", b.os), { recursive: true });
  writeFileSync(join(stubs, "server", b.os, `tuls-${b.cpu}`), `#!/bin/sh\necho "ran ${b.os}/${b.cpu}: $*"\n`, { mode: 0o755 });
}
const fakebin = join(scratch, "fakebin");
mkdirSync(fakebin);
writeFileSync(join(fakebin, "uname"), '#!/bin/sh\ncase "$1" in -m) echo "$FAKE_CPU" ;; -s) echo "$FAKE_OS" ;; *) exit 1 ;; esac\n', { mode: 0o755 });
const realPlatform = process.platform;
async function hostConfig(platform, extensionPath, userConfig) {
  Object.defineProperty(process, "platform", { value: platform });
  try {
    return await getMcpConfigForManifest({
      manifest, extensionPath,
      systemDirs: { HOME: scratch, DESKTOP: scratch, DOCUMENTS: scratch, DOWNLOADS: scratch },
      userConfig, pathSeparator: "/",
    });
  } finally {
    Object.defineProperty(process, "platform", { value: realPlatform });
  }
}
const unameOs = { darwin: "Darwin", linux: "Linux", win32: "Windows_NT" };
for (const platform of ["darwin", "linux", "win32"]) {
  for (const cpu of ["x86_64", "arm64", "aarch64", "riscv64"]) {
    const config = await hostConfig(platform, stubs, { allowed_directories: ["/p", "-q r"], read_only: cpu === "arm64" });
    const r = spawnSync(config.command, config.args, {
      env: { ...process.env, ...config.env, PATH: `${fakebin}:${process.env.PATH}`, FAKE_CPU: cpu, FAKE_OS: unameOs[platform] },
      encoding: "utf8",
    });
    const has = heldNames.includes(`${platform}/${cpu}`);
    const flags = cpu === "arm64" ? "--allow filesystem.read -- /p -q r" : "-- /p -q r";
    if (has) {
      check(`${platform} on ${cpu}: starts server/${platform}/tuls-${cpu}`,
        r.status === 0 && r.stdout === `ran ${platform}/${cpu}: filesystem ${flags}\n`, JSON.stringify(r));
    } else {
      const what = platforms.includes(platform) ? `${platform} on ${cpu}` : "this operating system";
      if (cpu === "riscv64") console.log(`# ${platform} on ${cpu}: ${r.stderr.trim().replaceAll("\n", "\n#   ")}`);
      check(`${platform} on ${cpu}: refused, no binary (${what})`,
        r.status === 2 && r.stdout === "" && r.stderr.includes(`holds no tuls binary for ${what}`) && r.stderr.includes(heldNames.map((n) => n.replace("/", " ")).join(", ")),
        JSON.stringify(r));
    }
  }
}

const a = join(scratch, "project");
const b = join(scratch, "-b notes");
mkdirSync(a);
mkdirSync(b);
writeFileSync(join(b, "note.txt"), "from the second folder\n");

async function session(readOnly) {
  const config = await getMcpConfigForManifest({
    manifest,
    extensionPath: ext,
    systemDirs: { HOME: scratch, DESKTOP: scratch, DOCUMENTS: scratch, DOWNLOADS: scratch },
    userConfig: { allowed_directories: [a, b], read_only: readOnly },
    pathSeparator: "/",
  });
  const label = readOnly ? "read-only" : "read-write";
  check(`${label}: the host builds a command`, config?.command, JSON.stringify(config));
  console.log(`# ${label}: ${JSON.stringify(config.env)} ${config.command} ${JSON.stringify(config.args)}`);
  const transport = new StdioClientTransport({ command: config.command, args: config.args, env: config.env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  const client = new Client({ name: "tuls-mcpb-check", version: "1.0.0" });
  await client.connect(transport);
  const names = (await client.listTools()).tools.map((t) => t.name);
  const dirs = await client.callTool({ name: "list_allowed_directories", arguments: {} });
  check(`${label}: both folders are served`, dirs.content[0].text.includes(a) && dirs.content[0].text.includes(b), dirs.content[0].text);
  const note = await client.callTool({ name: "read_text_file", arguments: { path: join(b, "note.txt") } });
  check(`${label}: reads in the second folder`, note.content[0].text === "from the second folder\n", JSON.stringify(note));
  if (readOnly) {
    check(`${label}: no write tool listed`, !names.includes("write_file") && !names.includes("edit_file") && names.includes("read_text_file"), names.join(","));
    let refused = false;
    try {
      const r = await client.callTool({ name: "write_file", arguments: { path: join(a, "ro.txt"), content: "x" } });
      refused = r.isError === true;
    } catch {
      refused = true;
    }
    check(`${label}: write_file is refused`, refused && !existsSync(join(a, "ro.txt")));
  } else {
    check(`${label}: every tool listed`, names.includes("write_file") && names.includes("search_file_contents"), names.join(","));
    const w = await client.callTool({ name: "write_file", arguments: { path: join(a, "x.txt"), content: "written" } });
    check(`${label}: writes in the first folder`, !w.isError && readFileSync(join(a, "x.txt"), "utf8") === "written", JSON.stringify(w));
  }
  check(`${label}: started with the bundle's binary`, stderr.includes(`tuls: roots: ${a}, ${b}`), stderr);
  await client.close();
}

await session(false);
await session(true);
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
