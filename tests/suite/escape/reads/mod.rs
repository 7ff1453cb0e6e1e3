//! Escape tests: one named test per class of attempt to read or learn
//! anything outside the roots. Each runs every read tool on each attempt
//! (read_text_file whole/head/tail, read_media_file, read_multiple_files,
//! list_directory, list_directory_with_sizes, directory_tree, search_files,
//! search_file_contents,
//! get_file_info), checks the exact refusal where one is specified, and
//! checks that no reply carries anything from outside: no canary content
//! (plain or base64), no outside entry name, size, permission bits or
//! timestamp. The outside tree must be unchanged afterwards.
//!
//! Every test runs twice: with Landlock (the default) and with
//! `--no-landlock`, so the capability layer (cap-std) is shown to hold on
//! its own and not only behind the kernel's second wall.

use std::ffi::OsString;
use std::fs::{File, FileTimes, Permissions};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::util::{CANARY_CONTENT, Options, Reply, Server, TestEnv, b64};

// ---------------------------------------------------------------------------
// The outside world and what must never be seen of it
// ---------------------------------------------------------------------------

/// 2001-02-03 04:05:06 UTC: every outside entry's mtime.
const OUTSIDE_MTIME: u64 = 981_173_106;
/// How `get_file_info` would print it.
const OUTSIDE_DATE: &str = "Feb 03 2001";
/// Content of `outside/zz-outside-secret-name.txt` starts with this; the file
/// is 12345 bytes long ("12.06 KB").
const SECRET_PREFIX: &str = "OUTSIDE-SECRET-CONTENT-";
const SECRET_LEN: usize = 12_345;
/// Content in the sibling directories of the root.
const SIBLING_CANARY: &str = "SIBLING-CANARY-51de";
/// Content of the second root's secret, for the cross-root test.
const ROOT2_CANARY: &str = "ROOT2-CANARY-0c4e";
/// Content of `root/hello.txt`.
const HELLO: &str = "HELLO-INSIDE\n";

fn set_mtime(path: &Path) {
    let t = UNIX_EPOCH + Duration::from_secs(OUTSIDE_MTIME);
    File::open(path)
        .and_then(|f| f.set_times(FileTimes::new().set_modified(t).set_accessed(t)))
        .unwrap_or_else(|e| panic!("set times of {}: {e}", path.display()));
}

/// Everything a reply must never contain.
pub(super) struct Forbidden(Vec<String>);

impl Forbidden {
    /// Panics if `reply` (its text, or anywhere in its raw JSON) contains a
    /// forbidden string. `request` is checked first: a test must not name a
    /// forbidden string itself (errors echo the path as given).
    #[track_caller]
    fn check(&self, what: &str, request: &Value, reply: &Reply) {
        let req = request.to_string();
        let raw = reply.raw.to_string();
        for f in &self.0 {
            assert!(
                !req.contains(f),
                "test bug: request {req} names forbidden {f:?}"
            );
            assert!(
                !reply.text.contains(f.as_str()) && !raw.contains(f.as_str()),
                "LEAK: {what} {req} reply contains {f:?}:\n{}",
                reply.raw
            );
        }
    }
}

/// Builds the outside tree next to the root (`B/outside` already holds the
/// canary) and returns what must never show up in a reply.
fn outside_fixture(env: &TestEnv) -> Forbidden {
    let out = env.outside();
    let mut secret = SECRET_PREFIX.as_bytes().to_vec();
    secret.resize(SECRET_LEN, b'Q');
    std::fs::write(out.join("zz-outside-secret-name.txt"), &secret).expect("secret");
    std::fs::set_permissions(
        out.join("zz-outside-secret-name.txt"),
        Permissions::from_mode(0o604),
    )
    .expect("chmod secret");
    let odir = out.join("odir");
    std::fs::create_dir_all(odir.join("zz-odir-sub")).expect("odir");
    std::fs::write(odir.join("zz-odir-entry-alpha.txt"), CANARY_CONTENT).expect("odir entry");
    std::fs::write(odir.join("zz-odir-sub/zz-deep-name.txt"), CANARY_CONTENT).expect("deep");
    std::fs::write(odir.join("canary.txt"), CANARY_CONTENT).expect("odir canary");
    // Enough entries that the outside directories' sizes are their own.
    for i in 0..300 {
        std::fs::write(
            out.join(format!("zz-many-outside-entry-with-a-long-name-{i:03}")),
            "",
        )
        .expect("many");
        std::fs::write(
            odir.join(format!("zz-many-odir-entry-with-a-long-name-{i:03}")),
            "",
        )
        .expect("many");
    }
    std::fs::set_permissions(&odir, Permissions::from_mode(0o705)).expect("chmod odir");
    for p in [
        out.join("canary.txt"),
        out.join("zz-outside-secret-name.txt"),
        odir.join("zz-odir-entry-alpha.txt"),
        odir.join("zz-odir-sub"),
        odir.clone(),
        out.clone(),
    ] {
        set_mtime(&p);
    }

    let mut forbidden: Vec<String> = vec![
        "CANARY-OUTSIDE".into(),
        CANARY_CONTENT.into(),
        b64(CANARY_CONTENT.as_bytes()),
        "OUTSIDE-SECRET".into(),
        b64(&secret[..SECRET_PREFIX.len() / 3 * 3]),
        SIBLING_CANARY.into(),
        b64(SIBLING_CANARY.as_bytes()),
        ROOT2_CANARY.into(),
        b64(ROOT2_CANARY.as_bytes()),
        "zz-".into(),
        // Sizes, as get_file_info and list_directory_with_sizes print them.
        format!("size: {}\n", CANARY_CONTENT.len()),
        format!(" {} B", CANARY_CONTENT.len()),
        format!("size: {SECRET_LEN}"),
        "12.06 KB".into(),
        "permissions: 604".into(),
        "permissions: 705".into(),
        OUTSIDE_DATE.into(),
    ];
    for dir in [&out, &odir] {
        let size = std::fs::symlink_metadata(dir).expect("stat").len();
        assert_ne!(size, 4096, "outside dirs must have distinctive sizes");
        forbidden.push(format!("size: {size}\n"));
    }
    Forbidden(forbidden)
}

