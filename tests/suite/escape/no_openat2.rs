//! Escapes where the kernel cannot resolve beneath a directory: every
//! `openat2` fails with `ENOSYS`, as on a kernel before 5.6, under an
//! emulator without the call (Debian 12's qemu-user 7.2, which CI's aarch64
//! step runs), or behind a seccomp filter. `strace` injects the failure into
//! the real binary. cap-std and the resolver then walk each path one
//! component at a time with `O_NOFOLLOW`; the server must say so at startup,
//! and the classes that `RESOLVE_BENEATH` would otherwise refuse in the
//! kernel (`..`, links out, a link out in the middle of a path, a chain)
//! must stay closed, for reads and for writes.

use serde_json::json;

use super::reads::{base_str, escape_class, setup};
use crate::util::{BIN_VAR, Options, Server, default_timeout, have, wait_until};

/// What the server prints at startup when `openat2` is missing.
pub(crate) const LINE: &str = "tuls: openat2: unavailable here";

/// The binary under `strace`, every `openat2` failing with `ENOSYS` (only
/// that call stops, through `--seccomp-bpf`; `-o /dev/null` keeps the trace
/// out of the server's stderr).
pub(crate) fn without_openat2() -> Options {
    Options::new().wrapper(&[
        "strace",
        "-f",
        "-qq",
        "-o",
        "/dev/null",
        "--seccomp-bpf",
        "-e",
        "trace=openat2",
        "-e",
        "inject=openat2:error=ENOSYS",
    ])
}

#[test]
fn escapes_stay_closed_without_openat2() {
    if !have("strace") {
        return;
    }
    let (env, forbidden) = setup();
    let base = base_str(&env);
    env.symlink("../outside/canary.txt", "link_rel");
    env.symlink(format!("{base}/outside/canary.txt"), "link_abs");
    env.symlink("../outside/odir", "odir_rel");
    env.symlink("../../outside", "a/b");
    // c1 -> c2 -> sub/c3 -> ../c4 -> ../outside
    env.symlink("c2", "c1");
    env.symlink("sub/c3", "c2");
    env.symlink("../c4", "sub/c3");
    env.symlink("../outside", "c4");
    let opts = without_openat2();

    // The server says it runs without openat2.
    let server = Server::start_with(&args![env.root()], opts.clone());
    assert!(
        wait_until(default_timeout(), || server.stderr().contains(LINE)),
        "no '{LINE}' startup line: {}",
        server.stderr()
    );
    // Writes through the same paths are refused; escape_class checks below
    // that the outside tree is byte for byte what it was.
    for p in [
        "../outside/new.txt",
        "link_rel",
        "link_abs",
        "odir_rel/new.txt",
        "a/b/new.txt",
        "c1/new.txt",
    ] {
        let r = server.call("write_file", json!({"path": p, "content": "PWNED"}));
        assert!(r.is_error, "write_file {p} was accepted: {}", r.raw);
    }
    drop(server);

    let denied: Vec<String> = [
        "..",
        "../outside/canary.txt",
        "sub/../../outside/odir",
        "a/../sub/../../outside",
        "link_rel",
        "link_abs",
        "odir_rel",
        "odir_rel/canary.txt",
        "a/b/canary.txt",
        "a/b/../root/hello.txt",
        "c1",
        "c1/canary.txt",
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
        &["link_rel", "link_abs", "odir_rel", "a/b", "c1"],
    );
}

/// The line appears exactly when `openat2` is missing for the binary. The
/// ground truth is this kernel's answer to the same call, so the test is
/// for the binary cargo built: under `TULS_TEST_BIN` (an emulator, with
/// its own answer) it checks nothing and says so; CI's qemu step does not
/// select it.
#[test]
fn startup_names_openat2_exactly_when_it_is_missing() {
    if std::env::var_os(BIN_VAR).is_some() {
        eprintln!("not checked under {BIN_VAR}: the emulator's openat2 is not this kernel's");
        return;
    }
    let env = crate::util::TestEnv::new();
    let missing = matches!(
        rustix::fs::openat2(
            rustix::fs::CWD,
            env.root(),
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
            rustix::fs::ResolveFlags::BENEATH,
        ),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM)
    );
    let server = Server::start(&args![env.root()]);
    // The line comes right after the landlock line, before the session.
    let _ = server.call("list_allowed_directories", json!({}));
    let stderr = server.stderr();
    assert!(stderr.contains("tuls: landlock: "), "{stderr}");
    assert_eq!(
        stderr.contains(LINE),
        missing,
        "openat2 missing: {missing}\n{stderr}"
    );
}
