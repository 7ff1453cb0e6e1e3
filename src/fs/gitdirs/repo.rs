//! Reading one repository: what its `.git` names, and what its configs make
//! git run or obey.
//!
//! Owns: for a `.git` at `top`: the git directory (a `.git` file's
//! `gitdir:`, relative to `top` or absolute; a `.git` link's target), its
//! `commondir` (worktrees), the configs git reads there (`config` of the
//! common directory, `config.worktree` of the git directory), the configs
//! they include (`include.path`, `includeIf.<condition>.path` whatever the
//! condition; relative to the including file; at most
//! [`MAX_GIT_INCLUDE_DEPTH`] deep and [`MAX_GIT_INCLUDES`] per search),
//! each `core.hooksPath` (relative to `top`, where hooks run; every value
//! seen, not only the last), and the in-root targets of hooks that are
//! links and of the links a git directory holds (`.git/hooks ->
//! ../shared-hooks`). Each becomes a path of [`GitPaths`] at its physical in-root
//! location (links followed within the root, `..` after them, as the
//! kernel opens it) and, where it differs, as spelled, so that moving or
//! replacing a link on the way is refused too.
//! May touch: the root `Dir`, for reading.

use std::io::Read;

use cap_std::fs::OpenOptionsExt;

use super::{Look, Place, Watched, join, stamp};
use crate::limits::{
    MAX_GIT_CONFIG_BYTES, MAX_GIT_HOOK_ENTRIES, MAX_GIT_INCLUDE_DEPTH, MAX_GIT_INCLUDES,
    MAX_SYMLINK_HOPS,
};
use crate::rules::git::GitPaths;
use crate::rules::gitconfig;

/// The hooks git knows (githooks(5)): where a hooks path is the worktree's
/// top or above it, only these names are protected there.
const HOOK_NAMES: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

