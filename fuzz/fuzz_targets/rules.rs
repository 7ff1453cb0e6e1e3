//! rules: random path rules and random paths over a tree full of in-root
//! symlinks, checked against an independent oracle.
//!
//! Input: the first two bytes pick the hide and read-only patterns (bit `i`
//! picks `PATTERNS[i]`); every later byte is a path token (`TOKENS`), joined
//! with `/`.
//!
//! Oracle: the path is resolved on a model of the tree, taken at setup with
//! `std::fs` (kinds and link texts), by a walk of its own (`..`, links
//! expanded, at most 40 hops, absolute links and climbing out are escapes);
//! the patterns are matched by a matcher of its own (basename, `*.ext`,
//! `**/name`, anchored exact: the shapes in `PATTERNS`) on every canonical
//! path the walk passes through, and on every other name the path reaches
//! its object by (at each link, the link's own path with the rest of the
//! path after it). Then, through `Scope::resolve`:
//! - an escape is refused (when resolved, or when used);
//! - a path that passes through a hidden one is unusable (no metadata);
//! - a read-only one refuses writes ([`Target::check_write`]);
//! - an existing path no rule touches is usable and writable (nothing is
//!   hidden or protected by mistake);
//! - the walks' quick look at the canonical path's last name (`Hide`)
//!   says what the full rule set says.

#![no_main]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use tuls::fs::scope::{Scope, Target};
use tuls::rules::{Effect, Hide, Matcher, Rule, Rules};

/// The pattern vocabulary (`.gitignore` syntax), in shapes the oracle's
/// matcher knows.
const PATTERNS: [&str; 8] = [
    "s", ".env", "*.txt", "/a/f.txt", "b", "**/k.txt", ".git", "/a/up",
];

/// Path tokens.
const TOKENS: [&str; 20] = [
    "a", "b", "s", ".env", ".git", "hooks", "config", "f.txt", "g.txt", "k.txt", "la", "ls",
    "lenv", "lgit", "up", "l2", ".", "..", "", "new",
];

#[derive(Debug, Clone)]
enum Node {
    Dir,
    File,
    Link(String),
}

struct Fx {
    _tmp: tempfile::TempDir,
    _root: PathBuf,
    model: HashMap<String, Node>,
    opened: tuls::fs::roots::Root,
    scopes: std::sync::Mutex<HashMap<(u8, u8), Arc<Scope>>>,
}

fn fixture() -> &'static Fx {
    static FX: OnceLock<Fx> = OnceLock::new();
    FX.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("root");
        for d in ["a", "b", "s", ".git/hooks"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        for f in ["a/f.txt", "b/g.txt", "s/k.txt", ".env", ".git/config"] {
            std::fs::write(root.join(f), "x").expect("write");
        }
        for (target, link) in [
            ("a", "la"),
            ("s", "ls"),
            (".env", "lenv"),
            (".git/hooks", "lgit"),
            ("..", "a/up"),
            ("../s/k.txt", "a/l2"),
            ("lloop", "lloop"),
            ("/etc", "b/abs"),
        ] {
            std::os::unix::fs::symlink(target, root.join(link)).expect("symlink");
        }
        let mut model = HashMap::new();
        scan(&root, "", &mut model);
        let opened = tuls::fs::roots::open(&root).expect("open root");
        Fx {
            _tmp: tmp,
            _root: root,
            model,
            opened,
            scopes: std::sync::Mutex::new(HashMap::new()),
        }
    })
}

fn scan(dir: &Path, rel: &str, model: &mut HashMap<String, Node>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let e = e.expect("entry");
        let name = e.file_name().into_string().expect("utf-8");
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let ft = e.file_type().expect("type");
        if ft.is_symlink() {
            let t = std::fs::read_link(e.path()).expect("readlink");
            model.insert(path, Node::Link(t.to_string_lossy().into_owned()));
        } else if ft.is_dir() {
            model.insert(path.clone(), Node::Dir);
            scan(&e.path(), &path, model);
        } else {
            model.insert(path, Node::File);
        }
    }
}

