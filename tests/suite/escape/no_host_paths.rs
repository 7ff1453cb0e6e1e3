//! No host path access after startup (issue 11 §8): under
//! `strace -f -e trace=%file`, once the server has printed its `landlock`
//! line (roots opened, Landlock applied), no path-based syscall names an
//! absolute path or resolves from the working directory (`AT_FDCWD`), through
//! a session that calls every tool, including writes and edits through
//! in-root symlinks (plain and chained) and walks that start the thread pools,
//! with a client root (opened beneath the CLI root after startup) in force.
//! The one exception is the documented metadata-only `stat` of the
//! operator's `DIR` path itself, which notices a moved root.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::util::{TestEnv, bin, file_uri, have};

#[test]
fn no_path_syscall_after_startup_names_a_host_path() {
    if !have("strace") {
        return;
    }
    let env = TestEnv::new();
    env.write("sub/real.txt", "one\n");
    env.write("a.txt", "alpha\n");
    env.write("img.png", [0x89, b'P', b'N', b'G']);
    env.symlink("sub/real.txt", "link");
    env.symlink("link", "chain");
    env.symlink("../a.txt", "sub/up");
    env.mkdir("deep/er/est");
    let log = env.base().join("strace.log");
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-s", "128", "-e", "trace=%file,write", "-o"])
        .arg(&log)
        .arg(bin())
        .arg("filesystem")
        .arg(env.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn strace");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut id = 0;
    // The client root (the root itself, opened again beneath the CLI root
    // after startup) is served on every `roots/list`.
    let roots = json!({"roots": [{"uri": file_uri(env.root())}]});
    let served = std::rc::Rc::new(std::cell::Cell::new(0));
    let served_in = served.clone();
    let mut rpc = move |method: &str, params: Option<Value>| -> Value {
        let Some(params) = params else {
            let line = json!({"jsonrpc": "2.0", "method": method});
            writeln!(stdin, "{line}").expect("write notification");
            return Value::Null;
        };
        id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").expect("write request");
        loop {
            let mut buf = String::new();
            assert!(
                stdout.read_line(&mut buf).expect("read reply") > 0,
                "server exited"
            );
            let v: Value = serde_json::from_str(&buf).expect("json reply");
            if v["method"] == json!("roots/list") {
                let answer = json!({"jsonrpc": "2.0", "id": v["id"], "result": roots});
                writeln!(stdin, "{answer}").expect("write roots");
                served_in.set(served_in.get() + 1);
                continue;
            }
            if v["id"] == json!(id) {
                return v;
            }
        }
    };
    rpc(
        "initialize",
        Some(
            json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": true}},
               "clientInfo": {"name": "strace-test", "version": "0"}}),
        ),
    );
    rpc("notifications/initialized", None);
    let p = |rel: &str| env.path_str(rel);
    let calls: Vec<(&str, Value)> = vec![
        ("list_allowed_directories", json!({})),
        ("read_text_file", json!({"path": p("chain")})),
        ("read_text_file", json!({"path": p("a.txt"), "head": 1})),
        ("read_media_file", json!({"path": p("img.png")})),
        (
            "read_multiple_files",
            json!({"paths": [p("a.txt"), p("link")]}),
        ),
        (
            "write_file",
            json!({"path": p("new.txt"), "content": "n\n"}),
        ),
        (
            "write_file",
            json!({"path": p("link"), "content": "via link\n"}),
        ),
        (
            "write_file",
            json!({"path": p("chain"), "content": "via chain\n"}),
        ),
        (
            "write_file",
            json!({"path": p("sub/up"), "content": "via up\n"}),
        ),
        (
            "edit_file",
            json!({"path": p("chain"), "edits": [{"oldText": "via", "newText": "by"}]}),
        ),
        (
            "edit_file",
            json!({"path": p("a.txt"), "edits": [{"oldText": "via", "newText": "x"}], "dryRun": true}),
        ),
        ("create_directory", json!({"path": p("made/here")})),
        ("list_directory", json!({"path": p("")})),
        (
            "list_directory_with_sizes",
            json!({"path": p("sub"), "sortBy": "size"}),
        ),
        ("directory_tree", json!({"path": p("")})),
        (
            "search_files",
            json!({"path": p(""), "pattern": "**/*.txt"}),
        ),
        ("search_files", json!({"path": ".", "pattern": "*"})),
        ("get_file_info", json!({"path": p("link")})),
        (
            "move_file",
            json!({"source": p("new.txt"), "destination": p("made/new.txt")}),
        ),
    ];
    for (tool, args) in calls {
        let reply = rpc("tools/call", Some(json!({"name": tool, "arguments": args})));
        assert!(
            reply["result"]["isError"] != json!(true) && reply.get("error").is_none(),
            "{tool} failed: {reply}"
        );
    }
    assert_eq!(env.read_string("sub/real.txt"), "by chain\n");
    assert_eq!(env.read_string("a.txt"), "via up\n");
    drop(rpc);
    assert!(
        served.get() > 0,
        "the server never asked for the client roots"
    );
    let _ = child.wait();

    let text = std::fs::read_to_string(&log).expect("strace log");
    let root = env.root_str();
    let start = text
        .find("tuls: landlock:")
        .unwrap_or_else(|| panic!("no landlock line in the trace:\n{text}"));
    let after = &text[start..];
    let bad: Vec<&str> = after
        .lines()
        .skip(1)
        .filter(|l| !l.contains(" write(") && !l.contains("<... write resumed>"))
        // `statx(AT_FDCWD, NULL, ...)` is std's probe for statx: no path.
        .filter(|l| !l.contains("AT_FDCWD, NULL"))
        // The one documented exception: a metadata-only stat of the
        // operator's DIR itself, exactly, to notice a moved root.
        .filter(|l| !(is_stat(l) && l.contains(&format!("\"{root}\""))))
        .filter(|l| l.contains("\"/") || l.contains("AT_FDCWD"))
        .collect();
    assert!(
        bad.is_empty(),
        "path-based syscalls after startup name host paths:\n{}",
        bad.join("\n")
    );
}

/// Whether an strace line is a metadata-only `stat` (no open).
fn is_stat(line: &str) -> bool {
    ["statx(", "newfstatat(", "stat(", "lstat("]
        .iter()
        .any(|call| line.contains(call))
}