/// The inside fixture every test shares.
fn inside_fixture(env: &TestEnv) {
    env.write("hello.txt", HELLO);
    env.write("sub/file.txt", "SUB-FILE\n");
    env.mkdir("a");
}

/// Runs `f` against a server started with `extra` arguments after the root,
/// once with Landlock and once with `--no-landlock`.
fn each_mode(env: &TestEnv, extra: &[OsString], opts: &Options, f: impl Fn(&Server, &str)) {
    for mode in ["landlock", "no-landlock"] {
        let mut args: Vec<OsString> = vec![env.root().into_os_string()];
        args.extend(extra.iter().cloned());
        if mode == "no-landlock" {
            args.push("--no-landlock".into());
        }
        let server = Server::start_with(&args, opts.clone());
        f(&server, mode);
    }
}

/// The read-tool calls made on one client path.
fn calls(p: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("read_text_file", json!({ "path": p })),
        ("read_text_file", json!({"path": p, "head": 1})),
        ("read_text_file", json!({"path": p, "tail": 1})),
        ("read_media_file", json!({ "path": p })),
        (
            "read_multiple_files",
            json!({"paths": [p, format!("{p}/canary.txt")]}),
        ),
        ("list_directory", json!({ "path": p })),
        ("list_directory_with_sizes", json!({ "path": p })),
        ("directory_tree", json!({ "path": p })),
        ("search_files", json!({"path": p, "pattern": "**"})),
        (
            "search_file_contents",
            json!({"path": p, "pattern": ".", "hidden": true, "noIgnore": true, "binary": true}),
        ),
        ("get_file_info", json!({ "path": p })),
    ]
}

/// Runs every read tool on `p`; checks nothing forbidden comes back.
fn probe(server: &Server, p: &str, forbidden: &Forbidden) -> Vec<(&'static str, Reply)> {
    calls(p)
        .into_iter()
        .map(|(tool, args)| {
            let reply = server.call(tool, args.clone());
            forbidden.check(tool, &args, &reply);
            (tool, reply)
        })
        .collect()
}

fn denial(p: &str) -> String {
    format!("Access denied - path outside allowed directories: {p}")
}

/// Every tool on `p` must be refused with exactly the escape message
/// naming `p` as given (read_multiple_files inline, for both its entries).
#[track_caller]
fn assert_denied(server: &Server, p: &str, forbidden: &Forbidden, mode: &str) {
    for (tool, reply) in probe(server, p, forbidden) {
        if tool == "read_multiple_files" {
            reply.assert_ok();
            let child = format!("{p}/canary.txt");
            assert_eq!(
                reply.text,
                format!(
                    "{p}: Error - {}\n---\n{child}: Error - {}",
                    denial(p),
                    denial(&child)
                ),
                "[{mode}] {tool} {p:?}"
            );
        } else {
            assert!(
                reply.is_error,
                "[{mode}] {tool} {p:?} succeeded: {}",
                reply.raw
            );
            assert_eq!(reply.text, denial(p), "[{mode}] {tool} {p:?}");
        }
    }
}

