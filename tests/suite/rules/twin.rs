//! Hidden reads exactly like missing, in every form: the same calls on a
//! tree with hidden objects and on its twin without them (same flags) give
//! byte-identical replies, the roots' own paths aside.

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

use super::cases::CANARY;

/// What both trees hold.
fn common(env: &TestEnv) {
    env.write("a/x.txt", "x\n");
    env.write("docs/readme.md", "read me\n");
    env.write("mv/ok.txt", "ok\n");
    env.symlink(".env", "link_to_env");
    env.symlink("nothing", "link_to_missing");
    env.symlink("secrets", "dlink");
    env.symlink("secrets/key.pem", "deep_link");
}

/// What only the tree with hidden objects holds.
fn hidden(env: &TestEnv) {
    env.write(".env", CANARY);
    env.write("secrets/key.pem", CANARY);
    env.write("mv/private/p.txt", CANARY);
}

fn server(env: &TestEnv) -> Server {
    Server::start(&args![
        env.root(),
        "--hide",
        ".env",
        "--hide",
        "secrets",
        "--hide",
        "/mv/private"
    ])
}

fn calls() -> Vec<(&'static str, Value)> {
    let mut v = Vec::new();
    for p in [
        ".env",
        ".env/",
        "nothing/",
        "link_to_env",
        "link_to_env/",
        "link_to_missing",
        "dlink/key.pem",
        "deep_link",
        "secrets/",
        "secrets/key.pem/",
        "secrets/key.pem/.",
    ] {
        v.push(("read_text_file", json!({"path": p})));
        v.push(("get_file_info", json!({"path": p})));
        v.push(("list_directory", json!({"path": p})));
    }
    for p in [
        "link_to_env",
        "deep_link",
        "link_to_missing",
        ".env/",
        "secrets/x",
    ] {
        v.push(("write_file", json!({"path": p, "content": "x"})));
        v.push((
            "edit_file",
            json!({"path": p, "edits": [{"oldText": "a", "newText": "b"}]}),
        ));
        v.push(("append_file", json!({"path": p, "content": "x"})));
        v.push(("create_directory", json!({"path": format!("{p}/d")})));
    }
    v.push(("search_files", json!({"path": ".", "pattern": "**/*"})));
    v.push(("search_files", json!({"path": ".", "pattern": "*link*"})));
    v.push(("list_directory", json!({"path": "."})));
    v.push(("directory_tree", json!({"path": "."})));
    v.push(("move_file", json!({"source": "mv", "destination": "mv2"})));
    v.push((
        "move_file",
        json!({"source": "mv/ok.txt", "destination": "ok2.txt"}),
    ));
    v
}

#[test]
fn hidden_reads_exactly_like_missing_on_a_twin_tree() {
    let (with, twin) = (TestEnv::new(), TestEnv::new());
    common(&with);
    common(&twin);
    hidden(&with);
    let (a, b) = (server(&with), server(&twin));
    let mut diffs = Vec::new();
    for (tool, args) in calls() {
        let ra = a.call(tool, args.clone());
        let rb = b.call(tool, args.clone());
        assert!(!ra.text.contains(CANARY), "{tool} {args}: {}", ra.text);
        let ta = ra.text.replace(&with.root_str(), "<ROOT>");
        let tb = rb.text.replace(&twin.root_str(), "<ROOT>");
        if (ta.as_str(), ra.is_error) != (tb.as_str(), rb.is_error) {
            diffs.push(format!("{tool} {args}:\n  hidden: {ta}\n  twin:   {tb}"));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// A write through a link to a hidden name answers as one through a
/// dangling link, and a trailing slash on a hidden name as on a missing
/// one.
#[test]
fn a_link_to_a_hidden_name_is_a_dangling_link() {
    let env = TestEnv::new();
    common(&env);
    hidden(&env);
    let s = server(&env);
    for tool in ["write_file", "append_file"] {
        let hidden = s.call(tool, json!({"path": "link_to_env", "content": "x"}));
        let dangling = s.call(tool, json!({"path": "link_to_missing", "content": "x"}));
        assert!(hidden.is_error && dangling.is_error);
        assert_eq!(
            hidden.text.replace("link_to_env", "L"),
            dangling.text.replace("link_to_missing", "L"),
            "{tool}"
        );
    }
    for tool in ["read_text_file", "get_file_info", "list_directory"] {
        let hidden = s.call(tool, json!({"path": ".env/"}));
        let missing = s.call(tool, json!({"path": "nothing/"}));
        assert_eq!(
            hidden.text.replace(".env", "N"),
            missing.text.replace("nothing", "N"),
            "{tool}"
        );
    }
    assert_eq!(env.read_string(".env"), CANARY);
}
