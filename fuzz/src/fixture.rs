//! The escape fixture: two roots full of symlinks that lead out, canaries
//! beside them, and the oracles.
//!
//! Layout (`<m>` is a random marker, fresh per process):
//!
//! ```text
//! <base>/                       tuls-fuzz-<pid>-*, outside (in /dev/shm if usable)
//!   far-<m>                     canary file
//!   w/                          the roots' parent, outside
//!     alias -> root             the first root is opened through this spelling
//!     root-sib/canary-<m>       a prefix sibling of `root`
//!     outside-<m>/canary-<m>    the canary
//!     outside-<m>/sub/canary2-<m>
//!     root/                     root 1: files, dirs and the symlinks below
//!     root2/                    root 2: r.txt, back -> ../root/file.txt, up -> ..
//! ```
//!
//! Symlinks in `root`: relative out (`rel_out`, `rel_out_dir`, `far_out`),
//! absolute out (`abs_out`, `etc`, `proc_root`, `proc_cwd`), absolute in
//! (`abs_in`, refused by cap-std too), chained out (`chain_a -> chain_b ->
//! chain_c -> out`), chained in (`chain_in_a -> chain_in_b -> file.txt`),
//! dangling out, in and absolute, loops (`loop_a <-> loop_b`, `self_loop`),
//! the prefix sibling (`sibling`), the other root (`cross`), an inside dir
//! link (`dir_link -> a`), `sub/up -> ..` and `sub/upup -> ../..`. With
//! `with_fifo`, also a FIFO (`fifo`).
//!
//! The canary content and the outside names carry the marker, so a reply
//! that contains either one came from outside, unless the fuzzer wrote it
//! there itself; [`Fixture::inside_contains`] tells the two apart.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::hash::BuildHasher;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tuls::fs::scope::Scope;

/// A set of `(st_dev, st_ino)` pairs.
pub type Inodes = HashSet<(u64, u64)>;

/// The fixture, built once per process.
#[derive(Debug)]
pub struct Fixture {
    _tmp: tempfile::TempDir,
    /// The temp dir holding everything.
    pub base: PathBuf,
    /// `<base>/w`, the roots' parent.
    pub work: PathBuf,
    /// The real directories of the two roots.
    pub roots: [PathBuf; 2],
    /// The first root's display spelling (`<base>/w/alias`).
    pub root_display: String,
    /// `outside-<m>`.
    pub outside_name: String,
    /// `canary-<m>`.
    pub canary_name: String,
    /// `far-<m>`.
    pub far_name: String,
    /// The canary content (the marker plus random hex).
    pub canary: String,
    /// The random marker in every outside name.
    pub marker: String,
    /// The scope over both roots, as tuls builds it.
    pub scope: Arc<Scope>,
    /// Inodes of each root's tree at setup (not following symlinks), by
    /// root index; the root directory itself included.
    pub inodes: [Inodes; 2],
    with_fifo: bool,
    snapshot: Snapshot,
    inside: Mutex<Snapshot>,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

impl Fixture {
    /// The process's fixture, created on first use. The first caller's
    /// `with_fifo` wins.
    pub fn shared(with_fifo: bool) -> &'static Fixture {
        FIXTURE.get_or_init(|| Fixture::create(with_fifo))
    }

