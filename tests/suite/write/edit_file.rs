//! `edit_file` over stdio (issue 3 §3): the reference's fenced diff naming
//! the path as given, exact fail-closed matching (missing, ambiguous and
//! empty `oldText`, `\n` never matching `\r\n`), "nothing written" checked
//! on the bytes on disk, UTF-8 refusal, the edit limit, permission bits,
//! read-only files and symlinks; and refusals that teach (a missing
//! `oldText` that would match with other line endings or trailing
//! whitespace says so).

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

use serde_json::{Value, json};

use crate::util::{Server, TestEnv, assert_text};

use super::write_file::temp_files;

const EQ: &str = "===================================================================";

/// The reference's fenced unified diff around `hunks`.
fn fenced(path: &str, hunks: &str) -> String {
    format!(
        "```diff\nIndex: {path}\n{EQ}\n--- {path}\toriginal\n+++ {path}\tmodified\n{hunks}```\n\n"
    )
}

fn edit(path: &str, edits: Value) -> Value {
    json!({"path": path, "edits": edits})
}

/// Inode and content: proof that nothing was written.
fn state(env: &TestEnv, rel: &str) -> (u64, Vec<u8>) {
    let md = std::fs::symlink_metadata(env.path(rel)).expect("stat");
    (md.ino(), env.read(rel))
}

