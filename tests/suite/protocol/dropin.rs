//! The reference's own published expectations, run against tuls as calls
//! through the binary: upstream `src/filesystem/__tests__/`
//! `structured-content.test.ts` and `directory-tree.test.ts` (upstream
//! commit 76d64c8), one case per `it()`, with the fixture each `beforeEach`
//! builds. Expectations that upstream checks on an in-test copy of its
//! exclude logic (`directory-tree.test.ts`) are checked here on the
//! `directory_tree` tool itself.

use serde_json::{Value, json};

use crate::util::{Server, TestEnv, b64};

fn structured_content(env: &TestEnv) -> Server {
    env.write("test.txt", "test content");
    env.write("subdir/nested.txt", "nested content");
    Server::start(&args![env.root()])
}

/// `structuredContent.content` is a string, not an array, and mirrors the text.
#[track_caller]
fn string_content(server: &Server, tool: &str, args: Value) -> String {
    let r = server.call(tool, args);
    r.assert_ok();
    let sc = r.structured.clone().expect("structuredContent");
    let text = sc["content"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool}: {sc}"));
    assert_eq!(text, r.text, "{tool}: mirrors the text");
    text.to_owned()
}

#[test]
fn structured_content_is_a_string_for_text_tools() {
    let env = TestEnv::new();
    let server = structured_content(&env);
    let root = env.root_str();
    let tree = string_content(&server, "directory_tree", json!({"path": root}));
    let parsed: Value = serde_json::from_str(&tree).expect("the tree is JSON");
    assert!(parsed.is_array(), "{tree}");
    let sizes = string_content(&server, "list_directory_with_sizes", json!({"path": root}));
    assert!(sizes.contains("[FILE]"), "{sizes}");
    let moved = string_content(
        &server,
        "move_file",
        json!({"source": env.path_str("test.txt"), "destination": env.path_str("moved.txt")}),
    );
    assert!(moved.contains("Successfully moved"), "{moved}");
    string_content(&server, "list_directory", json!({"path": root}));
    string_content(
        &server,
        "search_files",
        json!({"path": root, "pattern": "*.txt"}),
    );
}

#[test]
fn read_media_file_round_trips_images_audio_and_other_files() {
    let env = TestEnv::new();
    let server = structured_content(&env);
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let mp3: &[u8] = b"ID3\x03\0\0\0\0\0\0";
    let bin: &[u8] = &[0x00, 0x01, 0x02, 0x03, 0xff, 0xfe];
    env.write("pixel.png", png);
    env.write("sound.mp3", mp3);
    env.write("data.bin", bin);
    env.write("my café.bin", [0x10, 0x20, 0x30]);
    let media = |name: &str| {
        let r = server.call("read_media_file", json!({"path": env.path_str(name)}));
        r.assert_ok();
        let content = r.content();
        assert_eq!(content.len(), 1, "{name}: {}", r.raw);
        // The content, mirrored (beside it, the file's `version`).
        assert_eq!(
            r.structured.as_ref().map(|s| s["content"].clone()),
            Some(json!(content)),
            "{name}: structuredContent mirrors content"
        );
        content[0].clone()
    };
    let image = media("pixel.png");
    assert_eq!(image["type"], "image");
    assert_eq!(image["mimeType"], "image/png");
    assert_eq!(image["data"], b64(png));
    let audio = media("sound.mp3");
    assert_eq!(audio["type"], "audio");
    assert_eq!(audio["mimeType"], "audio/mpeg");
    assert_eq!(audio["data"], b64(mp3));
    let other = media("data.bin");
    assert_eq!(other["type"], "resource");
    let res = &other["resource"];
    assert!(res.get("text").is_none(), "{other}");
    assert_eq!(res["mimeType"], "application/octet-stream");
    assert_eq!(res["blob"], b64(bin));
    let real = std::fs::canonicalize(env.path("data.bin")).expect("realpath");
    assert_eq!(res["uri"], format!("file://{}", real.display()), "{other}");
    // Spaces and non-ASCII are percent-encoded in the uri.
    let fancy = media("my café.bin");
    let uri = fancy["resource"]["uri"].as_str().expect("uri");
    assert!(uri.starts_with("file://"), "{uri}");
    assert!(uri.ends_with("/my%20caf%C3%A9.bin"), "{uri}");
}

/// One `it()`: its name, `excludePatterns`, names present, names absent.
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// `directory-tree.test.ts`: the fixture, each case's `excludePatterns`,
/// the top-level names that must be there and those that must not.
#[test]
fn directory_tree_exclude_patterns_as_upstream_tests_them() {
    let env = TestEnv::new();
    for d in ["src", "node_modules", ".git", "nested/node_modules"] {
        env.mkdir(d);
    }
    env.write(".env", "SECRET=value");
    env.write(".env.local", "LOCAL_SECRET=value");
    env.write("src/index.js", "console.log(\"hello\");");
    env.write("package.json", "{}");
    env.write("node_modules/module.js", "module.exports = {};");
    env.write("nested/node_modules/deep.js", "module.exports = {};");
    let server = Server::start(&args![env.root()]);
    let tree = |excludes: &[&str]| -> Vec<Value> {
        let r = server.call(
            "directory_tree",
            json!({"path": env.root_str(), "excludePatterns": excludes}),
        );
        serde_json::from_str::<Value>(&r.assert_ok().text)
            .expect("tree JSON")
            .as_array()
            .cloned()
            .expect("array")
    };
    let names = |entries: &[Value]| -> Vec<String> {
        entries
            .iter()
            .filter_map(|e| e["name"].as_str().map(str::to_owned))
            .collect()
    };
    let cases: &[Case] = &[
        (
            "simple file pattern",
            &[".env"],
            &[".env.local", "src", "package.json"],
            &[".env"],
        ),
        (
            "simple directory pattern",
            &["node_modules"],
            &["src", ".git"],
            &["node_modules"],
        ),
        ("glob", &["*.env"], &[".env.local", "src"], &[".env"]),
        ("dot files", &[".git"], &[".env"], &[".git"]),
        (
            "several patterns",
            &["node_modules", ".env", ".git"],
            &["src", "package.json"],
            &["node_modules", ".env", ".git"],
        ),
        (
            "no patterns",
            &[],
            &["node_modules", ".env", ".git", "src"],
            &[],
        ),
    ];
    for (case, excludes, present, absent) in cases {
        let top = names(&tree(excludes));
        for n in *present {
            assert!(
                top.iter().any(|t| t == n),
                "{case}: {n} missing from {top:?}"
            );
        }
        for n in *absent {
            assert!(!top.iter().any(|t| t == n), "{case}: {n} in {top:?}");
        }
    }
    // A simple pattern excludes the same name in nested directories too.
    let top = tree(&["node_modules"]);
    let nested = top
        .iter()
        .find(|e| e["name"] == "nested")
        .expect("nested is there");
    let children = names(nested["children"].as_array().expect("children"));
    assert!(
        !children.iter().any(|c| c == "node_modules"),
        "{children:?}"
    );
}