    fn create(with_fifo: bool) -> Self {
        let parent = temp_parent();
        sweep_stale(&parent);
        let tmp = tempfile::Builder::new()
            .prefix(&format!("tuls-fuzz-{}-", std::process::id()))
            .tempdir_in(&parent)
            .expect("create temp dir");
        let base = fs::canonicalize(tmp.path()).expect("canonicalize temp dir");
        let marker = random_hex(1);
        let canary = format!("TULS-CANARY-{marker}-{}", random_hex(2));
        let outside_name = format!("outside-{marker}");
        let canary_name = format!("canary-{marker}");
        let far_name = format!("far-{marker}");
        let work = base.join("w");
        let roots = [work.join("root"), work.join("root2")];
        let fx_names = Names {
            work: work.clone(),
            outside: outside_name.clone(),
            canary: canary_name.clone(),
            far: far_name.clone(),
        };

        mkdir(&work);
        write(&base.join(&far_name), canary.as_bytes());
        let out = work.join(&outside_name);
        mkdir(&out.join("sub"));
        write(&out.join(&canary_name), canary.as_bytes());
        write(
            &out.join("sub").join(format!("canary2-{marker}")),
            canary.as_bytes(),
        );
        mkdir(&work.join("root-sib"));
        write(&work.join("root-sib").join(&canary_name), canary.as_bytes());
        link("root", &work.join("alias"));
        for r in &roots {
            mkdir(r);
        }
        populate(&roots, &fx_names, with_fifo);

        let r1 = tuls::fs::roots::open(&work.join("alias")).expect("open root 1");
        let r2 = tuls::fs::roots::open(&roots[1]).expect("open root 2");
        let root_display = r1.display.clone();
        assert_eq!(root_display, path_str(&work.join("alias")));
        assert_eq!(r1.resolved.as_deref(), Some(path_str(&roots[0]).as_str()));
        let scope = Arc::new(Scope::new(
            vec![r1, r2],
            tuls::limits::MAX_PATH_BYTES,
            tuls::tools::list_allowed_directories::TOOL.name,
        ));
        let inodes = [tree_inodes(&roots[0]), tree_inodes(&roots[1])];
        // The fixture must bite: followed naively (ambient std::fs), each of
        // these reaches the canary, or the other root.
        for naive in [
            "rel_out".to_owned(),
            format!("rel_out_dir/{canary_name}"),
            "far_out".to_owned(),
            "abs_out".to_owned(),
            "chain_a".to_owned(),
            "sibling".to_owned(),
            format!("sub/upup/{outside_name}/{canary_name}"),
        ] {
            let got = fs::read(roots[0].join(&naive)).expect("naive read of an escape link");
            assert_eq!(
                got,
                canary.as_bytes(),
                "fixture link {naive} misses the canary"
            );
        }
        let cross = fs::metadata(roots[0].join("cross")).expect("naive stat of cross");
        assert!(!inodes[0].contains(&(cross.dev(), cross.ino())));
        assert!(inodes[1].contains(&(cross.dev(), cross.ino())));
        let snapshot = Snapshot::take(&base, &roots);
        let inside = Mutex::new(Snapshot::take_inside(&roots));
        Self {
            _tmp: tmp,
            base,
            work,
            roots,
            root_display,
            outside_name,
            canary_name,
            far_name,
            canary,
            marker,
            scope,
            inodes,
            with_fifo,
            snapshot,
            inside,
        }
    }

    /// The index of the root a resolved target lies under, by display.
    pub fn root_index(&self, display: &str) -> usize {
        self.scope
            .cli_roots()
            .iter()
            .position(|r| r.display == display)
            .expect("a target's root is one of the scope's roots")
    }

    /// Whether anything inside the roots differs from the tree as last built
    /// (see [`Fixture::inside_now`]).
    pub fn inside_changed(&self) -> bool {
        let now = Snapshot::take_inside(&self.roots);
        *self.inside.lock().unwrap_or_else(|p| p.into_inner()) != now
    }

    /// The tree inside the roots now: names, kinds, inodes and modes, and
    /// the sizes and mtimes of everything but directories (a directory's
    /// mtime moves when a temp file comes and goes, with no net change).
    pub fn inside_now(&self) -> Snapshot {
        Snapshot::take_inside(&self.roots)
    }

    /// Empties both roots and builds their contents again. The root
    /// directories themselves (and so the open handles) stay.
    pub fn reset_roots(&self) {
        for r in &self.roots {
            for e in fs::read_dir(r).expect("read root") {
                let e = e.expect("root entry");
                let p = e.path();
                if e.file_type().expect("entry type").is_dir() {
                    fs::remove_dir_all(&p).expect("remove dir in root");
                } else {
                    fs::remove_file(&p).expect("remove file in root");
                }
            }
        }
        let names = Names {
            work: self.work.clone(),
            outside: self.outside_name.clone(),
            canary: self.canary_name.clone(),
            far: self.far_name.clone(),
        };
        populate(&self.roots, &names, self.with_fifo);
        *self.inside.lock().unwrap_or_else(|p| p.into_inner()) = Snapshot::take_inside(&self.roots);
    }

    /// Compares everything outside the roots with the setup snapshot.
    /// Returns a description of the first differences.
    pub fn outside_changes(&self) -> Option<String> {
        self.snapshot.diff(&Snapshot::take(&self.base, &self.roots))
    }