/// The root seen through the listing tools: it must list fine, show the
/// given links as links (no size), not descend them, and never report a
/// link that resolves outside.
#[track_caller]
fn assert_root_views(
    server: &Server,
    env: &TestEnv,
    outside_links: &[&str],
    forbidden: &Forbidden,
) {
    let root = env.root().display().to_string();
    for (tool, args) in [
        ("list_directory", json!({"path": root})),
        ("list_directory_with_sizes", json!({"path": root})),
        ("directory_tree", json!({"path": root})),
        ("search_files", json!({"path": root, "pattern": "**"})),
        (
            "search_files",
            json!({"path": ".", "pattern": "**/*canary*"}),
        ),
        (
            "search_file_contents",
            json!({"path": root, "pattern": ".", "hidden": true, "noIgnore": true, "binary": true}),
        ),
        (
            "search_file_contents",
            json!({"path": ".", "pattern": "(?i)canary|secret|q", "outputMode": "count"}),
        ),
    ] {
        let reply = server.call(tool, args.clone());
        reply.assert_ok();
        forbidden.check(tool, &args, &reply);
    }
    let list = server.call("list_directory", json!({"path": "."})).text;
    let sizes = server
        .call("list_directory_with_sizes", json!({"path": "."}))
        .text;
    let tree = server.call("directory_tree", json!({"path": "."})).text;
    let found = server
        .call("search_files", json!({"path": ".", "pattern": "**"}))
        .text;
    for link in outside_links {
        let (dir, name) = link.rsplit_once('/').unwrap_or(("", link));
        if dir.is_empty() {
            assert!(
                list.lines().any(|l| l == format!("[LINK] {name}")),
                "{list}"
            );
            assert!(
                sizes.lines().any(|l| l == format!("[LINK] {name:<30} ")),
                "a link shows no size: {sizes}"
            );
        }
        assert!(
            tree.contains(&format!("\"name\": \"{name}\",\n")),
            "{name} missing from the tree"
        );
        assert!(
            // Printed under the client's spelling of `path` (`.`).
            !found.lines().any(|l| l == format!("./{link}")),
            "search_files reported {link}, which resolves outside:\n{found}"
        );
    }
}

/// Runs the whole class check and the outside-unchanged check.
pub(super) fn escape_class(
    env: &TestEnv,
    forbidden: &Forbidden,
    extra: &[OsString],
    opts: &Options,
    denied: &[String],
    outside_links: &[&str],
) {
    let before = env.snapshot_outside();
    each_mode(env, extra, opts, |server, mode| {
        for p in denied {
            assert_denied(server, p, forbidden, mode);
        }
        assert_root_views(server, env, outside_links, forbidden);
        // Positive control: the same server does read inside.
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "hello.txt"}))
                .text,
            HELLO,
            "[{mode}]"
        );
    });
    before.assert_same(&env.snapshot_outside(), "outside");
    env.assert_canary_intact();
}

pub(super) fn setup() -> (TestEnv, Forbidden) {
    let env = TestEnv::new();
    inside_fixture(&env);
    let forbidden = outside_fixture(&env);
    (env, forbidden)
}

pub(super) fn base_str(env: &TestEnv) -> String {
    env.base().display().to_string()
}

// ---------------------------------------------------------------------------
// One test per class
// ---------------------------------------------------------------------------

#[test]
fn dotdot() {
    let (env, forbidden) = setup();
    let root = env.root_str();
    let denied: Vec<String> = [
        "..",
        "../",
        "../outside",
        "../outside/canary.txt",
        "../outside/odir",
        "./../outside",
        "sub/../../outside/canary.txt",
        "sub/./../../outside/odir",
        "a/../sub/../../outside",
        "sub/file.txt/../../../outside",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([
        format!("{root}/.."),
        format!("{root}/../outside/canary.txt"),
        format!("{root}/sub/../../outside/odir"),
        format!("{root}/../root/../outside"),
    ])
    .collect();
    escape_class(&env, &forbidden, &[], &Options::new(), &denied, &[]);
}

#[test]
fn absolute_outside() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    let denied = vec![
        format!("{base}/outside"),
        format!("{base}/outside/"),
        format!("{base}/outside/canary.txt"),
        format!("{base}/outside/odir"),
        format!("/{base}//outside/./canary.txt"),
        base.clone(),
        "/".to_owned(),
        "/etc".to_owned(),
        "/etc/passwd".to_owned(),
        "/proc/self/environ".to_owned(),
        "/dev/zero".to_owned(),
    ];
    escape_class(&env, &forbidden, &[], &Options::new(), &denied, &[]);
}