fn scope(fx: &Fx, hide: u8, ro: u8) -> Arc<Scope> {
    let mut scopes = fx.scopes.lock().expect("lock");
    if scopes.len() > 1024 {
        scopes.clear(); // bounded: each holds compiled rules
    }
    scopes
        .entry((hide, ro))
        .or_insert_with(|| {
            let mut rules = Vec::new();
            for (bits, effect) in [(hide, Effect::Hidden), (ro, Effect::ReadOnly)] {
                for (i, p) in PATTERNS.iter().enumerate() {
                    if bits & (1 << i) != 0 {
                        rules.push(Rule {
                            id: (*p).to_owned(),
                            source: "fuzz".to_owned(),
                            pattern: (*p).to_owned(),
                            matcher: Matcher::Glob((*p).to_owned()),
                            effect,
                            default: false,
                            position: None,
                        });
                    }
                }
            }
            // One root handle for every rule set (a handle per set would
            // run out of descriptors).
            let base = &fx.opened;
            let root = tuls::fs::roots::Root {
                display: base.display.clone(),
                resolved: base.resolved.clone(),
                dir: base.dir.clone(),
                origin: base.origin.clone(),
                rules: Arc::new(Rules::new(rules).expect("rules")),
                prefix: String::new(),
            };
            Arc::new(Scope::new(
                vec![root],
                4096,
                tuls::tools::list_allowed_directories::TOOL.name,
            ))
        })
        .clone()
}

/// The oracle's matcher: does pattern `p` match the canonical path `path`?
fn matches(p: &str, path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    if let Some(rest) = p.strip_prefix("**/") {
        base == rest
    } else if let Some(anchored) = p.strip_prefix('/') {
        path == anchored
    } else if let Some(ext) = p.strip_prefix('*') {
        base.ends_with(ext)
    } else {
        base == p
    }
}

/// Whether any pattern picked by `bits` matches `path` or a prefix of it.
fn covered(bits: u8, path: &str) -> bool {
    let comps: Vec<&str> = path.split('/').collect();
    (1..=comps.len()).any(|n| {
        let prefix = comps[..n].join("/");
        PATTERNS
            .iter()
            .enumerate()
            .any(|(i, p)| bits & (1 << i) != 0 && matches(p, &prefix))
    })
}

#[derive(Debug, PartialEq)]
enum Oracle {
    /// Escapes the root.
    Outside,
    /// Too many links, or a non-directory in the middle: unusable.
    Broken,
    /// The canonical path, whether it exists, every path passed through,
    /// and every other name the path reaches it by (at each link, the
    /// link's own path with the rest of the path after it).
    At(String, bool, Vec<String>, Vec<String>),
}

fn resolve(model: &HashMap<String, Node>, segs: &[&str]) -> Oracle {
    // tuls refuses a `..` that climbs above the root in the spelling itself.
    let mut depth = 0i32;
    for s in segs {
        match *s {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return Oracle::Outside;
        }
    }
    let mut pending: Vec<String> = segs.iter().rev().map(|s| (*s).to_owned()).collect();
    let mut stack: Vec<String> = Vec::new();
    let mut passed = Vec::new();
    let mut aliases = Vec::new();
    let mut hops = 0;
    while let Some(c) = pending.pop() {
        match c.as_str() {
            "" | "." => continue,
            ".." => {
                if stack.pop().is_none() {
                    return Oracle::Outside;
                }
                continue;
            }
            _ => {}
        }
        let mut path = stack.clone();
        path.push(c.clone());
        let joined = path.join("/");
        passed.push(joined.clone());
        match model.get(&joined) {
            None => {
                // Missing: the rest is lexical.
                let mut canon = path;
                for p in pending.iter().rev() {
                    match p.as_str() {
                        "" | "." => {}
                        ".." => {
                            canon.pop();
                        }
                        p => canon.push(p.to_owned()),
                    }
                }
                return Oracle::At(canon.join("/"), false, passed, aliases);
            }
            Some(Node::Dir) => stack.push(c),
            // A file is usable only as the very last component (`f.txt/`
            // and `f.txt/.` are not a directory).
            Some(Node::File) if pending.is_empty() => {
                return Oracle::At(joined, true, passed, aliases);
            }
            Some(Node::File) => return Oracle::Broken,
            Some(Node::Link(t)) => {
                hops += 1;
                if hops > 40 {
                    return Oracle::Broken;
                }
                if t.starts_with('/') {
                    return Oracle::Outside;
                }
                let mut alias = path.clone();
                let mut climbs = false;
                for p in pending.iter().rev() {
                    match p.as_str() {
                        "" | "." => {}
                        ".." => climbs |= alias.pop().is_none(),
                        p => alias.push(p.to_owned()),
                    }
                }
                if !climbs {
                    aliases.push(alias.join("/"));
                }
                pending.extend(t.split('/').rev().map(str::to_owned));
            }
        }
    }
    Oracle::At(stack.join("/"), true, passed, aliases)
}

