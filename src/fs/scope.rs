//! Turning a client path into (root handle, relative path): the one resolver.
//!
//! Owns: picking the root a path names and splitting off the part the kernel
//! resolves beneath it. Containment is never decided here by string: once the
//! root is picked, every operation goes through that root's `Dir`, and
//! `openat2(RESOLVE_BENEATH)` refuses whatever leaves it. The string work is
//! limited to whole-component root selection and to refusing, early and with
//! a clear message, a `..` that lexically climbs above the root (which also
//! closes the `fstatat(root, "..")` metadata hole).
//!
//! The path reaches the kernel as given: no trimming, no quote stripping, no
//! percent-decoding, no Unicode normalization, no `~` expansion. Repeated
//! slashes are collapsed, which the kernel does too.
//!
//! Each tool call resolves against one [`Snapshot`] of the roots, taken
//! when the call starts: a change of client roots during the call does not
//! affect it. The snapshot tells the call's recorder where each path it
//! resolves is, when a recorder asks ([`crate::fs::record::Recorder::paths`]:
//! the audit note).
//!
//! A resolved path is a [`Target`] (in `target`, with what may be done
//! through it).
//!
//! May touch: the root handles, to open directories beneath them
//! ([`Target::open_dir`], the one way to open a directory a client names).

use std::sync::{Arc, RwLock};

use crate::error::{Error, Outside, Result};
use crate::fs::record::{Recorder, Recorders};
use crate::fs::resolve::{self, Backend, Final};
use crate::fs::roots::Root;

mod target;

pub use crate::fs::roots::still_reached;
pub use target::{Start, Target, join_display};

/// What a call may do through the paths it resolves, set once per call
/// from its tool's capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Intent {
    /// Anything, writes included: every path takes the walk backend
    /// ([`resolve::Backend::Walk`]), in every root.
    #[default]
    Any,
    /// Reads only. In a root whose rules hide nothing (the built-in rules
    /// only make paths read-only, which changes nothing for a read), a path
    /// takes the kernel backend ([`resolve::Backend::Kernel`]), where the
    /// kernel has `openat2`; else the walk.
    /// Such a target never reaches a write: the writer refuses it
    /// ([`Target::walked_for_write`]).
    Read,
}

/// The set of roots requests resolve against.
#[derive(Debug)]
pub struct Scope {
    cli: Arc<Vec<Arc<Root>>>,
    effective: RwLock<InForce>,
    max_path_bytes: usize,
    /// Whether the kernel resolves beneath a directory in one call
    /// (`openat2`), so that a read may skip the rule walk ([`Intent::Read`]).
    one_call: bool,
    /// Whether the `openat2` probe failed (Linux only).
    openat2_missing: bool,
    /// The tool that lists the roots in force, for the refusal of a path
    /// the client's roots exclude ([`Outside::ClientRoots`]).
    lister: &'static str,
}

/// The roots in force, and why there are none when there are none.
#[derive(Debug, Clone)]
struct InForce {
    roots: Arc<Vec<Arc<Root>>>,
    /// Whether the client's roots narrowed the operator's.
    narrowed: bool,
    /// Set when the client's roots left no root in force: the reason, in
    /// plain words, for every refusal and for `list_allowed_directories`.
    why_none: Option<Arc<str>>,
}

impl Scope {
    /// A scope over the operator's roots; `lister` is the tool that lists
    /// the roots in force (a refusal names it).
    pub fn new(cli: Vec<Root>, max_path_bytes: usize, lister: &'static str) -> Self {
        let cli: Vec<Arc<Root>> = cli.into_iter().map(Arc::new).collect();
        // Without `openat2` (a kernel before 5.6, an emulator, a seccomp
        // filter; and off Linux, or with the portable backend) cap-std walks
        // a path itself, and a directory swapped for a link and back under it
        // surfaces as `EINVAL` (its `readlinkat` of what is a directory
        // again); the rule walk words every such race as the missing path it
        // met, so reads keep it there.
        let openat2_missing = cli
            .first()
            .is_some_and(|r| crate::fs::sys::openat2_unavailable(&r.dir));
        let one_call =
            cfg!(all(target_os = "linux", not(feature = "portable"))) && !openat2_missing;
        let effective = RwLock::new(InForce {
            roots: Arc::new(cli.clone()),
            narrowed: false,
            why_none: None,
        });
        Self {
            cli: Arc::new(cli),
            effective,
            max_path_bytes,
            one_call,
            openat2_missing,
            lister,
        }
    }

    /// Whether the kernel refused `openat2` when the scope was made
    /// ([`crate::fs::sys::openat2_unavailable`], probed once, on the first
    /// root): startup says so.
    pub fn openat2_missing(&self) -> bool {
        self.openat2_missing
    }

