//! Files as MCP resources, as the reference 2.3.0 offers them: its one
//! `file://{+path}` template, an empty `resources/list`, and
//! `resources/read` through the same resolver, path rules and reader as the
//! read tools, through rmcp's client. A missing, hidden or outside path
//! gets one error, byte for byte.

use rmcp::model::{ReadResourceRequestParams, ReadResourceResult};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use crate::util::{Server, TestEnv, b64, file_uri};

/// `resources/read` of `uri`: the result, or the JSON-RPC error as JSON.
fn read(server: &Server, uri: &str) -> Result<ReadResourceResult, Value> {
    let params = ReadResourceRequestParams::new(uri.to_owned());
    match server.block_on(server.client().peer().read_resource(params)) {
        Ok(r) => Ok(r),
        Err(ServiceError::McpError(e)) => Err(serde_json::to_value(e).expect("error as JSON")),
        Err(e) => panic!("resources/read {uri}: {e}"),
    }
}

/// The one contents block of a successful read, as JSON.
#[track_caller]
fn contents(server: &Server, uri: &str) -> Value {
    let r = read(server, uri).unwrap_or_else(|e| panic!("resources/read {uri}: {e}"));
    assert_eq!(r.contents.len(), 1, "{uri}");
    serde_json::to_value(&r.contents[0]).expect("contents as JSON")
}

/// The reference 2.3.0's not-found error for `uri`.
fn not_found(uri: &str) -> Value {
    json!({"code": -32602, "message": format!("Resource not found: {uri}"), "data": {"uri": uri}})
}

#[test]
fn resources_read_gives_one_error_for_hidden_missing_and_outside_paths() {
    let env = TestEnv::new();
    env.write("secret.env", "KEY=1\n");
    env.write("private/notes.txt", "private\n");
    std::fs::write(env.outside().join("secret.env"), "outside\n").expect("outside file");
    let file = file_uri(env.path("secret.env"));
    let nested = file_uri(env.path("private/notes.txt"));

    // Hidden by a path rule: the file and a file in a hidden directory exist.
    let hiding = Server::start(&args![
        env.root(),
        "--hide",
        "secret.env",
        "--hide",
        "private"
    ]);
    let hidden = read(&hiding, &file).expect_err("a hidden file is refused");
    let hidden_nested = read(&hiding, &nested).expect_err("a hidden directory is refused");
    hiding.shutdown();

    let server = Server::start(&args![env.root()]);
    std::fs::remove_file(env.path("secret.env")).expect("remove");
    std::fs::remove_dir_all(env.path("private")).expect("remove");
    let missing = read(&server, &file).expect_err("a missing file");
    let missing_nested = read(&server, &nested).expect_err("a missing directory");
    env.symlink(env.outside().join("secret.env"), "secret.env");
    let outside = read(&server, &file).expect_err("a symlink out of the root");
    std::fs::remove_file(env.path("secret.env")).expect("remove");
    env.symlink("nothing-here", "secret.env");
    let dangling = read(&server, &file).expect_err("a dangling symlink");
    let beyond = format!("{}/../outside/secret.env", file_uri(env.root()));
    let climbing = read(&server, &beyond).expect_err("a path that climbs out");

    assert_eq!(hidden, not_found(&file));
    for (what, e) in [
        ("missing", &missing),
        ("outside", &outside),
        ("dangling", &dangling),
    ] {
        assert_eq!(
            serde_json::to_string(e).expect("json"),
            serde_json::to_string(&hidden).expect("json"),
            "{what} vs hidden: byte for byte"
        );
    }
    assert_eq!(hidden_nested, not_found(&nested));
    assert_eq!(
        missing_nested, hidden_nested,
        "a hidden directory reads as missing"
    );
    assert_eq!(climbing, not_found(&beyond));
}