#[test]
fn prefix_sibling() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    // Siblings whose names extend the root's, including the characters the
    // reference strips (quotes, whitespace).
    for sib in [
        "root-evil",
        "rootX",
        "root'",
        "root\"",
        "root ",
        "root.bak",
        "ro",
    ] {
        let d = env.base().join(sib);
        std::fs::create_dir(&d).expect("sibling");
        std::fs::write(d.join("s.txt"), SIBLING_CANARY).expect("sibling file");
        std::fs::write(d.join("zz-sibling-only-name"), SIBLING_CANARY).expect("sibling file");
    }
    let mut denied = Vec::new();
    for sib in [
        "root-evil",
        "rootX",
        "root'",
        "root\"",
        "root ",
        "root.bak",
        "ro",
    ] {
        denied.push(format!("{base}/{sib}"));
        denied.push(format!("{base}/{sib}/s.txt"));
    }
    denied.push(format!("{base}/root-evil/../root-evil/s.txt"));
    escape_class(&env, &forbidden, &[], &Options::new(), &denied, &[]);
}

#[test]
fn symlink_to_outside_file() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    env.symlink("../outside/canary.txt", "link_rel");
    env.symlink("../outside/zz-outside-secret-name.txt", "link_secret");
    env.symlink("../../outside/canary.txt", "sub/link_deep");
    env.symlink(format!("{base}/outside/canary.txt"), "link_abs");
    env.symlink(
        format!("{}{base}/outside/canary.txt", "../".repeat(20)),
        "link_many_dotdots",
    );
    env.symlink("./../outside/./odir/../canary.txt", "link_winding");
    let root = env.root_str();
    let denied: Vec<String> = [
        "link_rel",
        "link_secret",
        "sub/link_deep",
        "link_abs",
        "link_many_dotdots",
        "link_winding",
        "./link_rel",
        "sub/../link_secret",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("{root}/link_rel"), format!("{root}/sub/link_deep")])
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &[
            "link_rel",
            "link_secret",
            "sub/link_deep",
            "link_abs",
            "link_many_dotdots",
            "link_winding",
        ],
    );
}

#[test]
fn symlink_to_outside_dir() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    env.symlink("../outside/odir", "odir_rel");
    env.symlink("../../outside", "sub/out_deep");
    env.symlink(format!("{base}/outside/odir"), "odir_abs");
    env.symlink("../outside/odir/", "odir_slash");
    let denied: Vec<String> = [
        "odir_rel",
        "odir_rel/",
        "odir_rel/.",
        "odir_rel/canary.txt",
        "odir_rel/x/..",
        "sub/out_deep",
        "sub/out_deep/odir",
        "sub/out_deep/canary.txt",
        "odir_abs",
        "odir_abs/canary.txt",
        "odir_slash",
        "odir_slash/canary.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["odir_rel", "sub/out_deep", "odir_abs", "odir_slash"],
    );
}