fn check(fx: &Fx, hide: u8, ro: u8, segs: &[&str]) {
    let path = segs.join("/");
    if path.starts_with('/') {
        return; // absolute: another root's business
    }
    let scope = scope(fx, hide, ro);
    let got = scope.snapshot().resolve(&path);
    let want = resolve(&fx.model, segs);
    if tuls_fuzz::trace() {
        eprintln!("{hide:08b} {ro:08b} {path:?}: oracle {want:?}");
    }
    let usable = |t: &Target| t.metadata("stat").is_ok();
    match want {
        Oracle::Outside => {
            // Refused when resolved (with rules), or when used (without
            // rules, resolution is lexical and the kernel refuses).
            if let Ok(t) = &got {
                assert!(!usable(t), "{path:?} escaped");
            }
        }
        Oracle::Broken => {
            if let Ok(t) = &got {
                assert!(
                    !usable(t) || t.dir().is_err(),
                    "{path:?}: broken yet usable"
                );
            }
        }
        Oracle::At(canon, exists, passed, aliases) => {
            let names = || std::iter::once(&canon).chain(&aliases);
            let hidden =
                passed.iter().any(|p| covered(hide, p)) || names().any(|p| covered(hide, p));
            let Ok(t) = got else {
                panic!("{path:?} (canonical {canon:?}) was refused");
            };
            // The walks' quick look at an entry agrees with the full set.
            if let Some((parent, name)) = canon.rsplit_once('/').or(Some(("", canon.as_str())))
                && !name.is_empty()
            {
                let rules = &t.root.rules;
                for is_dir in [false, true] {
                    let want = rules.hides_entry(&canon, is_dir);
                    if let Some(h) = Hide::new(rules, parent.to_owned()) {
                        assert_eq!(h.hides(name, is_dir), want, "{canon:?} quick look");
                        assert_eq!(h.in_dir("").hides(name, is_dir), want, "{canon:?} in_dir");
                    }
                    if let Some((top, rest)) = canon.split_once('/')
                        && let Some(h) = Hide::new(rules, top.to_owned())
                    {
                        assert_eq!(h.hides(rest, is_dir), want, "{canon:?} from {top:?}");
                    }
                }
            }
            if hidden {
                assert!(!usable(&t), "{path:?} reaches hidden {canon:?}");
                assert!(
                    t.check_write("open").is_err(),
                    "{path:?}: hidden but writable"
                );
            } else if names().any(|p| covered(ro, p)) {
                assert!(
                    t.check_write("open").is_err(),
                    "{path:?}: {canon:?} is read-only"
                );
                if exists {
                    assert!(usable(&t), "{path:?}: read-only {canon:?} unreadable");
                }
            } else if exists {
                assert!(usable(&t), "{path:?}: {canon:?} hidden by mistake");
                assert!(
                    t.check_write("open").is_ok(),
                    "{path:?}: {canon:?} protected by mistake"
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [hide, ro, rest @ ..] = data else {
        return;
    };
    if rest.len() > 24 {
        return;
    }
    let segs: Vec<&str> = rest
        .iter()
        .map(|b| TOKENS[*b as usize % TOKENS.len()])
        .collect();
    check(fixture(), *hide, *ro, &segs);
});
