//! Read-side escapes through special names and files: `/proc/self/root` and
//! `/proc/self/cwd` magic links, a FIFO (never blocks), and a NUL byte.

use super::*;

#[test]
fn proc_self_root_link() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    let root = env.root_str();
    env.symlink("/proc/self/root", "pr");
    env.symlink(format!("/proc/self/root{base}/outside"), "pr_out");
    env.symlink(format!("{}proc/self/root", "../".repeat(20)), "prel");
    env.symlink("/proc/self/fd", "pfd");
    env.symlink("/proc/self", "pself");
    let denied = vec![
        format!("/proc/self/root{base}/outside/canary.txt"),
        format!("/proc/self/root{base}/outside"),
        // Even an inside file, spelled through /proc, is not under a root.
        format!("/proc/self/root{root}/hello.txt"),
        "/proc/self/root".to_owned(),
        "/proc/thread-self/root/".to_owned(),
        "pr".to_owned(),
        format!("pr{base}/outside/canary.txt"),
        format!("pr{root}/hello.txt"),
        "pr_out".to_owned(),
        "pr_out/canary.txt".to_owned(),
        "prel".to_owned(),
        format!("prel{base}/outside/odir"),
        "pfd".to_owned(),
        "pfd/3".to_owned(),
        "pfd/4/..".to_owned(),
        "pself/root".to_owned(),
        "pself/cwd/canary.txt".to_owned(),
    ];
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["pr", "pr_out", "prel", "pfd", "pself"],
    );
    // A relative path is relative to the root, never to the process.
    let server = Server::start(&args![env.root()]);
    let p = "proc/self/root/etc/passwd";
    let r = server.call("read_text_file", json!({ "path": p }));
    assert_eq!(
        r.text,
        "Parent directory does not exist: proc/self/root/etc"
    );

    // A root spelled through /proc/self/root works, and still confines.
    let proc_root = format!("/proc/self/root{root}");
    let server = Server::start(&args![&proc_root, "--no-landlock"]);
    assert_eq!(
        server
            .call(
                "read_text_file",
                json!({"path": format!("{proc_root}/hello.txt")})
            )
            .text,
        HELLO
    );
    for p in [
        format!("{proc_root}/../outside/canary.txt"),
        format!("{proc_root}/pr{base}/outside/canary.txt"),
        format!("{proc_root}/prel{base}/outside"),
    ] {
        assert_denied(&server, &p, &forbidden, "proc-root");
    }
}

#[test]
fn proc_self_cwd_link() {
    let (env, forbidden) = setup();
    // The server's working directory is the outside directory.
    let opts = Options::new().current_dir(env.outside());
    env.symlink("/proc/self/cwd", "cwd");
    env.symlink(format!("{}proc/self/cwd", "../".repeat(20)), "cwdrel");
    env.symlink("/proc/thread-self/cwd", "tcwd");
    let denied: Vec<String> = [
        "/proc/self/cwd",
        "/proc/self/cwd/canary.txt",
        "/proc/self/cwd/odir",
        "/proc/thread-self/cwd/canary.txt",
        "cwd",
        "cwd/canary.txt",
        "cwd/odir",
        "cwdrel",
        "cwdrel/canary.txt",
        "tcwd/odir/canary.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &opts,
        &denied,
        &["cwd", "cwdrel", "tcwd"],
    );
    each_mode(&env, &[], &opts, |server, mode| {
        // Relative paths resolve against the first root, not the cwd.
        for (tool, op) in [("read_text_file", "open"), ("get_file_info", "stat")] {
            let r = server.call(tool, json!({"path": "canary.txt"}));
            assert_eq!(
                r.text,
                format!("ENOENT: no such file or directory, {op} 'canary.txt'"),
                "[{mode}] {tool}"
            );
        }
        let r = server.call("list_directory", json!({"path": "odir"}));
        assert_eq!(
            r.text, "ENOENT: no such file or directory, scandir 'odir'",
            "[{mode}]"
        );
        let r = server.call("list_directory", json!({"path": ""}));
        forbidden.check("list_directory", &json!({"path": ""}), &r);
        assert!(r.text.contains("[FILE] hello.txt"), "[{mode}] {}", r.text);
    });
}