#[test]
fn outside_symlink_in_middle_component() {
    let (env, forbidden) = setup();
    env.symlink("../../outside", "a/b");
    env.symlink("../sub", "a/inlink");
    let root = env.root_str();
    let denied: Vec<String> = [
        "a/b/canary.txt",
        "a/b/odir",
        "a/b/odir/canary.txt",
        "a/b/odir/.",
        "a/b/../b/canary.txt",
        // Lexically inside, but `..` after the link is resolved physically.
        "a/b/../root/hello.txt",
        "a/b/../../root/hello.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("{root}/a/b/canary.txt"), format!("{root}/a/b/odir")])
    .collect();
    escape_class(&env, &forbidden, &[], &Options::new(), &denied, &["a/b"]);
    // An in-root link in the middle is followed.
    let server = Server::start(&args![env.root()]);
    assert_eq!(
        server
            .call("read_text_file", json!({"path": "a/inlink/file.txt"}))
            .text,
        "SUB-FILE\n"
    );
}

#[test]
fn symlink_relative_chained_out() {
    let (env, forbidden) = setup();
    // c1 -> c2 -> sub/c3 -> ../c4 -> ../outside: each hop looks harmless.
    env.symlink("c2", "c1");
    env.symlink("sub/c3", "c2");
    env.symlink("../c4", "sub/c3");
    env.symlink("../outside", "c4");
    // Out and back in: still refused (the walk left the root).
    env.symlink("../outside/../root/hello.txt", "out_and_back");
    env.symlink("sub/../../outside/canary.txt", "via_sub");
    // A chain that stays inside is followed.
    env.symlink("i2", "i1");
    env.symlink("sub/i3", "i2");
    env.symlink("../hello.txt", "sub/i3");
    let denied: Vec<String> = [
        "c1",
        "c1/canary.txt",
        "c1/odir",
        "c2/canary.txt",
        "sub/c3/odir/canary.txt",
        "c4",
        "out_and_back",
        "via_sub",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["c1", "c2", "sub/c3", "c4", "out_and_back", "via_sub"],
    );
    each_mode(&env, &[], &Options::new(), |server, mode| {
        let r = server.call("read_text_file", json!({"path": "i1"}));
        assert_eq!(r.text, HELLO, "[{mode}] in-root chain");
        let found = server.call("search_files", json!({"path": ".", "pattern": "i*"}));
        assert_eq!(found.text, "./i1\n./i2", "[{mode}]");
    });
}

#[test]
fn absolute_symlink_inside_refused() {
    let (env, forbidden) = setup();
    let root = env.root_str();
    // Absolute links are refused even when they point inside (cap-std):
    // fail-closed, and the same message as an escape.
    env.symlink(format!("{root}/hello.txt"), "abs_file");
    env.symlink(format!("{root}/sub"), "abs_dir");
    env.symlink(&root, "sub/abs_root");
    env.symlink(format!("{}/outside/canary.txt", base_str(&env)), "abs_out");
    let denied: Vec<String> = [
        "abs_file",
        "abs_dir",
        "abs_dir/file.txt",
        "sub/abs_root",
        "sub/abs_root/hello.txt",
        "abs_out",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["abs_file", "abs_dir", "sub/abs_root", "abs_out"],
    );
    // The targets themselves are readable by their own names.
    let server = Server::start(&args![env.root()]);
    assert_eq!(
        server
            .call("read_text_file", json!({"path": "sub/file.txt"}))
            .text,
        "SUB-FILE\n"
    );
}

/// A link to an outside file, to an outside directory and to nothing at all
/// get the same reply from every tool: no existence oracle.
#[test]
fn dangling_symlink_out_same_reply_as_existing() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    let links = [
        ("to_file", "../outside/canary.txt".to_owned()),
        (
            "to_secret",
            "../outside/zz-outside-secret-name.txt".to_owned(),
        ),
        ("to_dir", "../outside/odir".to_owned()),
        ("to_missing", "../outside/nope".to_owned()),
        ("to_missing_dir", "../outside/nope/deeper/".to_owned()),
        ("to_missing_parent", "../no-such-sibling/x".to_owned()),
        ("to_abs_missing", format!("{base}/outside/nope")),
        ("to_abs_file", format!("{base}/outside/canary.txt")),
    ];
    for (name, target) in &links {
        env.symlink(target, name);
    }
    let before = env.snapshot_outside();
    each_mode(&env, &[], &Options::new(), |server, mode| {
        // For every call shape, the reply with the link's name blanked out
        // is the same for every link.
        let mut shapes: Vec<Vec<String>> = Vec::new();
        for (name, _) in &links {
            let replies = probe(server, name, &forbidden);
            shapes.push(
                replies
                    .iter()
                    .map(|(tool, r)| format!("{tool}: {}", r.raw.to_string().replace(name, "<L>")))
                    .collect(),
            );
            assert_denied(server, name, &forbidden, mode);
            // Paths beneath the link too.
            let beneath = format!("{name}/x");
            assert_denied(server, &beneath, &forbidden, mode);
        }
        for (i, shape) in shapes.iter().enumerate().skip(1) {
            assert_eq!(
                shape, &shapes[0],
                "[{mode}] {} and {} get different replies",
                links[i].0, links[0].0
            );
        }
        assert_root_views(
            server,
            &env,
            &links.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            &forbidden,
        );
        let found = server.call("search_files", json!({"path": ".", "pattern": "to_*"}));
        assert_eq!(found.text, "No matches found", "[{mode}]");
        let sizes = server.call("list_directory_with_sizes", json!({"path": "."}));
        for (name, _) in &links {
            assert!(
                sizes.text.contains(&format!("[LINK] {name:<30} \n")),
                "{}",
                sizes.text
            );
        }
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}

#[test]
fn proc_self_root_link() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    let root = env.root_str();
    env.symlink("/proc/self/root", "pr");
    env.symlink(format!("/proc/self/root{base}/outside"), "pr_out");
    env.symlink(format!("{}proc/self/root", "../".repeat(20)), "prel");
    env.symlink("/proc/self/fd", "pfd");
    env.symlink("/proc/self", "pself");
    let denied = vec![
        format!("/proc/self/root{base}/outside/canary.txt"),
        format!("/proc/self/root{base}/outside"),
        // Even an inside file, spelled through /proc, is not under a root.
        format!("/proc/self/root{root}/hello.txt"),
        "/proc/self/root".to_owned(),
        "/proc/thread-self/root/".to_owned(),
        "pr".to_owned(),
        format!("pr{base}/outside/canary.txt"),
        format!("pr{root}/hello.txt"),
        "pr_out".to_owned(),
        "pr_out/canary.txt".to_owned(),
        "prel".to_owned(),
        format!("prel{base}/outside/odir"),
        "pfd".to_owned(),
        "pfd/3".to_owned(),
        "pfd/4/..".to_owned(),
        "pself/root".to_owned(),
        "pself/cwd/canary.txt".to_owned(),
    ];
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["pr", "pr_out", "prel", "pfd", "pself"],
    );
    // A relative path is relative to the root, never to the process.
    let server = Server::start(&args![env.root()]);
    let p = "proc/self/root/etc/passwd";
    let r = server.call("read_text_file", json!({ "path": p }));
    assert_eq!(
        r.text,
        format!("ENOENT: no such file or directory, open '{p}'")
    );

    // A root spelled through /proc/self/root works, and still confines.
    let proc_root = format!("/proc/self/root{root}");
    let server = Server::start(&args![&proc_root, "--no-landlock"]);
    assert_eq!(
        server
            .call(
                "read_text_file",
                json!({"path": format!("{proc_root}/hello.txt")})
            )
            .text,
        HELLO
    );
    for p in [
        format!("{proc_root}/../outside/canary.txt"),
        format!("{proc_root}/pr{base}/outside/canary.txt"),
        format!("{proc_root}/prel{base}/outside"),
    ] {
        assert_denied(&server, &p, &forbidden, "proc-root");
    }
}