#[test]
fn resources_are_offered_as_the_reference_offers_them() {
    let env = TestEnv::new();
    env.write("hello.txt", "hello\n");
    env.write("data.json", "{\"a\":1}");
    env.write("pixel.png", b"\x89PNG\r\n");
    env.write("latin1.txt", b"caf\xe9");
    env.write("noext", "plain");
    env.write("nul.txt", b"a\0b");
    env.mkdir("sub");
    env.symlink("hello.txt", "link.txt");
    let server = Server::start(&args![env.root()]);
    let info = server.server_info().expect("server info");
    assert_eq!(info["capabilities"]["resources"], json!({}), "{info}");

    let listed = server
        .block_on(server.client().peer().list_resources(None))
        .expect("resources/list");
    assert!(listed.resources.is_empty(), "the disk is never enumerated");
    let templates = server
        .block_on(server.client().peer().list_resource_templates(None))
        .expect("resources/templates/list");
    assert_eq!(
        serde_json::to_value(&templates.resource_templates).expect("json"),
        json!([{
            "uriTemplate": "file://{+path}",
            "name": "file",
            "title": "File",
            "description": "A file inside the allowed directories, by its absolute file:// URI (for example file:///home/user/project/README.md). Text files are returned as text, other files as a base64 blob with their MIME type. Directories are not resources; use the list_directory tool to find files."
        }])
    );

    let uri = |rel: &str| file_uri(env.path(rel));
    let text = |rel: &str, mime: &str, text: &str| json!({"uri": uri(rel), "mimeType": mime, "text": text});
    let blob = |rel: &str, mime: &str, bytes: &[u8]| json!({"uri": uri(rel), "mimeType": mime, "blob": b64(bytes)});
    assert_eq!(
        contents(&server, &uri("hello.txt")),
        text("hello.txt", "text/plain", "hello\n")
    );
    assert_eq!(
        contents(&server, &uri("data.json")),
        text("data.json", "application/json", "{\"a\":1}")
    );
    assert_eq!(
        contents(&server, &uri("noext")),
        text("noext", "text/plain", "plain")
    );
    assert_eq!(
        contents(&server, &uri("link.txt")),
        text("link.txt", "text/plain", "hello\n")
    );
    assert_eq!(
        contents(&server, &uri("pixel.png")),
        blob("pixel.png", "image/png", b"\x89PNG\r\n")
    );
    assert_eq!(
        contents(&server, &uri("latin1.txt")),
        blob("latin1.txt", "text/plain", b"caf\xe9")
    );
    assert_eq!(
        contents(&server, &uri("nul.txt")),
        blob("nul.txt", "text/plain", b"a\0b")
    );
    // `localhost` is the empty host; the reply names the URI without it.
    let local = format!("file://localhost{}", env.path_str("hello.txt"));
    assert_eq!(
        contents(&server, &local),
        text("hello.txt", "text/plain", "hello\n")
    );
    let dir = uri("sub");
    assert_eq!(
        read(&server, &dir).expect_err("a directory"),
        json!({"code": -32602, "message": format!("Not a file: {dir} is a directory; directories are not resources"), "data": {"uri": dir}})
    );
    assert_eq!(
        read(&server, "http://x/y").expect_err("not a file URI"),
        not_found("http://x/y")
    );
}

#[test]
fn resources_are_not_offered_when_a_read_tool_is_denied() {
    let env = TestEnv::new();
    env.write("hello.txt", "hello\n");
    let server = Server::start(&args![env.root(), "--deny", "filesystem/read_media_file"]);
    let info = server.server_info().expect("server info");
    assert!(info["capabilities"].get("resources").is_none(), "{info}");
    let e = read(&server, &file_uri(env.path("hello.txt"))).expect_err("refused");
    assert_eq!(e["code"], json!(-32601), "{e}");
    // The control: with both read tools enabled, the same read succeeds.
    let control = Server::start(&args![env.root(), "--deny", "filesystem/write_file"]);
    let r = read(&control, &file_uri(env.path("hello.txt")));
    assert!(r.is_ok(), "{r:?}");
}
