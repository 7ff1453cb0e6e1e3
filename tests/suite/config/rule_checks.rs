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
            "rule #1 (id 'top-secrets'), field 'pattern': regex '^secrets' can never match",
        ),
        (
            r#"{"id":"top-files","pattern":"^[^/]+$","match":"regex","operations":["write"]}"#,
            "rule #1 (id 'top-files'), field 'pattern': regex '^[^/]+$' can never match",
        ),
        (
            r#"{"id":"cls","pattern":"key[s","match":"glob","operations":["read"]}"#,
            "rule #1 (id 'cls'), field 'pattern': pattern 'key[s' has an unclosed '['",
        ),
        (
            r#"{"id":"lift","pattern":"!a.txt","match":"glob","operations":["read"]},
               {"id":"all","pattern":"*.txt","match":"glob","operations":["read"]}"#,
            "rule #1 (id 'lift'): '!a.txt' comes before '*.txt'",
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

/// Writes `text` as the rules file, as it stands (no `{"rules": ...}`).
fn raw_rules_file(env: &TestEnv, name: &str, text: &str) -> std::path::PathBuf {
    let path = env.base().join(name);
    std::fs::write(&path, text).expect("write rules");
    path
}

/// Issue 33, item 5: a rules file of another shape (a bare list of rules,
/// TOML) says which shape is expected; a bad rule is named by its id, its
/// place in the file (from 1) and the field; each stops startup with exit 2.
#[test]
fn a_bad_rules_file_names_the_shape_or_the_rule_its_place_and_field() {
    let env = TestEnv::new();
    let root = env.root();
    let rule = r#"{"id":"env","pattern":".env","match":"glob","operations":["read"]}"#;
    let shape =
        r#"{"rules": [{"id": ..., "pattern": ..., "match": ..., "operations": [...]}, ...]}"#;
    let cases: Vec<(&str, String, String)> = vec![
        (
            "list.json",
            format!("[{rule}]"),
            format!("the file is a list of rules; they go in an object's \"rules\" field: {shape}"),
        ),
        (
            "rules.toml",
            "[[rules]]\nid = \"env\"\n".to_owned(),
            format!("not JSON (expected value at line 1 column 3); a rules file is JSON: {shape}"),
        ),
        (
            "string.json",
            "\"rules\"".to_owned(),
            format!("the file is a string; a rules file is an object: {shape}"),
        ),
        (
            "norules.json",
            format!("{{\"rule\": [{rule}]}}"),
            format!("unknown top-level field 'rule' (a rules file has only \"rules\"): {shape}"),
        ),
        (
            "notalist.json",
            format!("{{\"rules\": {rule}}}"),
            format!("\"rules\" is an object; it must be a list of rules: {shape}"),
        ),
    ];
    for (name, text, want) in cases {
        let file = raw_rules_file(&env, name, &text);
        let out = fs(&args![&root, "--rules", &file]);
        assert_eq!(out.code, Some(2), "{name}\n{}", out.stderr);
        assert_eq!(
            out.stderr,
            format!(
                "tuls: error: rules file '{}': {want} (nothing was loaded)\n",
                file.display()
            ),
            "{name}"
        );
    }
    let cases = [
        (
            r#"{"id":"re","pattern":"(","match":"regex","operations":["read"]}"#,
            "rule #2 (id 're'), field 'pattern': bad regex '(': unclosed group",
        ),
        (
            r#"{"id":"big","pattern":"\\w{1000}\\w{1000}","match":"regex","operations":["read"]}"#,
            "rule #2 (id 'big'), field 'pattern': regex '\\w{1000}\\w{1000}' compiles to more than",
        ),
        (
            r#"{"id":"m","pattern":"x","match":"fuzzy","operations":["read"]}"#,
            "rule #2 (id 'm'), field 'match': unknown variant `fuzzy`, expected one of",
        ),
        (
            r#"{"id":"op","pattern":"x","match":"glob","operations":["chmod"]}"#,
            "rule #2 (id 'op'), field 'operations': unknown variant `chmod`, expected one of",
        ),
        (
            r#"{"id":"ex","pattern":"x","match":"glob","operations":["read"],"extra":1}"#,
            "rule #2 (id 'ex'): unknown field `extra`, expected one of",
        ),
        (
            r#"{"pattern":"x","match":"glob","operations":["read"]}"#,
            "rule #2 (no id): missing field `id`",
        ),
        (
            r#"{"id":"env","pattern":"y","match":"glob","operations":["read"]}"#,
            "rule #2 (id 'env'), field 'id': the id is used twice (also by rule #1)",
        ),
        (
            r#"{"id":"dbl","pattern":"a//b","match":"contains","operations":["read"]}"#,
            "rule #2 (id 'dbl'), field 'pattern': 'a//b' can never match",
        ),
        ("7", "rule #2: a rule is an object, not a number"),
    ];
    for (second, want) in cases {
        let file = rules_file(&env, &format!("{rule},{second}"));
        let out = fs(&args![&root, "--rules", &file]);
        assert_eq!(out.code, Some(2), "{second}\n{}", out.stderr);
        let want = format!("tuls: error: rules file '{}': {want}", file.display());
        assert!(out.stderr.starts_with(&want), "{second}\n{}", out.stderr);
        assert!(!out.stderr.contains("pattern 0"), "{}", out.stderr);
    }
}

/// Issue 33, item 5: a rule that does nothing (the same as another, or a
/// weaker one where another hides the same paths) starts, with a warning
/// naming it (by id and place in the rules file, by flag and pattern).
#[test]
fn a_rule_that_does_nothing_warns_naming_it() {
    let env = TestEnv::new();
    let root = env.root();
    let file = rules_file(
        &env,
        r#"{"id":"env","pattern":".env","match":"glob","operations":["read"]},
           {"id":"lock","pattern":"/Cargo.lock","match":"exact","operations":["write"]},
           {"id":"env-again","pattern":".env","match":"glob","operations":["read"]},
           {"id":"env-ro","pattern":".env","match":"glob","operations":["write"]},
           {"id":"lock-prefix","pattern":"Cargo.lock","match":"prefix","operations":["delete"]}"#,
    );
    let out = fs(&args![
        &root,
        "--rules",
        &file,
        "--hide",
        "secrets",
        "--hide",
        "secrets",
        "--read-only-path",
        "secrets"
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let f = format!("rules file '{}'", file.display());
    for want in [
        format!("tuls: warn: path rules: {f}: rule #3 (id 'env-again') does nothing: {f}: rule #1 (id 'env') already hides the same paths"),
        format!("tuls: warn: path rules: {f}: rule #4 (id 'env-ro') does nothing: {f}: rule #1 (id 'env') already hides the same paths"),
        format!("tuls: warn: path rules: {f}: rule #5 (id 'lock-prefix') does nothing: {f}: rule #2 (id 'lock') already makes the same paths read-only"),
        "tuls: warn: path rules: --hide 'secrets' does nothing: --hide 'secrets' already hides the same paths".to_owned(),
        "tuls: warn: path rules: --read-only-path 'secrets' does nothing: --hide 'secrets' already hides the same paths".to_owned(),
    ] {
        assert!(
            out.stderr.lines().any(|l| l == want),
            "no line {want:?} in:\n{}",
            out.stderr
        );
    }
    assert_eq!(
        out.stderr.matches("does nothing").count(),
        5,
        "{}",
        out.stderr
    );
}
