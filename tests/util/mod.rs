//! Integration-test harness for the `tuls` binary (ripgrep/fd `TestEnv` style).
//!
//! * [`TestEnv`]: a throw-away directory tree `B/` with `B/root` (the directory the
//!   server is allowed to touch), `B/outside` (which it must never touch, holding the
//!   canary file `B/outside/canary.txt`), and small fixture helpers. Paths given to
//!   the helpers are relative to `B/root`; absolute paths are used as they are.
//! * [`Snapshot`]: a no-follow recording of a whole tree, to prove that an outside
//!   tree was left alone (`before.assert_same(&after, "outside")`).
//! * [`Client`]: the async MCP client (rmcp 3.11 over `TokioChildProcess`), stderr
//!   captured. [`Server`] wraps it with its own tokio runtime and exposes blocking
//!   methods; `&Server` is `Sync`, so race tests can share it between std threads.
//! * [`RawServer`]: a line-level JSON-RPC client over std pipes, for malformed,
//!   oversized or otherwise hand-made messages.
//! * [`run_cli`] / [`Server::start_expect_fail`]: run the binary to completion.
//!
//! Every process started here is killed when its handle drops, and when a test is
//! panicking the server's captured stderr is printed so the failure explains itself.
#![allow(dead_code)] // each test module uses a different subset of the harness
#![allow(deprecated)] // roots are deprecated by SEP-2577 but are what these tests exercise

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::hash::Hasher as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ListRootsResult, ProtocolVersion, Root, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, Peer, ServiceError, ServiceExt as _};
use serde_json::{Value, json};

/// Content of `B/outside/canary.txt`.
pub const CANARY_CONTENT: &str = "CANARY-OUTSIDE-7f3a";

/// Default per-request / startup timeout; override with `TULS_TEST_TIMEOUT_SECS`.
pub fn default_timeout() -> Duration {
    let secs = std::env::var("TULS_TEST_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    Duration::from_secs(secs)
}

/// Path of the binary under test.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tuls"))
}

/// Build a `Vec<OsString>` from mixed argument types:
/// `args![env.root(), "--deny", "**/*.env"]`.
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        vec![$(::std::ffi::OsStr::new(&$arg).to_os_string()),*] as Vec<::std::ffi::OsString>
    };
}

/// Poll `cond` every 20ms until it is true or `timeout` elapses; returns the last result.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `file://` URI for an absolute path, percent-encoding everything but unreserved
/// characters and `/`.
pub fn file_uri(path: impl AsRef<Path>) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let mut uri = String::from("file://");
    for &b in path.as_ref().as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(char::from(b));
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn print_stderr_if_panicking(what: &str, stderr: &str) {
    if std::thread::panicking() {
        eprintln!("----- {what} stderr -----\n{stderr}\n----- end {what} stderr -----");
    }
}

// ---------------------------------------------------------------------------
// TestEnv: fixture tree
// ---------------------------------------------------------------------------

