//! A path through a symbolic link that is absolute, or whose target leads
//! outside its root, is refused with the reference's prefix and a reason
//! that names only the path as given: never the link's target, never what
//! lies outside. Through both backends (a read in a root whose rules hide
//! nothing is resolved by the kernel; with a hiding rule, by the walk) and
//! for writes (always the walk).

use serde_json::json;

use crate::util::{CANARY_CONTENT, Reply, Server, TestEnv};

/// The text for a path through such a link.
fn through_link(given: &str) -> String {
    format!(
        "Access denied - path outside allowed directories: {given}. It goes through a symbolic link that is absolute or leads outside its allowed directory; tuls follows only relative links that stay inside. Use a path inside an allowed directory instead"
    )
}

/// `B/root` with an absolute link to a file inside, absolute and relative
/// links out, and an absolute link to a directory inside.
fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("f.txt", "inside\n");
    env.mkdir("sub");
    env.symlink(env.path("f.txt"), "abs_in");
    env.symlink(env.canary(), "abs_out");
    env.symlink("../outside/canary.txt", "rel_out");
    env.symlink(env.path("sub"), "abs_dir");
    env.symlink("../outside", "rel_out_dir");
    env
}

/// Nothing but the path as given: no target, no root beyond the path, no
/// canary.
#[track_caller]
fn assert_names_only(r: &Reply, given: &str, env: &TestEnv) {
    let raw = r.raw.to_string();
    assert!(!raw.contains(CANARY_CONTENT), "{raw}");
    let rest = r.text.replacen(given, "", 1);
    assert!(!rest.contains(&env.root_str()), "names a target: {raw}");
    assert!(!rest.contains("canary"), "names a target: {raw}");
    assert!(!rest.contains("../"), "names a target: {raw}");
}

const LINKED: &[&str] = &[
    "abs_in",
    "abs_out",
    "rel_out",
    "abs_dir/new.txt",
    "rel_out_dir/canary.txt",
];

fn check(server: &Server, env: &TestEnv) {
    for p in LINKED {
        for given in [(*p).to_owned(), env.path_str(p)] {
            for (tool, args) in [
                ("read_text_file", json!({"path": given})),
                ("get_file_info", json!({"path": given})),
                ("write_file", json!({"path": given, "content": "pwned\n"})),
            ] {
                let r = server.call(tool, args);
                r.assert_error();
                assert_eq!(r.text, through_link(&given), "{tool} {given}");
                assert_names_only(&r, &given, env);
            }
        }
    }
    // `..` above the root as written keeps the reference's text.
    let r = server.call("read_text_file", json!({"path": "../outside/canary.txt"}));
    assert_eq!(
        r.text,
        "Access denied - path outside allowed directories: ../outside/canary.txt"
    );
    assert_eq!(env.read_string("f.txt"), "inside\n");
    assert!(!env.exists("sub/new.txt"));
    env.assert_canary_intact();
}

#[test]
fn a_path_through_an_absolute_or_outward_link_says_so_kernel_backend() {
    let env = env();
    let server = Server::start(&args![env.root()]);
    check(&server, &env);
}

#[test]
fn a_path_through_an_absolute_or_outward_link_says_so_walk_backend() {
    let env = env();
    let server = Server::start(&args![env.root(), "--hide", "nothing-here"]);
    check(&server, &env);
}