/// Reads repositories into one [`GitPaths`], stamping what it reads.
pub(super) struct Reader<'a> {
    place: &'a Place,
    paths: GitPaths,
    stamps: Vec<Watched>,
    includes: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(place: &'a Place) -> Self {
        Reader {
            place,
            paths: GitPaths::default(),
            stamps: Vec::new(),
            includes: 0,
        }
    }

    pub(super) fn finish(self) -> (GitPaths, Vec<Watched>) {
        (self.paths, self.stamps)
    }

    /// Stamps `rel` (once), before it is read.
    pub(super) fn watch(&mut self, rel: &str) {
        self.watch_as(rel, Look::Whole);
    }

    pub(super) fn watch_as(&mut self, rel: &str, look: Look) {
        if !self.stamps.iter().any(|(p, l, _)| p == rel && *l == look) {
            let s = stamp(&self.place.dir, rel, look);
            self.stamps.push((rel.to_owned(), look, s));
        }
    }

    /// Stamps which object each leading directory of `raw` (a path as git
    /// spells it) is: a link swapped in on the way changes where git looks.
    fn watch_way(&mut self, raw: &str) {
        let Some(path) = normalize(raw) else { return };
        let mut at = String::new();
        let mut parts = path.split('/').peekable();
        while let Some(c) = parts.next() {
            if parts.peek().is_none() {
                break;
            }
            at = join(&at, c);
            self.watch_as(&at, Look::Identity);
        }
    }

    /// A symlink at a path the rules protect or hide (`.mcp.json ->
    /// config/mcp.json`, `.vscode -> shared/vscode`): its in-root target is
    /// matched under the link's name too ([`GitPaths::links`]), so it is
    /// protected under its own name as well, exemptions included
    /// (`tools/claude/commands` behind `.claude -> tools/claude` stays
    /// writable). The link and its target are stamped, so a change is seen
    /// before the next write.
    pub(super) fn link_target(&mut self, link: &str) {
        self.watch_as(link, Look::Whole);
        let segs: Vec<String> = link.split('/').map(str::to_owned).collect();
        let none = crate::rules::Rules::default();
        let at = crate::fs::resolve::Beneath {
            dir: &self.place.dir,
            prefix: "",
            rules: &none,
        };
        let Ok(r) = crate::fs::resolve::resolve(
            at,
            &segs,
            crate::fs::resolve::Final::Follow,
            link,
            crate::fs::resolve::Backend::Walk,
        ) else {
            return;
        };
        if r.void.is_some() || r.missing || r.local.is_empty() {
            return;
        }
        self.paths.link(r.local, link.to_owned());
    }

    /// Reads the repository whose `.git` is in `top`.
    pub(super) fn repo(&mut self, top: &str) {
        let dotgit = join(top, ".git");
        // Which object it is; a `.git` file's text is stamped when read.
        self.watch_as(&dotgit, Look::Identity);
        let Ok(md) = self.place.dir.symlink_metadata(&dotgit) else {
            return;
        };
        let shown = self.place.show(&dotgit);
        let gitdir = if md.is_file() {
            let Some(text) = self.read(&dotgit) else {
                return;
            };
            let line = text.lines().next().unwrap_or_default();
            let Some(v) = line.strip_prefix("gitdir:").map(str::trim) else {
                return;
            };
            let Some(raw) = self.locate(top, v) else {
                tracing::debug!("git: {shown} names a git directory outside the root");
                return;
            };
            self.protect(&raw, true, &format!("git: {shown} gitdir"));
            raw
        } else {
            // A directory is read-only by the built-in `.git` rule; a link
            // protects what it leads to under its own name too.
            if md.file_type().is_symlink() {
                self.protect_target(&dotgit, true, &format!("git: {shown} link"));
            }
            dotgit
        };
        let commondir = join(&gitdir, "commondir");
        self.watch(&commondir);
        let common = match self.read(&commondir) {
            Some(t) => match self.locate(&gitdir, t.trim()) {
                Some(raw) => {
                    let src = format!("git: {}", self.place.show(&commondir));
                    self.protect(&raw, true, &src);
                    raw
                }
                None => return,
            },
            None => gitdir.clone(),
        };
        // What a git directory holds as links (Android `repo` checkouts
        // link `hooks`, `config`, `objects` into the tree): their targets.
        self.links_in(&gitdir);
        if common != gitdir {
            self.links_in(&common);
        }
        self.config(&join(&common, "config"), top, 0);
        self.config(&join(&gitdir, "config.worktree"), top, 0);
        self.hooks(&join(&common, "hooks"), None);
    }

    /// Protects the in-root target of each link directly in the git
    /// directory `raw`, whole.
    fn links_in(&mut self, raw: &str) {
        let Some(real) = self.canonical(raw) else {
            return;
        };
        let list = if real.is_empty() {
            self.place.dir.entries()
        } else {
            self.place.dir.read_dir(&real)
        };
        let Ok(list) = list else { return };
        for (i, e) in list.flatten().enumerate() {
            if i >= MAX_GIT_HOOK_ENTRIES {
                tracing::warn!(
                    "git: more than {MAX_GIT_HOOK_ENTRIES} entries in {} \
                     (MAX_GIT_HOOK_ENTRIES); links among the others are not followed",
                    self.place.show(raw)
                );
                break;
            }
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                let src = format!("git: {} link", self.place.show(&join(raw, name)));
                self.protect_target(&join(&real, name), true, &src);
            }
        }
    }

    /// Reads the config at `raw` (as spelled) for the repository at `top`,
    /// `depth` includes deep.
    fn config(&mut self, raw: &str, top: &str, depth: usize) {
        self.watch_way(raw);
        let Some(text) = self.read(raw) else {
            return;
        };
        let shown = self.place.show(raw);
        let (entries, bad) = gitconfig::parse(text.as_bytes());
        if bad > 0 {
            tracing::debug!("git: {bad} lines of {shown} git would refuse");
        }
        let here = raw.rsplit_once('/').map_or("", |(d, _)| d);
        for e in entries {
            let Some(v) = e.value.as_deref().filter(|v| !v.is_empty()) else {
                continue;
            };
            let key = match (e.section.as_str(), e.subsection.as_deref(), e.key.as_str()) {
                ("core", None, "hookspath") => "core.hooksPath".to_owned(),
                ("include", None, "path") => "include.path".to_owned(),
                ("includeif", Some(cond), "path") => format!("includeIf.{cond}.path"),
                _ => continue,
            };
            let src = format!("git: {shown} {key}");
            if key == "core.hooksPath" {
                let Some(hooks) = self.locate(top, v) else {
                    continue;
                };
                self.watch_way(&hooks);
                self.hooks(&hooks, Some((top, &src)));
                continue;
            }
            let Some(inc) = self.locate(here, v) else {
                continue;
            };
            if depth + 1 > MAX_GIT_INCLUDE_DEPTH || self.includes >= MAX_GIT_INCLUDES {
                tracing::warn!(
                    "git: {shown} includes '{v}' past the limits (MAX_GIT_INCLUDE_DEPTH \
                     {MAX_GIT_INCLUDE_DEPTH}, MAX_GIT_INCLUDES {MAX_GIT_INCLUDES}); it is \
                     protected, what it includes is not read"
                );
                self.protect(&inc, false, &src);
                continue;
            }
            self.includes += 1;
            self.protect(&inc, false, &src);
            self.config(&inc, top, depth + 1);
        }
    }

    /// A hooks directory at `raw`: protected whole when a config names it
    /// (`named`: the worktree's top and the source), or only the hook names
    /// in it when it is the top or above it; and the target of each hook
    /// in it that is a link.
    fn hooks(&mut self, raw: &str, named: Option<(&str, &str)>) {
        let real = self.canonical(raw);
        let mut names_only = false;
        if let Some((top, src)) = named {
            let top_real = self.canonical(top).unwrap_or_else(|| top.to_owned());
            names_only = real.as_deref().is_some_and(|h| {
                h.is_empty() || top_real == h || top_real.starts_with(&format!("{h}/"))
            });
            if names_only {
                for n in HOOK_NAMES {
                    self.protect(&join(raw, n), false, src);
                }
            } else {
                self.protect(raw, true, src);
            }
        }
        // The top's times change with every file made there: there only
        // which directory it is.
        self.watch_as(
            raw,
            if names_only {
                Look::Identity
            } else {
                Look::Whole
            },
        );
        let Some(real) = real else {
            return;
        };
        let list = if real.is_empty() {
            self.place.dir.entries()
        } else {
            self.place.dir.read_dir(&real)
        };
        let Ok(list) = list else {
            return;
        };
        for (i, e) in list.flatten().enumerate() {
            if i >= MAX_GIT_HOOK_ENTRIES {
                tracing::warn!(
                    "git: more than {MAX_GIT_HOOK_ENTRIES} entries in the hooks directory {} \
                     (MAX_GIT_HOOK_ENTRIES); links among the others are not followed",
                    self.place.show(raw)
                );
                break;
            }
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if names_only && !HOOK_NAMES.contains(&name) {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                let hook = join(&real, name);
                let src = format!("git: {}", self.place.show(&join(raw, name)));
                self.protect_target(&hook, false, &src);
            }
        }
    }

    /// Protects `raw` as spelled (when it stays in the root) and where it
    /// physically leads.
    fn protect(&mut self, raw: &str, whole: bool, src: &str) {
        if let Some(lexical) = normalize(raw) {
            self.paths.add(lexical, whole, src);
        }
        self.protect_target(raw, whole, src);
    }

    /// Protects where `raw` physically leads (links followed in the root).
    fn protect_target(&mut self, raw: &str, whole: bool, src: &str) {
        if let Some(real) = self.canonical(raw) {
            self.paths.add(real, whole, src);
        }
    }

    /// A path git names (`v`, relative to `base` or absolute or `~/`), as
    /// a path beneath the root spelled as git would open it (not yet
    /// normalized); `None` when it is outside the root.
    fn locate(&self, base: &str, v: &str) -> Option<String> {
        let home = self.place.home.as_deref();
        if let (Some(rest), Some(home)) = (v.strip_prefix("~/"), home) {
            return self.place.inside(&format!("{home}/{rest}"));
        }
        if v.starts_with('/') {
            return self.place.inside(v);
        }
        if v.starts_with('~') || v.starts_with("%(prefix)") {
            return None;
        }
        Some(join(base, v))
    }

    /// The physical in-root path `raw` leads to: each link read and
    /// followed within the root (an absolute one only to a spelling of the
    /// root), `..` taken after it, the components past a missing one
    /// lexically. `None` when it leaves the root.
    fn canonical(&self, raw: &str) -> Option<String> {
        let dir = &self.place.dir;
        let mut out: Vec<String> = Vec::new();
        let mut pending: Vec<String> = raw.split('/').rev().map(str::to_owned).collect();
        let mut hops = 0;
        let mut missing = false;
        while let Some(c) = pending.pop() {
            match c.as_str() {
                "" | "." => continue,
                ".." => {
                    out.pop()?;
                    continue;
                }
                _ => {}
            }
            out.push(c);
            if missing {
                continue;
            }
            let at = out.join("/");
            match dir.symlink_metadata(&at) {
                Ok(md) if md.file_type().is_symlink() => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return None;
                    }
                    let target = dir.read_link_contents(&at).ok()?;
                    let target = target.to_str()?.to_owned();
                    out.pop();
                    if target.starts_with('/') {
                        out.clear();
                        let rel = self.place.inside(&target)?;
                        pending.extend(rel.split('/').rev().map(str::to_owned));
                    } else {
                        pending.extend(target.split('/').rev().map(str::to_owned));
                    }
                }
                Ok(_) => {}
                Err(_) => missing = true,
            }
        }
        Some(out.join("/"))
    }

    /// A regular file's text, at most [`MAX_GIT_CONFIG_BYTES`] (opened
    /// `O_NONBLOCK`, so a FIFO cannot stall startup or a write).
    fn read(&mut self, raw: &str) -> Option<String> {
        self.watch(raw);
        let mut opts = cap_std::fs::OpenOptions::new();
        opts.read(true).custom_flags(
            (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32,
        );
        let file = self.place.dir.open_with(raw, &opts).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(MAX_GIT_CONFIG_BYTES + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        if bytes.len() as u64 > MAX_GIT_CONFIG_BYTES {
            tracing::warn!(
                "git: {} is larger than {MAX_GIT_CONFIG_BYTES} bytes (MAX_GIT_CONFIG_BYTES) and \
                 was not read: what it names is not protected",
                self.place.show(raw)
            );
            return None;
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// `raw` with `.` and `..` taken lexically; `None` when it climbs above the
/// root.
fn normalize(raw: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for c in raw.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c),
        }
    }
    Some(out.join("/"))
}