#[test]
fn proc_self_cwd_link() {
    let (env, forbidden) = setup();
    // The server's working directory is the outside directory.
    let opts = Options::new().current_dir(env.outside());
    env.symlink("/proc/self/cwd", "cwd");
    env.symlink(format!("{}proc/self/cwd", "../".repeat(20)), "cwdrel");
    env.symlink("/proc/thread-self/cwd", "tcwd");
    let denied: Vec<String> = [
        "/proc/self/cwd",
        "/proc/self/cwd/canary.txt",
        "/proc/self/cwd/odir",
        "/proc/thread-self/cwd/canary.txt",
        "cwd",
        "cwd/canary.txt",
        "cwd/odir",
        "cwdrel",
        "cwdrel/canary.txt",
        "tcwd/odir/canary.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &opts,
        &denied,
        &["cwd", "cwdrel", "tcwd"],
    );
    each_mode(&env, &[], &opts, |server, mode| {
        // Relative paths resolve against the first root, not the cwd.
        for (tool, op) in [("read_text_file", "open"), ("get_file_info", "stat")] {
            let r = server.call(tool, json!({"path": "canary.txt"}));
            assert_eq!(
                r.text,
                format!("ENOENT: no such file or directory, {op} 'canary.txt'"),
                "[{mode}] {tool}"
            );
        }
        let r = server.call("list_directory", json!({"path": "odir"}));
        assert_eq!(
            r.text, "ENOENT: no such file or directory, scandir 'odir'",
            "[{mode}]"
        );
        let r = server.call("list_directory", json!({"path": ""}));
        forbidden.check("list_directory", &json!({"path": ""}), &r);
        assert!(r.text.contains("[FILE] hello.txt"), "[{mode}] {}", r.text);
    });
}

#[test]
fn fifo_does_not_block() {
    let (env, forbidden) = setup();
    env.mkfifo("pipe");
    env.mkfifo("sub/pipe2");
    env.symlink("pipe", "pipelink");
    env.symlink("../pipe", "sub/uplink");
    let _sock = std::os::unix::net::UnixListener::bind(env.path("sock")).expect("socket");
    // An outside FIFO behind a link: refused as an escape, not opened.
    let out_fifo = env.outside().join("ofifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&out_fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    env.symlink("../outside/ofifo", "ofifo_link");
    // A character device, where we may create one (as root, on Linux).
    #[cfg(target_os = "linux")]
    let have_dev = rustix::fs::mknodat(
        rustix::fs::CWD,
        env.path("null").as_path(),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    )
    .is_ok();
    #[cfg(not(target_os = "linux"))]
    let have_dev = false;

    let mut specials = vec![
        ("pipe", "FIFO"),
        ("sub/pipe2", "FIFO"),
        ("pipelink", "FIFO"),
        ("sub/uplink", "FIFO"),
        ("sock", "socket"),
    ];
    if have_dev {
        specials.push(("null", "character device"));
    }
    let before = env.snapshot_outside();
    let opts = Options::new().timeout(Duration::from_secs(10));
    each_mode(&env, &[], &opts, |server, mode| {
        let started = Instant::now();
        for (p, kind) in &specials {
            let refusal = format!("Refusing to open '{p}': it is a {kind}, not a regular file");
            for (tool, reply) in probe(server, p, &forbidden) {
                match tool {
                    // search_file_contents takes one file too, and refuses
                    // a FIFO as the read tools do.
                    "read_text_file" | "read_media_file" | "search_file_contents" => {
                        assert!(reply.is_error, "[{mode}] {tool} {p}");
                        assert_eq!(reply.text, refusal, "[{mode}] {tool} {p}");
                    }
                    "read_multiple_files" => {
                        assert!(
                            reply
                                .text
                                .starts_with(&format!("{p}: Error - {refusal}\n---\n")),
                            "[{mode}] {p}: {}",
                            reply.text
                        );
                    }
                    "get_file_info" => {
                        // stat only: fine, and not a file or a directory.
                        reply.assert_ok();
                        assert!(
                            reply.text.contains("\nisDirectory: false\nisFile: false\n"),
                            "[{mode}] {p}: {}",
                            reply.text
                        );
                    }
                    _ => {
                        assert_eq!(
                            reply.text,
                            format!("ENOTDIR: not a directory, scandir '{p}'"),
                            "[{mode}] {tool} {p}"
                        );
                    }
                }
            }
        }
        assert_denied(server, "ofifo_link", &forbidden, mode);
        // Many FIFO reads at once, then an ordinary read: nothing is stuck.
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    server
                        .call("read_text_file", json!({"path": "pipe"}))
                        .assert_error_contains("FIFO");
                });
            }
        });
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "hello.txt"}))
                .text,
            HELLO
        );
        // The walks list them without opening them.
        let tree = server.call("directory_tree", json!({"path": "."}));
        assert!(
            tree.text
                .contains("\"name\": \"pipe\",\n    \"type\": \"file\""),
            "{}",
            tree.text
        );
        let sizes = server.call("list_directory_with_sizes", json!({"path": "."}));
        assert!(
            sizes
                .text
                .contains(&format!("[FILE] {:<30} {:>10}", "pipe", "0 B"))
        );
        let found = server.call("search_files", json!({"path": ".", "pattern": "**/pipe*"}));
        assert_eq!(found.text, "./pipe\n./pipelink\n./sub/pipe2", "[{mode}]");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "[{mode}] special files took {:?}",
            started.elapsed()
        );
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}

