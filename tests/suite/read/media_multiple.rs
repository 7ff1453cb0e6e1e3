//! `read_media_file` (the MIME table, the resource URI) and
//! `read_multiple_files` (the joined format, per-file errors, `--max-paths`),
//! against the reference's formats, on the fixture of [`super::text`].

use serde_json::json;

use super::text::fixture;
use crate::util::{CANARY_CONTENT, Server, TestEnv, assert_err, assert_text, b64};

// ---------------------------------------------------------------------------
// read_media_file
// ---------------------------------------------------------------------------

/// reference-server.md §3.2: the MIME type comes from the extension only
/// (case-insensitive); contents are never sniffed.
#[test]
fn read_media_file_mime_table() {
    let env = TestEnv::new();
    let table: &[(&str, &str, &str)] = &[
        ("a.png", "image/png", "image"),
        ("UPPER.PNG", "image/png", "image"),
        ("b.jpg", "image/jpeg", "image"),
        ("c.jpeg", "image/jpeg", "image"),
        ("Mixed.JpEg", "image/jpeg", "image"),
        ("d.gif", "image/gif", "image"),
        ("e.webp", "image/webp", "image"),
        ("f.bmp", "image/bmp", "image"),
        ("g.svg", "image/svg+xml", "image"),
        ("h.mp3", "audio/mpeg", "audio"),
        ("i.wav", "audio/wav", "audio"),
        ("j.ogg", "audio/ogg", "audio"),
        ("k.flac", "audio/flac", "audio"),
        ("l.ico", "application/octet-stream", "resource"),
        ("m.tiff", "application/octet-stream", "resource"),
        ("n.avif", "application/octet-stream", "resource"),
        ("o.heic", "application/octet-stream", "resource"),
        ("p.m4a", "application/octet-stream", "resource"),
        ("q.mp4", "application/octet-stream", "resource"),
        ("r.pdf", "application/octet-stream", "resource"),
        ("s.txt", "application/octet-stream", "resource"),
        ("noext", "application/octet-stream", "resource"),
        ("png", "application/octet-stream", "resource"),
        // A PNG body under a text name stays a resource: no sniffing.
        ("sniff.txt", "application/octet-stream", "resource"),
    ];
    for (i, (name, _, _)) in table.iter().enumerate() {
        let mut bytes = if *name == "sniff.txt" {
            b"\x89PNG\r\n\x1a\n".to_vec()
        } else {
            format!("body of {name} ").into_bytes()
        };
        bytes.extend_from_slice(&[0xff, 0x00, i as u8]);
        env.write(name, bytes);
    }
    let server = Server::start(&args![env.root()]);
    for (name, mime, kind) in table {
        let data = b64(&env.read(name));
        let reply = server.call("read_media_file", json!({"path": env.path_str(name)}));
        reply.assert_ok();
        let block = if *kind == "resource" {
            json!({"type": "resource", "resource": {
                "uri": format!("file://{}/{name}", env.root().display()),
                "mimeType": mime,
                "blob": data,
            }})
        } else {
            json!({"type": kind, "data": data, "mimeType": mime})
        };
        assert_eq!(reply.content(), vec![block.clone()], "{name}");
        crate::util::assert_mirrors(&reply, json!([block]));
    }
}

#[test]
fn read_media_file_resource_uri_empty_file_and_errors() {
    let env = TestEnv::new();
    env.write("with space.txt", "spaces\n");
    env.write("empty.txt", "");
    env.write("caf\u{e9} #1?%.bin", [1u8, 2, 3]);
    env.write("doc.pdf", "%PDF-1.4 fake");
    env.write("img.png", b"\x89PNG\r\n\x1a\nfakepng");
    env.mkdir("sub");
    let server = Server::start(&args![env.root()]);
    let root = env.root().display().to_string();
    let resource = |path: &str, uri: String, blob: &str| {
        let reply = server.call("read_media_file", json!({ "path": path }));
        reply.assert_ok();
        let block = json!({"type": "resource", "resource": {
            "uri": uri, "mimeType": "application/octet-stream", "blob": blob}});
        assert_eq!(reply.content(), vec![block.clone()], "{path}");
        crate::util::assert_mirrors(&reply, json!([block]));
    };
    // The reference's exact blocks (reference-probe-output.jsonl).
    resource(
        &env.path_str("with space.txt"),
        format!("file://{root}/with%20space.txt"),
        "c3BhY2VzCg==",
    );
    resource(
        &env.path_str("doc.pdf"),
        format!("file://{root}/doc.pdf"),
        "JVBERi0xLjQgZmFrZQ==",
    );
    resource(
        &env.path_str("empty.txt"),
        format!("file://{root}/empty.txt"),
        "",
    );
    // A relative path still gets an absolute URI.
    resource("empty.txt", format!("file://{root}/empty.txt"), "");
    resource(
        "caf\u{e9} #1?%.bin",
        format!("file://{root}/caf%C3%A9%20%231%3F%25.bin"),
        "AQID",
    );
    let png = server.call("read_media_file", json!({"path": env.path_str("img.png")}));
    assert_eq!(
        png.content(),
        vec![json!({"type": "image", "data": "iVBORw0KGgpmYWtlcG5n", "mimeType": "image/png"})]
    );

    assert_err(
        &server.call("read_media_file", json!({"path": env.path_str("sub")})),
        "EISDIR: illegal operation on a directory, read",
    );
    assert_err(
        &server.call("read_media_file", json!({"path": "nope.png"})),
        "ENOENT: no such file or directory, open 'nope.png'",
    );
    server
        .call(
            "read_media_file",
            json!({"path": "img.png", "mimeType": "x"}),
        )
        .assert_error_contains("unknown field `mimeType`");
}