/// A temporary base directory `B` with `B/root` (allowed) and `B/outside` (forbidden,
/// containing the canary). Removed on drop.
pub struct TestEnv {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let tmp = tempfile::Builder::new()
            .prefix("tuls-test-")
            .tempdir()
            .expect("create temp dir");
        // Canonical, so paths the server reports can be compared with ours.
        let base = tmp.path().canonicalize().expect("canonicalize temp dir");
        std::fs::create_dir(base.join("root")).expect("create B/root");
        std::fs::create_dir(base.join("outside")).expect("create B/outside");
        std::fs::write(base.join("outside/canary.txt"), CANARY_CONTENT).expect("write canary");
        TestEnv { _tmp: tmp, base }
    }

    /// `B`
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// `B/root`, the directory to pass to the server.
    pub fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    /// `B/outside`, which the server must never read or modify.
    pub fn outside(&self) -> PathBuf {
        self.base.join("outside")
    }

    /// `B/outside/canary.txt`
    pub fn canary(&self) -> PathBuf {
        self.outside().join("canary.txt")
    }

    /// `rel` resolved against `B/root` (absolute paths are returned unchanged).
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root().join(rel)
    }

    /// Same as [`TestEnv::path`] but as a `String`, handy inside `json!` arguments.
    pub fn path_str(&self, rel: impl AsRef<Path>) -> String {
        self.path(rel)
            .to_str()
            .expect("test paths are UTF-8")
            .to_owned()
    }

    /// Write a file (creating parent directories); returns its path.
    pub fn write(&self, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create parents of {}: {e}", path.display()));
        }
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    /// Create a directory and its parents; returns its path.
    pub fn mkdir(&self, rel: impl AsRef<Path>) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        path
    }

    /// Create symlink `rel_link` -> `target` (target stored verbatim, may be relative
    /// or dangling). Parents of the link are created. Returns the link path.
    pub fn symlink(&self, target: impl AsRef<Path>, rel_link: impl AsRef<Path>) -> PathBuf {
        let link = self.path(rel_link);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create parents of {}: {e}", link.display()));
        }
        std::os::unix::fs::symlink(target.as_ref(), &link).unwrap_or_else(|e| {
            panic!(
                "symlink {} -> {}: {e}",
                link.display(),
                target.as_ref().display()
            )
        });
        link
    }

    /// Create hard link `rel_link` to the existing file `existing`.
    pub fn hardlink(&self, existing: impl AsRef<Path>, rel_link: impl AsRef<Path>) -> PathBuf {
        let original = self.path(existing);
        let link = self.path(rel_link);
        std::fs::hard_link(&original, &link).unwrap_or_else(|e| {
            panic!(
                "hard link {} -> {}: {e}",
                link.display(),
                original.display()
            )
        });
        link
    }

    /// Create a named pipe with `mkfifo`; returns its path.
    pub fn mkfifo(&self, rel: impl AsRef<Path>) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create parents of {}: {e}", path.display()));
        }
        let status = Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("run mkfifo");
        assert!(
            status.success(),
            "mkfifo {} failed: {status}",
            path.display()
        );
        path
    }

    /// Set permission bits (e.g. `0o000`, `0o4755`).
    pub fn chmod(&self, rel: impl AsRef<Path>, mode: u32) {
        let path = self.path(rel);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {:o} {}: {e}", mode, path.display()));
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> Vec<u8> {
        let path = self.path(rel);
        std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    pub fn read_string(&self, rel: impl AsRef<Path>) -> String {
        String::from_utf8(self.read(&rel)).expect("file content is UTF-8")
    }

    /// Whether anything (including a dangling symlink) exists at `rel`; never follows
    /// a final symlink.
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        std::fs::symlink_metadata(self.path(rel)).is_ok()
    }

    /// Record the tree under `dir` (relative to root, or absolute) without following
    /// symlinks.
    pub fn snapshot(&self, dir: impl AsRef<Path>) -> Snapshot {
        Snapshot::take(self.path(dir))
    }

    /// Snapshot of `B/outside`.
    pub fn snapshot_outside(&self) -> Snapshot {
        Snapshot::take(self.outside())
    }

    /// Panic unless the canary still exists as a regular file with its original content.
    pub fn assert_canary_intact(&self) {
        let meta = std::fs::symlink_metadata(self.canary()).expect("canary still exists");
        assert!(
            meta.file_type().is_file(),
            "canary is no longer a regular file"
        );
        let content = std::fs::read(self.canary()).expect("read canary");
        assert_eq!(content, CANARY_CONTENT.as_bytes(), "canary content changed");
    }
}

// ---------------------------------------------------------------------------
// Snapshot: no-follow tree recording
// ---------------------------------------------------------------------------

/// Kind of a tree entry; symlinks record their (unresolved) target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink(PathBuf),
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    /// `symlink_metadata` failed (raced away, permission denied, ...).
    Unreadable(String),
}

/// One recorded entry. `digest` is a hash of a regular file's bytes (None for
/// non-files or unreadable files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    pub len: u64,
    pub mode: u32,
    pub nlink: u64,
    pub digest: Option<u64>,
}

/// Map from path relative to the snapshot root (`""` is the root itself) to entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot(pub BTreeMap<PathBuf, Entry>);