#[test]
fn edit_file_applies_and_returns_the_reference_diff() {
    let env = TestEnv::new();
    env.write("f.txt", "alpha\nbeta\ngamma\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("f.txt");
    let reply = server.call(
        "edit_file",
        edit(&p, json!([{"oldText": "beta", "newText": "BETA"}])),
    );
    assert_text(
        &reply,
        &fenced(&p, "@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"),
    );
    assert_eq!(env.read("f.txt"), b"alpha\nBETA\ngamma\n");

    // A relative path is named as given, never as a host path.
    let reply = server.call(
        "edit_file",
        edit("f.txt", json!([{"oldText": "gamma\n", "newText": "gamma"}])),
    );
    assert_text(
        &reply,
        &fenced(
            "f.txt",
            "@@ -1,3 +1,3 @@\n alpha\n BETA\n-gamma\n+gamma\n\\ No newline at end of file\n",
        ),
    );
    assert_eq!(env.read("f.txt"), b"alpha\nBETA\ngamma");
    assert!(temp_files(&env.root()).is_empty());
}

#[test]
fn edit_file_applies_edits_in_order_against_the_running_text() {
    let env = TestEnv::new();
    env.write("seq.txt", "alpha\nbeta\ngamma\n");
    let server = Server::start(&args![env.root()]);
    let edits = json!([
        {"oldText": "beta", "newText": "BETA"},
        {"oldText": "BETA\ngamma", "newText": "B+G"},
        {"oldText": "$", "newText": "never"},
    ]);
    // The third edit fails: nothing at all is written.
    let before = state(&env, "seq.txt");
    let reply = server.call("edit_file", edit(&env.path_str("seq.txt"), edits));
    reply.assert_error_contains("edit 2: oldText not found (0 matches)");
    assert_eq!(state(&env, "seq.txt"), before);

    let edits = json!([
        {"oldText": "beta", "newText": "BETA"},
        {"oldText": "BETA\ngamma", "newText": "$& $1 $$"},
    ]);
    server
        .call("edit_file", edit(&env.path_str("seq.txt"), edits))
        .assert_ok();
    assert_eq!(env.read("seq.txt"), b"alpha\n$& $1 $$\n");
}

#[test]
fn edit_file_missing_ambiguous_or_empty_old_text_writes_nothing() {
    let env = TestEnv::new();
    env.write("dup.txt", "x = 1\ny = 2\nx = 1\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("dup.txt");
    let before = state(&env, "dup.txt");

    let reply = server.call(
        "edit_file",
        edit(&p, json!([{"oldText": "zzz", "newText": "y"}])),
    );
    reply.assert_error();
    assert_eq!(
        reply.text,
        format!(
            "Could not apply the edits to '{p}': edit 0: oldText not found (0 matches). Matching is exact: whitespace, indentation and line endings (\\n vs \\r\\n) must match the file as it stands after the earlier edits; nothing was written"
        )
    );
    assert_eq!(state(&env, "dup.txt"), before);

    // Ambiguous after an earlier edit that did apply (in memory).
    let edits = json!([
        {"oldText": "y = 2", "newText": "y = 3"},
        {"oldText": "x = 1", "newText": "x = 9"},
    ]);
    let reply = server.call("edit_file", edit(&p, edits));
    reply.assert_error_contains("edit 1: oldText is ambiguous (2 matches, at lines 1, 3)");
    assert_eq!(state(&env, "dup.txt"), before);

    let reply = server.call(
        "edit_file",
        edit(&p, json!([{"oldText": "", "newText": "X"}])),
    );
    reply.assert_error_contains("edit 0: oldText is empty");
    assert_eq!(state(&env, "dup.txt"), before);

    // Whitespace is not flexible.
    let reply = server.call(
        "edit_file",
        edit(&p, json!([{"oldText": "x  = 1\ny = 2", "newText": "q"}])),
    );
    reply.assert_error_contains("oldText not found");
    assert_eq!(state(&env, "dup.txt"), before);
    assert!(temp_files(&env.root()).is_empty());
}

#[test]
fn edit_file_never_normalizes_line_endings() {
    let env = TestEnv::new();
    env.write("crlf.txt", "a\r\nb\r\nc\r\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("crlf.txt");
    let before = state(&env, "crlf.txt");
    let reply = server.call(
        "edit_file",
        edit(&p, json!([{"oldText": "a\nb", "newText": "A\nB"}])),
    );
    reply.assert_error_contains("oldText not found (0 matches)");
    assert_eq!(state(&env, "crlf.txt"), before);

    server
        .call(
            "edit_file",
            edit(&p, json!([{"oldText": "b\r\n", "newText": "B\r\n"}])),
        )
        .assert_ok();
    assert_eq!(
        env.read("crlf.txt"),
        b"a\r\nB\r\nc\r\n",
        "untouched CRLFs stay"
    );

    // A lone \r and a mixed file keep every byte outside the edit.
    env.write("mixed.txt", "one\r\ntwo\nthree\rfour\n");
    server
        .call(
            "edit_file",
            edit(
                &env.path_str("mixed.txt"),
                json!([{"oldText": "two", "newText": "2"}]),
            ),
        )
        .assert_ok();
    assert_eq!(env.read("mixed.txt"), b"one\r\n2\nthree\rfour\n");
}

#[test]
fn edit_file_dry_run_and_empty_edits_write_nothing() {
    let env = TestEnv::new();
    env.write("f.txt", "alpha\nbeta\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("f.txt");
    let before = state(&env, "f.txt");
    let mut args = edit(&p, json!([{"oldText": "beta", "newText": "BETA"}]));
    args["dryRun"] = json!(true);
    assert_text(
        &server.call("edit_file", args),
        &fenced(&p, "@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n"),
    );
    assert_eq!(state(&env, "f.txt"), before);

    assert_text(
        &server.call("edit_file", edit(&p, json!([]))),
        &fenced(&p, ""),
    );
    assert_eq!(
        state(&env, "f.txt"),
        before,
        "a no-op edit does not rewrite"
    );
}

#[test]
fn edit_file_refuses_invalid_utf8_without_touching_a_byte() {
    let env = TestEnv::new();
    let bytes = b"ok line\nbad \xff\xfe byte\n";
    env.write("bad.txt", bytes);
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("bad.txt");
    for dry in [false, true] {
        let mut args = edit(&p, json!([{"oldText": "ok", "newText": "OK"}]));
        args["dryRun"] = json!(dry);
        let reply = server.call("edit_file", args);
        assert_eq!(
            reply.assert_error().text,
            format!(
                "Refusing to edit '{p}': it is not valid UTF-8 (first invalid byte at offset 12); edit_file never rewrites bytes it cannot represent"
            )
        );
        assert_eq!(env.read("bad.txt"), bytes);
    }
}

#[test]
fn edit_file_limits_edits_and_file_size() {
    let env = TestEnv::new();
    env.write("f.txt", "a\n");
    env.write("big.txt", "0123456789\n".repeat(10));
    let server = Server::start(&args![env.root(), "--max-read-bytes", "100"]);
    let p = env.path_str("f.txt");
    let many: Vec<Value> = (0..1025)
        .map(|_| json!({"oldText": "a", "newText": "a"}))
        .collect();
    let reply = server.call("edit_file", edit(&p, json!(many)));
    assert_eq!(
        reply.assert_error().text,
        "Too many edits: 1025 in one call, over the limit of 1024"
    );
    // At the limit: the count is accepted (and here the edits are no-ops).
    let at_limit: Vec<Value> = (0..1024)
        .map(|_| json!({"oldText": "a", "newText": "a"}))
        .collect();
    server
        .call("edit_file", edit(&p, json!(at_limit)))
        .assert_ok();

    let big = env.path_str("big.txt");
    let reply = server.call(
        "edit_file",
        edit(&big, json!([{"oldText": "0", "newText": "x"}])),
    );
    reply.assert_error_contains("File too large");
    assert_eq!(env.read("big.txt"), "0123456789\n".repeat(10).as_bytes());
}

#[test]
fn edit_file_keeps_mode_refuses_read_only_and_follows_in_root_links() {
    let env = TestEnv::new();
    env.write("m.txt", "mode\n");
    env.chmod("m.txt", 0o640);
    env.write("ro.txt", "read only\n");
    env.chmod("ro.txt", 0o444);
    env.write("sub/t.txt", "through\n");
    env.symlink("sub/t.txt", "link");
    let server = Server::start(&args![env.root()]);

    server
        .call(
            "edit_file",
            edit(
                &env.path_str("m.txt"),
                json!([{"oldText": "mode", "newText": "kept"}]),
            ),
        )
        .assert_ok();
    let md = std::fs::metadata(env.path("m.txt")).expect("stat");
    assert_eq!(md.permissions().mode() & 0o7777, 0o640);

    let ro = env.path_str("ro.txt");
    let before = state(&env, "ro.txt");
    let reply = server.call(
        "edit_file",
        edit(&ro, json!([{"oldText": "read", "newText": "x"}])),
    );
    reply.assert_error_contains("is read-only (mode 0444)");
    assert_eq!(state(&env, "ro.txt"), before);
    let mut args = edit(&ro, json!([{"oldText": "read", "newText": "x"}]));
    args["dryRun"] = json!(true);
    server.call("edit_file", args).assert_ok(); // a preview writes nothing
    assert_eq!(state(&env, "ro.txt"), before);

    let link = env.path_str("link");
    let reply = server.call(
        "edit_file",
        edit(&link, json!([{"oldText": "through", "newText": "via"}])),
    );
    assert_text(&reply, &fenced(&link, "@@ -1,1 +1,1 @@\n-through\n+via\n"));
    assert_eq!(env.read("sub/t.txt"), b"via\n");
    assert!(
        std::fs::symlink_metadata(env.path("link"))
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert!(temp_files(&env.root()).is_empty());
}

#[test]
fn edit_file_error_paths() {
    let env = TestEnv::new();
    env.mkdir("dir");
    env.write("f.txt", "first\n");
    let server = Server::start(&args![env.root()]);
    let one = json!([{"oldText": "a", "newText": "b"}]);

    let p = env.path_str("missing.txt");
    assert_eq!(
        server
            .call("edit_file", edit(&p, one.clone()))
            .assert_error()
            .text,
        format!("ENOENT: no such file or directory, open '{p}'")
    );
    assert!(!env.exists("missing.txt"));
    let p = env.path_str("dir");
    assert_eq!(
        server
            .call("edit_file", edit(&p, one.clone()))
            .assert_error()
            .text,
        format!("EISDIR: illegal operation on a directory, open '{p}'")
    );
    let p = env.outside().join("canary.txt");
    let p = p.to_str().expect("utf-8");
    assert_eq!(
        server
            .call(
                "edit_file",
                edit(p, json!([{"oldText": "CANARY", "newText": "x"}]))
            )
            .assert_error()
            .text,
        format!("Access denied - path outside allowed directories: {p}")
    );

    // Strict arguments: no effect on an unknown field, inside an edit too.
    let f = env.path_str("f.txt");
    let before = state(&env, "f.txt");
    for args in [
        json!({"path": f, "edits": [{"oldText": "first", "newText": "1st"}], "backup": true}),
        json!({"path": f, "edits": [{"oldText": "first", "newText": "1st", "regex": true}]}),
        json!({"path": f, "edits": [{"oldText": "first"}]}),
        json!({"path": f, "edits": "first->1st"}),
        json!({"path": f, "edits": [{"oldText": "first", "newText": "1st"}], "dryRun": "yes"}),
    ] {
        server
            .call("edit_file", args)
            .assert_error_contains("Invalid arguments for tool edit_file");
        assert_eq!(state(&env, "f.txt"), before);
    }
    env.assert_canary_intact();
}

#[test]
fn edit_file_fences_a_diff_that_contains_backticks() {
    let env = TestEnv::new();
    env.write("b.md", "some code here\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("b.md");
    let reply = server.call(
        "edit_file",
        edit(
            &p,
            json!([{"oldText": "code", "newText": "more ```code```"}]),
        ),
    );
    let text = reply.assert_ok().text.clone();
    assert!(text.starts_with("````diff\n"), "{text}");
    assert!(text.ends_with("\n````\n\n"), "{text}");
    assert_eq!(env.read("b.md"), b"some more ```code``` here\n");
}

// ---------------------------------------------------------------------------
// Refusals that teach: a missing `oldText` that would match with the file's
// line endings, or with whitespace at the ends of lines ignored, says so
// (and names the line); nothing is normalized and nothing is written.
// ---------------------------------------------------------------------------

#[test]
fn a_crlf_file_edited_with_lf_old_text_says_to_send_crlf_and_writes_nothing() {
    let env = TestEnv::new();
    let crlf = b"[core]\r\n\tbare = false\r\n\tfilemode = true\r\n";
    env.write("config", crlf);
    let server = Server::start(&args![env.root()]);
    let r = server.call(
        "edit_file",
        json!({
            "path": env.path_str("config"),
            "edits": [{"oldText": "\tbare = false\n\tfilemode = true", "newText": "\tbare = true\n\tfilemode = true"}],
        }),
    );
    r.assert_error_contains("edit 0: oldText not found (0 matches)");
    r.assert_error_contains("The file uses \\r\\n (CRLF) line endings and oldText uses \\n");
    r.assert_error_contains("Send oldText (and newText) with the file's line endings, \\r\\n");
    r.assert_error_contains("nothing was written");
    assert_eq!(env.read("config"), crlf);

    // Sent with the file's line endings, it applies, and every \r stays.
    server
        .call(
            "edit_file",
            json!({
                "path": env.path_str("config"),
                "edits": [{"oldText": "\tbare = false\r\n", "newText": "\tbare = true\r\n"}],
            }),
        )
        .assert_ok();
    assert_eq!(
        env.read("config"),
        b"[core]\r\n\tbare = true\r\n\tfilemode = true\r\n"
    );
}

#[test]
fn whitespace_near_misses_name_the_nearest_line_and_write_nothing() {
    let env = TestEnv::new();
    let text = "fn main() {\n    let x = 1;   \n    println!(\"{x}\");\n}\n";
    env.write("main.rs", text);
    let server = Server::start(&args![env.root()]);
    let edit = |old: &str| {
        server.call(
            "edit_file",
            json!({"path": env.path_str("main.rs"), "edits": [{"oldText": old, "newText": "X"}]}),
        )
    };
    edit("    let x = 1;\n    println!(\"{x}\");").assert_error_contains(
        "The nearest match is at line 2, which differs only in trailing whitespace",
    );
    edit("\tprintln!(\"{x}\");\n}").assert_error_contains(
        "The nearest match is at line 3, which differs only in indentation or trailing whitespace",
    );
    // Nothing close: the plain message, no hint.
    let r = edit("let y = 2;");
    r.assert_error_contains(
        "must match the file as it stands after the earlier edits; nothing was written",
    );
    assert!(!r.text.contains("nearest"), "{:?}", r.raw);
    assert_eq!(env.read_string("main.rs"), text);
}
