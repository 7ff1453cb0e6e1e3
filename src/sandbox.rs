//! Landlock self-confinement: a second, independent kernel wall.
//!
//! Owns: restricting the process so the kernel refuses every filesystem
//! access outside the roots (and every write, when no write tool is
//! enabled), and setting `no_new_privs`. Must run after the roots are opened
//! and before any thread starts: this kernel's Landlock ABI restricts only
//! the calling thread and its future children.
//! May touch: the root handles (as rule anchors).

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus,
};

use crate::roots::Root;

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
            Status::Disabled => write!(f, "disabled by --no-landlock"),
        }
    }
}

/// Restricts the calling thread (and every thread it starts later) to the
/// roots. `read_only` grants only read access beneath them.
pub fn restrict(roots: &[&Root], read_only: bool) -> Result<Status, String> {
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
pub fn no_new_privs() {
    if let Err(e) = rustix::thread::set_no_new_privs(true) {
        tracing::warn!(error = %e, "could not set no_new_privs");
    }
}
