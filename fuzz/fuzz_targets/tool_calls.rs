//! tool_calls: arbitrary tool calls through `tuls::tools::dispatch`, in
//! process, over the escape fixture, write tools included.
//!
//! Input: up to four calls separated by `\n`. In each call the first byte is
//! a header. Its low five bits, modulo 16, pick the tool: 1..=13 is a tool in
//! `tools/list` order (so `A`..`M` are the thirteen tools), 14, 15 and 0 mean
//! the rest is a JSON-RPC line (see below). Bit `0x20` (lower case) runs the
//! call with tight limits, so truncation paths run; bit `0x80` runs it with
//! an already-cancelled token. The rest of the call is its arguments:
//! - JSON if it parses (any JSON, not only objects), after expanding the
//!   placeholders `$ROOT` (the first root's display spelling),
//!   `$ROOT_RESOLVED`, `$ROOT2`, `$SIB` (a prefix sibling of the root),
//!   `$WORK` (the roots' parent), `$BASE`, `$OUTSIDE` (the canary dir),
//!   `$OUTSIDE_NAME`, `$CANARY_NAME` and `$FAR_NAME`, so seeds can name
//!   absolute paths of a fixture created at run time;
//! - otherwise structured arguments built with `arbitrary` from those bytes:
//!   paths from the path alphabet, globs from the glob alphabet, content,
//!   edits, head/tail, and sometimes an unknown extra field.
//!
//! A JSON-RPC line goes through `mcp::lines::top_level_id` (the oversized-line
//! id scraper), and if it parses, its `params.name` (a string) is dispatched
//! with its `params.arguments`.
//!
//! Oracle, after every call: nothing panicked; everything outside the roots
//! (names, kinds, inodes, modes, sizes, mtimes, contents, link targets) is as
//! it was at setup; no reply (success or error) contains the canary content,
//! and no successful reply contains an outside name, unless the call's own
//! arguments carried it or the fuzzer wrote it inside the roots first. After
//! each run: if the tree inside the roots changed, a write tool must have
//! been called, and both roots are rebuilt from scratch.
//!
//! Writes fail closed, too: a `write_file`, `edit_file` or `move_file` that
//! returns an error, and an `edit_file` dry run, leave the tree inside the
//! roots as it was (no temp file left behind, no half-done rename).

#![no_main]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use arbitrary::{Arbitrary, Unstructured};
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use tuls::error::Error;
use tuls::fs::io::Io;
use tuls::fs::walk::WalkPool;
use tuls::limits::Limits;
use tuls::tools::{Ctx, Output};

use tuls_fuzz::{CALL_TOOLS, TOOLS};

/// Runs the tool `name`; an unknown name fails as the server refuses it.
fn dispatch(ctx: &Ctx, name: &str, args: Value) -> Result<Output, Error> {
    match tuls::tools::find(name) {
        Some(tool) => tuls::tools::dispatch(ctx, tool, args),
        None => Err(Error::Internal(format!("Tool {name} not found"))),
    }
}
use tuls_fuzz::alphabet::Alphabet;
use tuls_fuzz::fixture::Fixture;

const MAX_CALLS: usize = 4;

static RUNS: AtomicU64 = AtomicU64::new(0);

struct Env {
    fx: &'static Fixture,
    paths: Alphabet,
    globs: Alphabet,
    /// Placeholders, longest first so `$ROOT` does not eat `$ROOT2`.
    vars: Vec<(&'static str, String)>,
    /// The walk threads, one pool for every run (as the server has).
    walk: WalkPool,
}

static ENV: OnceLock<Env> = OnceLock::new();

fn env() -> &'static Env {
    ENV.get_or_init(|| {
        let fx = Fixture::shared(true);
        let s = |p: &std::path::Path| p.to_str().expect("UTF-8 temp path").to_owned();
        let mut vars = vec![
            ("$ROOT_RESOLVED", s(&fx.roots[0])),
            ("$ROOT2", s(&fx.roots[1])),
            ("$ROOT", fx.root_display.clone()),
            ("$SIB", s(&fx.work.join("root-sib"))),
            ("$WORK", s(&fx.work)),
            ("$BASE", s(&fx.base)),
            ("$OUTSIDE_NAME", fx.outside_name.clone()),
            ("$OUTSIDE", s(&fx.work.join(&fx.outside_name))),
            ("$CANARY_NAME", fx.canary_name.clone()),
            ("$FAR_NAME", fx.far_name.clone()),
        ];
        vars.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
        Env {
            fx,
            paths: Alphabet::paths(fx),
            globs: Alphabet::globs(fx),
            vars,
            walk: WalkPool::new(2),
        }
    })
}

