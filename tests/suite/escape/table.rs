//! The escape case table: one line per case (layout, path, tools, expected
//! refusal), each run through the binary for every tool it names. A write
//! tool's path is tried both as what it writes and, for `move_file` and
//! `copy_file`, as source and as destination.
//!
//! A case fails if any of its calls escapes, judged by ground truth: the
//! whole tree around the root (`B/`, with the outside, the sibling and the
//! second root) is snapshotted without following links before and after
//! every call and must not change, and every reply (text and raw JSON) is
//! scanned for the canaries planted outside, plain and in base64. A reply
//! must also be the expected refusal, so a case that is quietly served
//! fails too.
//!
//! Seeded from the named escape tests ([`super::reads`], [`super::writes`],
//! [`super::forged_names`], `races::moved_out`) and the resolve-beneath
//! notes: `..`, absolute paths, prefix siblings, links out (file,
//! directory, absolute, dangling, chained, in a middle component), links
//! into another root, `/proc/self` magic links.
//!
//! The table runs in every resolution mode ([`Mode`]), since each takes
//! its own path through the resolver: the built-in rules, no rules at all
//! (`--no-default-protection`), an unrelated `--hide`, and without
//! `openat2`.
//!
//! Add a case here when a new escape class is found; give it its own named
//! test only when it needs a race or a special fixture.

use std::ffi::OsString;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::util::{CANARY_CONTENT, Reply, Server, Snapshot, TestEnv, b64};

/// The fixture a case runs on. Every layout has, under `B/`: `outside/`
/// (the canary, a secret file and a name only it has), `root/` with the
/// links below, and `root-evil/` (a prefix sibling) holding a secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// One root, `B/root`.
    OneRoot,
    /// Two roots, `B/root` and `B/root2` (with its own secret); links in
    /// the first point into the second.
    TwoRoots,
}

/// The tools a case runs through.
#[derive(Clone, Copy, Debug)]
enum Tools {
    /// Every tool that takes a path (all but `list_allowed_directories`).
    All,
    /// Every tool but `move_file` with the path as its source: the path's
    /// last component is a link, and moving a link moves the link itself,
    /// inside the root.
    Final,
    /// The read tools only (a path that names a directory link, where a
    /// write would be another question).
    Reads,
}

/// What every call of a case must get back.
#[derive(Clone, Copy, Debug)]
enum Refusal {
    /// Exactly `Access denied - path outside allowed directories: <path>`,
    /// with the path as the client gave it (`read_multiple_files` inline),
    /// and the link reason when the path as written stays inside a root
    /// (`escape_denial`).
    Outside,
}