impl std::ops::Deref for Snapshot {
    type Target = BTreeMap<PathBuf, Entry>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Snapshot {
    /// Walk `dir` (itself included) without following any symlink.
    pub fn take(dir: impl AsRef<Path>) -> Snapshot {
        let dir = dir.as_ref();
        let mut map = BTreeMap::new();
        Self::walk(dir, Path::new(""), &mut map);
        Snapshot(map)
    }

    fn walk(abs: &Path, rel: &Path, map: &mut BTreeMap<PathBuf, Entry>) {
        let meta = match std::fs::symlink_metadata(abs) {
            Ok(meta) => meta,
            Err(e) => {
                let entry = Entry {
                    kind: Kind::Unreadable(e.kind().to_string()),
                    len: 0,
                    mode: 0,
                    nlink: 0,
                    digest: None,
                };
                map.insert(rel.to_path_buf(), entry);
                return;
            }
        };
        let ft = meta.file_type();
        let kind = if ft.is_symlink() {
            Kind::Symlink(std::fs::read_link(abs).unwrap_or_default())
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else if ft.is_fifo() {
            Kind::Fifo
        } else if ft.is_socket() {
            Kind::Socket
        } else if ft.is_char_device() {
            Kind::CharDevice
        } else {
            Kind::BlockDevice
        };
        let digest = if kind == Kind::File {
            std::fs::read(abs).ok().map(|bytes| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                h.write(&bytes);
                h.finish()
            })
        } else {
            None
        };
        let is_dir = kind == Kind::Dir;
        map.insert(
            rel.to_path_buf(),
            Entry {
                kind,
                len: if is_dir { 0 } else { meta.len() },
                mode: meta.permissions().mode() & 0o7777,
                nlink: if is_dir { 0 } else { meta.nlink() },
                digest,
            },
        );
        if is_dir && let Ok(rd) = std::fs::read_dir(abs) {
            for child in rd.flatten() {
                let name = child.file_name();
                Self::walk(&abs.join(&name), &rel.join(&name), map);
            }
        }
    }

    /// Human-readable differences from `self` (before) to `later` (after).
    pub fn diff(&self, later: &Snapshot) -> Vec<String> {
        let mut out = Vec::new();
        for (path, before) in &self.0 {
            match later.0.get(path) {
                None => out.push(format!("removed: {} ({:?})", path.display(), before.kind)),
                Some(after) if after != before => out.push(format!(
                    "changed: {}\n    before: {before:?}\n    after:  {after:?}",
                    path.display()
                )),
                Some(_) => {}
            }
        }
        for (path, after) in &later.0 {
            if !self.0.contains_key(path) {
                out.push(format!("added: {} ({:?})", path.display(), after.kind));
            }
        }
        out
    }

    /// Panic with the differences if `later` differs from `self`.
    pub fn assert_same(&self, later: &Snapshot, what: &str) {
        let diff = self.diff(later);
        assert!(
            diff.is_empty(),
            "{what} tree was modified:\n{}",
            diff.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------
// Reply / errors
// ---------------------------------------------------------------------------

/// The result of a `tools/call` that the server answered with a *result*
/// (possibly `isError: true`).
#[derive(Debug, Clone)]
pub struct Reply {
    /// All `type: "text"` content blocks concatenated (no separator).
    pub text: String,
    pub is_error: bool,
    pub structured: Option<Value>,
    /// The whole `CallToolResult` as JSON.
    pub raw: Value,
}

impl Reply {
    pub fn from_result(result: &CallToolResult) -> Reply {
        let raw = serde_json::to_value(result).expect("serialize CallToolResult");
        Self::from_raw(raw)
    }

    /// Build from a raw `result` object (also used by [`RawServer`]).
    pub fn from_raw(raw: Value) -> Reply {
        let text = Self::texts_of(&raw).concat();
        Reply {
            text,
            is_error: raw.get("isError").and_then(Value::as_bool).unwrap_or(false),
            structured: raw.get("structuredContent").cloned(),
            raw,
        }
    }

    fn texts_of(raw: &Value) -> Vec<String> {
        raw.get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Each text block separately.
    pub fn texts(&self) -> Vec<String> {
        Self::texts_of(&self.raw)
    }

    /// The raw content blocks (`[]` if absent).
    pub fn content(&self) -> Vec<Value> {
        self.raw
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Panic (showing the text) if the tool reported an error.
    #[track_caller]
    pub fn assert_ok(&self) -> &Reply {
        assert!(
            !self.is_error,
            "expected success, got tool error: {}",
            self.text
        );
        self
    }

    /// Panic if the tool did NOT report an error.
    #[track_caller]
    pub fn assert_error(&self) -> &Reply {
        assert!(
            self.is_error,
            "expected a tool error, got success: {}",
            self.raw
        );
        self
    }

    /// Panic unless this is a tool error whose text contains `needle`
    /// (case-insensitive).
    #[track_caller]
    pub fn assert_error_contains(&self, needle: &str) -> &Reply {
        self.assert_error();
        assert!(
            self.text.to_lowercase().contains(&needle.to_lowercase()),
            "tool error text {:?} does not contain {needle:?}",
            self.text
        );
        self
    }

    /// `structuredContent` if present, else the text parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        if let Some(v) = &self.structured {
            return v.clone();
        }
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("reply text is not JSON ({e}): {:?}", self.text))
    }
}

/// A JSON-RPC error response.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
    pub data: Option<Value>,
}

/// Why a request did not produce a result.
#[derive(Debug)]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// No answer within the timeout.
    Timeout(Duration),
    /// Transport closed / unexpected response / other client-side failure.
    Service(String),
}

impl CallError {
    /// The JSON-RPC error, panicking on timeouts and transport failures.
    #[track_caller]
    pub fn rpc(self) -> RpcError {
        match self {
            CallError::Rpc(e) => e,
            other => panic!("expected a JSON-RPC error, got {other:?}"),
        }
    }
}

impl From<ServiceError> for CallError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::McpError(ErrorData {
                code,
                message,
                data,
            }) => CallError::Rpc(RpcError {
                code: code.0,
                message: message.into_owned(),
                data,
            }),
            ServiceError::Timeout { timeout } => CallError::Timeout(timeout),
            other => CallError::Service(other.to_string()),
        }
    }
}

