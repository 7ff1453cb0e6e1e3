//! Random sessions for the fuzzer, as plain JSON (so that a failing one can
//! be saved, shrunk and replayed): a tree, a protocol era, client roots, and
//! a list of actions (tool calls with arguments drawn from the server's own
//! schemas and from hostile alphabets, and protocol noise).

use serde_json::{Map, Value, json};

use crate::rng::Rng;

/// Names that break naive code: quotes, spaces, control characters,
/// unicode look-alikes, `..`-like names, option-like names.
const HOSTILE_NAMES: &[&str] = &[
    "a.txt",
    "b",
    "sub",
    "..foo",
    "...",
    "-rf",
    "--help",
    "it's",
    "q\"uote",
    "sp ace",
    "trail ",
    "tab\tname",
    "new\nline",
    "esc\u{1b}[31m",
    "bell\u{7}",
    "del\u{7f}",
    "c1\u{9b}x",
    "é",
    "e\u{301}",
    "\u{202e}txt.exe",
    "\u{feff}bom",
    "zero\u{200b}width",
    "fullwidth\u{ff0e}\u{ff0e}",
    "slash\u{2215}div",
    "%2e%2e",
    "~",
    "$HOME",
    "*",
    "[a-z]",
    "{a,b}",
    "CON",
    "x.png",
    "long",
];

const TEXTS: &[&str] = &[
    "",
    "hello\n",
    "line1\r\nline2\r\n",
    "\u{0}\u{1}\u{2}",
    "\u{202e}evil",
    "a\n",
    "    indented\n\tmixed\n",
    "🦀",
    "\\",
    "\"quoted\"",
];

/// A path, as an agent could spell it.
fn path(rng: &mut Rng, names: &[String]) -> String {
    let name = if names.is_empty() || rng.chance(20) {
        rng.pick(HOSTILE_NAMES).to_string()
    } else {
        rng.pick(names).clone()
    };
    match rng.below(16) {
        0 => name,
        1 => format!("./{name}"),
        2 => format!(
            "{{root}}/../outside/{}",
            rng.pick(&["secret.txt", "dir", "dir/secret.txt", "nothere"])
        ),
        3 => format!(
            "{{outside}}/{}",
            rng.pick(&["secret.txt", "dir", "dir/secret.txt", "new.txt"])
        ),
        4 => format!("{{root}}/{name}/../../outside/secret.txt"),
        5 => format!("{{root}}-evil/{name}"),
        6 => format!(
            "{{root}}{}",
            rng.pick(&["'", "\"", " ", "\t", "\u{a0}", "/", "//", "/."])
        ),
        7 => format!("file://{{root}}/{name}"),
        8 => format!("{{root}}/{name}\u{0}/../../outside/secret.txt"),
        9 => "x".repeat(rng.pick(&[255, 256, 4097, 70000]).to_owned()),
        10 => rng
            .pick(&[
                "/",
                "/etc/passwd",
                "/proc/self/root/etc/hostname",
                "/dev/zero",
                "~/x",
                ".",
                "..",
            ])
            .to_string(),
        11 => format!("{{root}}/{name}/{}", rng.pick(HOSTILE_NAMES)),
        _ => format!("{{root}}/{name}"),
    }
}

/// A value for one property, from its schema (and its name as a hint).
fn value(rng: &mut Rng, name: &str, schema: &Value, names: &[String], depth: usize) -> Value {
    if rng.chance(4) {
        // Type confusion.
        return rng
            .pick(&[
                json!(null),
                json!(-1),
                json!(1e308),
                json!("x"),
                json!([]),
                json!({}),
                json!(true),
            ])
            .clone();
    }
    if let Some(e) = schema["enum"].as_array().filter(|e| !e.is_empty()) {
        return rng.pick(e).clone();
    }
    let ty = schema["type"].as_str().unwrap_or_else(|| {
        schema["type"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|t| t.as_str())
            .unwrap_or("string")
    });
    let lname = name.to_ascii_lowercase();
    match ty {
        "integer" | "number" => {
            json!(*rng.pick(&[0i64, 1, 2, 3, 10, 100, -1, 1 << 31, i64::MAX, 1 << 53]))
        }
        "boolean" => json!(rng.chance(50)),
        "array" if depth < 3 => {
            let n = *rng.pick(&[0usize, 1, 2, 3, 8, 300]);
            let n = if rng.chance(80) { n.min(3) } else { n };
            let items = &schema["items"];
            Value::Array(
                (0..n)
                    .map(|_| value(rng, name, items, names, depth + 1))
                    .collect(),
            )
        }
        "object" if depth < 3 => object(rng, schema, names, depth + 1),
        _ => {
            if lname.contains("path")
                || lname == "source"
                || lname == "destination"
                || lname == "paths"
                || lname == "root"
            {
                json!(path(rng, names))
            } else if lname.contains("pattern")
                || lname.contains("glob")
                || lname.contains("exclude")
            {
                json!(*rng.pick(&[
                    "*",
                    "**",
                    "**/*",
                    "*.txt",
                    "**/*secret*",
                    "../**",
                    "/**",
                    "{a,b}/*",
                    "[",
                    "a{",
                    "**/.git*",
                    "(a+)+$",
                    ".*",
                    "secret",
                    "CANARY",
                    "\\",
                    "x{1000}",
                ]))
            } else if lname.contains("old") {
                json!(*rng.pick(&["hello", "line1", "a", "", "\r\n", "nothere"]))
            } else {
                json!(rng.pick(TEXTS).to_string())
            }
        }
    }
}