/// One case: layout, client path, tools, expected refusal. In the path,
/// `$ROOT` is `B/root`, `$BASE` is `B` and `$OUT` is `B/outside`.
struct Case(Layout, &'static str, Tools, Refusal);

use Layout::{OneRoot, TwoRoots};
use Refusal::Outside;
use Tools::{All, Final, Reads};

const CASES: &[Case] = &[
    // `..` out of the root, absolute and relative.
    Case(OneRoot, "$ROOT/../outside/canary.txt", All, Outside),
    Case(OneRoot, "../outside/canary.txt", All, Outside),
    Case(OneRoot, "$ROOT/sub/../../outside/canary.txt", All, Outside),
    Case(OneRoot, "sub/../../outside/secret.txt", All, Outside),
    Case(OneRoot, "$ROOT/..", Reads, Outside),
    Case(OneRoot, "$ROOT/sub/../..", Reads, Outside),
    // Absolute paths outside every root, and prefix siblings.
    Case(OneRoot, "$OUT/canary.txt", All, Outside),
    Case(OneRoot, "$OUT", Reads, Outside),
    Case(OneRoot, "$BASE/root-evil/secret.txt", All, Outside),
    Case(OneRoot, "$BASE/root-evil", Reads, Outside),
    Case(OneRoot, "/", Reads, Outside),
    // Links out: to a file, through a directory (relative and absolute).
    Case(OneRoot, "$ROOT/lc", Final, Outside),
    Case(OneRoot, "lc", Final, Outside),
    Case(OneRoot, "$ROOT/lo/canary.txt", All, Outside),
    Case(OneRoot, "$ROOT/lo/new.txt", All, Outside),
    Case(OneRoot, "$ROOT/lo_abs/canary.txt", All, Outside),
    Case(OneRoot, "$ROOT/lo", Reads, Outside),
    Case(OneRoot, "$ROOT/lo_abs", Reads, Outside),
    // Dangling links out: the same refusal as a link to what exists.
    Case(OneRoot, "$ROOT/ld", Final, Outside),
    Case(OneRoot, "$ROOT/ld_abs", Final, Outside),
    Case(OneRoot, "$ROOT/ldd/x", All, Outside),
    // An outside link in a middle component; a chain of relative links.
    Case(OneRoot, "$ROOT/sub/up/canary.txt", All, Outside),
    Case(OneRoot, "$ROOT/c1/canary.txt", All, Outside),
    Case(OneRoot, "$ROOT/c1", Reads, Outside),
    // An absolute link that points inside the root is refused too.
    Case(OneRoot, "$ROOT/labs_in", Final, Outside),
    // `/proc/self` magic links.
    Case(OneRoot, "$ROOT/pr$OUT/canary.txt", All, Outside),
    Case(OneRoot, "$ROOT/pr", Reads, Outside),
    Case(OneRoot, "$ROOT/pfd", Reads, Outside),
    // A link from one root into another, relative and absolute.
    Case(TwoRoots, "$ROOT/r2/secret.txt", All, Outside),
    Case(TwoRoots, "$ROOT/r2_abs/secret.txt", All, Outside),
    Case(TwoRoots, "$ROOT/r2", Reads, Outside),
];

/// Content planted outside; never in a reply.
const OUT_SECRET: &str = "TABLE-OUTSIDE-SECRET-9c1e";
/// A name only the outside directory has; never in a reply.
const OUT_NAME: &str = "zz-table-outside-only-name";
/// The prefix sibling's secret.
const SIBLING_SECRET: &str = "TABLE-SIBLING-SECRET-4b7d";
/// The second root's secret (reached only through a link out of the first).
const ROOT2_SECRET: &str = "TABLE-ROOT2-SECRET-e28a";
/// What the write tools write; its bytes must never land anywhere.
const PAYLOAD: &str = "TABLE-PAYLOAD-written";

fn build(layout: Layout) -> TestEnv {
    let env = TestEnv::new();
    let out = env.outside();
    std::fs::write(out.join("secret.txt"), OUT_SECRET).expect("outside secret");
    std::fs::write(out.join(OUT_NAME), OUT_SECRET).expect("outside name");
    let sibling = env.base().join("root-evil");
    std::fs::create_dir(&sibling).expect("sibling");
    std::fs::write(sibling.join("secret.txt"), SIBLING_SECRET).expect("sibling secret");
    env.write("f.txt", "inside\n");
    env.mkdir("sub");
    env.symlink("../outside/canary.txt", "lc");
    env.symlink("../outside", "lo");
    env.symlink(&out, "lo_abs");
    env.symlink("../outside/new.txt", "ld");
    env.symlink(out.join("new-abs.txt"), "ld_abs");
    env.symlink("../outside/newdir", "ldd");
    env.symlink("../../outside", "sub/up");
    env.symlink("c2", "c1");
    env.symlink("sub/../c3", "c2");
    env.symlink("../outside", "c3");
    env.symlink(env.root().join("f.txt"), "labs_in");
    env.symlink("/proc/self/root", "pr");
    env.symlink("/proc/self/fd", "pfd");
    if layout == TwoRoots {
        let root2 = env.base().join("root2");
        std::fs::create_dir(&root2).expect("root2");
        std::fs::write(root2.join("secret.txt"), ROOT2_SECRET).expect("root2 secret");
        env.symlink("../root2", "r2");
        env.symlink(&root2, "r2_abs");
    }
    env
}

/// How the server resolves paths: the table runs in each mode, since each
/// takes a different resolver path (issue 30, "Also").
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// The built-in rules: reads take the kernel's one-call resolution
    /// (`openat2`), writes the rule walk.
    Default,
    /// No rule at all (`--no-default-protection`): every call takes the
    /// kernel's resolution.
    NoProtection,
    /// A rule that hides something absent (`--hide nothing-here`): reads
    /// take the rule walk too, and the walks check each entry.
    UnrelatedHide,
    /// The built-in rules with every `openat2` failing (`ENOSYS`, injected
    /// by `strace` as in [`super::no_openat2`]): paths are resolved one
    /// component at a time.
    #[cfg(target_os = "linux")]
    NoOpenat2,
}