// ---------------------------------------------------------------------------
// Client: async rmcp client over a child process
// ---------------------------------------------------------------------------

/// How to start a server.
#[derive(Debug, Clone)]
pub struct Options {
    /// Protocol version sent in `initialize`. Defaults to 2025-11-25: rmcp 3.11's
    /// default (2026-07-28) has no handshake and no roots.
    pub protocol_version: ProtocolVersion,
    /// `Some` => declare the `roots` capability (with listChanged) and answer
    /// `roots/list` with these `file://` URIs.
    pub roots: Option<Vec<String>>,
    /// Extra environment variables for the child.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory of the child (default: inherited).
    pub current_dir: Option<PathBuf>,
    /// Startup and per-request timeout.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            protocol_version: ProtocolVersion::V_2025_11_25,
            roots: None,
            env: Vec::new(),
            current_dir: None,
            timeout: default_timeout(),
        }
    }
}

impl Options {
    pub fn new() -> Options {
        Options::default()
    }
    pub fn roots(mut self, roots: Vec<String>) -> Options {
        self.roots = Some(roots);
        self
    }
    pub fn protocol_version(mut self, v: ProtocolVersion) -> Options {
        self.protocol_version = v;
        self
    }
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Options {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Options {
        self.current_dir = Some(dir.as_ref().to_path_buf());
        self
    }
    pub fn timeout(mut self, t: Duration) -> Options {
        self.timeout = t;
        self
    }
}

/// The `ClientHandler` used by [`Client`]: fixed client config, and a mutable
/// roots list it serves from `roots/list`.
#[derive(Clone)]
pub struct TestClientHandler {
    config: ClientConfig,
    roots: Arc<Mutex<Vec<Root>>>,
    roots_requests: Arc<AtomicUsize>,
    log_messages: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for TestClientHandler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.roots_requests.fetch_add(1, Ordering::SeqCst);
        Ok(ListRootsResult::new(lock(&self.roots).clone()))
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let value = serde_json::to_value(params).unwrap_or(Value::Null);
        lock(&self.log_messages).push(value);
    }
}

fn to_roots(uris: Vec<String>) -> Vec<Root> {
    uris.into_iter().map(Root::new).collect()
}

/// Async MCP client connected to a freshly spawned `tuls filesystem ...`.
/// Prefer [`Server`] in `#[test]` functions; use this directly from async code.
pub struct Client {
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, TestClientHandler>>>,
    peer: Peer<RoleClient>,
    handler: TestClientHandler,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pid: Option<u32>,
    timeout: Duration,
}

