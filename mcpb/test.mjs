// Unpacks mcpb/out/tuls.mcpb with the mcpb CLI and starts the server exactly
// as the manifest tells a host to: the host's own substitution
// (getMcpConfigForManifest from @anthropic-ai/mcpb, with the user's answers:
// two folders, one named like a flag and with a space; Read-only off, then on),
// then drives it with the MCP TypeScript SDK client.
// Usage: node mcpb/test.mjs   (after mcpb/build.sh)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, realpathSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

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
  console.log(`# ${label}: ${config.command} ${JSON.stringify(config.args)}`);
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