// ---------------------------------------------------------------------------
// read_multiple_files
// ---------------------------------------------------------------------------

/// The reference's `multi.mixed` case, with tuls's own escape message.
#[test]
fn read_multiple_files_format_matches_the_reference() {
    let env = fixture();
    let server = Server::start(&args![env.root()]);
    let hello = env.path_str("hello.txt");
    let nope = env.path_str("nope.txt");
    let canary = env.canary().display().to_string();
    let sub = env.path_str("sub");
    let empty = env.path_str("empty.txt");
    let reply = server.call(
        "read_multiple_files",
        json!({"paths": [hello, "noeol.txt", nope, canary, sub, empty]}),
    );
    let expected = [
        format!("{hello}:\nline1\nline2\nline3\n\n"),
        "noeol.txt:\nx\ny\nz\n".to_owned(),
        format!("{nope}: Error - ENOENT: no such file or directory, open '{nope}'"),
        format!("{canary}: Error - Access denied - path outside allowed directories: {canary}"),
        format!("{sub}: Error - EISDIR: illegal operation on a directory, read"),
        format!("{empty}:\n\n"),
    ]
    .join("\n---\n");
    assert_text(&reply, &expected);
    assert!(!reply.raw.to_string().contains(CANARY_CONTENT));
    env.assert_canary_intact();
}

#[test]
fn read_multiple_files_never_is_error_and_keeps_order_and_duplicates() {
    let env = fixture();
    let server = Server::start(&args![env.root()]);
    // Every file failing is still a successful call.
    assert_text(
        &server.call("read_multiple_files", json!({"paths": ["a", "sub"]})),
        "a: Error - ENOENT: no such file or directory, open 'a'\n---\n\
         sub: Error - EISDIR: illegal operation on a directory, read",
    );
    // Duplicates are read twice; input order is kept; lossy UTF-8 applies.
    assert_text(
        &server.call(
            "read_multiple_files",
            json!({"paths": ["solo.txt", "bad.bin", "solo.txt"]}),
        ),
        "solo.txt:\nsolo\n\n---\nbad.bin:\nab\u{fffd}\u{fffd}\u{0}cd\n\n\n---\nsolo.txt:\nsolo\n",
    );
    // A NUL byte or an escape is reported for that entry only.
    assert_text(
        &server.call(
            "read_multiple_files",
            json!({"paths": ["solo.txt", "../outside/canary.txt"]}),
        ),
        "solo.txt:\nsolo\n\n---\n../outside/canary.txt: Error - Access denied - path outside allowed directories: ../outside/canary.txt",
    );
}

#[test]
fn read_multiple_files_validation_and_max_paths() {
    let env = fixture();
    let server = Server::start(&args![env.root(), "--max-paths", "2"]);
    assert_text(
        &server.call(
            "read_multiple_files",
            json!({"paths": ["solo.txt", "solo.txt"]}),
        ),
        "solo.txt:\nsolo\n\n---\nsolo.txt:\nsolo\n",
    );
    let over = server.call(
        "read_multiple_files",
        json!({"paths": ["solo.txt", "solo.txt", "solo.txt"]}),
    );
    over.assert_error_contains("Too many paths");
    assert!(
        over.text.contains('3') && over.text.contains('2'),
        "{:?}",
        over.text
    );
    assert!(
        !over.text.contains("solo\n"),
        "nothing is read: {:?}",
        over.text
    );
    server
        .call("read_multiple_files", json!({"paths": []}))
        .assert_error_contains("at least 1");
    server
        .call("read_multiple_files", json!({}))
        .assert_error_contains("missing field `paths`");
    server
        .call("read_multiple_files", json!({"paths": "solo.txt"}))
        .assert_error_contains("invalid type");
    server
        .call(
            "read_multiple_files",
            json!({"paths": ["solo.txt"], "path": "x"}),
        )
        .assert_error_contains("unknown field `path`");

    // The default limit is generous.
    let server = Server::start(&args![env.root()]);
    let many: Vec<&str> = vec!["solo.txt"; 100];
    let reply = server.call("read_multiple_files", json!({ "paths": many }));
    reply.assert_ok();
    assert_eq!(reply.text.matches("solo.txt:\nsolo\n").count(), 100);
}
