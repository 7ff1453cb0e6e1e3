//! Issue 15, items 2 and 4: a leading `~` in an operator's `DIR` expands from
//! `$HOME` (client paths never expand); `--log-level` takes only the
//! documented levels; every log line has the one format, with no Rust debug
//! dumps.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{Options, RawServer, Server, TestEnv, default_timeout, run_cli, wait_until};

fn fs(args: &[OsString], home: Option<&str>) -> crate::util::CliOutput {
    let mut full: Vec<OsString> = vec!["filesystem".into()];
    full.extend(args.iter().cloned());
    // run_cli has no env hook: go through `env` so HOME is what the test says.
    let mut argv: Vec<OsString> = vec!["-u".into(), "HOME".into()];
    if let Some(home) = home {
        argv.push(format!("HOME={home}").into());
    }
    argv.push(crate::util::bin().into());
    argv.extend(full);
    let out = std::process::Command::new("env")
        .args(&argv)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run env tuls");
    crate::util::CliOutput {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        timed_out: false,
    }
}

#[test]
fn a_leading_tilde_in_an_operator_dir_expands_from_home_and_client_paths_never_do() {
    let env = TestEnv::new();
    env.write("top.txt", "top\n");
    env.write("~/top.txt", "a directory named ~ inside the root\n");
    let base = env.base().to_str().expect("UTF-8").to_owned();
    let root = env.root().to_str().expect("UTF-8").to_owned();

    for dir in ["~/root", "~/root/"] {
        let server = Server::start_with(&args![dir], Options::new().env("HOME", &base));
        let allowed = server.call("list_allowed_directories", json!({}));
        assert_eq!(
            allowed.text.split("\n\n").next(),
            Some(format!("Allowed directories:\n{root}").as_str()),
            "{dir}"
        );
        assert_eq!(
            server
                .call("read_text_file", json!({"path": format!("{root}/top.txt")}))
                .text,
            "top\n"
        );
        // The client's `~` reaches the kernel verbatim, relative to the root.
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "~/top.txt"}))
                .text,
            "a directory named ~ inside the root\n"
        );
        server
            .call("read_text_file", json!({"path": "~"}))
            .assert_error();
    }

    // `~` alone is $HOME itself.
    let out = fs(&args!["~", "--print-config"], Some(&root));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let config: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(config["roots"], json!([root]));

    // `~user` is not expanded; without $HOME a `~` DIR is a clear error.
    let out = fs(&args!["~nobody-here/x"], Some(&base));
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("'~nobody-here/x' does not exist"),
        "{}",
        out.stderr
    );
    let out = fs(&args!["~/root"], None);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains(
            "tuls: error: allowed directory '~/root' starts with '~', but $HOME is not set"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn log_level_takes_only_the_documented_levels() {
    let env = TestEnv::new();
    for level in ["error", "warn", "info", "debug", "trace"] {
        let out = run_cli(
            &args![
                "filesystem",
                env.root(),
                "--log-level",
                level,
                "--print-config"
            ],
            default_timeout(),
        );
        assert_eq!(out.code, Some(0), "{level}: {}", out.stderr);
    }
    for bad in ["verbose", "ERROR", "Info", "", "warning", "info,rmcp=debug"] {
        let out = run_cli(
            &args!["filesystem", env.root(), "--log-level", bad],
            default_timeout(),
        );
        assert_eq!(out.code, Some(2), "{bad:?} was accepted: {}", out.stderr);
        assert!(
            out.stderr
                .contains("[possible values: error, warn, info, debug, trace]"),
            "{bad:?}: {}",
            out.stderr
        );
    }
    // The `/` warning shows at the default level, and `error` silences it.
    let out = run_cli(
        &args!["filesystem", "/", "--print-config"],
        default_timeout(),
    );
    assert!(
        out.stderr
            .contains("tuls: warn: '/' is an allowed directory: the whole filesystem is in scope"),
        "{}",
        out.stderr
    );
    let out = run_cli(
        &args!["filesystem", "/", "--log-level", "error", "--print-config"],
        default_timeout(),
    );
    assert!(!out.stderr.contains("'/'"), "{}", out.stderr);
}

#[test]
fn every_log_line_has_the_one_format_and_no_debug_dumps() {
    let env = TestEnv::new();
    env.write("a.txt", "a\n");
    let mut raw = RawServer::start(&args![env.root(), "--log-level", "debug"]);
    raw.initialize_with("2025-11-25", json!({"roots": {}}));
    // Answer roots/list with an error: tuls logs it and fails closed.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while let Some(msg) = raw.recv(deadline.saturating_duration_since(std::time::Instant::now())) {
        if msg["method"] == "roots/list" {
            raw.send(&json!({
                "jsonrpc": "2.0",
                "id": msg["id"],
                "error": {"code": -32601, "message": "Method not found"},
            }));
            break;
        }
    }
    raw.send_line("this is not JSON");
    let unknown = raw.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert!(unknown.get("error").is_some(), "{unknown}");
    let denied = raw.call_tool("read_text_file", json!({"path": env.path_str("a.txt")}));
    assert!(
        denied
            .to_string()
            .contains("roots/list request with an error"),
        "{denied}"
    );
    raw.close_stdin();
    assert!(raw.wait_exit(default_timeout()).is_some());
    let stderr = raw.stderr();
    assert!(
        wait_until(Duration::from_secs(2), || raw
            .stderr()
            .contains("tuls: error: roots/list failed")),
        "{stderr}"
    );
    let stderr = raw.stderr();
    for line in stderr.lines() {
        assert!(
            line.starts_with("tuls: "),
            "a line in another format: {line:?}\n{stderr}"
        );
        for dump in ["ErrorData {", "ErrorCode(", "Some(", " { code:", "Object {"] {
            assert!(!line.contains(dump), "a Rust debug dump: {line:?}");
        }
    }
    assert!(
        stderr
            .contains("tuls: warn: a request line is not valid JSON; answered with a parse error"),
        "{stderr}"
    );
}
