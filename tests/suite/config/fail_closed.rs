//! Fail-closed configuration (issue 4): bad selectors, a configuration that
//! leaves no tool, bad roots, `--print-config`, and the startup lines.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{
    ALL_TOOLS, CliOutput, READ_TOOLS, Server, TestEnv, default_timeout, require_or_skip, run_cli,
    wait_until,
};

/// Every valid selector, in the order the error lists them.
const VALID: [&str; 20] = [
    "filesystem",
    "filesystem.read",
    "filesystem.write",
    "filesystem/read_file",
    "filesystem/read_text_file",
    "filesystem/read_media_file",
    "filesystem/read_multiple_files",
    "filesystem/write_file",
    "filesystem/append_file",
    "filesystem/edit_file",
    "filesystem/create_directory",
    "filesystem/list_directory",
    "filesystem/list_directory_with_sizes",
    "filesystem/directory_tree",
    "filesystem/move_file",
    "filesystem/copy_file",
    "filesystem/search_files",
    "filesystem/search_file_contents",
    "filesystem/get_file_info",
    "filesystem/list_allowed_directories",
];

/// `B/root` as the server spells it.
/// `tuls filesystem <args>`, stdin at EOF.
fn fs(args: &[OsString]) -> CliOutput {
    let mut full: Vec<OsString> = vec!["filesystem".into()];
    full.extend(args.iter().cloned());
    let out = run_cli(&full, default_timeout());
    assert!(
        !out.timed_out,
        "tuls hung: {args:?}\nstderr:\n{}",
        out.stderr
    );
    out
}

/// Runs `args` both as a startup and with `--print-config`, and checks both
/// stop with status 2, the same stderr, nothing on stdout; returns stderr.
#[track_caller]
fn assert_config_error(args: &[OsString]) -> String {
    let start = fs(args);
    assert_eq!(start.code, Some(2), "{args:?}\nstderr:\n{}", start.stderr);
    assert!(
        start.stdout.is_empty(),
        "{args:?}: stdout {:?}",
        start.stdout
    );
    assert!(
        start.stderr.starts_with("tuls: error: "),
        "{args:?}: {}",
        start.stderr
    );
    assert!(
        !start.stderr.contains("tuls: roots:"),
        "startup went on: {}",
        start.stderr
    );

    let mut with_print = args.to_vec();
    with_print.push("--print-config".into());
    let print = fs(&with_print);
    assert_eq!(print.code, Some(2), "{with_print:?}\n{}", print.stderr);
    assert!(
        print.stdout.is_empty(),
        "{with_print:?}: {:?}",
        print.stdout
    );
    assert_eq!(
        print.stderr, start.stderr,
        "--print-config must fail exactly as startup does"
    );
    start.stderr
}

#[test]
fn every_kind_of_bad_selector_stops_startup_with_status_2_and_the_valid_list() {
    let env = TestEnv::new();
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("filesystem.exec", "unknown capability 'exec'"),
        ("filesystem.Read", "did you mean 'filesystem.read'"),
        ("filesystem.READ_X", "unknown capability 'READ_X'"),
        ("filesystem.*", "'filesystem' selects every tool"),
        ("filesystem/nope", "unknown tool 'nope'"),
        ("filesystem/read_files", "unknown tool 'read_files'"),
        ("filesystem/move_file/", "unknown tool 'move_file/'"),
        ("filesystem//move_file", "unknown tool '/move_file'"),
        ("filesystem/", "no tool name"),
        ("filesystem.", "no capability"),
        ("FILESYSTEM.read", "did you mean 'filesystem.read'"),
        ("Filesystem", "did you mean 'filesystem'"),
        (" filesystem.read", "whitespace"),
        ("filesystem.read ", "whitespace"),
        ("filesystem.read\t", "whitespace"),
        ("fs.read", "malformed"),
        ("read", "malformed"),
        ("filesystem:read", "malformed"),
        ("move_file", "malformed"),
        ("fs.read", "did you mean 'filesystem.read'?"),
        ("read", "did you mean 'filesystem.read'?"),
        ("move_file", "did you mean 'filesystem/move_file'?"),
        ("filesystem.raed", "did you mean 'filesystem.read'?"),
        (
            "filesystem/mvoe_file",
            "did you mean 'filesystem/move_file'?",
        ),
        (
            "filesystem/read_txt_file",
            "did you mean 'filesystem/read_text_file'?",
        ),
        ("filesystem:read", "did you mean 'filesystem.read'?"),
        ("filesystem.read,filesystem.write", "repeat"),
    ];
    for (sel, reason) in cases {
        for flag in ["--allow", "--deny"] {
            let err = assert_config_error(&args![env.root(), flag, sel]);
            let line = err.lines().next().unwrap_or_default();
            assert!(
                line.contains(&format!("invalid selector '{sel}' for {flag}")),
                "{flag} {sel:?}: {err}"
            );
            assert!(line.contains(reason), "{flag} {sel:?}: {err}");
            let listed: Vec<String> = VALID.iter().map(|v| format!("  {v}")).collect();
            assert!(
                err.ends_with(&format!("\nvalid selectors:\n{}\n", listed.join("\n"))),
                "{flag} {sel:?}: the error must list every valid selector, one per line: {err}"
            );
        }
    }
    // One bad selector among good ones is not skipped.
    let err = assert_config_error(&args![
        env.root(),
        "--allow",
        "filesystem.read",
        "--allow",
        "filesystem/nope",
        "--deny",
        "filesystem/move_file",
    ]);
    assert!(err.contains("unknown tool 'nope'"), "{err}");
}