    /// The operator's roots.
    pub fn cli_roots(&self) -> &[Arc<Root>] {
        &self.cli
    }

    /// The roots in force now (the CLI roots, or the client roots that lie
    /// beneath them), for one call.
    pub fn snapshot(&self) -> Snapshot {
        let now = crate::sync::read(&self.effective).clone();
        Snapshot {
            roots: now.roots,
            operator: now.narrowed.then(|| self.cli.clone()),
            lister: self.lister,
            why_none: now.why_none,
            max_path_bytes: self.max_path_bytes,
            intent: Intent::Any,
            one_call: self.one_call,
            recorder: Recorders::NONE,
        }
    }

    /// Replaces the roots in force; calls already running keep their
    /// snapshot.
    pub fn set_roots(&self, roots: Vec<Arc<Root>>) {
        let narrowed = roots.len() != self.cli.len()
            || roots
                .iter()
                .zip(self.cli.iter())
                .any(|(a, b)| !Arc::ptr_eq(a, b));
        *crate::sync::write(&self.effective) = InForce {
            roots: Arc::new(roots),
            narrowed,
            why_none: None,
        };
    }

    /// Leaves no root in force, for the reason `why` (plain words, shown to
    /// the client in every refusal); calls already running keep their
    /// snapshot.
    pub fn set_no_roots(&self, why: String) {
        *crate::sync::write(&self.effective) = InForce {
            roots: Arc::new(Vec::new()),
            narrowed: true,
            why_none: Some(why.into()),
        };
    }
}

/// The roots one call resolves against, fixed when the call starts.
#[derive(Debug, Clone)]
pub struct Snapshot {
    roots: Arc<Vec<Arc<Root>>>,
    /// The operator's roots, when the client's roots narrowed them: a path
    /// outside `roots` but inside these is one the client's roots exclude
    /// ([`Outside::ClientRoots`]).
    operator: Option<Arc<Vec<Arc<Root>>>>,
    /// See [`Scope`]'s field of that name.
    lister: &'static str,
    why_none: Option<Arc<str>>,
    max_path_bytes: usize,
    /// What the call may do through what it resolves.
    intent: Intent,
    /// See [`Scope`]'s field of that name.
    one_call: bool,
    /// The call's recorder, told where each path resolved is (when it asks).
    recorder: Recorders,
}

impl Snapshot {
    /// This snapshot, for a call that may only do what `intent` says.
    pub fn with_intent(mut self, intent: Intent) -> Self {
        self.intent = intent;
        self
    }

    /// This snapshot, telling `recorder` (the call's, as in its
    /// [`crate::fs::io::Io`]) where each path it resolves is, when the
    /// recorder asks ([`Recorder::paths`]); every path is then walked, a
    /// read's too, so that the place is the one the walk found.
    pub fn with_recorder(mut self, recorder: Recorders) -> Self {
        self.recorder = recorder;
        self
    }

    /// The roots of this snapshot.
    pub fn roots(&self) -> &[Arc<Root>] {
        &self.roots
    }

    /// Why no root is in force, when the client's roots left none.
    pub fn why_none(&self) -> Option<&str> {
        self.why_none.as_deref()
    }

    /// Resolves a client path against this snapshot's roots, and refuses it
    /// if its root was moved or replaced since startup
    /// ([`Root::check_in_place`]).
    pub fn resolve(&self, path: &str) -> Result<Target> {
        if let (true, Some(why)) = (self.roots.is_empty(), &self.why_none) {
            return Err(Error::NoRootInForce {
                path: path.to_owned(),
                why: why.to_string(),
            });
        }
        self.resolve_as(path, Final::Follow)
    }

    /// [`Snapshot::resolve`], keeping a final symlink as the link itself
    /// (for `move_file`, which moves links, not their targets).
    pub fn resolve_link(&self, path: &str) -> Result<Target> {
        self.resolve_as(path, Final::Link)
    }