/// Spawn a task copying `pipe` into `buf` (and echoing to our stderr when
/// `TULS_TEST_ECHO_STDERR` is set).
fn capture_async(
    mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    buf: Arc<Mutex<Vec<u8>>>,
) -> tokio::task::JoinHandle<()> {
    use tokio::io::AsyncReadExt as _;
    let echo = std::env::var_os("TULS_TEST_ECHO_STDERR").is_some();
    tokio::spawn(async move {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if echo {
                        eprint!("{}", String::from_utf8_lossy(&chunk[..n]));
                    }
                    lock(&buf).extend_from_slice(&chunk[..n]);
                }
            }
        }
    })
}

impl Client {
    /// Spawn `tuls filesystem <args>` and complete the MCP handshake.
    /// On failure returns a message including the server's stderr.
    pub async fn start(args: &[impl AsRef<OsStr>], opts: Options) -> Result<Client, String> {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.arg("filesystem")
            .args(args.iter().map(AsRef::as_ref))
            .env("NO_COLOR", "1")
            .kill_on_drop(true);
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &opts.current_dir {
            cmd.current_dir(dir);
        }
        let (transport, child_stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", bin().display()))?;
        let pid = transport.id();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_task = child_stderr.map(|pipe| capture_async(pipe, stderr.clone()));

        let mut capabilities = ClientCapabilities::default();
        if opts.roots.is_some() {
            capabilities = ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build();
        }
        let config = ClientConfig::new(
            capabilities,
            Implementation::new("tuls-test-harness", "0.0.0"),
        )
        .with_protocol_version(opts.protocol_version.clone());
        let handler = TestClientHandler {
            config,
            roots: Arc::new(Mutex::new(to_roots(opts.roots.clone().unwrap_or_default()))),
            roots_requests: Arc::new(AtomicUsize::new(0)),
            log_messages: Arc::new(Mutex::new(Vec::new())),
        };

        let served = tokio::time::timeout(opts.timeout, handler.clone().serve(transport)).await;
        let failure = match served {
            Ok(Ok(service)) => {
                return Ok(Client {
                    peer: service.peer().clone(),
                    service: tokio::sync::Mutex::new(Some(service)),
                    handler,
                    stderr,
                    stderr_task: Mutex::new(stderr_task),
                    pid,
                    timeout: opts.timeout,
                });
            }
            Ok(Err(e)) => format!("MCP initialize failed: {e}"),
            Err(_) => format!("MCP initialize timed out after {:?}", opts.timeout),
        };
        // Let the stderr reader drain what the (probably dead) child wrote.
        if let Some(task) = stderr_task {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
        let text = String::from_utf8_lossy(&lock(&stderr)).into_owned();
        Err(format!("{failure}\n----- tuls stderr -----\n{text}"))
    }

    /// The underlying rmcp peer, for anything the helpers do not cover.
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }

    /// Negotiated server info (protocolVersion, capabilities, serverInfo, ...) as JSON.
    pub fn server_info(&self) -> Option<Value> {
        self.peer
            .peer_info()
            .map(|info| serde_json::to_value(&*info).expect("serialize server info"))
    }

    /// `tools/call`; `Err` for JSON-RPC errors, timeouts and transport failures.
    /// `args` must be a JSON object or `null` (use [`RawServer`] for anything else).
    pub async fn try_call(&self, tool: &str, args: Value) -> Result<Reply, CallError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        match args {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => panic!("tool arguments must be an object or null, got {other}; use RawServer"),
        }
        match tokio::time::timeout(self.timeout, self.peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(Reply::from_result(&result)),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(CallError::Timeout(self.timeout)),
        }
    }

    /// `tools/call` that must produce a result (tool errors are fine: check
    /// `reply.is_error`). Panics with the server's stderr otherwise.
    pub async fn call(&self, tool: &str, args: Value) -> Reply {
        match self.try_call(tool, args.clone()).await {
            Ok(reply) => reply,
            Err(e) => panic!(
                "tools/call {tool} {args} failed: {e:?}\n----- tuls stderr -----\n{}",
                self.stderr()
            ),
        }
    }

    /// All tools, following pagination.
    pub async fn list_tools(&self) -> Vec<Tool> {
        match tokio::time::timeout(self.timeout, self.peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => panic!("tools/list failed: {e}\n{}", self.stderr()),
            Err(_) => panic!("tools/list timed out\n{}", self.stderr()),
        }
    }

