// Checks the README against the built tuls, reading everything from the README
// itself so that the two cannot drift apart:
//
// 1. Every command line of every ```sh block is accounted for in COMMANDS
//    below: run here verbatim, run verbatim by another CI step (named), or
//    marked as needing what CI lacks. A command the table does not know fails
//    the check, so a new README command needs a check before it can land. The
//    table is printed, so the list of README commands and their checks is
//    always at hand.
// 2. The commands this script runs, it runs as written, with only the
//    placeholders replaced: /home/you/.cargo/bin/tuls by the built binary,
//    /home/you/project by a scratch directory holding a README.md. The MCP
//    Inspector commands fetch the pinned version the README names with npx.
// 3. `claude mcp add` lines run as written with a pinned Claude Code from npm
//    (scratch HOME), and `claude mcp list` must show the server connected, or
//    pending approval for `--scope project`, as the README says.
// 4. Every ```json block parses, and every client config among them (Claude
//    Desktop, VS Code, Cursor) is started as that client would start it, with
//    the same placeholders replaced, and answers initialize and tools/list.
//
// Usage: node ci/readme-check.mjs /path/to/dir/with/tuls
import { readFileSync, mkdtempSync, writeFileSync, realpathSync, existsSync } from "node:fs";
import { execSync, spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const binDir = process.argv[2];
if (!binDir || !existsSync(join(binDir, "tuls"))) {
  console.error("usage: node ci/readme-check.mjs /path/to/dir/with/tuls");
  process.exit(2);
}
const tuls = join(realpathSync(binDir), "tuls");
const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const readme = readFileSync(join(repo, "README.md"), "utf8");

// How each README command is checked. `run`: this script runs it (see RUNNERS);
// `step`: another CI step runs it verbatim; `needs`: CI cannot run it.
const COMMANDS = [
  { re: /^cargo install --locked --path \.$/, how: "step", by: "ci/quickstart.sh 1 (into a scratch CARGO_INSTALL_ROOT; tuls then runs from that PATH)" },
  { re: /^tuls filesystem \/path\/to\/project$/, how: "step", by: "ci/quickstart.sh 1 (stdin closed: startup lines, exit 0, nothing on stdout)" },
  { re: /^cargo test$/, how: "step", by: "ci/quickstart.sh 1" },
  { re: /^pip install ziglang==[\d.]+ cargo-zigbuild==[\d.]+$/, how: "step", by: "ci/quickstart.sh 2" },
  { re: /^TULS_PROFILE=release TULS_TARGETS=x86_64-unknown-linux-musl bash dist\/build\.sh$/, how: "step", by: "ci/quickstart.sh 2 (then dist/smoke.sh on its output)" },
  { re: /^install -D -m 0755 dist\/out\/tuls-x86_64-unknown-linux-musl ~\/\.local\/bin\/tuls$/, how: "step", by: "ci/quickstart.sh 2 (scratch HOME; the installed binary must start)" },
  { re: /^claude mcp add /, how: "run", by: "claude-code" },
  { re: /^npx -y @modelcontextprotocol\/inspector@[\d.]+ \/home\/you\/\.cargo\/bin\/tuls filesystem \/home\/you\/project$/, how: "run", by: "inspector-ui" },
  { re: /^npx -y @modelcontextprotocol\/inspector@[\d.]+ --cli .* --method tools\/list$/, how: "run", by: "inspector-list" },
  { re: /^npx -y @modelcontextprotocol\/inspector@[\d.]+ --cli .* --method tools\/call --tool-name read_text_file /, how: "run", by: "inspector-read" },
  { re: /^tuls filesystem \/home\/you\/project .*--print-config$/, how: "run", by: "print-config" },
  { re: /^tuls filesystem \/home\/you\/project --allow /, how: "run", by: "selectors" },
];

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

const blocks = (lang) => [...readme.matchAll(new RegExp("^```" + lang + "\\n([\\s\\S]*?)^```$", "gm"))].map((m) => m[1]);
const commands = blocks("sh")
  .flatMap((b) => b.replace(/\\\n\s*/g, " ").split("\n"))
  .map((l) => l.replace(/\s+#.*$/, "").trim())
  .filter((l) => l && !l.startsWith("#"));

const project = realpathSync(mkdtempSync(join(tmpdir(), "tuls-readme-")));
const content = "Read through the README's own MCP Inspector command.\n";
writeFileSync(join(project, "README.md"), content);
const subst = (s) => s.replaceAll("/home/you/.cargo/bin/tuls", tuls).replaceAll("/home/you/project", project).replaceAll("${workspaceFolder}", project);
// `tuls` on PATH is the built one, as after the README's `cargo install`.
const env = { ...process.env, PATH: `${dirname(tuls)}:${process.env.PATH}`, MCP_AUTO_OPEN_ENABLED: "false" };
const scratchCwd = mkdtempSync(join(tmpdir(), "tuls-readme-cwd-"));

function sh(cmd, timeout = 300_000) {
  return execSync(cmd, { cwd: scratchCwd, env, encoding: "utf8", timeout, stdio: ["ignore", "pipe", "pipe"] });
}

// The number of tools the binary enables by default, from its own startup line.
function startupTools(args) {
  const r = spawnSyncText(tuls, args);
  const line = r.split("\n").find((l) => l.startsWith("tuls: tools: ")) ?? "";
  return line.slice("tuls: tools: ".length).split(", ").filter(Boolean);
}
function spawnSyncText(cmd, args) {
  try {
    return execSync([cmd, ...args].map((a) => `'${a}'`).join(" ") + " 2>&1 </dev/null", { env, encoding: "utf8" });
  } catch (e) {
    return `${e.stdout ?? ""}`;
  }
}
const allTools = startupTools(["filesystem", project]);

// Claude Code, pinned, installed once into a scratch directory from npm (its
// postinstall, which puts the native binary in place, run explicitly: npm may
// hold install scripts for approval). It runs with a scratch HOME, so the
// user's own config is never read or changed.
const CLAUDE_CODE = "2.1.197";
let claudeBin = null;
const claudeHome = mkdtempSync(join(tmpdir(), "tuls-readme-claude-home-"));
function claude() {
  if (claudeBin) return claudeBin;
  const dir = mkdtempSync(join(tmpdir(), "tuls-readme-claude-"));
  execSync(`npm install --no-audit --no-fund --prefix '${dir}' @anthropic-ai/claude-code@${CLAUDE_CODE}`, { stdio: "ignore", timeout: 600_000 });
  const pkg = join(dir, "node_modules/@anthropic-ai/claude-code");
  execSync("node install.cjs", { cwd: pkg, stdio: "ignore", timeout: 120_000 });
  claudeBin = join(dir, "node_modules/.bin");
  return claudeBin;
}

const RUNNERS = {
  // `claude mcp add ...` as written, in the project (where `--scope project`
  // writes its .mcp.json), then `claude mcp list`: a server added for the
  // user must be connected (Claude Code starts it and speaks MCP); one added
  // for the project must show as pending approval, as the README says.
  "claude-code": (cmd) => {
    const ccEnv = { ...env, HOME: claudeHome, PATH: `${claude()}:${env.PATH}`, DISABLE_AUTOUPDATER: "1" };
    execSync(cmd, { cwd: project, env: ccEnv, encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] });
    const list = execSync("claude mcp list", { cwd: project, env: ccEnv, encoding: "utf8", timeout: 180_000, stdio: ["ignore", "pipe", "pipe"] });
    const name = cmd.split(" -- ")[0].trim().split(" ").pop();
    const line = list.split("\n").find((l) => l.startsWith(`${name}: `)) ?? "";
    const want = cmd.includes("--scope project") ? /Pending approval/ : /Connected/;
    return [want.test(line), list];
  },
  "inspector-list": (cmd) => {
    const reply = JSON.parse(sh(cmd));
    const names = (reply.tools ?? []).map((t) => t.name);
    return [names.length === allTools.length && names.includes("search_file_contents"), names.join(",")];
  },
  "inspector-read": (cmd) => {
    const reply = JSON.parse(sh(cmd));
    return [reply.isError === false && reply.content?.[0]?.text === content, JSON.stringify(reply)];
  },
  "inspector-ui": async (cmd) => {
    // The browser UI: it must come up (and print its address); then it is stopped.
    const child = spawn("bash", ["-c", `exec ${cmd}`], { cwd: scratchCwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const up = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 300_000);
      const onData = (d) => {
        out += d;
        if (/running at http|up and running/i.test(out)) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.on("exit", () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
    return [up, out.slice(-2000)];
  },
  "print-config": (cmd) => {
    const cfg = JSON.parse(sh(cmd));
    const read = startupTools(["filesystem", project, "--allow", "filesystem.read"]);
    return [
      JSON.stringify(cfg.roots) === JSON.stringify([project]) && JSON.stringify(cfg.enabledTools) === JSON.stringify(read),
      JSON.stringify(cfg),
    ];
  },
  selectors: (cmd) => {
    // Started as written, stdin closed: it must start and exit 0, and the tools
    // it enables must be what the README's comment says.
    let err;
    try {
      err = execSync(`${cmd} 2>&1 >/dev/null </dev/null`, { cwd: scratchCwd, env, encoding: "utf8" });
    } catch (e) {
      return [false, `exit ${e.status}: ${e.stdout}`];
    }
    const tools = (err.split("\n").find((l) => l.startsWith("tuls: tools: ")) ?? "").slice(13).split(", ");
    const ok = cmd.includes("--deny filesystem/move_file")
      ? !tools.includes("move_file") && tools.length === allTools.length - 1
      : tools.every((t) => allTools.includes(t)) && !tools.includes("write_file") && tools.length > 0;
    return [ok, err];
  },
};

console.log("# README commands and how CI checks each");
for (const written of commands) {
  const entry = COMMANDS.find((c) => c.re.test(written));
  if (!entry) {
    check(`README command has a check: ${written}`, false, "add it to COMMANDS in ci/readme-check.mjs");
    continue;
  }
  if (entry.how !== "run") {
    console.log(`- ${written}\n    ${entry.how === "step" ? "run verbatim by" : "not run: needs"} ${entry.by}`);
    continue;
  }
  console.log(`- ${written}\n    run verbatim here (${entry.by})`);
  const cmd = subst(written);
  try {
    const [ok, detail] = await RUNNERS[entry.by](cmd);
    check(written, ok, detail);
  } catch (e) {
    check(written, false, `${e.message}\nstdout:\n${e.stdout ?? ""}\nstderr:\n${e.stderr ?? ""}`);
  }
}
check("the README has Inspector --cli commands", commands.filter((c) => c.includes("inspector@") && c.includes("--cli")).length === 2);

// Claude Code's `claude mcp add NAME -- CMD ARGS...`: the server command after
// `--` is started as Claude Code would start it.
const serverCommands = commands
  .filter((c) => c.startsWith("claude mcp add "))
  .map((c) => ({ name: c, argv: c.split(" -- ")[1].split(" ") }));

// Every ```json block parses; client configs are started as the client would.
const json = blocks("json");
check("the README has json blocks", json.length >= 3, `${json.length}`);
json.forEach((text, i) => {
  let v;
  try {
    v = JSON.parse(text);
    check(`json block ${i + 1} parses`, true);
  } catch (e) {
    check(`json block ${i + 1} parses`, false, `${e.message}\n${text}`);
    return;
  }
  for (const [name, s] of Object.entries(v.mcpServers ?? v.servers ?? {})) {
    serverCommands.push({ name: `json block ${i + 1} (${name})`, argv: [s.command, ...(s.args ?? [])] });
  }
});
check("client configs found", serverCommands.length >= 5, `${serverCommands.length}`);

// One MCP exchange over stdio: initialize, initialized, tools/list.
function session(argv) {
  return new Promise((resolve) => {
    // Clients start the command with no shell and not in the project directory.
    const child = spawn(argv[0], argv.slice(1), { cwd: scratchCwd, env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes('"id":2')) child.stdin.end();
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("error", (e) => resolve({ code: -1, out, err: `${err}${e.message}` }));
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
    const send = (m) => child.stdin.write(JSON.stringify(m) + "\n");
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "readme-check", version: "1" } } });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  });
}
for (const { name, argv } of serverCommands) {
  const real = argv.map(subst);
  const r = await session(real);
  const list = r.out.split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2);
  const n = list?.result?.tools?.length ?? 0;
  const readOnly = real.includes("filesystem.read");
  check(
    `${name}: starts and lists its tools (${real.join(" ")})`,
    r.code === 0 && (readOnly ? n > 0 && n < allTools.length : n === allTools.length),
    `exit ${r.code}, ${n} tools\n${r.err}`,
  );
}

console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