/// The server on the layout's roots in `mode`, without Landlock: the table
/// checks the capability layer alone, which must hold without the kernel's
/// second wall (the named escape tests run both ways).
fn server(env: &TestEnv, layout: Layout, mode: Mode) -> Server {
    let mut args: Vec<OsString> = vec![env.root().into()];
    if layout == TwoRoots {
        args.push(env.base().join("root2").into());
    }
    args.push("--no-landlock".into());
    match mode {
        Mode::Default => Server::start(&args),
        Mode::NoProtection => {
            args.push("--no-default-protection".into());
            Server::start(&args)
        }
        Mode::UnrelatedHide => {
            args.extend(["--hide".into(), "nothing-here".into()]);
            Server::start(&args)
        }
        #[cfg(target_os = "linux")]
        Mode::NoOpenat2 => {
            use super::no_openat2::{LINE, without_openat2};
            let server = Server::start_with(&args, without_openat2());
            // The mode holds: the server says it runs without openat2.
            assert!(
                crate::util::wait_until(crate::util::default_timeout(), || server
                    .stderr()
                    .contains(LINE)),
                "no '{LINE}' startup line: {}",
                server.stderr()
            );
            server
        }
    }
}

/// The case's path with its placeholders filled in.
fn spell(env: &TestEnv, path: &str) -> String {
    let base = env.base().to_str().expect("UTF-8 base").to_owned();
    path.replace("$ROOT", &env.root_str())
        .replace("$OUT", &format!("{base}/outside"))
        .replace("$BASE", &base)
}

/// The calls a case makes on `p`: (tool, arguments). `move_file` and `copy_file` take `p` as source and as
/// destination, the other end an inside name.
fn calls(tools: Tools, p: &str) -> Vec<(&'static str, Value)> {
    let mut calls = vec![
        ("read_file", json!({ "path": p })),
        ("read_text_file", json!({ "path": p })),
        ("read_text_file", json!({"path": p, "head": 1})),
        ("read_text_file", json!({"path": p, "tail": 1})),
        ("read_media_file", json!({ "path": p })),
        ("read_multiple_files", json!({ "paths": [p] })),
        ("list_directory", json!({ "path": p })),
        ("list_directory_with_sizes", json!({ "path": p })),
        ("directory_tree", json!({ "path": p })),
        ("search_files", json!({"path": p, "pattern": "**"})),
        (
            "search_file_contents",
            json!({"path": p, "pattern": ".", "hidden": true, "noIgnore": true, "binary": true}),
        ),
        ("get_file_info", json!({ "path": p })),
    ];
    if let All | Final = tools {
        calls.extend([
            ("write_file", json!({"path": p, "content": PAYLOAD})),
            ("append_file", json!({"path": p, "content": PAYLOAD})),
            (
                "edit_file",
                json!({"path": p, "edits": [{"oldText": "CANARY", "newText": PAYLOAD}]}),
            ),
            (
                "edit_file",
                json!({"path": p, "edits": [{"oldText": "CANARY", "newText": PAYLOAD}], "dryRun": true}),
            ),
            ("create_directory", json!({ "path": p })),
            ("move_file", json!({"source": "f.txt", "destination": p})),
            ("copy_file", json!({"source": "f.txt", "destination": p})),
            ("copy_file", json!({"source": p, "destination": "copied.txt"})),
        ]);
    }
    if let All = tools {
        calls.push((
            "move_file",
            json!({"source": p, "destination": "moved.txt"}),
        ));
    }
    calls
}