#[test]
fn fifo_does_not_block() {
    let (env, forbidden) = setup();
    env.mkfifo("pipe");
    env.mkfifo("sub/pipe2");
    env.symlink("pipe", "pipelink");
    env.symlink("../pipe", "sub/uplink");
    let _sock = std::os::unix::net::UnixListener::bind(env.path("sock")).expect("socket");
    // An outside FIFO behind a link: refused as an escape, not opened.
    let out_fifo = env.outside().join("ofifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&out_fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    env.symlink("../outside/ofifo", "ofifo_link");
    // A character device, where we may create one (as root, on Linux).
    #[cfg(target_os = "linux")]
    let have_dev = rustix::fs::mknodat(
        rustix::fs::CWD,
        env.path("null").as_path(),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    )
    .is_ok();
    #[cfg(not(target_os = "linux"))]
    let have_dev = false;

    let mut specials = vec![
        ("pipe", "FIFO"),
        ("sub/pipe2", "FIFO"),
        ("pipelink", "FIFO"),
        ("sub/uplink", "FIFO"),
        ("sock", "socket"),
    ];
    if have_dev {
        specials.push(("null", "character device"));
    }
    let before = env.snapshot_outside();
    let opts = Options::new().timeout(Duration::from_secs(10));
    each_mode(&env, &[], &opts, |server, mode| {
        let started = Instant::now();
        for (p, kind) in &specials {
            let refusal = format!("Refusing to open '{p}': it is a {kind}, not a regular file");
            for (tool, reply) in probe(server, p, &forbidden) {
                match tool {
                    // search_file_contents takes one file too, and refuses
                    // a FIFO as the read tools do.
                    "read_text_file" | "read_media_file" | "search_file_contents" => {
                        assert!(reply.is_error, "[{mode}] {tool} {p}");
                        assert_eq!(reply.text, refusal, "[{mode}] {tool} {p}");
                    }
                    "read_multiple_files" => {
                        assert!(
                            reply
                                .text
                                .starts_with(&format!("{p}: Error - {refusal}\n---\n")),
                            "[{mode}] {p}: {}",
                            reply.text
                        );
                    }
                    "get_file_info" => {
                        // stat only: fine, and not a file or a directory.
                        reply.assert_ok();
                        assert!(
                            reply.text.contains("\nisDirectory: false\nisFile: false\n"),
                            "[{mode}] {p}: {}",
                            reply.text
                        );
                    }
                    _ => {
                        assert_eq!(
                            reply.text,
                            format!("ENOTDIR: not a directory, scandir '{p}'"),
                            "[{mode}] {tool} {p}"
                        );
                    }
                }
            }
        }
        assert_denied(server, "ofifo_link", &forbidden, mode);
        // Many FIFO reads at once, then an ordinary read: nothing is stuck.
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    server
                        .call("read_text_file", json!({"path": "pipe"}))
                        .assert_error_contains("FIFO");
                });
            }
        });
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "hello.txt"}))
                .text,
            HELLO
        );
        // The walks list them without opening them.
        let tree = server.call("directory_tree", json!({"path": "."}));
        assert!(
            tree.text
                .contains("\"name\": \"pipe\",\n    \"type\": \"file\""),
            "{}",
            tree.text
        );
        let sizes = server.call("list_directory_with_sizes", json!({"path": "."}));
        assert!(
            sizes
                .text
                .contains(&format!("[FILE] {:<30} {:>10}", "pipe", "0 B"))
        );
        let found = server.call("search_files", json!({"path": ".", "pattern": "**/pipe*"}));
        assert_eq!(found.text, "./pipe\n./pipelink\n./sub/pipe2", "[{mode}]");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "[{mode}] special files took {:?}",
            started.elapsed()
        );
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}

#[test]
fn nul_byte() {
    let (env, forbidden) = setup();
    let root = env.root_str();
    let paths = [
        "hello.txt\0".to_owned(),
        "\0".to_owned(),
        "hello.txt\0../../outside/canary.txt".to_owned(),
        "sub\0/file.txt".to_owned(),
        format!("{root}/hello.txt\0"),
        format!("{root}\0/../outside"),
        "../outside/canary.txt\0".to_owned(),
    ];
    let before = env.snapshot_outside();
    each_mode(&env, &[], &Options::new(), |server, mode| {
        for p in &paths {
            let refusal = format!(
                "Invalid path '{}': contains a NUL byte",
                p.replace('\0', "\\0")
            );
            for (tool, reply) in probe(server, p, &forbidden) {
                assert!(
                    !reply.text.contains("HELLO-INSIDE") && !reply.text.contains("SUB-FILE"),
                    "[{mode}] {tool} {p:?} read through a NUL: {}",
                    reply.text
                );
                if tool == "read_multiple_files" {
                    assert!(
                        reply
                            .text
                            .starts_with(&format!("{p}: Error - {refusal}\n---\n")),
                        "[{mode}] {p:?}: {:?}",
                        reply.text
                    );
                } else {
                    assert!(reply.is_error, "[{mode}] {tool} {p:?}");
                    assert_eq!(reply.text, refusal, "[{mode}] {tool} {p:?}");
                }
            }
        }
        // A NUL in a glob is just a character that matches nothing.
        for args in [
            json!({"path": ".", "pattern": "hello.txt\0"}),
            json!({"path": ".", "pattern": "**", "excludePatterns": ["\0"]}),
        ] {
            let r = server.call("search_files", args.clone());
            forbidden.check("search_files", &args, &r);
        }
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "hello.txt"}))
                .text,
            HELLO,
            "[{mode}] still serving"
        );
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}