/// A comma list is not one selector: the error says to repeat the flag, and
/// spells the repeated flags out.
#[test]
fn a_comma_list_of_selectors_is_refused_with_repeat_the_flag() {
    let env = TestEnv::new();
    for flag in ["--allow", "--deny"] {
        let err = assert_config_error(&args![
            env.root(),
            flag,
            "filesystem.read,filesystem/move_file"
        ]);
        let line = err.lines().next().unwrap_or_default();
        assert!(
            line.ends_with(&format!(
                "one selector per flag: repeat {flag} for each ({flag} filesystem.read {flag} filesystem/move_file)"
            )),
            "{err}"
        );
        assert!(!line.contains("did you mean"), "{err}");
    }
}

/// A selector nothing is close to gets no guess.
#[test]
fn a_selector_far_from_every_valid_one_gets_no_suggestion() {
    let env = TestEnv::new();
    let err = assert_config_error(&args![env.root(), "--allow", "network.fetch"]);
    assert!(err.contains("malformed"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

/// `tuls DIR` (the reference server's shape) on an existing directory says
/// to put `filesystem` first; a word that is no directory gets clap's error
/// alone.
#[test]
fn tuls_dir_without_the_subcommand_suggests_tuls_filesystem_dir() {
    let env = TestEnv::new();
    let root = env.root_str();
    let out = run_cli(
        &[root.as_str(), "--allow", "filesystem.read"],
        default_timeout(),
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr
            .contains(&format!("unrecognized subcommand '{root}'")),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!(
            "tuls: '{root}' is a directory; to serve it, name the server first:\n  tuls filesystem {root} --allow filesystem.read\n"
        )),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("tuls: roots:"),
        "nothing is served: {}",
        out.stderr
    );

    let missing = format!("{root}/no-such-dir");
    let out = run_cli(&[missing.as_str()], default_timeout());
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("unrecognized subcommand"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("tuls filesystem"), "{}", out.stderr);
}

/// The same directory given twice (as written, or by another spelling) is
/// served, with a warning naming both spellings.
#[test]
fn a_dir_given_twice_gets_a_warning() {
    let env = TestEnv::new();
    let root = env.root_str();
    let out = fs(&args![env.root(), env.root()]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "tuls: warn: allowed directory '{root}' is given twice (also as '{root}'); once is enough"
        )),
        "{}",
        out.stderr
    );
    // Another spelling of the same directory is caught too (by inode).
    let other = format!("{root}/sub/..");
    std::fs::create_dir(env.root().join("sub")).expect("mkdir");
    let out = fs(&args![env.root(), &other]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("is given twice (also as "),
        "{}",
        out.stderr
    );
    // Distinct directories get no warning.
    let out = fs(&args![env.root(), env.root().join("sub")]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!out.stderr.contains("given twice"), "{}", out.stderr);
}