#[test]
fn nul_byte() {
    let (env, forbidden) = setup();
    let root = env.root_str();
    let paths = [
        "hello.txt\0".to_owned(),
        "\0".to_owned(),
        "hello.txt\0../../outside/canary.txt".to_owned(),
        "sub\0/file.txt".to_owned(),
        format!("{root}/hello.txt\0"),
        format!("{root}\0/../outside"),
        "../outside/canary.txt\0".to_owned(),
    ];
    let before = env.snapshot_outside();
    each_mode(&env, &[], &Options::new(), |server, mode| {
        for p in &paths {
            let refusal = format!(
                "Invalid path '{}': contains a NUL byte",
                p.replace('\0', "\\0")
            );
            for (tool, reply) in probe(server, p, &forbidden) {
                assert!(
                    !reply.text.contains("HELLO-INSIDE") && !reply.text.contains("SUB-FILE"),
                    "[{mode}] {tool} {p:?} read through a NUL: {}",
                    reply.text
                );
                if tool == "read_multiple_files" {
                    assert!(
                        reply
                            .text
                            .starts_with(&format!("{p}: Error - {refusal}\n---\n")),
                        "[{mode}] {p:?}: {:?}",
                        reply.text
                    );
                } else {
                    assert!(reply.is_error, "[{mode}] {tool} {p:?}");
                    assert_eq!(reply.text, refusal, "[{mode}] {tool} {p:?}");
                }
            }
        }
        // A NUL in a glob is just a character that matches nothing.
        for args in [
            json!({"path": ".", "pattern": "hello.txt\0"}),
            json!({"path": ".", "pattern": "**", "excludePatterns": ["\0"]}),
        ] {
            let r = server.call("search_files", args.clone());
            forbidden.check("search_files", &args, &r);
        }
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "hello.txt"}))
                .text,
            HELLO,
            "[{mode}] still serving"
        );
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}

/// `get_file_info` (and every other tool) of a path that climbs to the
/// root's parent is refused: no metadata of the parent leaks.
#[test]
fn dotdot_metadata_get_file_info() {
    let (env, mut forbidden) = setup();
    // The root's parent gets distinctive mode bits and times.
    std::fs::set_permissions(env.base(), Permissions::from_mode(0o711)).expect("chmod base");
    set_mtime(env.base());
    forbidden.0.push("permissions: 711".into());
    let root = env.root_str();
    let denied = vec![
        format!("{root}/.."),
        format!("{root}/../"),
        format!("{root}/sub/../.."),
        format!("{root}/../root/.."),
        format!("{root}/./.."),
        "..".to_owned(),
        "./..".to_owned(),
        "sub/../..".to_owned(),
        "sub/file.txt/../../..".to_owned(),
    ];
    escape_class(&env, &forbidden, &[], &Options::new(), &denied, &[]);
    // Climbing that stays inside is fine and describes the root.
    each_mode(&env, &[], &Options::new(), |server, mode| {
        for p in ["sub/..", ".", "", "sub/../sub/.."] {
            let r = server.call("get_file_info", json!({ "path": p }));
            forbidden.check("get_file_info", &json!({ "path": p }), &r);
            r.assert_ok();
            assert!(
                r.text.contains("isDirectory: true") && r.text.ends_with("permissions: 755"),
                "[{mode}] {p:?}: {}",
                r.text
            );
        }
        let r = server.call("get_file_info", json!({"path": format!("{root}/sub/..")}));
        r.assert_ok();
    });
}