    /// Replace the roots served from `roots/list` and send
    /// `notifications/roots/list_changed`.
    pub async fn set_roots(&self, uris: Vec<String>) {
        *lock(&self.handler.roots) = to_roots(uris);
        self.peer
            .notify_roots_list_changed()
            .await
            .unwrap_or_else(|e| panic!("send roots/list_changed: {e}\n{}", self.stderr()));
    }

    /// Replace the served roots WITHOUT notifying the server.
    pub fn set_roots_silently(&self, uris: Vec<String>) {
        *lock(&self.handler.roots) = to_roots(uris);
    }

    /// How many `roots/list` requests the server has made.
    pub fn roots_requests(&self) -> usize {
        self.handler.roots_requests.load(Ordering::SeqCst)
    }

    /// `notifications/message` params received so far.
    pub fn log_messages(&self) -> Vec<Value> {
        lock(&self.handler.log_messages).clone()
    }

    /// Close stdin, wait for the child (rmcp escalates to SIGTERM/SIGKILL), and
    /// finish collecting stderr. Idempotent.
    pub async fn shutdown(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(Duration::from_secs(10)).await;
        }
        let task = lock(&self.stderr_task).take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // The child has kill_on_drop; the service is cancelled by its drop guard.
        print_stderr_if_panicking("tuls", &self.stderr());
    }
}

// ---------------------------------------------------------------------------
// Server: blocking wrapper owning a runtime
// ---------------------------------------------------------------------------

/// Blocking MCP client for `#[test]` functions. Owns a multi-thread runtime;
/// all methods take `&self` and may be called concurrently from std threads.
pub struct Server {
    client: Option<Client>,
    rt: tokio::runtime::Runtime,
}

impl Server {
    /// Start `tuls filesystem <args>`; panics (with stderr) if the handshake fails.
    pub fn start(args: &[impl AsRef<OsStr>]) -> Server {
        Self::start_with(args, Options::default())
    }

    /// Start with a client that declares `roots` (listChanged) and serves `roots`
    /// (`file://` URIs, see [`file_uri`]).
    pub fn start_with_roots(args: &[impl AsRef<OsStr>], roots: Vec<String>) -> Server {
        Self::start_with(args, Options::default().roots(roots))
    }

    pub fn start_with(args: &[impl AsRef<OsStr>], opts: Options) -> Server {
        Self::try_start_with(args, opts).unwrap_or_else(|e| panic!("starting tuls failed: {e}"))
    }

    pub fn try_start_with(args: &[impl AsRef<OsStr>], opts: Options) -> Result<Server, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("build tokio runtime");
        let client = rt.block_on(Client::start(args, opts))?;
        Ok(Server {
            client: Some(client),
            rt,
        })
    }

    /// Run `tuls filesystem <args>` with stdin at EOF and expect it to exit with
    /// a failure; returns `(exit_code, stderr)`. Panics if it exits 0 or hangs.
    pub fn start_expect_fail(args: &[impl AsRef<OsStr>]) -> (i32, String) {
        let mut full: Vec<OsString> = vec!["filesystem".into()];
        full.extend(args.iter().map(|a| a.as_ref().to_os_string()));
        let out = run_cli(&full, default_timeout());
        assert!(
            out.code != Some(0),
            "expected tuls to fail, but it exited 0\nstderr:\n{}",
            out.stderr
        );
        let code = out.code.unwrap_or_else(|| {
            panic!(
                "tuls was killed by a signal instead of exiting\nstderr:\n{}",
                out.stderr
            )
        });
        (code, out.stderr)
    }

    /// The async client (use inside [`Server::block_on`] for concurrent requests).
    pub fn client(&self) -> &Client {
        self.client.as_ref().expect("server already shut down")
    }

    /// Run a future on this server's runtime.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        self.rt.block_on(fut)
    }

    pub fn call(&self, tool: &str, args: Value) -> Reply {
        self.block_on(self.client().call(tool, args))
    }

    pub fn try_call(&self, tool: &str, args: Value) -> Result<Reply, CallError> {
        self.block_on(self.client().try_call(tool, args))
    }

    /// A call that must be answered with a JSON-RPC error (not a tool result).
    #[track_caller]
    pub fn call_expect_rpc_error(&self, tool: &str, args: Value) -> RpcError {
        match self.try_call(tool, args) {
            Err(CallError::Rpc(e)) => e,
            other => panic!("expected a JSON-RPC error from {tool}, got {other:?}"),
        }
    }

    pub fn list_tools(&self) -> Vec<Tool> {
        self.block_on(self.client().list_tools())
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.list_tools()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect()
    }

    pub fn set_roots(&self, uris: Vec<String>) {
        self.block_on(self.client().set_roots(uris));
    }

    pub fn roots_requests(&self) -> usize {
        self.client().roots_requests()
    }

    /// Block until the server has made at least `n` `roots/list` requests.
    #[track_caller]
    pub fn wait_for_roots_requests(&self, n: usize, timeout: Duration) {
        let ok = wait_until(timeout, || self.roots_requests() >= n);
        assert!(
            ok,
            "server made {} roots/list requests, expected >= {n}",
            self.roots_requests()
        );
    }

    pub fn stderr(&self) -> String {
        self.client().stderr()
    }

    pub fn pid(&self) -> Option<u32> {
        self.client().pid()
    }

    pub fn server_info(&self) -> Option<Value> {
        self.client().server_info()
    }

    /// Close the connection and wait for the child; returns the full stderr.
    pub fn shutdown(mut self) -> String {
        let client = self.client.take().expect("server already shut down");
        self.rt.block_on(client.shutdown());
        client.stderr()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            self.rt.block_on(client.shutdown());
            drop(client); // prints stderr if the test is panicking
        }
    }
}

