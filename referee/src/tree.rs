//! The scratch tree of one run: `{base}/root` (the directory the server is
//! given), `{base}/outside` (the canary beside it, always present) and
//! whatever else a vector plants beside the root, plus `{base}/cwd` (the
//! server's working directory). Builds layouts, substitutes placeholders,
//! and snapshots everything outside the root, without following symlinks.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh pseudo-random 64-bit value (time, pid and a counter mixed).
pub fn entropy() -> u64 {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = t ^ ((std::process::id() as u64) << 32) ^ COUNTER.fetch_add(1, Ordering::Relaxed);
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub struct Sandbox {
    pub base: PathBuf,
    pub root: PathBuf,
    /// Written into every outside file: found in a reply means content read.
    pub canary: String,
    /// Put into outside names: found in a reply means a listing leaked.
    pub canary_name: String,
    /// The canary as it appears base64-encoded (whole outside files).
    pub encoded: Vec<String>,
    /// Written into hidden files (`{secret}`): found in a reply means a
    /// hidden file was read.
    pub secret: String,
    /// Where the agent's code, once run by another program, leaves its mark
    /// (`{marker}`, beside the root): its existence means the code ran.
    pub marker: PathBuf,
}

/// A layout entry that cannot be made here (e.g. a device node without root).
#[derive(Debug)]
pub enum BuildError {
    Unsupported(String),
    Failed(String),
}

impl Sandbox {
    pub fn new(tmp: &Path) -> Result<Sandbox, String> {
        let n = entropy();
        let base = tmp.join(format!(
            "tuls-referee-{}-{:x}",
            std::process::id(),
            n & 0xffff_ffff
        ));
        let root = base.join("root");
        for d in [&base, &root, &base.join("outside"), &base.join("cwd")] {
            fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let sb = Sandbox {
            root,
            canary: format!("CANARY{:016x}", entropy()),
            canary_name: format!("escapee{:012x}", entropy() & 0xffff_ffff_ffff),
            encoded: Vec::new(),
            secret: format!("HIDDEN{:016x}", entropy()),
            marker: base.join("agent-code-ran"),
            base,
        };
        Ok(sb)
    }

    /// Replaces `{root}`, `{base}`, `{outside}`, `{canary}`, `{canary_name}`,
    /// `{secret}` and `{marker}`.
    pub fn subst(&self, s: &str) -> String {
        s.replace("{marker}", &self.marker.to_string_lossy())
            .replace("{secret}", &self.secret)
            .replace("{root}", &self.root.to_string_lossy())
            .replace("{base}", &self.base.to_string_lossy())
            .replace("{outside}", &self.base.join("outside").to_string_lossy())
            .replace("{canary_name}", &self.canary_name)
            .replace("{canary}", &self.canary)
    }

    pub fn subst_value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.subst(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.subst_value(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), self.subst_value(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The standard outside tree every run has: a secret file, a secret
    /// directory with a file, and a file whose name carries the name canary.
    pub fn plant_default_outside(&mut self) -> Result<(), String> {
        let o = self.base.join("outside");
        let body = format!("{}\n", self.canary);
        write(&o.join("secret.txt"), body.as_bytes())?;
        fs::create_dir_all(o.join("dir")).map_err(|e| e.to_string())?;
        write(&o.join("dir/secret.txt"), body.as_bytes())?;
        write(
            &o.join(format!("leak-{}.txt", self.canary_name)),
            body.as_bytes(),
        )?;
        fs::create_dir_all(o.join(format!("dir/{}", self.canary_name)))
            .map_err(|e| e.to_string())?;
        // Beside the root too: a listing of the base leaks this name.
        fs::create_dir_all(self.base.join(format!("{}.d", self.canary_name)))
            .map_err(|e| e.to_string())?;
        self.note_encoded(body.as_bytes());
        Ok(())
    }

    fn note_encoded(&mut self, content: &[u8]) {
        if content
            .windows(self.canary.len())
            .any(|w| w == self.canary.as_bytes())
        {
            let e = base64(content);
            if !self.encoded.contains(&e) {
                self.encoded.push(e);
            }
        }
    }

    /// Builds layout entries under `dir` (the root, or the base for outside
    /// entries). Each entry: `{"path", "type", ...}`; see corpus/escape/schema.json.
    pub fn build(
        &mut self,
        entries: &[Value],
        dir: &Path,
        outside: bool,
    ) -> Result<(), BuildError> {
        self.build_twin(entries, dir, outside, false)
    }

    /// [`Sandbox::build`]; for the twin (`twin`), entries marked `hidden`
    /// are left out, so the twin is the tree as it should read.
    pub fn build_twin(
        &mut self,
        entries: &[Value],
        dir: &Path,
        outside: bool,
        twin: bool,
    ) -> Result<(), BuildError> {
        for e in entries {
            if twin && e["hidden"].as_bool().unwrap_or(false) {
                continue;
            }
            let rel = self.subst(e["path"].as_str().unwrap_or(""));
            let p = dir.join(&rel);
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent)
                    .map_err(|x| BuildError::Failed(format!("{rel}: {x}")))?;
            }
            let fail = |x: std::io::Error| BuildError::Failed(format!("{rel}: {x}"));
            match e["type"].as_str().unwrap_or("") {
                "file" => {
                    let default = if outside {
                        format!("{}\n", self.canary)
                    } else {
                        String::new()
                    };
                    let mut content = e["content"]
                        .as_str()
                        .map(|s| self.subst(s))
                        .unwrap_or(default)
                        .into_bytes();
                    if let Some(n) = e["size"].as_u64() {
                        content.resize(n as usize, b'x');
                    }
                    fs::write(&p, &content).map_err(fail)?;
                    if outside {
                        self.note_encoded(&content);
                    }
                    if let Some(n) = e["sparse_size"].as_u64() {
                        let f = fs::OpenOptions::new().write(true).open(&p).map_err(fail)?;
                        f.set_len(n).map_err(fail)?;
                    }
                }
                "dir" => fs::create_dir_all(&p).map_err(fail)?,
                "symlink" => {
                    let t = self.subst(e["target"].as_str().unwrap_or(""));
                    std::os::unix::fs::symlink(t, &p).map_err(fail)?;
                }
                "hardlink" => {
                    let t = dir.join(self.subst(e["target"].as_str().unwrap_or("")));
                    fs::hard_link(t, &p).map_err(fail)?;
                }
                "git_repo" => {
                    git_repo(e, &p, self).map_err(|x| BuildError::Failed(format!("{rel}: {x}")))?
                }
                "fifo" => mknod(&p, libc::S_IFIFO | 0o644, 0).map_err(fail)?,
                "socket" => {
                    let l = std::os::unix::net::UnixListener::bind(&p).map_err(fail)?;
                    drop(l);
                }
                "chardev" => {
                    let (ma, mi) = (
                        e["major"].as_u64().unwrap_or(1),
                        e["minor"].as_u64().unwrap_or(5),
                    );
                    let dev = libc::makedev(ma as u32, mi as u32);
                    if let Err(x) = mknod(&p, libc::S_IFCHR | 0o666, dev) {
                        return Err(BuildError::Unsupported(format!("{rel}: mknod: {x}")));
                    }
                }
                "deep" => {
                    let depth = e["depth"].as_u64().unwrap_or(100) as usize;
                    let name = e["name"].as_str().unwrap_or("d");
                    deep(&p, name, depth).map_err(fail)?;
                }
                other => return Err(BuildError::Failed(format!("{rel}: unknown type {other:?}"))),
            }
            if let Some(m) = e["mode"].as_u64() {
                fs::set_permissions(&p, fs::Permissions::from_mode(m as u32)).map_err(fail)?;
            }
        }
        Ok(())
    }

    /// Everything under the base but the root, by relative path: kind, mode,
    /// size, content hash (files up to 4 MiB) or link target.
    pub fn snapshot_outside(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        snap(&self.base, &self.base, Some(&self.root), &mut out, 0);
        out
    }

    /// Removes the whole tree (any depth, any modes).
    pub fn remove(&self) {
        let _ = std::process::Command::new("chmod")
            .args(["-R", "u+rwx"])
            .arg(&self.base)
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::process::Command::new("rm")
            .arg("-rf")
            .arg(&self.base)
            .status();
    }
}

/// `git init` at `p` with a clean environment: `separate_git_dir` (relative
/// to `p`) makes `.git` a file naming it; `git_dir_link` moves `.git` there
/// and leaves `.git` a symlink to it.
fn git_repo(e: &Value, p: &Path, sb: &Sandbox) -> Result<(), String> {
    let mut cmd = crate::program::clean_command("git", &sb.base);
    cmd.args(["init", "-q"]);
    if let Some(d) = e["separate_git_dir"].as_str() {
        let gd = p.join(sb.subst(d));
        if let Some(parent) = gd.parent() {
            fs::create_dir_all(parent).map_err(|x| x.to_string())?;
        }
        cmd.arg(format!("--separate-git-dir={}", gd.display()));
    }
    cmd.arg(p);
    let out = cmd.output().map_err(|x| format!("git init: {x}"))?;
    if !out.status.success() {
        return Err(format!(
            "git init: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if let Some(d) = e["git_dir_link"].as_str() {
        let d = sb.subst(d);
        fs::rename(p.join(".git"), p.join(&d)).map_err(|x| x.to_string())?;
        std::os::unix::fs::symlink(&d, p.join(".git")).map_err(|x| x.to_string())?;
    }
    // `hooks_link` / `config_link` (relative to `.git`): `.git/hooks` or
    // `.git/config` becomes a symlink to there (what git made moves there).
    for (key, name) in [("hooks_link", "hooks"), ("config_link", "config")] {
        if let Some(d) = e[key].as_str() {
            let d = sb.subst(d);
            let (link, to) = (p.join(".git").join(name), p.join(".git").join(&d));
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(|x| x.to_string())?;
            }
            fs::rename(&link, &to).map_err(|x| format!("{key}: {x}"))?;
            std::os::unix::fs::symlink(&d, &link).map_err(|x| x.to_string())?;
        }
    }
    Ok(())
}

fn write(p: &Path, b: &[u8]) -> Result<(), String> {
    fs::write(p, b).map_err(|e| format!("{}: {e}", p.display()))
}

pub fn mknod(p: &Path, mode: libc::mode_t, dev: libc::dev_t) -> std::io::Result<()> {
    let c = CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: a valid NUL-terminated path; mknod reads nothing else.
    let r = unsafe { libc::mknod(c.as_ptr(), mode, dev) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `depth` nested directories named `name`, made with `mkdirat` from the
/// parent's descriptor so that the tree can be deeper than PATH_MAX.
pub fn deep(p: &Path, name: &str, depth: usize) -> std::io::Result<()> {
    fs::create_dir_all(p)?;
    let cpath = CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let cname = CString::new(name).map_err(std::io::Error::other)?;
    // SAFETY: plain descriptor calls on NUL-terminated names; each fd closed.
    unsafe {
        let mut fd = libc::open(
            cpath.as_ptr(),
            libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        for _ in 0..depth {
            if libc::mkdirat(fd, cname.as_ptr(), 0o755) != 0 {
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                return Err(e);
            }
            let next = libc::openat(
                fd,
                cname.as_ptr(),
                libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC,
            );
            libc::close(fd);
            if next < 0 {
                return Err(std::io::Error::last_os_error());
            }
            fd = next;
        }
        libc::close(fd);
    }
    Ok(())
}

/// Adds `dir`'s subtree to a snapshot, paths relative to `top`.
pub fn snap_into(top: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    snap(top, dir, None, out, 0);
}

/// Paths beneath `root` (files, and directories with what they hold) as a
/// program opening them by these names sees them: symlinks followed.
pub fn snapshot_paths(root: &Path, list: &[String]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for rel in list {
        let full = root.join(rel);
        m.insert(rel.clone(), describe_followed(&full));
        if full.is_dir() {
            let mut sub = BTreeMap::new();
            snap_into(&full, &full, &mut sub);
            for (k, d) in sub {
                m.insert(format!("{rel}/{k}"), d);
            }
        }
    }
    m
}

/// One entry as a program opening it by this name sees it: the entry, and
/// for a symlink also what it leads to.
pub fn describe_followed(p: &Path) -> String {
    let d = describe(p);
    if d.starts_with("link -> ") {
        match fs::canonicalize(p) {
            Ok(t) => format!("{d} => {}", describe(&t)),
            Err(_) => format!("{d} => missing"),
        }
    } else {
        d
    }
}

/// One entry of a snapshot, never following a symlink.
pub fn describe(p: &Path) -> String {
    let Ok(m) = fs::symlink_metadata(p) else {
        return "missing".into();
    };
    let ft = m.file_type();
    if ft.is_symlink() {
        format!(
            "link -> {}",
            fs::read_link(p)
                .map(|t| t.display().to_string())
                .unwrap_or_default()
        )
    } else if ft.is_dir() {
        format!("dir {:o}", m.mode() & 0o7777)
    } else if ft.is_file() {
        let h = if m.len() <= 4 << 20 {
            fs::read(p).map(|b| fnv(&b)).unwrap_or(0)
        } else {
            0
        };
        format!(
            "file {:o} {} {:x} {}",
            m.mode() & 0o7777,
            m.len(),
            h,
            m.mtime()
        )
    } else {
        format!("special {:o}", m.mode())
    }
}

fn snap(
    top: &Path,
    dir: &Path,
    skip: Option<&Path>,
    out: &mut BTreeMap<String, String>,
    depth: usize,
) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut names: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names {
        if Some(p.as_path()) == skip {
            continue;
        }
        let rel = p
            .strip_prefix(top)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        let is_dir = fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
        out.insert(rel, describe(&p));
        if is_dir && depth < 64 {
            snap(top, &p, skip, out, depth + 1);
        }
    }
}

pub fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

pub fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Lists differences between two snapshots, for a report.
pub fn diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let mut d = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => d.push(format!("removed {k}")),
            Some(w) if w != v => d.push(format!("changed {k}: {v} -> {w}")),
            _ => {}
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            d.push(format!("created {k}"));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), enc, "{plain:?}");
        }
    }

    #[test]
    fn the_outside_snapshot_sees_a_write_beside_the_root_but_not_inside_it() {
        let mut sb = Sandbox::new(&std::env::temp_dir()).unwrap();
        sb.plant_default_outside().unwrap();
        let before = sb.snapshot_outside();
        fs::write(sb.root.join("inside.txt"), "x").unwrap();
        assert!(diff(&before, &sb.snapshot_outside()).is_empty());
        fs::write(sb.base.join("outside/dir/new.txt"), "x").unwrap();
        let d = diff(&before, &sb.snapshot_outside());
        sb.remove();
        assert_eq!(d, vec!["created outside/dir/new.txt".to_string()]);
    }
}