/// `~user/x` is not expanded (only `~` and `~/` are): the error says so
/// instead of only "does not exist".
#[test]
fn a_tilde_user_dir_says_tilde_user_is_not_expanded() {
    let env = TestEnv::new();
    let err = assert_config_error(&args!["~root/x", "--allow", "filesystem.read"]);
    assert!(
        err.contains("allowed directory '~root/x' does not exist"),
        "{err}"
    );
    assert!(
        err.contains("'~root' is not expanded (only a leading '~' or '~/' expands, to $HOME): give the full path"),
        "{err}"
    );
    // A `~/` path that is missing gets no such note.
    let err = assert_config_error(&args!["~/no-such-dir-for-tuls-tests", env.root()]);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!err.contains("not expanded"), "{err}");
}

#[test]
fn a_configuration_that_leaves_no_tool_stops_startup() {
    let env = TestEnv::new();
    for argv in [
        args![env.root(), "--deny", "filesystem"],
        args![
            env.root(),
            "--deny",
            "filesystem.read",
            "--deny",
            "filesystem.write"
        ],
        args![
            env.root(),
            "--allow",
            "filesystem.read",
            "--deny",
            "filesystem.read"
        ],
        args![
            env.root(),
            "--allow",
            "filesystem/move_file",
            "--deny",
            "filesystem.write"
        ],
    ] {
        let err = assert_config_error(&argv);
        assert!(err.contains("no tool is enabled"), "{argv:?}: {err}");
    }
}

#[test]
fn a_missing_root_or_a_root_that_is_a_file_stops_startup_naming_the_dir() {
    let env = TestEnv::new();
    env.write("file.txt", "x");
    let missing = env.base().join("no-such-dir");
    let missing_s = missing.to_str().expect("UTF-8");
    let file_s = env.path_str("file.txt");

    let err = assert_config_error(&args![missing]);
    assert!(
        err.contains(&format!("'{missing_s}' does not exist")),
        "{err}"
    );
    // Second of several, and with a valid policy.
    let err = assert_config_error(&args![env.root(), missing, "--allow", "filesystem.read"]);
    assert!(
        err.contains(&format!("'{missing_s}' does not exist")),
        "{err}"
    );

    let err = assert_config_error(&args![env.path("file.txt")]);
    assert!(
        err.contains(&format!("'{file_s}' is not a directory")),
        "{err}"
    );
    let err = assert_config_error(&args![env.root(), env.path("file.txt")]);
    assert!(
        err.contains(&format!("'{file_s}' is not a directory")),
        "{err}"
    );
}

#[test]
fn bad_roots_timeout_values_are_usage_errors() {
    let env = TestEnv::new();
    for bad in ["abc", "-1", "3601", "", "1.5"] {
        let out = fs(&args![env.root(), format!("--roots-timeout-secs={bad}")]);
        assert_eq!(out.code, Some(2), "{bad:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("--roots-timeout-secs"),
            "{}",
            out.stderr
        );
    }
}

fn print_config(args: &[OsString]) -> Value {
    let mut with_print = args.to_vec();
    with_print.push("--print-config".into());
    let started = Instant::now();
    let out = fs(&with_print);
    assert_eq!(out.code, Some(0), "{with_print:?}\nstderr:\n{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "--print-config must not wait for a client"
    );
    assert!(
        !out.stderr.contains("tuls: roots:"),
        "--print-config must not start a session: {}",
        out.stderr
    );
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {:?}", out.stdout))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect()
}

