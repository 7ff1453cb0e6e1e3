//! The walks' hide check: what a walk checks each entry against, the
//! root's rules and the canonical path the walk starts from, with most
//! entries decided by their name alone (`rules::quick`).
//! May touch: nothing (no I/O).

use super::Rules;
use super::quick::Plan;

/// What a walk checks each entry against: a root's rules and the
/// canonical path (beneath its operator root) of the directory the walk
/// starts from. Only built when some rule may hide a path.
///
/// Most entries are decided by their name alone (see `rules::quick`): each
/// directory is planned once, and no entry's path is built unless a rule
/// that needs its path could match it.
#[derive(Debug, Clone)]
pub struct Hide {
    rules: std::sync::Arc<Rules>,
    base: String,
    /// The plan for the start directory's own entries.
    plan: Plan,
    /// Tells apart the walks sharing a thread's cache in [`Hide::hides`].
    id: u64,
}

impl Hide {
    /// Rules checked beneath `base`, or `None` when they hide nothing.
    pub fn new(rules: &std::sync::Arc<Rules>, base: String) -> Option<Self> {
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        rules.hides_any().then(|| Self {
            rules: rules.clone(),
            plan: rules.quick.plan(&base),
            base,
            id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// A checker for the entries of the directory at `dir_rel` (relative to
    /// the walk's start), which builds an entry's path, when it must, in one
    /// buffer.
    pub fn in_dir(&self, dir_rel: &str) -> HideDir<'_> {
        let mut buf = String::with_capacity(self.base.len() + dir_rel.len() + 64);
        buf.push_str(&self.base);
        if !dir_rel.is_empty() {
            if !buf.is_empty() {
                buf.push('/');
            }
            buf.push_str(dir_rel);
        }
        let plan = if dir_rel.is_empty() {
            self.plan.clone()
        } else {
            self.rules.quick.plan(&buf)
        };
        if !buf.is_empty() {
            buf.push('/');
        }
        let len = buf.len();
        HideDir {
            rules: &self.rules,
            plan,
            buf,
            len,
        }
    }

    /// Whether the entry at `rel` (relative to the walk's start; its parent
    /// was not hidden) is hidden.
    pub fn hides(&self, rel: &str, is_dir: bool) -> bool {
        let quick = &self.rules.quick;
        // Most calls are for a name (a listing's entries): a byte search
        // finds no `/` in it faster than `rsplit_once`'s char searcher.
        let split = rel
            .as_bytes()
            .iter()
            .rposition(|&b| b == b'/')
            .map(|i| (&rel[..i], &rel[i + 1..]));
        if !self.rules.quick_decides() {
            return self.full(rel, is_dir);
        }
        let Some((dir, name)) = split else {
            if let Some(h) = quick.hides(
                &self.plan,
                || self.rules.hide_globs(),
                rel.as_bytes(),
                is_dir,
            ) {
                return h;
            }
            return self.full(rel, is_dir);
        };
        // The entries of a directory come one after another: the plan of
        // the last directory is kept per thread.
        thread_local! {
            static LAST: std::cell::RefCell<(u64, String, Option<Plan>)> =
                const { std::cell::RefCell::new((0, String::new(), None)) };
        }
        let decided = LAST.with(|last| {
            let Ok(mut last) = last.try_borrow_mut() else {
                return None;
            };
            let (id, at, plan) = &mut *last;
            if *id != self.id || at != dir || plan.is_none() {
                *id = self.id;
                at.clear();
                at.push_str(dir);
                let mut full = String::with_capacity(self.base.len() + dir.len() + 1);
                full.push_str(&self.base);
                if !full.is_empty() {
                    full.push('/');
                }
                full.push_str(dir);
                *plan = Some(quick.plan(&full));
            }
            plan.as_ref()
                .and_then(|p| quick.hides(p, || self.rules.hide_globs(), name.as_bytes(), is_dir))
        });
        decided.unwrap_or_else(|| self.full(rel, is_dir))
    }

    /// The full check of the entry at `rel`.
    fn full(&self, rel: &str, is_dir: bool) -> bool {
        if self.base.is_empty() {
            return self.rules.hides_entry(rel, is_dir);
        }
        thread_local! {
            static BUF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        BUF.with(|b| {
            let Ok(mut buf) = b.try_borrow_mut() else {
                return self
                    .rules
                    .hides_entry(&format!("{}/{rel}", self.base), is_dir);
            };
            buf.clear();
            buf.push_str(&self.base);
            buf.push('/');
            buf.push_str(rel);
            self.rules.hides_entry(&buf, is_dir)
        })
    }
}

/// [`Hide`] for the entries of one directory.
#[derive(Debug)]
pub struct HideDir<'a> {
    rules: &'a Rules,
    plan: Plan,
    buf: String,
    len: usize,
}

impl HideDir<'_> {
    /// Whether the entry `name` of this directory is hidden.
    pub fn hides(&mut self, name: &str, is_dir: bool) -> bool {
        self.hides_bytes(name.as_bytes(), is_dir)
    }

    /// [`HideDir::hides`] of a name as the directory gives it (one that is
    /// not UTF-8 is matched as its lossy spelling): most names are decided
    /// without a UTF-8 check or a copy.
    pub fn hides_bytes(&mut self, name: &[u8], is_dir: bool) -> bool {
        if self.rules.quick_decides()
            && let Some(h) =
                self.rules
                    .quick
                    .hides(&self.plan, || self.rules.hide_globs(), name, is_dir)
        {
            return h;
        }
        self.buf.truncate(self.len);
        self.buf.push_str(&String::from_utf8_lossy(name));
        self.rules.hides_entry(&self.buf, is_dir)
    }
}