    /// Whether `text` contains the canary content or, if `names`, the
    /// marker carried by every outside name.
    pub fn leak_in(&self, text: &str, names: bool) -> Option<&'static str> {
        if text.contains(&self.canary) {
            Some("the canary content")
        } else if names && text.contains(&self.marker) {
            Some("an outside name")
        } else {
            None
        }
    }

    /// Whether any name or file content inside the roots contains `needle`
    /// (the fuzzer may have written it there through a write tool).
    pub fn inside_contains(&self, needle: &str) -> bool {
        fn walk(p: &Path, needle: &str) -> bool {
            let Ok(md) = fs::symlink_metadata(p) else {
                return false;
            };
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(needle))
            {
                return true;
            }
            if md.is_file() {
                return fs::read(p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle));
            }
            if md.is_dir() {
                let Ok(rd) = fs::read_dir(p) else {
                    return false;
                };
                return rd.flatten().any(|e| walk(&e.path(), needle));
            }
            false
        }
        self.roots.iter().any(|r| walk(r, needle))
    }
}

struct Names {
    work: PathBuf,
    outside: String,
    canary: String,
    far: String,
}

fn populate(roots: &[PathBuf; 2], n: &Names, with_fifo: bool) {
    let r = &roots[0];
    let work = n.work.to_str().expect("UTF-8 temp path");
    write(&r.join("file.txt"), b"inside file\nline two\nline three\n");
    write(&r.join("crlf.txt"), b"one\r\ntwo\r\nthree\r\n");
    write(&r.join("empty"), b"");
    write(
        &r.join("img.png"),
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89",
    );
    mkdir(&r.join("a/b"));
    write(&r.join("a/b/c.txt"), b"c\n");
    mkdir(&r.join("sub/deep/x/y"));
    write(&r.join("sub/inner.txt"), b"inner\n");
    write(&r.join("sub/deep/x/y/z.txt"), b"z\n");
    link("..", &r.join("sub/up"));
    link("../..", &r.join("sub/upup"));
    write(&r.join("\u{e9}"), b"nfc\n");
    mkdir(&r.join("e\u{301}"));
    write(&r.join("e\u{301}/n.txt"), b"nfd\n");
    let out = format!("../{}", n.outside);
    link(&format!("{out}/{}", n.canary), &r.join("rel_out"));
    link(&out, &r.join("rel_out_dir"));
    link(&format!("../../{}", n.far), &r.join("far_out"));
    link(
        &format!("{work}/{}/{}", n.outside, n.canary),
        &r.join("abs_out"),
    );
    link(&format!("{work}/root/file.txt"), &r.join("abs_in"));
    link("/etc", &r.join("etc"));
    link("/proc/self/root", &r.join("proc_root"));
    link("/proc/self/cwd", &r.join("proc_cwd"));
    link("chain_b", &r.join("chain_a"));
    link("chain_c", &r.join("chain_b"));
    link(&format!("{out}/{}", n.canary), &r.join("chain_c"));
    link("chain_in_b", &r.join("chain_in_a"));
    link("file.txt", &r.join("chain_in_b"));
    link(&format!("{out}/missing"), &r.join("dangling_out"));
    link("missing_inside", &r.join("dangling_in"));
    link("/nonexistent-tuls-fuzz", &r.join("dangling_abs"));
    link("loop_b", &r.join("loop_a"));
    link("loop_a", &r.join("loop_b"));
    link("self_loop", &r.join("self_loop"));
    link(&format!("../root-sib/{}", n.canary), &r.join("sibling"));
    link("../root2/r.txt", &r.join("cross"));
    link("a", &r.join("dir_link"));
    if with_fifo {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            r.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .expect("mkfifo");
    }

    let r2 = &roots[1];
    write(&r2.join("r.txt"), b"root two\n");
    link("../root/file.txt", &r2.join("back"));
    link("..", &r2.join("up"));
}

fn mkdir(p: &Path) {
    fs::create_dir_all(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
}

fn write(p: &Path, data: &[u8]) {
    fs::write(p, data).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
}

fn link(target: &str, at: &Path) {
    symlink(target, at).unwrap_or_else(|e| panic!("symlink {}: {e}", at.display()));
}

fn path_str(p: &Path) -> String {
    p.to_str().expect("UTF-8 temp path").to_owned()
}

fn random_hex(words: u64) -> String {
    let s = RandomState::new();
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    (0..words)
        .map(|i| format!("{:016x}", s.hash_one((std::process::id(), t, i))))
        .collect()
}

/// Inodes of the tree at `root`, not following symlinks.
fn tree_inodes(root: &Path) -> Inodes {
    let mut set = Inodes::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let md = fs::symlink_metadata(&p).expect("lstat fixture entry");
        set.insert((md.dev(), md.ino()));
        if md.is_dir() {
            for e in fs::read_dir(&p).expect("read fixture dir") {
                stack.push(e.expect("fixture entry").path());
            }
        }
    }
    set
}