fn object(rng: &mut Rng, schema: &Value, names: &[String], depth: usize) -> Value {
    let mut o = Map::new();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    if let Some(props) = schema["properties"].as_object() {
        for (k, s) in props {
            if required.contains(&k.as_str()) && rng.chance(97) || rng.chance(40) {
                o.insert(k.clone(), value(rng, k, s, names, depth));
            }
        }
    }
    if rng.chance(3) {
        o.insert(
            rng.pick(&["unknown", "__proto__", "followSymlinks", "root"])
                .to_string(),
            json!(true),
        );
    }
    Value::Object(o)
}

/// The layout of the root: entries as in the corpus schema, plus the names
/// that paths are drawn from.
pub fn tree(rng: &mut Rng) -> (Vec<Value>, Vec<String>) {
    let mut entries = vec![
        json!({"path": "a.txt", "type": "file", "content": "hello\nline1\nline2\n"}),
        json!({"path": "sub/b.txt", "type": "file", "content": "b\r\nline1\r\n"}),
    ];
    let mut names = vec!["a.txt".to_string(), "sub".into(), "sub/b.txt".into()];
    for i in 0..rng.below(14) {
        let dir = if rng.chance(40) {
            "sub/".to_string()
        } else {
            String::new()
        };
        let name = format!("{dir}{}{}", rng.pick(HOSTILE_NAMES), i);
        let e = match rng.below(13) {
            0 | 1 => json!({"path": name, "type": "file", "content": rng.pick(TEXTS).to_string()}),
            2 => json!({"path": name, "type": "dir"}),
            3 => json!({"path": name, "type": "symlink", "target": rng.pick(&[
                "{outside}/secret.txt", "{outside}/dir", "../outside/secret.txt", "../../outside/secret.txt",
                "/proc/self/root", "/etc", "/dev/zero", "{root}/a.txt", "{outside}/missing"])}),
            4 => {
                json!({"path": name, "type": "symlink", "target": rng.pick(&["a.txt", "sub", "..", ".", "nothere", "loop", name.as_str()])})
            }
            5 => json!({"path": name, "type": "fifo"}),
            6 => json!({"path": format!("s{i}"), "type": "socket"}),
            7 => {
                json!({"path": name, "type": "deep", "depth": *rng.pick(&[10, 200, 600]), "name": "d"})
            }
            8 => {
                json!({"path": name, "type": "file", "content": "", "sparse_size": *rng.pick(&[1u64 << 30, 5 << 30, 40 << 20])})
            }
            9 => {
                let lines: Vec<String> = (0..*rng.pick(&[3usize, 200, 20000]))
                    .map(|j| format!("!*{j}*\n/**/x{j}"))
                    .collect();
                json!({"path": format!("{dir}{}", rng.pick(&[".gitignore", ".ignore", ".git/info/exclude"])), "type": "file", "content": lines.join("\n")})
            }
            10 => {
                json!({"path": name, "type": "file", "content": "x\n".repeat(*rng.pick(&[1000usize, 100_000, 2_000_000]))})
            }
            11 => {
                json!({"path": name, "type": "file", "content": "{\"json\": true}\n\u{0}binary\u{ff}"})
            }
            _ => json!({"path": name, "type": "file", "content": "CRLF\r\nline\r\n"}),
        };
        names.push(e["path"].as_str().unwrap_or("").to_string());
        entries.push(e);
    }
    (entries, names)
}