#[test]
fn cross_root_symlink() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    let root2 = env.base().join("root2");
    std::fs::create_dir(&root2).expect("root2");
    std::fs::write(root2.join("secret2.txt"), ROOT2_CANARY).expect("secret2");
    std::fs::write(root2.join("zz-root2-only-name.txt"), ROOT2_CANARY).expect("name");
    std::os::unix::fs::symlink("../root/hello.txt", root2.join("to1")).expect("to1");
    env.symlink("../root2/secret2.txt", "to2");
    env.symlink("../root2", "to2dir");
    env.symlink(format!("{base}/root2/secret2.txt"), "to2abs");
    env.symlink("../../root2", "sub/to2deep");
    let extra: Vec<OsString> = vec![root2.clone().into_os_string()];
    let denied: Vec<String> = [
        "to2",
        "to2dir",
        "to2dir/secret2.txt",
        "to2abs",
        "sub/to2deep",
        "sub/to2deep/secret2.txt",
        "../root2/secret2.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("{base}/root2/to1")])
    .collect();
    escape_class(
        &env,
        &forbidden,
        &extra,
        &Options::new(),
        &denied,
        &["to2", "to2dir", "to2abs", "sub/to2deep"],
    );
    // Positive control: the second root itself is readable by its own path.
    each_mode(&env, &extra, &Options::new(), |server, mode| {
        let r = server.call(
            "read_text_file",
            json!({"path": format!("{base}/root2/secret2.txt")}),
        );
        assert_eq!(r.text, ROOT2_CANARY, "[{mode}]");
    });
}

#[test]
fn symlink_loop() {
    let (env, forbidden) = setup();
    env.symlink("loop", "loop");
    env.symlink("b", "a_loop");
    env.symlink("a_loop", "b");
    env.symlink(".", "selfdir");
    env.symlink("..", "up");
    env.symlink("../outside/loop_out", "loop_out");
    std::os::unix::fs::symlink("../root/loop_out", env.outside().join("loop_out"))
        .expect("outside loop link");
    // A chain longer than the kernel's 40-link limit, ending at hello.txt.
    env.symlink("hello.txt", "chain50");
    for i in 0..50 {
        env.symlink(format!("chain{}", i + 1), format!("chain{i}"));
    }
    let before = env.snapshot_outside();
    let opts = Options::new().timeout(Duration::from_secs(10));
    each_mode(&env, &[], &opts, |server, mode| {
        let started = Instant::now();
        for p in ["loop", "a_loop", "b", "loop/x", "chain0"] {
            for (tool, reply) in probe(server, p, &forbidden) {
                if tool == "read_multiple_files" {
                    assert!(
                        reply.text.contains("Error - ELOOP"),
                        "[{mode}] {p}: {}",
                        reply.text
                    );
                    continue;
                }
                assert!(reply.is_error, "[{mode}] {tool} {p}: {}", reply.raw);
                let op = match tool {
                    "read_text_file" | "read_media_file" => "open",
                    "get_file_info" => "stat",
                    _ => "scandir",
                };
                assert_eq!(
                    reply.text,
                    format!("ELOOP: too many symbolic links encountered, {op} '{p}'"),
                    "[{mode}] {tool} {p}"
                );
            }
        }
        // The loop that leaves the root is an escape.
        assert_denied(server, "loop_out", &forbidden, mode);
        assert_denied(server, "up", &forbidden, mode);
        assert_denied(server, "selfdir/selfdir/up/outside", &forbidden, mode);
        // A link to `.` is an ordinary in-root directory link.
        assert_eq!(
            server
                .call(
                    "read_text_file",
                    json!({"path": "selfdir/selfdir/selfdir/hello.txt"})
                )
                .text,
            HELLO
        );
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "chain45"}))
                .text,
            HELLO
        );
        // Walks terminate and never go through a link.
        let tree = server.call("directory_tree", json!({"path": "."}));
        tree.assert_ok();
        assert!(
            !tree
                .text
                .contains("\"name\": \"selfdir\",\n    \"type\": \"symlink\",\n    \"children\"")
        );
        let found = server.call(
            "search_files",
            json!({"path": ".", "pattern": "**/hello.txt"}),
        );
        assert_eq!(found.text, "./hello.txt", "[{mode}]");
        let found = server.call(
            "search_files",
            json!({"path": ".", "pattern": "**/selfdir"}),
        );
        assert_eq!(found.text, "./selfdir", "[{mode}]");
        assert_root_views(server, &env, &["up", "loop_out"], &forbidden);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "[{mode}] loops took {:?}",
            started.elapsed()
        );
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}
