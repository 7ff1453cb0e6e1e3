//! Issue 15, item 5, and issue 11, item 9: paths in replies are spelled as
//! the client spelled them. `search_files` prints its matches under the
//! client's `path` exactly as given (as `edit_file` names its file): a
//! symlinked root keeps the client's spelling, `sub/../sub` stays as
//! written, and a relative `path` gives relative matches, so no root path
//! appears. Every printed match, sent back, reads the file.
//! `read_media_file` builds its `file://` URI from the client's absolute
//! path, or from the first root's path and the client's relative one.

use serde_json::json;

use crate::util::{Server, TestEnv, file_uri};

fn fixture() -> (TestEnv, String, String) {
    let env = TestEnv::new();
    env.write("sub/a.rs", "fn a() {}\n");
    env.write("sub/deep/b.rs", "fn b() {}\n");
    env.write("doc.pdf", "%PDF-1.4\n");
    let link = env.base().join("link");
    std::os::unix::fs::symlink(env.root(), &link).expect("symlink");
    let real = env.root().to_str().expect("UTF-8").to_owned();
    let link = link.to_str().expect("UTF-8").to_owned();
    (env, real, link)
}

#[test]
fn search_files_prints_matches_under_the_clients_own_spelling() {
    let (_env, real, link) = fixture();
    // The operator names the root through a symlink; clients may use either.
    let server = Server::start(&args![
        link,
        "--deny",
        "filesystem/list_allowed_directories"
    ]);
    for (path, prefix) in [
        (real.clone(), format!("{real}/")),
        (link.clone(), format!("{link}/")),
        (format!("{link}/"), format!("{link}/")),
        (format!("{real}/sub/../sub"), format!("{real}/sub/../sub/")),
        (format!("{link}//sub"), format!("{link}//sub/")),
        (".".to_owned(), "./".to_owned()),
        ("sub/".to_owned(), "sub/".to_owned()),
        ("sub/../sub".to_owned(), "sub/../sub/".to_owned()),
        ("".to_owned(), String::new()),
    ] {
        let r = server.call("search_files", json!({"path": path, "pattern": "**/*.rs"}));
        r.assert_ok();
        let lines: Vec<&str> = r.text.lines().collect();
        assert_eq!(lines.len(), 2, "{path:?}: {:?}", r.text);
        for line in &lines {
            assert!(
                line.starts_with(&prefix),
                "{path:?}: {line:?} not under {prefix:?}"
            );
            // Sent back, each match names the file.
            let read = server.call("read_text_file", json!({"path": line}));
            read.assert_ok();
            assert!(read.text.starts_with("fn "), "{line}: {:?}", read.raw);
        }
        // A relative path never brings a root's own path into the reply.
        if !path.starts_with('/') {
            assert!(
                !r.text.contains(&real) && !r.text.contains(&link),
                "{path:?}: {:?}",
                r.text
            );
        }
    }
}

#[test]
fn read_media_file_uris_use_the_clients_absolute_spelling() {
    let (_env, real, link) = fixture();
    let server = Server::start(&args![link]);
    let uri = |path: &str| {
        let r = server.call("read_media_file", json!({ "path": path }));
        r.assert_ok();
        r.content()[0]["resource"]["uri"]
            .as_str()
            .expect("uri")
            .to_owned()
    };
    assert_eq!(
        uri(&format!("{real}/doc.pdf")),
        file_uri(format!("{real}/doc.pdf"))
    );
    assert_eq!(
        uri(&format!("{link}/doc.pdf")),
        file_uri(format!("{link}/doc.pdf"))
    );
    assert_eq!(
        uri(&format!("{link}/sub/../doc.pdf")),
        file_uri(format!("{link}/sub/../doc.pdf"))
    );
    // Relative: after the first root's path, as the operator gave it.
    assert_eq!(uri("doc.pdf"), file_uri(format!("{link}/doc.pdf")));
    assert_eq!(uri("./doc.pdf"), file_uri(format!("{link}/./doc.pdf")));
}
