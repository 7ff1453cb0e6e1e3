//! Whether a directory may be moved without changing what the path rules
//! make of anything beneath it.
//!
//! Owns: listing a directory tree (bounded) and matching every entry's path
//! before and after a move against the rules of both sides.
//! May touch: the directory being moved, opened beneath its parent handle
//! `O_NOFOLLOW`, and the directories beneath it.

use cap_std::fs::Dir;
use rustix::fs::{Mode, OFlags};

use crate::rules::Rules;

/// Whether moving the directory `name` in `parent` from the canonical rule
/// path `from` (under `from_rules`) to `to` (under `to_rules`) leaves what
/// the rules make of everything beneath it unchanged: a move must not carry
/// a protected or hidden path out from under its rule (`/a/secrets` moved
/// with `a`), or bring one under another. Looks at no more than `budget`
/// entries; a bigger tree is refused (`false`), as is one it cannot list.
pub fn move_keeps_rules(
    parent: &Dir,
    name: &str,
    (from_rules, from): (&Rules, &str),
    (to_rules, to): (&Rules, &str),
    budget: usize,
) -> bool {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(top) = rustix::fs::openat(parent, name, flags, Mode::empty()) else {
        return false;
    };
    let mut seen = 0usize;
    let mut stack = vec![(top, String::new())];
    let join = |base: &str, rel: &str| {
        if base.is_empty() {
            rel.to_owned()
        } else {
            format!("{base}/{rel}")
        }
    };
    while let Some((fd, rel)) = stack.pop() {
        let Ok((entries, more)) = crate::fs::walk::read_entries_fd(&fd, false, budget, "") else {
            return false;
        };
        seen += entries.len();
        if more || seen > budget {
            return false;
        }
        for e in entries {
            let sub = join(&rel, &e.name);
            let is_dir = e.kind == crate::fs::walk::Kind::Dir;
            let before = from_rules.effect(&join(from, &sub), Some(is_dir));
            let after = to_rules.effect(&join(to, &sub), Some(is_dir));
            if before != after {
                return false;
            }
            if is_dir {
                match rustix::fs::openat(&fd, e.os_name(), flags, Mode::empty()) {
                    Ok(child) => stack.push((child, sub)),
                    Err(_) => return false,
                }
            }
        }
    }
    true
}
