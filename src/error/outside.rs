//! Why a path lies outside every allowed directory, in words that name
//! nothing beyond the path as given.
//!
//! Owns: [`Outside`], the reason an [`super::Error::OutsideRoots`] carries,
//! and its wording. The resolver decides the reason (the scope for a path
//! as written, the walk for a symbolic link); this file only words it. No
//! reason names a root the session cannot see, a link's target, or
//! anything outside the roots; and none is given for a path a rule hides
//! (the resolver stops there first, as at a missing name).
//! May touch: nothing (no I/O).

use std::fmt;

/// Why a path is refused as outside every allowed directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outside {
    /// The path as written lies outside every allowed directory (an
    /// absolute path under none, or `..` above one). Worded as the
    /// reference words it, with no reason added.
    Path,
    /// The path as written lies inside a directory the operator serves,
    /// but outside every root the MCP client set for the session
    /// (`roots/list`): the client's roots exclude it.
    ClientRoots {
        /// The tool that lists the directories open to the session (named
        /// by the tool table, passed in).
        lister: &'static str,
    },
    /// The path goes through a symbolic link that is absolute, or whose
    /// target leads outside the allowed directory it lies in (tuls follows
    /// only relative links that stay inside).
    Link,
}

impl fmt::Display for Outside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outside::Path => Ok(()),
            Outside::ClientRoots { lister } => write!(
                f,
                ". It lies in a directory this server serves, but the MCP client's roots exclude it: the client set narrower roots for this session. {lister} shows the directories open to it"
            ),
            Outside::Link => f.write_str(
                ". It goes through a symbolic link that is absolute or leads outside its allowed directory; tuls follows only relative links that stay inside. Use a path inside an allowed directory instead",
            ),
        }
    }
}
