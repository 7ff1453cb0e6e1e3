//! Whether a directory may be moved without changing what the path rules
//! make of anything beneath it.
//!
//! Owns: listing a directory tree (bounded) and matching every entry's path
//! before and after a move against the rules of both sides.
//! May touch: the directory being moved, opened beneath its parent handle
//! `O_NOFOLLOW`, and the directories beneath it.

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

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
        let Ok(mut dir) = rustix::fs::Dir::read_from(&fd) else {
            return false;
        };
        while let Some(entry) = dir.read() {
            let Ok(entry) = entry else {
                return false;
            };
            let raw = entry.file_name();
            if raw.to_bytes() == b"." || raw.to_bytes() == b".." {
                continue;
            }
            seen += 1;
            if seen > budget {
                return false;
            }
            let mut ft = entry.file_type();
            if ft == FileType::Unknown {
                match rustix::fs::statat(&fd, raw, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => ft = FileType::from_raw_mode(st.st_mode),
                    Err(_) => return false,
                }
            }
            let sub = join(&rel, &String::from_utf8_lossy(raw.to_bytes()));
            let is_dir = ft == FileType::Directory;
            let before = from_rules.effect(&join(from, &sub), Some(is_dir));
            let after = to_rules.effect(&join(to, &sub), Some(is_dir));
            if before != after {
                return false;
            }
            if is_dir {
                match rustix::fs::openat(&fd, raw, flags, Mode::empty()) {
                    Ok(child) => stack.push((child, sub)),
                    Err(_) => return false,
                }
            }
        }
    }
    true
}
