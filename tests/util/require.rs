//! Tests that need something this machine may lack (Landlock, a second
//! filesystem) say so instead of passing silently.
//!
//! A test that cannot check what it is about calls [`require_or_skip`] and
//! returns. Outside CI that prints why the test was skipped. With
//! `TULS_REQUIRE_LANDLOCK=1` (which `.ci/run` sets) it fails the test instead,
//! so CI never reports a pass for a check that did not run.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::cli::run_cli;

/// The variable that turns a skip into a failure.
pub const REQUIRE_VAR: &str = "TULS_REQUIRE_LANDLOCK";

/// Whether `TULS_REQUIRE_LANDLOCK=1` is set: every check must run.
pub fn required() -> bool {
    std::env::var_os(REQUIRE_VAR).is_some_and(|v| v == "1")
}

/// `what` cannot be checked on this machine, because of `reason`. Fails the
/// test when [`REQUIRE_VAR`]`=1`; otherwise prints a `SKIPPED` line. The
/// caller returns from the test afterwards.
#[track_caller]
pub fn require_or_skip(what: &str, reason: &str) {
    assert!(
        !required(),
        "{what} cannot be checked on this machine: {reason} \
         ({REQUIRE_VAR}=1 makes this a failure; unset it to skip the check)"
    );
    eprintln!("SKIPPED {what}: {reason} (set {REQUIRE_VAR}=1 to make this a failure)");
}

/// The Landlock status the binary reports for a root (`--print-config`,
/// which applies the ruleset just as serving does), e.g. `active (full; roots
/// read-write)`.
pub fn landlock_status(root: &Path) -> String {
    let out = run_cli(
        &[
            "filesystem".as_ref(),
            "--print-config".as_ref(),
            root.as_os_str(),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.code, Some(0), "--print-config failed: {}", out.stderr);
    let config: serde_json::Value =
        serde_json::from_str(&out.stdout).expect("--print-config prints JSON");
    config["landlock"]
        .as_str()
        .expect("a landlock string in --print-config")
        .to_owned()
}

/// True when the server confines itself with Landlock on this machine;
/// otherwise [`require_or_skip`]s `what` and returns false.
#[track_caller]
pub fn require_landlock(what: &str, root: &Path) -> bool {
    let status = landlock_status(root);
    if status.starts_with("active") {
        return true;
    }
    require_or_skip(what, &format!("Landlock is not active here: {status}"));
    false
}

/// The device a path lives on (`st_dev`).
pub fn device(path: &Path) -> u64 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("stat {}: {e}", path.display()))
        .dev()
}

/// A directory on another filesystem than `near`, removed (and unmounted)
/// on drop.
pub struct OtherFs {
    dir: PathBuf,
    _tmp: tempfile::TempDir,
    mounted: bool,
}

impl OtherFs {
    /// A directory on a filesystem other than `near`'s: a fresh directory in
    /// `/dev/shm` (tmpfs) when that is another device, else (as root) a new
    /// tmpfs mounted for the test. `Err` says why there is none.
    pub fn new(near: &Path) -> Result<OtherFs, String> {
        let near_dev = device(near);
        let shm = Path::new("/dev/shm");
        let shm_note = if !shm.is_dir() {
            "there is no /dev/shm".to_owned()
        } else {
            match tempfile::Builder::new()
                .prefix("tuls-test-")
                .tempdir_in(shm)
            {
                Ok(tmp) => {
                    let dir = tmp.path().canonicalize().expect("canonical /dev/shm dir");
                    if device(&dir) != near_dev {
                        return Ok(OtherFs {
                            dir,
                            _tmp: tmp,
                            mounted: false,
                        });
                    }
                    format!("/dev/shm is on the same device as {}", near.display())
                }
                Err(e) => format!("cannot make a directory in /dev/shm: {e}"),
            }
        };
        if !rustix::process::geteuid().is_root() {
            return Err(format!("{shm_note}, and only root can mount a tmpfs"));
        }
        let tmp = tempfile::Builder::new()
            .prefix("tuls-test-mnt-")
            .tempdir()
            .expect("mount point");
        let dir = tmp.path().canonicalize().expect("canonical mount point");
        let mount = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16m,mode=0700", "tuls-test"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("{shm_note}, and `mount` did not run: {e}"))?;
        if !mount.status.success() {
            return Err(format!(
                "{shm_note}, and `mount -t tmpfs` failed: {}",
                String::from_utf8_lossy(&mount.stderr).trim()
            ));
        }
        let other = OtherFs {
            dir,
            _tmp: tmp,
            mounted: true,
        };
        if device(&other.dir) == near_dev {
            return Err(format!("{shm_note}, and a new tmpfs had the same device"));
        }
        Ok(other)
    }

    /// The directory on the other filesystem (canonical).
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for OtherFs {
    fn drop(&mut self) {
        if self.mounted {
            // Lazy, so a server still holding the root open cannot stop it.
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.dir)
                .status();
        }
    }
}

/// Whether `tool` can run; missing is a failure when `CI=1`, a skip otherwise.
pub fn have(tool: &str) -> bool {
    let ok = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let ci = std::env::var("CI").is_ok_and(|v| v == "1" || v == "true");
        assert!(
            !ci,
            "{tool} is missing and CI=1 (`apt-get install -y acl attr strace`)"
        );
        eprintln!("skipping: {tool} is not installed");
    }
    ok
}