    fn resolve_as(&self, path: &str, last: Final) -> Result<Target> {
        if let (true, Some(why)) = (self.roots.is_empty(), &self.why_none) {
            return Err(Error::NoRootInForce {
                path: path.to_owned(),
                why: why.to_string(),
            });
        }
        let mut t = match resolve_in(&self.roots, path, self.max_path_bytes) {
            Err(Error::OutsideRoots {
                path: given,
                why: Outside::Path,
            }) if self
                .operator
                .as_ref()
                .is_some_and(|op| client_excludes(op, &self.roots, path)) =>
            {
                return Err(Error::OutsideRoots {
                    path: given,
                    why: Outside::ClientRoots {
                        lister: self.lister,
                    },
                });
            }
            r => r?,
        };
        t.root.check_in_place(&t.given)?;
        let noted = self.recorder.paths();
        // A read in a root whose rules hide nothing: what the walk would
        // find (a read-only effect) changes nothing for it.
        if self.intent == Intent::Read && self.one_call && !t.root.rules.hides_any() && !noted {
            return Ok(t);
        }
        // git: a call that may write sees the repositories as they are now
        // (src/fs/gitdirs).
        if self.intent != Intent::Read {
            t.root.rules.git().refresh();
        }
        walk(&mut t, last)?;
        // A hidden path reads as missing to the agent; the operator's log
        // names the rule.
        if t.resolved.effect == crate::rules::Effect::Hidden
            && let Some(why) = t.why()
        {
            why.log(&t.given);
        }
        if noted {
            self.recorder
                .resolved(&t.root.place(&t.resolved.local, &t.given));
        }
        Ok(t)
    }
}

/// Resolves `t` with the walk backend ([`resolve::Backend::Walk`]): what
/// every write, and every read where rules may hide a path, goes through.
pub fn walk(t: &mut Target, last: Final) -> Result<()> {
    t.resolved = resolve::resolve(t.root.beneath(), &t.segs, last, &t.given, Backend::Walk)?;
    Ok(())
}

/// Resolves `path` against `roots` with the kernel backend (nothing is
/// looked up yet). Pure apart from reading the list.
pub fn resolve_in(roots: &[Arc<Root>], path: &str, max_path_bytes: usize) -> Result<Target> {
    let given = path.to_owned();
    if path.len() > max_path_bytes {
        return Err(Error::InvalidPath {
            path: shorten(path),
            reason: "longer than the path limit",
        });
    }
    if path.contains('\0') {
        return Err(Error::InvalidPath {
            path: path.replace('\0', "\\0"),
            reason: "contains a NUL byte",
        });
    }
    if is_windows_drive(path) {
        return Err(Error::WindowsPath {
            path: path.to_owned(),
        });
    }
    let trailing_slash = path.len() > 1 && path.ends_with('/');
    let segs: Vec<&str> = split(path);
    let (root, rest) = if path.starts_with('/') {
        pick_root(roots, &segs).ok_or_else(|| Error::OutsideRoots {
            path: given.clone(),
            why: Outside::Path,
        })?
    } else {
        let root = roots.first().ok_or_else(|| Error::OutsideRoots {
            path: given.clone(),
            why: Outside::Path,
        })?;
        (root.clone(), &segs[..])
    };
    let mut depth: usize = 0;
    for seg in rest {
        match *seg {
            "." => {}
            ".." => {
                depth = depth.checked_sub(1).ok_or_else(|| Error::OutsideRoots {
                    path: given.clone(),
                    why: Outside::Path,
                })?;
            }
            _ => depth += 1,
        }
    }
    let segs: Vec<String> = rest.iter().map(|s| (*s).to_owned()).collect();
    // The kernel backend looks nothing up until the path is used.
    let resolved = resolve::resolve(
        root.beneath(),
        &segs,
        Final::Follow,
        &given,
        Backend::Kernel,
    )?;
    Ok(Target {
        root,
        segs,
        trailing_slash: trailing_slash && !rest.is_empty(),
        given,
        resolved,
    })
}

/// Whether `path`, refused as outside `roots` (the client's, in force),
/// lies inside one of `operator`'s roots as written: `..` taken lexically,
/// a relative path under the first root in force, as it resolves. Decided
/// on the string alone (nothing is looked up, so it tells nothing of what
/// exists); a path another root in force contains lexically (`../b/x` with
/// roots `a` and `b`) is not said to be excluded.
fn client_excludes(operator: &[Arc<Root>], roots: &[Arc<Root>], path: &str) -> bool {
    let mut abs: Vec<&str> = Vec::new();
    let start: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        match roots.first() {
            Some(r) => split(&r.display),
            None => return false,
        }
    };
    for seg in start.into_iter().chain(split(path)) {
        match seg {
            "." => {}
            ".." => {
                if abs.pop().is_none() {
                    return false;
                }
            }
            s => abs.push(s),
        }
    }
    pick_root(operator, &abs).is_some() && pick_root(roots, &abs).is_none()
}

