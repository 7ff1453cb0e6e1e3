//! Landlock self-confinement: a second, independent kernel wall.
//!
//! Owns: restricting the process so the kernel refuses every filesystem
//! access outside the roots (and every write, when no write tool is
//! enabled), and setting `no_new_privs`. Must run after the roots are opened
//! and before any thread starts: this kernel's Landlock ABI restricts only
//! the calling thread and its future children.
//! May touch: the root handles (as rule anchors).

#[cfg(target_os = "linux")]
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus,
};

use crate::fs::roots::Root;

/// What confinement is in force.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// Landlock is enforced (fully or partially, as the kernel allows).
    Active {
        /// "full" or "partial".
        enforcement: &'static str,
        /// Whether the roots are read-only.
        read_only: bool,
    },
    /// The kernel has no Landlock.
    Unavailable,
    /// The platform has no Landlock (macOS).
    Unsupported,
    /// `--no-landlock` was given.
    Disabled,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Active {
                enforcement,
                read_only,
            } => write!(
                f,
                "active ({enforcement}; roots {})",
                if *read_only {
                    "read-only"
                } else {
                    "read-write"
                }
            ),
            Status::Unavailable => write!(f, "unavailable on this kernel; running without it"),
            Status::Unsupported => write!(f, "not available on this platform; running without it"),
            Status::Disabled => write!(f, "disabled by --no-landlock"),
        }
    }
}

/// Landlock exists only on Linux.
#[cfg(not(target_os = "linux"))]
pub fn restrict(
    _roots: &[&Root],
    _read_only: bool,
    _journal: Option<&cap_std::fs::Dir>,
) -> Result<Status, String> {
    Ok(Status::Unsupported)
}

/// Restricts the calling thread (and every thread it starts later) to the
/// roots. `read_only` grants only read access beneath them. The undo
/// journal's directory, when there is one, gets its own rule (full access:
/// the writer renames old files into it).
#[cfg(target_os = "linux")]
pub fn restrict(
    roots: &[&Root],
    read_only: bool,
    journal: Option<&cap_std::fs::Dir>,
) -> Result<Status, String> {
    let abi = ABI::V6;
    let all = AccessFs::from_all(abi);
    let grant = if read_only {
        AccessFs::from_read(abi)
    } else {
        all
    };
    let mut created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(|e| e.to_string())?
        .create()
        .map_err(|e| e.to_string())?;
    for root in roots {
        created = created
            .add_rule(PathBeneath::new(root.dir.as_ref(), grant))
            .map_err(|e| e.to_string())?;
    }
    if let Some(dir) = journal.filter(|_| !read_only) {
        created = created
            .add_rule(PathBeneath::new(dir, all))
            .map_err(|e| e.to_string())?;
    }
    let status = created.restrict_self().map_err(|e| e.to_string())?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Status::Active {
            enforcement: "full",
            read_only,
        },
        RulesetStatus::PartiallyEnforced => Status::Active {
            enforcement: "partial",
            read_only,
        },
        RulesetStatus::NotEnforced => Status::Unavailable,
    })
}

/// Sets `no_new_privs` (Landlock sets it too; this covers `--no-landlock`).
/// Linux only; macOS has no such flag.
#[cfg(not(target_os = "linux"))]
pub fn no_new_privs() {}

/// Sets `no_new_privs` (Landlock sets it too; this covers `--no-landlock`).
#[cfg(target_os = "linux")]
pub fn no_new_privs() {
    if let Err(e) = rustix::thread::set_no_new_privs(true) {
        tracing::warn!(error = %e, "could not set no_new_privs");
    }
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::disallowed_methods, clippy::disallowed_types)] // the test checks ambient access is refused
mod tests {
    use super::*;

    /// Runs `f` on a fresh thread that confines itself first (Landlock
    /// applies to the calling thread and its future children only, so the
    /// test harness's other threads stay free).
    fn confined<T: Send + 'static>(
        root: &std::path::Path,
        read_only: bool,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> (Status, T) {
        let root = crate::fs::roots::open(root).expect("open root");
        std::thread::spawn(move || {
            let status = restrict(&[&root], read_only, None).expect("restrict");
            (status, f())
        })
        .join()
        .expect("confined thread")
    }

    #[test]
    fn landlock_refuses_ambient_access_outside_the_roots() {
        let base = tempfile::tempdir().expect("tempdir");
        let root = base.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("in.txt"), "inside").unwrap();
        std::fs::write(base.path().join("canary.txt"), "outside").unwrap();
        let (r, b) = (root.clone(), base.path().to_owned());
        let (status, (inside, outside, etc, proc_self)) = confined(&root, false, move || {
            (
                std::fs::read_to_string(r.join("in.txt")),
                std::fs::read_to_string(b.join("canary.txt")),
                std::fs::read_to_string("/etc/hostname"),
                std::fs::read_to_string("/proc/self/status"),
            )
        });
        if !landlock_to_check(&status) {
            return;
        }
        assert_eq!(inside.expect("inside read works"), "inside");
        for (what, res) in [
            ("outside canary", outside),
            ("/etc/hostname", etc),
            ("/proc/self/status", proc_self),
        ] {
            let err = res.expect_err(what);
            assert_eq!(err.raw_os_error(), Some(13), "{what}: {err}");
        }
        // The unconfined harness thread still reads it: the test can fail.
        assert_eq!(
            std::fs::read_to_string(base.path().join("canary.txt")).unwrap(),
            "outside"
        );
    }

    #[test]
    fn read_only_roots_refuse_writes() {
        let base = tempfile::tempdir().expect("tempdir");
        let root = base.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("in.txt"), "inside").unwrap();
        let r = root.clone();
        let (status, (read, write, create)) = confined(&root, true, move || {
            (
                std::fs::read_to_string(r.join("in.txt")),
                std::fs::write(r.join("in.txt"), "changed"),
                std::fs::write(r.join("new.txt"), "new"),
            )
        });
        if !landlock_to_check(&status) {
            return;
        }
        assert_eq!(read.expect("read works"), "inside");
        assert_eq!(write.expect_err("write refused").raw_os_error(), Some(13));
        assert_eq!(create.expect_err("create refused").raw_os_error(), Some(13));
        assert_eq!(
            std::fs::read_to_string(root.join("in.txt")).unwrap(),
            "inside"
        );
        assert!(!root.join("new.txt").exists());
    }

    #[test]
    fn this_machine_has_landlock() {
        // CI sets TULS_REQUIRE_LANDLOCK=1 and runs on a Landlock kernel
        // (6.18, ABI 7): there, anything but Active means the ruleset is
        // built wrong. Elsewhere an unavailable Landlock is a skip.
        let base = tempfile::tempdir().expect("tempdir");
        let (status, ()) = confined(base.path(), false, || ());
        if landlock_to_check(&status) {
            assert!(matches!(status, Status::Active { .. }), "{status}");
        }
    }

    /// Whether a test has Landlock to check. When it is unavailable: with
    /// `TULS_REQUIRE_LANDLOCK=1` (CI) the test fails, otherwise it skips,
    /// saying so.
    #[expect(
        clippy::print_stderr,
        reason = "a test helper: the skip is said on the test's stderr"
    )]
    fn landlock_to_check(status: &Status) -> bool {
        if matches!(status, Status::Active { .. }) {
            return true;
        }
        assert!(
            std::env::var_os("TULS_REQUIRE_LANDLOCK").is_none_or(|v| v != "1"),
            "Landlock is required (TULS_REQUIRE_LANDLOCK=1) but the ruleset is {status}"
        );
        eprintln!("SKIPPED: Landlock is {status}; nothing to prove here");
        false
    }
}