/// Everything a reply must never contain.
fn forbidden() -> Vec<String> {
    let mut f: Vec<String> = [
        CANARY_CONTENT,
        OUT_SECRET,
        OUT_NAME,
        SIBLING_SECRET,
        ROOT2_SECRET,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    f.push(b64(CANARY_CONTENT.as_bytes()));
    f.push(b64(OUT_SECRET.as_bytes()));
    f
}

/// Why `reply` is not `expect` for `p`, if it is not. In a [`Final`] case,
/// `move_file` and `copy_file` onto the link are refused because the
/// destination exists (tuls never overwrites), which is checked instead.
fn wrong_refusal(
    tool: &str,
    args: &Value,
    reply: &Reply,
    (p, denial): (&str, &str),
    case: &Case,
) -> Option<String> {
    let Refusal::Outside = case.3;
    let onto_final = matches!(case.2, Final) && args["destination"] == p;
    let (inline, text) = if onto_final {
        (false, format!("Destination already exists: {p}"))
    } else if tool == "read_multiple_files" {
        // `read_multiple_files` reports each file's error inline, in a result.
        (true, format!("{p}: Error - {denial}"))
    } else {
        (false, denial.to_owned())
    };
    (reply.is_error == inline || reply.text != text)
        .then(|| format!("expected {text:?}, got {}", reply.raw))
}

/// Runs one case on a fresh tree and server (a call that is wrongly served
/// must not change what the next case sees); returns its failures and the
/// number of calls made.
fn run(case: &Case, forbidden: &[String], mode: Mode) -> (String, usize) {
    let Case(layout, path, tools, _) = case;
    let env = build(*layout);
    let server = server(&env, *layout, mode);
    let p = spell(&env, path);
    let denial = server.escape_denial(&p);
    let mut failures = String::new();
    let calls = calls(*tools, &p);
    for (tool, args) in &calls {
        let before = Snapshot::take(env.base());
        let reply = server.call(tool, args.clone());
        let after = Snapshot::take(env.base());
        let what = format!("[{mode:?} {layout:?}] {path} {tool} {args}");
        let diff = before.diff(&after);
        if !diff.is_empty() {
            let _ = writeln!(failures, "ESCAPE {what}: the tree changed: {diff:?}");
        }
        let raw = reply.raw.to_string();
        for f in forbidden {
            if reply.text.contains(f.as_str()) || raw.contains(f.as_str()) {
                let _ = writeln!(failures, "LEAK {what}: reply carries {f:?}");
            }
        }
        if let Some(why) = wrong_refusal(tool, args, &reply, (&p, &denial), case) {
            let _ = writeln!(failures, "NOT REFUSED {what}: {why}");
        }
    }
    env.assert_canary_intact();
    (failures, calls.len())
}

/// Every case, every tool it names, in `mode`: nothing changes under `B/`,
/// no canary comes back, and every reply is the expected refusal. All
/// failures are gathered, so one run shows every case that escapes. Cases
/// run on a few threads, each on its own tree and server.
fn every_case(mode: Mode) {
    let forbidden = forbidden();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(String, usize)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(case) = CASES.get(i) else { break out };
                        out.push(run(case, &forbidden, mode));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a case panicked"))
            .collect()
    });
    let failures: String = results.iter().map(|(f, _)| f.as_str()).collect();
    let calls: usize = results.iter().map(|(_, n)| n).sum();
    assert!(failures.is_empty(), "{failures}");
    assert!(calls > 400, "only {calls} calls made");
    eprintln!(
        "escape table ({mode:?}): {} cases, {calls} calls",
        CASES.len()
    );
}

/// The table with the built-in rules.
#[test]
fn every_escape_case_is_refused_by_every_tool_it_names() {
    every_case(Mode::Default);
}

/// The table with no rule at all: the kernel resolves every path.
#[test]
fn every_escape_case_is_refused_with_no_default_protection() {
    every_case(Mode::NoProtection);
}

/// The table with an unrelated `--hide`: reads take the rule walk.
#[test]
fn every_escape_case_is_refused_with_an_unrelated_hide() {
    every_case(Mode::UnrelatedHide);
}

/// The table without `openat2`: the component walk resolves every path.
#[cfg(target_os = "linux")]
#[test]
fn every_escape_case_is_refused_without_openat2() {
    if !crate::util::have("strace") {
        eprintln!("not run: no strace to make openat2 fail");
        return;
    }
    every_case(Mode::NoOpenat2);
}
