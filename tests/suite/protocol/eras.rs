//! Both protocol eras on one connection, as real clients mix them: a
//! 2026-07-28 result carries `resultType`, the server's identity in
//! `_meta["io.modelcontextprotocol/serverInfo"]`, and (for `tools/list` and
//! `server/discover`) `ttlMs`/`cacheScope`; a handshake-era result carries
//! none of them. Sequences: `server/discover` then `initialize`; no
//! discover at all; a 2026-07-28 `tools/list` then `initialize` (after
//! which requests without `_meta` are the handshake era's); a handshake then
//! 2026-07-28 requests.

use serde_json::{Value, json};

use crate::util::{ALL_TOOLS, RawServer, TestEnv};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "eras-test", "version": "0"},
    })
}

fn start() -> (TestEnv, RawServer) {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let raw = RawServer::start(&args![env.root()]);
    (env, raw)
}

fn result(resp: &Value) -> &Value {
    resp.get("result")
        .unwrap_or_else(|| panic!("expected a result: {resp}"))
}

/// A 2026-07-28 result: `resultType`, and the server's identity.
#[track_caller]
fn assert_modern(resp: &Value) {
    let r = result(resp);
    assert_eq!(r["resultType"], "complete", "{resp}");
    assert_eq!(r["_meta"][SERVER_INFO]["name"], "tuls", "{resp}");
    assert_eq!(
        r["_meta"][SERVER_INFO]["version"],
        env!("CARGO_PKG_VERSION"),
        "{resp}"
    );
}

/// A cacheable 2026-07-28 result: one hour, this client only.
#[track_caller]
fn assert_cacheable(resp: &Value) {
    assert_modern(resp);
    assert_eq!(result(resp)["ttlMs"], 3_600_000, "{resp}");
    assert_eq!(result(resp)["cacheScope"], "private", "{resp}");
}

/// A handshake-era result: none of the 2026-07-28 fields.
#[track_caller]
fn assert_legacy(resp: &Value) {
    let r = result(resp);
    for key in ["resultType", "_meta", "ttlMs", "cacheScope"] {
        assert!(
            r.get(key).is_none(),
            "{key} in a handshake-era result: {resp}"
        );
    }
}

fn names(resp: &Value) -> Vec<String> {
    result(resp)["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools: {resp}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

fn list_modern(raw: &mut RawServer) -> Value {
    raw.request("tools/list", json!({"_meta": meta()}))
}

fn call_modern(raw: &mut RawServer, path: &str) -> Value {
    raw.request(
        "tools/call",
        json!({"name": "read_text_file", "arguments": {"path": path}, "_meta": meta()}),
    )
}

#[test]
fn discover_then_initialize() {
    let (_env, mut raw) = start();
    let d = raw.request("server/discover", json!({"_meta": meta()}));
    assert_cacheable(&d);
    let versions = &result(&d)["supportedVersions"];
    assert!(
        versions
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28")) && v.contains(&json!("2025-11-25"))),
        "{d}"
    );
    let init = raw.initialize("2025-11-25");
    assert_eq!(init["protocolVersion"], "2025-11-25");
    let list = raw.request("tools/list", json!({}));
    assert_legacy(&list);
    assert_eq!(names(&list), ALL_TOOLS);
    let call = raw.call_tool("read_text_file", json!({"path": "a.txt"}));
    assert_legacy(&call);
    assert_eq!(result(&call)["content"][0]["text"], "alpha\n");
}

#[test]
fn no_discover_and_no_handshake() {
    let (_env, mut raw) = start();
    let list = list_modern(&mut raw);
    assert_cacheable(&list);
    assert_eq!(names(&list), ALL_TOOLS);
    let ok = call_modern(&mut raw, "a.txt");
    assert_modern(&ok);
    assert_eq!(result(&ok)["content"][0]["text"], "alpha\n");
    // A tool's refusal is a result too, and carries the same.
    let refused = call_modern(&mut raw, "missing.txt");
    assert_modern(&refused);
    assert_eq!(result(&refused)["isError"], true);
    // Without `_meta`, a request on a connection with no handshake is refused
    // with a JSON-RPC error (the 2026-07-28 contract), and the session goes on.
    let bare = raw.request("tools/list", json!({}));
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
    assert_cacheable(&list_modern(&mut raw));
}

/// After a 2026-07-28 request, `initialize` moves the connection to the
/// handshake era: requests without `_meta` are then answered (not refused
/// for missing `_meta`), in the handshake era's shape; 2026-07-28 requests
/// still get theirs.
#[test]
fn modern_tools_list_then_initialize() {
    let (_env, mut raw) = start();
    assert_cacheable(&list_modern(&mut raw));
    let init = raw.initialize("2025-06-18");
    assert_eq!(init["protocolVersion"], "2025-06-18");
    let list = raw.request("tools/list", json!({}));
    assert_legacy(&list);
    assert_eq!(names(&list), ALL_TOOLS);
    let call = raw.call_tool("read_text_file", json!({"path": "a.txt"}));
    assert_legacy(&call);
    assert_eq!(result(&call)["content"][0]["text"], "alpha\n");
    assert_cacheable(&list_modern(&mut raw));
    assert_modern(&call_modern(&mut raw, "a.txt"));
}

/// The same when the `initialize` asks for 2026-07-28 (which has no
/// handshake): it is answered with the latest handshake version, and the
/// requests that follow are read as that version's.
#[test]
fn modern_tools_list_then_initialize_asking_for_2026_07_28() {
    let (_env, mut raw) = start();
    assert_cacheable(&list_modern(&mut raw));
    let init = raw.initialize("2026-07-28");
    assert_eq!(init["protocolVersion"], "2025-11-25");
    let list = raw.request("tools/list", json!({}));
    assert_legacy(&list);
    assert_eq!(names(&list), ALL_TOOLS);
}

#[test]
fn handshake_then_modern_requests() {
    let (_env, mut raw) = start();
    raw.initialize("2025-11-25");
    assert_legacy(&raw.request("tools/list", json!({})));
    assert_cacheable(&list_modern(&mut raw));
    let ok = call_modern(&mut raw, "a.txt");
    assert_modern(&ok);
    assert_eq!(result(&ok)["content"][0]["text"], "alpha\n");
    let call = raw.call_tool("read_text_file", json!({"path": "a.txt"}));
    assert_legacy(&call);
}
