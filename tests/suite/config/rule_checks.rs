//! Issue 30, item 9: rules that load but protect less than they read. The
//! rules file's four methods read one path form (the path with a leading
//! `/`); a rule that can never do what it reads stops startup with exit 2
//! naming it, and an `--allow-path` that lifts nothing gets a warning.

use std::ffi::OsString;

use serde_json::json;

use crate::util::{CliOutput, Server, TestEnv, default_timeout, run_cli};

const SECRET: &str = "SECRET-RULE-FORMS-51c2";

/// `tuls filesystem <args>`, stdin at EOF (a startup that goes on exits 0).
fn fs(args: &[OsString]) -> CliOutput {
    let mut full: Vec<OsString> = vec!["filesystem".into()];
    full.extend(args.iter().cloned());
    let out = run_cli(&full, default_timeout());
    assert!(!out.timed_out, "tuls hung: {args:?}\n{}", out.stderr);
    out
}

fn rules_file(env: &TestEnv, rules: &str) -> std::path::PathBuf {
    let path = env.base().join("rules.json");
    std::fs::write(&path, format!(r#"{{"rules":[{rules}]}}"#)).expect("write rules");
    path
}

#[test]
fn contains_and_regex_match_the_path_with_a_leading_slash() {
    let env = TestEnv::new();
    for f in [".env", "sub/.env", "secrets/key.txt", "prod/app.yaml"] {
        env.write(f, SECRET);
    }
    env.write("a/secrets/x.txt", "not a secret\n");
    env.write("config/app.env", "public\n");
    let file = rules_file(
        &env,
        r#"{"id":"env","pattern":"/.env","match":"contains","operations":["read"]},
           {"id":"sec","pattern":"^/secrets","match":"regex","operations":["read"]},
           {"id":"prod","pattern":"prod","match":"contains","operations":["read"]}"#,
    );
    let s = Server::start(&args![env.root(), "--rules", &file]);
    for hidden in [".env", "sub/.env", "secrets/key.txt", "prod/app.yaml"] {
        let r = s.call("read_text_file", json!({"path": hidden}));
        assert!(
            r.is_error && !r.text.contains(SECRET),
            "{hidden}: {}",
            r.text
        );
    }
    let listing = s.call("list_directory", json!({"path": "."})).text;
    assert!(
        !listing.contains(".env") && !listing.contains("secrets"),
        "{listing}"
    );
    // `^/secrets` is anchored at the root; `/.env` must start a name.
    s.call("read_text_file", json!({"path": "a/secrets/x.txt"}))
        .assert_ok();
    assert_eq!(
        s.call("read_text_file", json!({"path": "config/app.env"}))
            .text,
        "public\n"
    );
}

#[test]
fn rules_that_can_never_do_what_they_read_stop_startup_with_exit_2() {
    let env = TestEnv::new();
    let root = env.root();
    let cases: Vec<(Vec<OsString>, &str)> = vec![
        (
            args![&root, "--hide", "/"],
            "rule '--hide': pattern '/' names no path",
        ),
        (
            args![&root, "--hide", "!"],
            "rule '--hide': pattern '!' names no path",
        ),
        (
            args![&root, "--read-only-path", "!/"],
            "pattern '!/' names no path",
        ),
        (
            args![&root, "--hide", "secret[.txt"],
            "rule '--hide': pattern 'secret[.txt' has an unclosed '['",
        ),
        (args![&root, "--allow-path", ".vscode/[a"], "unclosed '['"),
        (
            args![&root, "--hide", "!.env.example", "--hide", ".env*"],
            "'!.env.example' comes before '.env*'",
        ),
        (
            args![
                &root,
                "--hide",
                ".env",
                "--hide",
                "!.env.example",
                "--hide",
                ".env.*"
            ],
            "'!.env.example' comes before '.env.*'",
        ),
        (
            args![&root, "--hide", "!notes.txt"],
            "'!notes.txt' lifts nothing",
        ),
        (
            args![&root, "--no-default-protection", "--allow-path", "!.vscode"],
            "'!.vscode' lifts nothing",
        ),
    ];
    for (args, needle) in cases {
        let out = fs(&args);
        assert_eq!(out.code, Some(2), "{args:?}\n{}", out.stderr);
        assert!(out.stderr.starts_with("tuls: error: "), "{}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}\n{}", out.stderr);
    }
    for (rule, needle) in [
        (
            r#"{"id":"top-secrets","pattern":"^secrets","match":"regex","operations":["read"]}"#,
            "rule 'top-secrets': regex '^secrets' can never match",
        ),
        (
            r#"{"id":"top-files","pattern":"^[^/]+$","match":"regex","operations":["write"]}"#,
            "rule 'top-files': regex '^[^/]+$' can never match",
        ),
        (
            r#"{"id":"cls","pattern":"key[s","match":"glob","operations":["read"]}"#,
            "rule 'cls': pattern 'key[s' has an unclosed '['",
        ),
        (
            r#"{"id":"lift","pattern":"!a.txt","match":"glob","operations":["read"]},
               {"id":"all","pattern":"*.txt","match":"glob","operations":["read"]}"#,
            "rule 'lift': '!a.txt' comes before '*.txt'",
        ),
    ] {
        let file = rules_file(&env, rule);
        let out = fs(&args![&root, "--rules", &file]);
        assert_eq!(out.code, Some(2), "{rule}\n{}", out.stderr);
        assert!(out.stderr.contains(needle), "{rule}\n{}", out.stderr);
    }
    // What reads as it works starts.
    let file = rules_file(
        &env,
        r#"{"id":"a","pattern":"^/secrets","match":"regex","operations":["read"]},
           {"id":"b","pattern":"(^|/)\\.env$","match":"regex","operations":["read"]},
           {"id":"c","pattern":"^.*\\.pem$","match":"regex","operations":["read"]},
           {"id":"d","pattern":"/Cargo.lock","match":"exact","operations":["write"]}"#,
    );
    for args in [
        args![&root, "--hide", ".env*", "--hide", "!.env.example"],
        args![&root, "--hide", "secret\\[.txt", "--hide", "[ab]c"],
        args![&root, "--hide", "**"],
        args![&root, "--rules", &file],
    ] {
        let out = fs(&args);
        assert_eq!(out.code, Some(0), "{args:?}\n{}", out.stderr);
        assert!(!out.stderr.contains("tuls: warn:"), "{}", out.stderr);
    }
}

#[test]
fn an_allow_path_that_lifts_nothing_gets_a_warning() {
    let env = TestEnv::new();
    let root = env.root();
    let out = fs(&args![&root, "--allow-path", "src/generated"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("tuls: warn: path rules: --allow-path 'src/generated' lifts nothing"),
        "{}",
        out.stderr
    );
    let out = fs(&args![
        &root,
        "--no-default-protection",
        "--allow-path",
        ".vscode"
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("tuls: warn: path rules: --allow-path '.vscode' lifts nothing"),
        "{}",
        out.stderr
    );
    for allow in [
        ".vscode",
        ".claude/settings.json",
        "/.git/hooks",
        ".vscode/**",
    ] {
        let out = fs(&args![&root, "--allow-path", allow]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert!(
            !out.stderr.contains("lifts nothing"),
            "{allow}: {}",
            out.stderr
        );
    }
}
