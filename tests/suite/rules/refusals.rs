//! A refusal names its rule where that reveals nothing: the operator's log
//! (info, stderr) names the rule, its source and the call for every
//! refusal; the agent's read-only text names the rule after the usual text;
//! a hidden path's reply is the missing path's, byte for byte, and names
//! nothing.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{RawServer, Reply, TestEnv, raw_reply};

use super::cases::{CANARY, PROTECTED};

/// Two rules-file rules (the read-only one second), two flags, and the
/// built-in `.git`.
fn layout(env: &TestEnv) -> std::path::PathBuf {
    env.write("Cargo.lock", "locked\n");
    env.write("secrets/key.txt", CANARY);
    env.write(".env", CANARY);
    env.write("docs/a.md", "docs\n");
    env.write(".git/config", "[core]\n");
    let rules = env.base().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules": [
          {"id": "no-secrets", "pattern": "/secrets", "match": "prefix", "operations": ["read"]},
          {"id": "lockfile", "pattern": "/Cargo.lock", "match": "exact", "operations": ["write", "delete"]}
        ]}"#,
    )
    .expect("write rules");
    rules
}

fn start(env: &TestEnv, rules: &std::path::Path, level: &str) -> RawServer {
    let mut raw = RawServer::start(&args![
        env.root(),
        "--rules",
        rules,
        "--hide",
        ".env",
        "--read-only-path",
        "docs/**",
        "--log-level",
        level
    ]);
    raw.initialize("2025-06-18");
    raw
}

/// `tools/call` of `tool` with `args`, as request `id`.
fn call(raw: &mut RawServer, id: i64, tool: &str, args: Value) -> Reply {
    raw_reply(&raw.request_with_id(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": args}),
    ))
}

/// Waits (up to 10 s) for a stderr line holding every one of `parts`.
fn log_line(raw: &RawServer, parts: &[&str]) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let err = raw.stderr();
        if let Some(l) = err.lines().find(|l| parts.iter().all(|p| l.contains(p))) {
            return l.to_owned();
        }
        assert!(
            Instant::now() < until,
            "no log line with {parts:?} in:\n{err}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A read-only refusal: the usual text first, then the rule, named as the
/// operator wrote it (the rules file's path is never shown); the log line
/// names rule, source and call; nothing changes on disk.
#[test]
fn a_read_only_refusal_names_its_rule_to_the_agent_and_in_the_log() {
    let env = TestEnv::new();
    let rules = layout(&env);
    let file = rules.display().to_string();
    let mut raw = start(&env, &rules, "info");
    let cases = [
        (
            41,
            "Cargo.lock",
            "(rule \"lockfile\" from the rules file)",
            [
                "rule=\"lockfile\"".to_owned(),
                format!("source=\"rules file '{file}', rule #2\""),
            ],
        ),
        (
            42,
            "docs/a.md",
            "(rule --read-only-path 'docs/**')",
            [
                "rule=\"--read-only-path\"".to_owned(),
                "pattern=\"docs/**\"".to_owned(),
            ],
        ),
        (
            43,
            ".git/config",
            "(built-in rule '.git')",
            ["rule=\"default\"".to_owned(), "pattern=\".git\"".to_owned()],
        ),
    ];
    for (id, path, named, log) in cases {
        let before = env.read(path);
        let r = call(
            &mut raw,
            id,
            "write_file",
            json!({"path": path, "content": "x"}),
        );
        assert!(r.is_error, "{path}: {}", r.text);
        assert_eq!(
            r.text,
            format!("Access denied - {PROTECTED}: {path} {named}"),
            "{path}"
        );
        assert!(!r.text.contains(&file), "{}", r.text);
        assert_eq!(env.read(path), before, "{path} changed on disk");
        let mut parts = vec![
            "tuls: info: path rule refused: read-only ".to_owned(),
            format!("path=\"{path}\""),
            "tool=\"write_file\"".to_owned(),
            format!("id={id}"),
        ];
        parts.extend(log);
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        log_line(&raw, &parts);
    }
}

/// A hidden path: the reply is the missing path's text with the name
/// changed (and names no rule); only the log names the rule, its source
/// and the call. Even at trace level, nothing of the log reaches stdout.
#[test]
fn a_hidden_refusal_reads_as_missing_and_only_the_log_names_its_rule() {
    let env = TestEnv::new();
    let rules = layout(&env);
    let file = rules.display().to_string();
    let mut raw = start(&env, &rules, "trace");
    let mut stdout = Vec::new();
    let mut id = 50;
    for (tool, hidden, missing, log) in [
        (
            "read_text_file",
            "secrets/key.txt",
            "nothing/key.txt",
            [
                "rule=\"no-secrets\"".to_owned(),
                format!("source=\"rules file '{file}', rule #1\""),
            ],
        ),
        (
            "get_file_info",
            ".env",
            ".nothing",
            ["rule=\"--hide\"".to_owned(), "pattern=\".env\"".to_owned()],
        ),
        (
            "write_file",
            "secrets/new.txt",
            "nothing/new.txt",
            [
                "rule=\"no-secrets\"".to_owned(),
                "source=\"rules file".to_owned(),
            ],
        ),
    ] {
        let args = |p: &str| match tool {
            "write_file" => json!({"path": p, "content": "x"}),
            _ => json!({"path": p}),
        };
        id += 1;
        let r = call(&mut raw, id, tool, args(hidden));
        let m = call(&mut raw, id + 100, tool, args(missing));
        assert!(r.is_error && m.is_error, "{}\n{}", r.text, m.text);
        // The parent as given is named too ("Parent directory does not exist").
        let first = |p: &'static str| p.split('/').next().unwrap_or(p);
        let expected = m
            .text
            .replace(missing, hidden)
            .replace(first(missing), first(hidden));
        assert_eq!(r.text, expected, "{tool} {hidden}");
        stdout.push(r.raw.to_string());
        let mut parts = vec![
            "tuls: info: path rule refused: hidden (answered as missing) ".to_owned(),
            format!("path=\"{hidden}\""),
            format!("tool=\"{tool}\""),
            format!("id={id}"),
        ];
        parts.extend(log);
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        log_line(&raw, &parts);
    }
    assert!(!env.exists("secrets/new.txt"));
    // The missing paths name no rule in the log.
    assert!(
        !raw.stderr()
            .lines()
            .any(|l| l.contains("path rule refused") && l.contains("nothing")),
        "{}",
        raw.stderr()
    );
    for s in &stdout {
        for word in ["no-secrets", "--hide", "rule", "hidden", CANARY] {
            assert!(!s.contains(word), "{word} in a reply: {s}");
        }
    }
    // Every stdout line is JSON-RPC (recv panics otherwise), none a log line.
    raw.close_stdin();
    while let Some(msg) = raw.recv(Duration::from_millis(300)) {
        let text = msg.to_string();
        assert!(!text.contains("tuls: "), "a log line on stdout: {text}");
    }
}