// ---------------------------------------------------------------------------
// Running the binary to completion
// ---------------------------------------------------------------------------

/// Output of [`run_cli`]. `code` is `None` if killed by a signal (incl. timeout).
#[derive(Debug, Clone)]
pub struct CliOutput {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

fn capture_thread(
    mut pipe: impl std::io::Read + Send + 'static,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// Run `tuls <args>` (no implicit `filesystem`) with stdin at EOF; kill it after
/// `timeout`.
pub fn run_cli(args: &[impl AsRef<OsStr>], timeout: Duration) -> CliOutput {
    let mut child = Command::new(bin())
        .args(args.iter().map(AsRef::as_ref))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tuls");
    let out = capture_thread(child.stdout.take().expect("child stdout"));
    let err = capture_thread(child.stderr.take().expect("child stderr"));
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for tuls") {
            break status;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait for killed tuls");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    CliOutput {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        timed_out,
    }
}

// ---------------------------------------------------------------------------
// RawServer: hand-written JSON-RPC lines over std pipes
// ---------------------------------------------------------------------------

/// `tuls filesystem <args>` driven line by line. Messages that arrive while
/// waiting for a particular response are queued and returned by [`RawServer::recv`].
pub struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    queued: VecDeque<Value>,
    next_id: i64,
    pub timeout: Duration,
}

impl RawServer {
    pub fn start(args: &[impl AsRef<OsStr>]) -> RawServer {
        Self::start_with_env(args, &[])
    }

