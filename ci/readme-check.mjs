// Runs the README's MCP Inspector `--cli` commands exactly as the README
// writes them (only `/home/you/project` is replaced, by a scratch directory
// holding a README.md), against the built tuls, with the Inspector version
// pinned in ci/inspector/package.json; checks their output; and checks that
// every ```json block of the README parses. The commands are read from the
// README itself, so the README and CI cannot drift apart.
// Usage: node ci/readme-check.mjs /path/to/dir/with/tuls   (after `npm ci` in ci/inspector)
import { readFileSync, mkdtempSync, writeFileSync, realpathSync, existsSync } from "node:fs";
import { execSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const binDir = process.argv[2];
if (!binDir || !existsSync(join(binDir, "tuls"))) {
  console.error("usage: node ci/readme-check.mjs /path/to/dir/with/tuls");
  process.exit(2);
}
const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const inspectorDir = join(repo, "ci", "inspector");
if (!existsSync(join(inspectorDir, "node_modules", ".bin", "mcp-inspector"))) {
  console.error("run `npm ci` in ci/inspector first");
  process.exit(2);
}
const readme = readFileSync(join(repo, "README.md"), "utf8");

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

// Every ```json block parses.
const blocks = (lang) => [...readme.matchAll(new RegExp("^```" + lang + "\\n([\\s\\S]*?)^```$", "gm"))].map((m) => m[1]);
const json = blocks("json");
check("the README has json blocks", json.length >= 4, `${json.length}`);
json.forEach((text, i) => {
  try {
    JSON.parse(text);
    check(`json block ${i + 1} parses`, true);
  } catch (e) {
    check(`json block ${i + 1} parses`, false, `${e.message}\n${text}`);
  }
});

// The Inspector --cli commands, as written (backslash-continued lines joined).
const commands = blocks("sh")
  .flatMap((b) => b.replace(/\\\n\s*/g, " ").split("\n"))
  .map((l) => l.trim())
  .filter((l) => l.startsWith("npx @modelcontextprotocol/inspector --cli "));
check("the README has two Inspector --cli commands", commands.length === 2, JSON.stringify(commands));

const project = realpathSync(mkdtempSync(join(tmpdir(), "tuls-readme-")));
const content = "Read through the README's own MCP Inspector command.\n";
writeFileSync(join(project, "README.md"), content);
const env = { ...process.env, PATH: `${binDir}:${process.env.PATH}` };

for (const written of commands) {
  const cmd = written.replaceAll("/home/you/project", project);
  let out;
  try {
    // In ci/inspector, npx runs the pinned Inspector from its node_modules.
    out = execSync(cmd, { cwd: inspectorDir, env, encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    check(written, false, `exit ${e.status}\nstdout:\n${e.stdout}\nstderr:\n${e.stderr}`);
    continue;
  }
  let reply;
  try {
    reply = JSON.parse(out);
  } catch (e) {
    check(written, false, `not JSON: ${out}`);
    continue;
  }
  if (written.includes("--method tools/list")) {
    const names = (reply.tools ?? []).map((t) => t.name);
    check(`${written}: 17 tools`, names.length === 17 && names.includes("search_file_contents"), names.join(","));
  } else if (written.includes("--tool-name read_text_file")) {
    check(`${written}: reads the file`, reply.isError === false && reply.content?.[0]?.text === content, JSON.stringify(reply));
  } else {
    check(`${written}: a check for this command`, false, "add one to ci/readme-check.mjs");
  }
}

console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
