//! Issue 15, item 4: `edit_file` refusals that teach. A missing `oldText`
//! that would match with the file's line endings, or with whitespace at the
//! ends of lines ignored, says so (and names the line); nothing is
//! normalized and nothing is written.

use serde_json::json;

use crate::util::{Server, TestEnv};

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
