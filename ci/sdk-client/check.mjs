// Drives a built tuls binary with the official MCP TypeScript SDK client:
// connect, list tools, call a read tool (the SDK validates the result
// against the tool's outputSchema) and a write tool, and check the results.
// Usage: node check.mjs /path/to/tuls
//        node check.mjs CMD [ARG...]   (runs `CMD ARG... filesystem ROOT`, e.g. `npx tuls-mcp`)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, writeFileSync, readFileSync, realpathSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [bin, ...prefixArgs] = process.argv.slice(2);
if (!bin) {
  console.error("usage: node check.mjs /path/to/tuls | CMD [ARG...]");
  process.exit(2);
}
const root = realpathSync(mkdtempSync(join(tmpdir(), "tuls-sdk-")));
writeFileSync(join(root, "hello.txt"), "line1\nline2\nline3\n");
writeFileSync(join(root, "todo.txt"), "a\nTODO one\nb\nTODO two\n");

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

const transport = new StdioClientTransport({ command: bin, args: [...prefixArgs, "filesystem", root], stderr: "inherit" });
const client = new Client({ name: "tuls-ci-sdk-check", version: "1.0.0" });
await client.connect(transport);
check("initialize", client.getServerVersion()?.name === "tuls", JSON.stringify(client.getServerVersion()));

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
check("tools/list has 17 tools", names.length === 17, names.join(","));
check("every tool has an outputSchema", tools.every((t) => t.outputSchema), "");

// The SDK validates structuredContent against the cached outputSchema and
// throws on a mismatch, so a successful call here is the schema check.
const read = await client.callTool({ name: "read_text_file", arguments: { path: join(root, "hello.txt"), head: 2 } });
check("read_text_file head", !read.isError && read.content[0].text === "line1\nline2", JSON.stringify(read));
check("read_text_file structuredContent", read.structuredContent?.content === "line1\nline2", JSON.stringify(read.structuredContent));

// search_file_contents carries its own structuredContent (the matches as
// data, not a copy of the text); the SDK validates it against the tool's
// outputSchema.
for (const outputMode of ["content", "files", "count"]) {
  const found = await client.callTool({
    name: "search_file_contents",
    arguments: { path: root, pattern: "TODO", contextLines: 1, outputMode },
  });
  check(`search_file_contents ${outputMode}`, !found.isError && found.structuredContent?.content === undefined && typeof found.structuredContent?.filesSearched === "number" && found.content[0].text.length > 0, JSON.stringify(found));
  if (outputMode === "content") {
    const m = found.structuredContent?.matches ?? [];
    check(
      "search_file_contents matches",
      m.length === 2 && m[0].line === 2 && m[0].text === "TODO one" && m[0].before[0]?.text === "a" && m[1].line === 4,
      JSON.stringify(found.structuredContent),
    );
  }
  if (outputMode === "count") {
    const f = found.structuredContent?.files ?? [];
    check("search_file_contents count", f.length === 1 && f[0].count === 2, JSON.stringify(found.structuredContent));
  }
}
const cut = await client.callTool({ name: "search_file_contents", arguments: { path: root, pattern: "TODO", maxResults: 1 } });
check("search_file_contents cut", !cut.isError && cut.structuredContent?.truncated === true && /truncated/.test(cut.content[0].text), JSON.stringify(cut));

const list = await client.callTool({ name: "list_directory_with_sizes", arguments: { path: root } });
check("list_directory_with_sizes", !list.isError && list.content[0].text.includes("[FILE] hello.txt"), JSON.stringify(list));

const write = await client.callTool({ name: "write_file", arguments: { path: join(root, "new.txt"), content: "from the SDK\n" } });
check("write_file", !write.isError && write.content[0].text === `Successfully wrote to ${join(root, "new.txt")}`, JSON.stringify(write));
const newPath = join(root, "new.txt");
check("write_file on disk", existsSync(newPath) && readFileSync(newPath, "utf8") === "from the SDK\n", "");

const bad = await client.callTool({ name: "read_text_file", arguments: { path: join(root, "hello.txt"), bogus: 1 } });
check("unknown field refused", bad.isError === true && /unknown field/.test(bad.content[0].text), JSON.stringify(bad));

const out = await client.callTool({ name: "read_text_file", arguments: { path: join(root, "..", "etc") } });
check("escape refused", out.isError === true, JSON.stringify(out));

await client.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
