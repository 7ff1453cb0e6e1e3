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
//!
//! Here: the shared fixture and checks, and the classes of plain paths
//! (`..`, absolute, prefix siblings); links and special files are in
//! [`links`] and [`special`].

mod links;
mod special;

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
                    server.escape_denial(p),
                    server.escape_denial(&child)
                ),
                "[{mode}] {tool} {p:?}"
            );
        } else {
            assert!(
                reply.is_error,
                "[{mode}] {tool} {p:?} succeeded: {}",
                reply.raw
            );
            assert_eq!(reply.text, server.escape_denial(p), "[{mode}] {tool} {p:?}");
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
                r.text.contains("isDirectory: true") && r.text.contains("\npermissions: 755\n"),
                "[{mode}] {p:?}: {}",
                r.text
            );
        }
        let r = server.call("get_file_info", json!({"path": format!("{root}/sub/..")}));
        r.assert_ok();
    });
}