/// Arguments built from raw bytes when they are not JSON.
#[derive(Arbitrary, Debug)]
struct Raw {
    path: Vec<u8>,
    path2: Vec<u8>,
    paths: Vec<Vec<u8>>,
    content: String,
    edits: Vec<(String, String)>,
    dry_run: Option<bool>,
    head: Option<f64>,
    tail: Option<f64>,
    offset: Option<i8>,
    limit: Option<i8>,
    line_numbers: Option<bool>,
    max_depth: Option<i8>,
    sort_by_size: Option<bool>,
    pattern: Vec<u8>,
    excludes: Vec<Vec<u8>>,
    extra: Option<String>,
}

fn structured(env: &Env, tool: &str, bytes: &[u8]) -> Value {
    let Ok(raw) = Raw::arbitrary_take_rest(Unstructured::new(bytes)) else {
        return json!({});
    };
    let p = |b: &[u8]| Value::String(env.paths.decode(b));
    let g = |b: &[u8]| Value::String(env.globs.decode(b));
    let num = |f: Option<f64>| f.and_then(serde_json::Number::from_f64).map(Value::Number);
    let mut m = Map::new();
    let path = p(&raw.path);
    let excludes = Value::Array(raw.excludes.iter().map(|e| g(e)).collect());
    match tool {
        "read_multiple_files" => {
            m.insert(
                "paths".into(),
                Value::Array(raw.paths.iter().map(|x| p(x)).collect()),
            );
        }
        "move_file" => {
            m.insert("source".into(), path);
            m.insert("destination".into(), p(&raw.path2));
        }
        "list_allowed_directories" => {}
        _ => {
            m.insert("path".into(), path);
        }
    }
    // `offset` pages every listing, tree and search and starts a range.
    if matches!(
        tool,
        "read_text_file"
            | "list_directory"
            | "list_directory_with_sizes"
            | "directory_tree"
            | "search_files"
    ) {
        if let Some(o) = raw.offset {
            m.insert("offset".into(), json!(o));
        }
    }
    if tool == "directory_tree" {
        if let Some(d) = raw.max_depth {
            m.insert("maxDepth".into(), json!(d));
        }
    }
    match tool {
        "read_text_file" => {
            if let Some(h) = num(raw.head) {
                m.insert("head".into(), h);
            }
            if let Some(t) = num(raw.tail) {
                m.insert("tail".into(), t);
            }
            if let Some(l) = raw.limit {
                m.insert("limit".into(), json!(l));
            }
            if let Some(n) = raw.line_numbers {
                m.insert("lineNumbers".into(), json!(n));
            }
        }
        "write_file" => {
            m.insert("content".into(), Value::String(raw.content));
        }
        "edit_file" => {
            let edits = raw
                .edits
                .into_iter()
                .map(|(o, n)| json!({"oldText": o, "newText": n}))
                .collect();
            m.insert("edits".into(), Value::Array(edits));
            if let Some(d) = raw.dry_run {
                m.insert("dryRun".into(), Value::Bool(d));
            }
        }
        "list_directory_with_sizes" => {
            if let Some(s) = raw.sort_by_size {
                m.insert("sortBy".into(), json!(if s { "size" } else { "name" }));
            }
        }
        "directory_tree" => {
            m.insert("excludePatterns".into(), excludes);
        }
        "search_files" => {
            m.insert("pattern".into(), g(&raw.pattern));
            m.insert("excludePatterns".into(), excludes);
        }
        _ => {}
    }
    if let Some(extra) = raw.extra {
        m.insert(extra, Value::Bool(true));
    }
    Value::Object(m)
}