fn split(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

/// Picks the root whose spelling is the longest whole-component prefix.
fn pick_root<'a, 'b>(
    roots: &'a [Arc<Root>],
    segs: &'b [&'b str],
) -> Option<(Arc<Root>, &'b [&'b str])> {
    let mut best: Option<(usize, &'a Arc<Root>)> = None;
    for root in roots {
        for spelling in root.spellings() {
            let rsegs = split(spelling);
            if rsegs.len() <= segs.len()
                && rsegs.iter().zip(segs).all(|(a, b)| a == b)
                && best.is_none_or(|(n, _)| rsegs.len() > n)
            {
                best = Some((rsegs.len(), root));
            }
        }
    }
    best.map(|(n, root)| (root.clone(), segs.get(n..).unwrap_or(&[])))
}

fn is_windows_drive(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 2
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && (b.len() == 2 || b[2] == b'\\' || b[2] == b'/')
}

fn shorten(p: &str) -> String {
    format!("{}...", crate::text::fmt::cut(p, 64))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root named `display` (resolution here is pure; the handle is `/`).
    fn root(display: &str) -> Arc<Root> {
        let opened = crate::fs::roots::open(std::path::Path::new("/")).expect("open /");
        Arc::new(Root {
            display: display.to_owned(),
            resolved: None,
            dir: opened.dir,
            origin: opened.origin,
            rules: opened.rules,
            prefix: String::new(),
        })
    }

    fn rel(roots: &[Arc<Root>], p: &str) -> Result<(String, String)> {
        let t = resolve_in(roots, p, 4096)?;
        Ok((t.root.display.clone(), t.rel()))
    }

    #[test]
    fn picks_root_by_whole_components() {
        let roots = [root("/x/root"), root("/x/root2")];
        assert_eq!(
            rel(&roots, "/x/root/a").unwrap(),
            ("/x/root".into(), "a".into())
        );
        assert_eq!(
            rel(&roots, "/x/root2/a").unwrap(),
            ("/x/root2".into(), "a".into())
        );
        assert!(rel(&roots, "/x/root-evil/a").unwrap_err().is_outside());
        assert!(rel(&roots, "/x/root'/a").unwrap_err().is_outside());
        assert!(rel(&roots, "/x/root /a").unwrap_err().is_outside());
        assert!(rel(&roots, "/x").unwrap_err().is_outside());
        assert_eq!(rel(&roots, "/x/root").unwrap().1, ".");
        assert_eq!(rel(&roots, "/x//root///a/").unwrap().1, "a/");
    }

    #[test]
    fn relative_paths_use_the_first_root() {
        let roots = [root("/x/root"), root("/x/root2")];
        assert_eq!(
            rel(&roots, "a/b").unwrap(),
            ("/x/root".into(), "a/b".into())
        );
        assert_eq!(rel(&roots, "").unwrap().1, ".");
        assert_eq!(rel(&roots, ".").unwrap().1, ".");
    }

    #[test]
    fn climbing_dotdot_is_refused() {
        let roots = [root("/x/root")];
        assert!(rel(&roots, "..").unwrap_err().is_outside());
        assert!(rel(&roots, "/x/root/..").unwrap_err().is_outside());
        assert!(rel(&roots, "a/../../b").unwrap_err().is_outside());
        assert!(rel(&roots, "../root2/r.txt").unwrap_err().is_outside());
        assert_eq!(rel(&roots, "a/../b").unwrap().1, "a/../b");
    }

    #[test]
    fn odd_input_is_refused_or_passed_verbatim() {
        let roots = [root("/x/root")];
        assert!(matches!(
            rel(&roots, "a\0b"),
            Err(Error::InvalidPath { .. })
        ));
        assert!(rel(&roots, "C:\\Windows\\x").is_err());
        assert_eq!(rel(&roots, " 'a' ").unwrap().1, " 'a' ");
        assert_eq!(rel(&roots, "~/x").unwrap().1, "~/x");
        assert_eq!(rel(&roots, "a%2e%2e").unwrap().1, "a%2e%2e");
        assert!(resolve_in(&roots, &"a".repeat(5000), 4096).is_err());
        assert!(rel(&[], "a").unwrap_err().is_outside());
    }

    #[test]
    fn leaf_split() {
        let roots = [root("/x/root")];
        let t = resolve_in(&roots, "a/b/c", 4096).unwrap();
        assert_eq!(t.parent_and_leaf().unwrap(), ("a/b".into(), "c".into()));
        let t = resolve_in(&roots, "c", 4096).unwrap();
        assert_eq!(t.parent_and_leaf().unwrap(), (".".into(), "c".into()));
        assert!(
            resolve_in(&roots, "/x/root", 4096)
                .unwrap()
                .parent_and_leaf()
                .is_err()
        );
        assert!(
            resolve_in(&roots, "a/..", 4096)
                .unwrap()
                .parent_and_leaf()
                .is_err()
        );
        assert_eq!(
            resolve_in(&roots, "/x/root/a/./b", 4096).unwrap().display(),
            "/x/root/a/b"
        );
    }
}