#[test]
fn print_config_prints_the_effective_configuration_as_json_and_exits_0() {
    let env = TestEnv::new();
    let second = env.mkdir("second");

    let review = print_config(&args![env.root(), second, "--allow", "filesystem.read"]);
    let keys: Vec<&str> = review
        .as_object()
        .expect("a JSON object")
        .keys()
        .map(String::as_str)
        .collect();
    for key in ["roots", "enabledTools", "limits", "landlock", "clientRoots"] {
        assert!(keys.contains(&key), "missing {key}: {review:#}");
    }
    assert_eq!(
        strings(&review["roots"]),
        [env.root_str(), env.path_str("second")]
    );
    assert_eq!(strings(&review["enabledTools"]), READ_TOOLS);
    assert_eq!(review["clientRoots"], true);
    assert!(review["landlock"].is_string(), "{review:#}");
    let limits = &review["limits"];
    assert_eq!(limits["rootsWaitSecs"], 10, "{limits:#}");
    assert_eq!(limits["maxReadBytes"], 32 * 1024 * 1024, "{limits:#}");
    assert!(limits["maxRequestBytes"].is_u64(), "{limits:#}");

    let implementation = print_config(&args![
        env.root(),
        "--allow",
        "filesystem.read",
        "--allow",
        "filesystem.write",
        "--deny",
        "filesystem/move_file",
        "--no-client-roots",
        "--max-read-bytes",
        "1234",
        "--roots-timeout-secs",
        "3",
    ]);
    let tools = strings(&implementation["enabledTools"]);
    assert_eq!(tools.len(), ALL_TOOLS.len() - 1, "{tools:?}");
    assert!(!tools.iter().any(|t| t == "move_file"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "write_file"), "{tools:?}");
    assert_eq!(implementation["clientRoots"], false);
    assert_eq!(implementation["limits"]["maxReadBytes"], 1234);
    assert_eq!(implementation["limits"]["rootsWaitSecs"], 3);

    let everything = print_config(&args![env.root()]);
    assert_eq!(strings(&everything["enabledTools"]), ALL_TOOLS);

    // The Landlock status reflects whether write tools are enabled (when
    // Landlock is active at all) and --no-landlock.
    let off = print_config(&args![env.root(), "--no-landlock"]);
    let off = off["landlock"].as_str().expect("landlock string");
    assert!(
        off.contains("disabled") && off.contains("--no-landlock"),
        "{off}"
    );
    let review = review["landlock"].as_str().expect("landlock string");
    let full = everything["landlock"].as_str().expect("landlock string");
    if review.starts_with("active") {
        assert!(review.contains("read-only"), "{review}");
        assert!(full.contains("read-write"), "{full}");
    } else {
        require_or_skip(
            "the Landlock status of read-only and read-write roots",
            &format!("Landlock is not active here: {review}"),
        );
    }
}

#[test]
fn startup_prints_the_roots_tools_and_landlock_lines_on_stderr() {
    let env = TestEnv::new();
    let argv = args![env.root(), "--allow", "filesystem.read"];
    let landlock = print_config(&argv)["landlock"]
        .as_str()
        .expect("landlock string")
        .to_owned();

    let server = Server::start(&argv);
    let want = [
        format!("tuls: roots: {}", env.root_str()),
        format!("tuls: tools: {}", READ_TOOLS.join(", ")),
        format!("tuls: landlock: {landlock}"),
    ];
    let have_all = || {
        let stderr = server.stderr();
        want.iter().all(|w| stderr.lines().any(|l| l == w))
    };
    assert!(
        wait_until(default_timeout(), have_all),
        "expected lines {want:#?}\nstderr:\n{}",
        server.stderr()
    );
    // In that order, before anything else the server logs about the session.
    let stderr = server.stderr();
    let pos: Vec<usize> = want
        .iter()
        .map(|w| stderr.find(w.as_str()).expect("line present"))
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "order: {stderr}");

    // A session with every tool says so.
    let server = Server::start(&args![env.root()]);
    assert!(
        wait_until(default_timeout(), || {
            let all = format!("tuls: tools: {}", ALL_TOOLS.join(", "));
            server.stderr().lines().any(|l| l == all)
        }),
        "{}",
        server.stderr()
    );
}

/// Started by hand in a terminal, tuls says what it is and how to connect a
/// client, instead of looking hung; Ctrl-D (EOF before `initialize`) exits 0.
/// `script` gives the server a pseudo-terminal on stdin.
#[test]
fn a_terminal_on_stdin_gets_a_hint_and_eof_exits_cleanly() {
    let env = TestEnv::new();
    let cmd = format!(
        "{} filesystem {}",
        crate::util::bin().display(),
        env.root().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run script(1) from util-linux");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("this is an MCP server speaking JSON-RPC on stdin/stdout"),
        "{text}"
    );
    assert!(text.contains("claude mcp add"), "{text}");
    assert!(!text.contains("error"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");

    // Without a terminal (a client's pipe), no hint.
    let piped = crate::util::run_cli(
        &args!["filesystem", env.root()],
        std::time::Duration::from_secs(10),
    );
    assert!(
        !piped.stderr.contains("waiting for a client"),
        "{}",
        piped.stderr
    );
    assert_eq!(piped.code, Some(0), "{}", piped.stderr);
}