/// Control files that other programs run or obey, as a repository has them
/// (the protected names), with aliases: symlinks to them and hard links.
const PROTECTED_TREE: &[(&str, &str, &str)] = &[
    // (path, type, content or target)
    (".git/hooks/pre-commit", "file", "#!/bin/sh\nexit 0\n"),
    (".git/config", "file", "[core]\n\tbare = false\n"),
    (".git/HEAD", "file", "ref: refs/heads/main\n"),
    (
        ".vscode/tasks.json",
        "file",
        "{\"version\": \"2.0.0\", \"tasks\": []}\n",
    ),
    (".claude/settings.json", "file", "{}\n"),
    (".mcp.json", "file", "{\"mcpServers\": {}}\n"),
    (".envrc", "file", "export A=1\n"),
    ("nested/.git/config", "file", "[core]\n"),
    ("hooks-alias", "symlink", ".git/hooks"),
    ("gitlink", "symlink", ".git"),
    ("nested/mcp-alias.json", "symlink", "../.mcp.json"),
    ("envrc-notes.txt", "hardlink", ".envrc"),
];

/// What a session's rules protect (relative to the root; directories with
/// what they hold), checked from ground truth after the session. Only
/// top-level names: a protected name can be moved with its parent (moving
/// `nested/` keeps `nested/.git` read-only as `moved/.git`).
pub const PROTECTED: &[&str] = &[
    ".git",
    ".vscode",
    ".claude/settings.json",
    ".mcp.json",
    ".envrc",
];

/// Hidden objects, each planted only when its pattern is in the session's
/// `--hide` rules: (pattern, path, content). They hold `{secret}`.
const HIDDEN_TREE: &[(&str, &str, &str)] = &[
    (".env", ".env", "TOKEN={secret}\n"),
    ("vault", "vault/tok.txt", "{secret}\n"),
    ("*.pem", "nested/k.pem", "-----BEGIN {secret}-----\n"),
];

/// Names the mutator leaves alone: the protected and hidden objects and
/// their aliases (their changes are the server's to refuse, not the
/// mutator's to make).
pub fn ruled_name(first_component: &str) -> bool {
    [
        ".git",
        ".vscode",
        ".claude",
        ".mcp.json",
        ".envrc",
        "hooks-alias",
        "gitlink",
        "envrc-notes.txt",
        ".env",
        "vault",
        "nested",
        "envlink",
    ]
    .contains(&first_component)
}

/// Adds the rules of a session: protected names (with symlinks and a hard
/// link to them) in most sessions, and `--hide` rules with their hidden
/// objects in some. Returns the session's policy.
fn rules(rng: &mut Rng, entries: &mut Vec<Value>, names: &mut Vec<String>) -> Value {
    let mut policy = json!({});
    if rng.chance(70) {
        for (p, t, c) in PROTECTED_TREE {
            let e = match *t {
                "file" => {
                    let mut e = json!({"path": p, "type": "file", "content": c});
                    if p.ends_with("pre-commit") {
                        e["mode"] = json!(0o755);
                    }
                    e
                }
                kind => json!({"path": p, "type": kind, "target": c}),
            };
            entries.push(e);
            names.push(p.to_string());
        }
        names.extend(
            [
                "hooks-alias/pre-commit",
                "gitlink/config",
                "gitlink/hooks/pre-commit",
                ".GIT/config",
                "sub/../.git/config",
                "nested/.git/config",
                "nested/mcp-alias.json",
                ".git/hooks",
                ".vscode",
            ]
            .map(String::from),
        );
        policy["protect_control_files"] =
            json!([".git", ".vscode", ".claude", ".mcp.json", ".envrc"]);
    }
    if rng.chance(50) {
        let mut hide = Vec::new();
        for (pat, p, c) in HIDDEN_TREE {
            if rng.chance(70) {
                hide.push(json!(pat));
                entries.push(json!({"path": p, "type": "file", "content": c}));
                names.push(p.to_string());
            }
        }
        if !hide.is_empty() {
            entries.push(json!({"path": "envlink", "type": "symlink", "target": ".env"}));
            names.push("envlink".into());
            policy["hide"] = Value::Array(hide);
        }
    }
    policy
}