    pub fn start_with_env(args: &[impl AsRef<OsStr>], env: &[(&str, &str)]) -> RawServer {
        let mut cmd = Command::new(bin());
        cmd.arg("filesystem")
            .args(args.iter().map(AsRef::as_ref))
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn tuls");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("child stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                            line.pop();
                        }
                        let line = String::from_utf8_lossy(&line).into_owned();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut err_pipe = child.stderr.take().expect("child stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match err_pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => lock(&sink).extend_from_slice(&chunk[..n]),
                }
            }
        });
        RawServer {
            child,
            stdin,
            lines,
            stderr,
            queued: VecDeque::new(),
            next_id: 1,
            timeout: default_timeout(),
        }
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }

    /// Write raw bytes (no newline added). Returns the write error, e.g. EPIPE if
    /// the server has exited.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        stdin.write_all(bytes)?;
        stdin.flush()
    }

    /// Write `line` followed by `\n`; panics on write failure.
    pub fn send_line(&mut self, line: &str) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.send_bytes(&bytes)
            .unwrap_or_else(|e| panic!("write to tuls stdin: {e}\nstderr:\n{}", self.stderr()));
    }

    /// Serialize `msg` as one line.
    pub fn send(&mut self, msg: &Value) {
        self.send_line(&msg.to_string());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            msg["params"] = params;
        }
        self.send(&msg);
    }

    /// Next raw stdout line, or `None` on timeout / EOF.
    pub fn recv_line(&mut self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Next message (queued ones first), or `None` on timeout / EOF. Panics if a
    /// stdout line is not JSON: stdout must carry only JSON-RPC.
    pub fn recv(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(v) = self.queued.pop_front() {
            return Some(v);
        }
        let line = self.recv_line(timeout)?;
        Some(self.parse_line(&line))
    }

    fn parse_line(&self, line: &str) -> Value {
        serde_json::from_str(line).unwrap_or_else(|e| {
            panic!(
                "tuls wrote a non-JSON line to stdout ({e}): {:?}\nstderr:\n{}",
                truncate(line, 500),
                self.stderr()
            )
        })
    }

    /// Wait for the response (result or error) whose `id` equals `id`; other
    /// messages are queued for [`RawServer::recv`]. Panics on timeout / EOF.
    pub fn wait_response(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(line) = self.recv_line(left) else {
                panic!(
                    "no response with id {id} from tuls (timeout or EOF)\nstderr:\n{}",
                    self.stderr()
                );
            };
            let msg = self.parse_line(&line);
            let is_response = msg.get("method").is_none()
                && (msg.get("result").is_some() || msg.get("error").is_some());
            if is_response && msg.get("id") == Some(id) {
                return msg;
            }
            self.queued.push_back(msg);
        }
    }

    /// Send a request with a fresh numeric id and return the whole response
    /// message (`{"jsonrpc","id","result"}` or `{"jsonrpc","id","error"}`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.request_with_id(id, method, params)
    }

    /// Like [`RawServer::request`] with a caller-chosen id (string, null, ...).
    pub fn request_with_id(&mut self, id: Value, method: &str, params: Value) -> Value {
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            msg["params"] = params;
        }
        self.send(&msg);
        self.wait_response(&id)
    }

    /// `initialize` with `protocol_version` and no client capabilities, then
    /// `notifications/initialized`. Returns the `result`; panics on an error.
    pub fn initialize(&mut self, protocol_version: &str) -> Value {
        self.initialize_with(protocol_version, json!({}))
    }

    pub fn initialize_with(&mut self, protocol_version: &str, capabilities: Value) -> Value {
        let resp = self.request(
            "initialize",
            json!({
                "protocolVersion": protocol_version,
                "capabilities": capabilities,
                "clientInfo": {"name": "tuls-raw-test", "version": "0.0.0"},
            }),
        );
        let result = resp
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("initialize failed: {resp}\nstderr:\n{}", self.stderr()));
        self.notify("notifications/initialized", Value::Null);
        result
    }

    /// `tools/call` with arbitrary `arguments` (any JSON, even non-objects).
    /// Returns the whole response message.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Close the server's stdin (EOF).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Wait up to `timeout` for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait tuls") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        print_stderr_if_panicking("tuls (raw)", &self.stderr());
    }
}

/// Interpret a raw `tools/call` response message as a [`Reply`]; panics if it is
/// a JSON-RPC error.
#[track_caller]
pub fn raw_reply(response: &Value) -> Reply {
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("expected a result, got {response}"));
    Reply::from_raw(result.clone())
}

/// Interpret a raw response message as a JSON-RPC error; panics if it is a result.
#[track_caller]
pub fn raw_error(response: &Value) -> RpcError {
    let err = response
        .get("error")
        .unwrap_or_else(|| panic!("expected a JSON-RPC error, got {response}"));
    RpcError {
        code: err
            .get("code")
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok())
            .unwrap_or_else(|| panic!("error without an i32 code: {err}")),
        message: err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        data: err.get("data").cloned(),
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Compile-time check that `&Server` can be shared between std threads.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Server>();
    assert_send_sync::<Client>();
};

/// Every tool, in `tools/list` order: written out here, independently of the
/// server's own table, so the tests check it rather than echo it.
pub const ALL_TOOLS: [&str; 14] = [
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "write_file",
    "edit_file",
    "create_directory",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "move_file",
    "search_files",
    "search_file_contents",
    "get_file_info",
    "list_allowed_directories",
];

/// The ten `filesystem.read` tools, in `tools/list` order.
pub const READ_TOOLS: [&str; 10] = [
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "search_file_contents",
    "get_file_info",
    "list_allowed_directories",
];

/// The four `filesystem.write` tools, in `tools/list` order.
pub const WRITE_TOOLS: [&str; 4] = ["write_file", "edit_file", "create_directory", "move_file"];