/// Where the fixture goes: `$TULS_FUZZ_TMPDIR` if set, else `/dev/shm` when
/// it is a writable directory (tmpfs: rebuilding the tree after a write is
/// several times cheaper than on ext4), else the system temp dir.
fn temp_parent() -> PathBuf {
    if let Some(d) = std::env::var_os("TULS_FUZZ_TMPDIR") {
        return PathBuf::from(d);
    }
    let shm = Path::new("/dev/shm");
    if fs::metadata(shm).is_ok_and(|m| m.is_dir() && !m.permissions().readonly()) {
        return shm.to_path_buf();
    }
    std::env::temp_dir()
}

/// Removes fixtures left behind by fuzz processes that have exited
/// (libFuzzer leaves through `exit`, so statics are never dropped). Only
/// `tuls-fuzz-<pid>-*` directories whose pid is gone are touched.
fn sweep_stale(parent: &Path) {
    let Ok(rd) = fs::read_dir(parent) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("tuls-fuzz-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
            && e.file_type().is_ok_and(|t| t.is_dir())
        {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// One entry of the outside snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    kind: &'static str,
    dev: u64,
    ino: u64,
    mode: u32,
    /// Size, mtime and content: only for entries outside the roots.
    detail: Option<(u64, i64, i64, Vec<u8>)>,
}

/// A tree's entries: everything under the base dir except the roots'
/// contents, or the roots' contents.
#[derive(Debug, PartialEq, Eq)]
pub struct Snapshot(BTreeMap<PathBuf, Rec>);

impl Snapshot {
    /// The roots' trees, without contents.
    fn take_inside(roots: &[PathBuf; 2]) -> Self {
        let mut map = BTreeMap::new();
        let mut stack: Vec<PathBuf> = roots.to_vec();
        while let Some(p) = stack.pop() {
            let Ok(md) = fs::symlink_metadata(&p) else {
                continue;
            };
            map.insert(
                p.clone(),
                Rec {
                    kind: if md.is_dir() { "dir" } else { "entry" },
                    dev: md.dev(),
                    ino: md.ino(),
                    mode: md.mode(),
                    detail: (!md.is_dir())
                        .then(|| (md.len(), md.mtime(), md.mtime_nsec(), Vec::new())),
                },
            );
            if md.is_dir()
                && let Ok(rd) = fs::read_dir(&p)
            {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        }
        Self(map)
    }

    fn take(base: &Path, roots: &[PathBuf; 2]) -> Self {
        let mut map = BTreeMap::new();
        let mut stack = vec![base.to_path_buf()];
        while let Some(p) = stack.pop() {
            let Ok(md) = fs::symlink_metadata(&p) else {
                continue;
            };
            let ft = md.file_type();
            let kind = if ft.is_dir() {
                "dir"
            } else if ft.is_file() {
                "file"
            } else if ft.is_symlink() {
                "symlink"
            } else {
                "other"
            };
            let is_root = roots.contains(&p);
            let detail = (!is_root).then(|| {
                let data = if ft.is_file() {
                    fs::read(&p).unwrap_or_default()
                } else if ft.is_symlink() {
                    fs::read_link(&p)
                        .map(|t| t.into_os_string().into_encoded_bytes())
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                (md.len(), md.mtime(), md.mtime_nsec(), data)
            });
            map.insert(
                p.clone(),
                Rec {
                    kind: if is_root { "root" } else { kind },
                    dev: md.dev(),
                    ino: md.ino(),
                    mode: md.mode(),
                    detail,
                },
            );
            if ft.is_dir()
                && !is_root
                && let Ok(rd) = fs::read_dir(&p)
            {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        }
        Self(map)
    }

    /// The differences from `self` to `now`, if any, one line each.
    pub fn diff(&self, now: &Snapshot) -> Option<String> {
        let mut out = Vec::new();
        for (p, before) in &self.0 {
            match now.0.get(p) {
                None => out.push(format!("removed: {}", p.display())),
                Some(after) if after != before => out.push(format!(
                    "changed: {}\n  before {before:?}\n  after  {after:?}",
                    p.display()
                )),
                Some(_) => {}
            }
        }
        for p in now.0.keys().filter(|p| !self.0.contains_key(*p)) {
            out.push(format!("created: {}", p.display()));
        }
        (!out.is_empty()).then(|| out.join("\n"))
    }
}