/// One session: everything the runner needs, as JSON.
pub fn generate(
    seed: u64,
    tools: &[Value],
    max_actions: usize,
    avoid_uninitialized_notification: bool,
) -> Value {
    let mut rng = Rng::new(seed);
    let (mut tree, mut names) = tree(&mut rng);
    let policy = rules(&mut rng, &mut tree, &mut names);
    let era = if rng.chance(40) {
        "2026-07-28"
    } else {
        *rng.pick(&["2025-06-18", "2025-03-26", "2024-11-05", "2025-11-25"])
    };
    let roots: Value = if era != "2026-07-28" && rng.chance(30) {
        json!(
            rng.pick(&[
                vec!["file://{root}/sub"],
                vec!["file:///"],
                vec![],
                vec!["file://{outside}"],
                vec!["file://{root}", "file://{root}/sub"],
                vec!["not a uri"],
            ])
            .clone()
        )
    } else {
        Value::Null
    };
    let mut actions = Vec::new();
    let n = 1 + rng.below(max_actions.max(1));
    let mut next_id = 1u64;
    let mut sent: Vec<Value> = Vec::new();
    for _ in 0..n {
        let k = rng.below(100);
        let a = if k < 70 && !tools.is_empty() {
            let t = rng.pick(tools);
            let args = object(&mut rng, &t["inputSchema"], &names, 0);
            let id = if rng.chance(5) {
                rng.pick(&[
                    json!("s-1"),
                    json!(""),
                    json!(-7),
                    json!(9_007_199_254_740_991u64),
                    json!(0),
                ])
                .clone()
            } else if rng.chance(3) && !sent.is_empty() {
                rng.pick(&sent).clone() // reused id
            } else {
                next_id += 1;
                json!(next_id)
            };
            sent.push(id.clone());
            let mut call = json!({"call": {"name": t["name"], "arguments": args}, "id": id});
            if rng.chance(10) {
                call["progress"] =
                    json!(rng.pick(&[json!("p1"), json!(7), json!(next_id)]).clone());
            }
            call
        } else if k < 76 && !sent.is_empty() {
            json!({"cancel": rng.pick(&sent).clone()})
        } else if k < 80 {
            json!({"line": rng.pick(&[
                "{", "null", "[]", "{}", "{\"jsonrpc\":\"2.0\"}", "{\"jsonrpc\":\"2.0\",\"id\":90005}", "\u{0}\u{ff}",
                "{\"jsonrpc\":\"2.0\",\"id\":90077,\"method\":\"tools/call\",\"params\":{\"name\":7}}",
                "{\"jsonrpc\":\"2.0\",\"id\":90078,\"method\":\"nope\"}", "  ", "[{\"jsonrpc\":\"2.0\",\"id\":90079,\"method\":\"ping\"}]",
                "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"read_text_file\",\"arguments\":{\"path\":\"a.txt\"}}}",
            ]).to_string()})
        } else if k < 83 {
            next_id += 1;
            json!({"oversized": *rng.pick(&[1usize << 20, 3 << 20]), "id": next_id})
        } else if k < 87 {
            json!({"notify": rng.pick(&[
                "notifications/initialized", "notifications/roots/list_changed", "notifications/progress", "notifications/unknown",
            ]).to_string()})
        } else if k < 91 {
            json!({"pause_reading_ms": *rng.pick(&[50, 300, 1500])})
        } else if k < 95 {
            json!({"sleep_ms": *rng.pick(&[1, 10, 100])})
        } else {
            json!({"wait": true})
        };
        actions.push(a);
    }
    let skip_initialize = era != "2026-07-28" && rng.chance(3);
    let mut s = json!({
        "seed": seed,
        "era": era,
        "skip_initialize": skip_initialize,
        "client_roots": roots,
        "mutate": rng.chance(60),
        "policy": policy,
        "tree": tree,
        "actions": actions,
    });
    if avoid_uninitialized_notification {
        avoid_known(&mut s);
    }
    s
}

/// Known finding F1 (docs/escape-testing.md): until a session is
/// initialized (an `initialize`, or a stateless request with `_meta`), a
/// notification ends a tuls session. Sessions that skip the handshake lose
/// their notifications; stateless ones open with a call.
pub fn avoid_known(s: &mut Value) {
    let stateless = s["era"] == "2026-07-28";
    let skipped = s["skip_initialize"].as_bool().unwrap_or(false);
    let Some(actions) = s["actions"].as_array_mut() else {
        return;
    };
    // A notification, or a noise line that is one (a method without an id).
    let is_note = |a: &Value| {
        a.get("notify").is_some()
            || a.get("cancel").is_some()
            || a["line"].as_str().is_some_and(|l| {
                serde_json::from_str::<Value>(l)
                    .is_ok_and(|v| v.get("method").is_some() && v.get("id").is_none())
            })
    };
    if skipped {
        actions.retain(|a| !is_note(a));
    } else if stateless {
        match actions.iter().position(|a| a.get("call").is_some()) {
            Some(i) => {
                let first = actions.remove(i);
                actions.insert(0, first);
            }
            None => actions.retain(|a| !is_note(a)),
        }
    }
}
