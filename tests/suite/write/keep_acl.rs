//! A replaced file keeps its access control (issue 11 §4): `write_file` and
//! `edit_file` copy every extended attribute (POSIX ACLs, `user.*`, ...) of
//! the old file onto the new one before the rename, never leave the new file
//! with an ACL the old one lacked, and keep dropping setuid/setgid. Ground
//! truth is `getfacl` / `getfattr` / `stat` on disk.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::util::{Server, TestEnv, have};

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().expect(cmd);
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Everything about a file's access that the tests compare: the ACL as
/// `getfacl` prints it, every xattr (all namespaces, hex values) and the
/// permission bits.
fn access(p: &Path) -> (String, String, u32) {
    let s = p.to_str().expect("utf-8");
    let acl = run("getfacl", &["--omit-header", "-n", "-p", s]);
    let xattrs = run(
        "getfattr",
        &["-d", "-m", "-", "-e", "hex", "--absolute-names", s],
    );
    let mode = std::fs::metadata(p).expect("stat").permissions().mode() & 0o7777;
    (acl, xattrs, mode)
}

#[test]
fn write_and_edit_keep_acl_and_xattrs() {
    if !(have("setfacl") && have("setfattr")) {
        return;
    }
    let env = TestEnv::new();
    let f = env.write("f.txt", "hello\n");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let fs = f.to_str().expect("utf-8");
    run("setfacl", &["-m", "user:4242:rw-,group::---,mask::rw-", fs]);
    run("setfattr", &["-n", "user.x", "-v", "y", fs]);
    let before = access(&f);
    assert!(before.0.contains("user:4242:rw-"), "{}", before.0);
    assert!(before.1.contains("user.x="), "{}", before.1);
    assert!(
        before.1.contains("system.posix_acl_access="),
        "{}",
        before.1
    );

    let server = Server::start(&args![env.root()]);
    server
        .call("write_file", json!({"path": fs, "content": "written\n"}))
        .assert_ok();
    assert_eq!(env.read_string("f.txt"), "written\n");
    assert_eq!(access(&f), before, "write_file changed the access control");

    server
        .call(
            "edit_file",
            json!({"path": fs, "edits": [{"oldText": "written", "newText": "edited"}]}),
        )
        .assert_ok();
    assert_eq!(env.read_string("f.txt"), "edited\n");
    assert_eq!(access(&f), before, "edit_file changed the access control");
    env.assert_canary_intact();
}

#[test]
fn a_default_acl_of_the_directory_does_not_widen_a_replaced_file() {
    if !(have("setfacl") && have("setfattr")) {
        return;
    }
    let env = TestEnv::new();
    let f = env.write("d/f.txt", "hello\n");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // Set after the file exists: new files in `d` get user 4243 rwx, `f` has no ACL.
    run(
        "setfacl",
        &[
            "-d",
            "-m",
            "user:4243:rwx",
            env.path("d").to_str().expect("utf-8"),
        ],
    );
    let before = access(&f);
    assert!(!before.0.contains("4243"), "{}", before.0);
    let server = Server::start(&args![env.root()]);
    server
        .call("write_file", json!({"path": f, "content": "new\n"}))
        .assert_ok();
    assert_eq!(env.read_string("d/f.txt"), "new\n");
    assert_eq!(access(&f), before, "the temp file's inherited ACL survived");
}

#[test]
fn setuid_and_setgid_are_dropped() {
    let env = TestEnv::new();
    let f = env.write("x.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o6755)).expect("chmod");
    let server = Server::start(&args![env.root()]);
    server
        .call(
            "write_file",
            json!({"path": f, "content": "#!/bin/sh\necho\n"}),
        )
        .assert_ok();
    let mode = std::fs::metadata(&f).expect("stat").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755);
}