/// `bytes` with the `$` placeholders expanded.
fn expand<'a>(env: &Env, bytes: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    if !bytes.contains(&b'$') {
        return bytes.into();
    }
    let mut out = Vec::with_capacity(bytes.len() + 256);
    let mut i = 0;
    'outer: while i < bytes.len() {
        if bytes[i] == b'$' {
            for (k, v) in &env.vars {
                if bytes[i..].starts_with(k.as_bytes()) {
                    out.extend_from_slice(v.as_bytes());
                    i += k.len();
                    continue 'outer;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out.into()
}

fn tight() -> Limits {
    Limits {
        max_read_bytes: 16,
        max_batch_bytes: 24,
        max_paths_per_batch: 2,
        max_walk_entries: 5,
        max_walk_depth: 2,
        max_list_entries: 3,
        max_pattern_bytes: 8,
        max_exclude_patterns: 2,
        max_path_bytes: 64,
        max_edits: 2,
        max_reply_chars: tuls::limits::MIN_REPLY_CHARS,
        ..Limits::default()
    }
}

/// The reply as text, with any base64 payload decoded alongside.
fn reply_text(out: &Output) -> String {
    match out {
        Output::Text(s) => s.clone(),
        Output::Structured { text, data } => format!("{text}\n{data}"),
        Output::WithData(inner, data) => format!("{}\n{data:?}", reply_text(inner)),
        Output::Media(v) => {
            let mut s = v.to_string();
            for b64 in [&v["data"], &v["resource"]["blob"]] {
                if let Some(bytes) = b64
                    .as_str()
                    .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
                {
                    s.push('\n');
                    s.push_str(&String::from_utf8_lossy(&bytes));
                }
            }
            s
        }
    }
}

fn call(env: &Env, name: &str, args: Value, header: u8) {
    let fx = env.fx;
    let cancel = CancellationToken::new();
    if header & 0x80 != 0 {
        cancel.cancel();
    }
    let ctx = Ctx {
        scope: fx.scope.snapshot(),
        limits: if header & 0x20 != 0 {
            tight()
        } else {
            Limits::default()
        },
        cancel,
        progress: None,
        io: Io::unbudgeted(),
        walk: env.walk.clone(),
    };
    let args_text = args.to_string();
    let fail_closed = [
        "write_file",
        "append_file",
        "edit_file",
        "move_file",
        "copy_file",
    ]
    .contains(&name);
    let dry_run = name == "edit_file" && args["dryRun"] == json!(true);
    let before = (fail_closed || dry_run).then(|| fx.inside_now());
    let result = dispatch(&ctx, name, args);
    if tuls_fuzz::trace() {
        let shown = match &result {
            Ok(out) => format!("ok: {}", reply_text(out)),
            Err(e) => format!("err: {e}"),
        };
        eprintln!(
            "{name} {args_text}\n  -> {}",
            shown.chars().take(400).collect::<String>()
        );
    }

    if let Some(diff) = fx.outside_changes() {
        panic!("ESCAPE: outside tree changed after {name} {args_text}:\n{diff}");
    }
    if let Some(before) = before
        && (result.is_err() || dry_run)
        && let Some(diff) = before.diff(&fx.inside_now())
    {
        panic!(
            "a {} {name} changed the tree inside the roots: {args_text}\n{:?}\n{diff}",
            if dry_run { "dry-run" } else { "failed" },
            result.as_ref().map_err(|e| e.to_string()),
        );
    }
    let (text, ok) = match &result {
        Ok(out) => (reply_text(out), true),
        Err(e) => (e.to_string(), false),
    };
    if let Some(what) = fx.leak_in(&text, ok) {
        let needle = if what == "the canary content" {
            &fx.canary
        } else {
            &fx.marker
        };
        if !args_text.contains(needle.as_str()) && !fx.inside_contains(needle) {
            panic!("ESCAPE: the reply to {name} {args_text} contains {what}:\n{text}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let env = env();
    let mut wrote = false;
    for seg in data
        .split(|&b| b == b'\n')
        .filter(|s| !s.is_empty())
        .take(MAX_CALLS)
    {
        let header = seg[0];
        let rest = &seg[1..];
        let tool = usize::from(header & 0x1f) % 16;
        let (name, args) = if let Some(name) = tool.checked_sub(1).and_then(|t| CALL_TOOLS.get(t)) {
            let args = serde_json::from_slice::<Value>(&expand(env, rest))
                .unwrap_or_else(|_| structured(env, name, rest));
            ((*name).to_owned(), args)
        } else {
            let _ = tuls::mcp::lines::top_level_id(rest);
            let Ok(line) = serde_json::from_slice::<Value>(&expand(env, rest)) else {
                continue;
            };
            let Some(name) = line["params"]["name"].as_str() else {
                continue;
            };
            let args = match &line["params"]["arguments"] {
                Value::Null => json!({}),
                a => a.clone(),
            };
            (name.to_owned(), args)
        };
        wrote |= TOOLS
            .iter()
            .any(|(t, writes)| *t == name.as_str() && *writes);
        call(env, &name, args, header);
    }
    if env.fx.inside_changed() {
        assert!(
            wrote,
            "a run of read tools changed the tree inside the roots: {data:?}"
        );
        env.fx.reset_roots();
    }
    // The oracle must not go quiet: a known read still succeeds (no leaked
    // descriptors, no broken fixture).
    if RUNS.fetch_add(1, Ordering::Relaxed).is_multiple_of(1024) {
        let ctx = Ctx {
            scope: env.fx.scope.snapshot(),
            limits: Limits::default(),
            cancel: CancellationToken::new(),
            progress: None,
            io: Io::unbudgeted(),
            walk: env.walk.clone(),
        };
        let out = dispatch(&ctx, "read_text_file", json!({"path": "sub/up/file.txt"}));
        assert!(
            matches!(&out, Ok(Output::WithData(inner, _))
                if matches!(&**inner, Output::Text(t) if t.starts_with("inside file"))),
            "a known read failed: {out:?}"
        );
    }
});
