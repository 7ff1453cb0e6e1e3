//! Integration-test harness for the `tuls` binary (ripgrep/fd `TestEnv` style),
//! one module per topic; everything is re-exported here, so tests write
//! `use crate::util::{Server, TestEnv, assert_text};`.
//!
//! * [`env`]: [`TestEnv`], a throw-away tree `B/` with `B/root` (the directory the
//!   server is allowed to touch), `B/outside` (which it must never touch, holding
//!   the canary file `B/outside/canary.txt`), and small fixture helpers. Paths
//!   given to the helpers are relative to `B/root`; absolute paths are used as
//!   they are. [`Scratch`]: a bare scratch root on tmpfs for big fixtures.
//! * [`snapshot`]: [`Snapshot`], a no-follow recording of a whole tree, to prove
//!   that an outside tree was left alone (`before.assert_same(&after, "outside")`).
//! * [`server`]: [`Client`], the async MCP client (rmcp 3.11 over
//!   `TokioChildProcess`), stderr captured. [`Server`] wraps it with its own tokio
//!   runtime and exposes blocking methods; `&Server` is `Sync`, so race tests can
//!   share it between std threads.
//! * [`raw`]: [`RawServer`], a line-level JSON-RPC client over std pipes, for
//!   malformed, oversized or otherwise hand-made messages.
//! * [`session`]: [`Session`], a session over std pipes whose replies may go
//!   unread (back-pressure and memory tests), and [`call`], a `tools/call`
//!   request for it.
//! * [`cli`]: [`run_cli`] runs the binary to completion
//!   (see also [`Server::start_expect_fail`]).
//! * [`reply`] and [`assert`]: what a call returns ([`Reply`], [`RpcError`]) and
//!   the shared assertions on it ([`assert_text`], [`assert_err`]).
//! * [`proc`]: `/proc` readers (peak RSS, CPU time) for the resource tests.
//! * [`require`]: [`require_or_skip`] and [`have`] for checks this machine cannot make
//!   (Landlock absent, no second filesystem): a `SKIPPED` line, or a failure
//!   when `TULS_REQUIRE_LANDLOCK=1` (as in CI).
//!
//! Every process started here is killed when its handle drops, and when a test is
//! panicking the server's captured stderr is printed so the failure explains itself.
#![allow(dead_code)] // each test module uses a different subset of the harness
#![allow(deprecated)] // roots are deprecated by SEP-2577 but are what these tests exercise

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

// `args!` comes before the modules so that they can use it too.

/// Default per-request / startup timeout; override with `TULS_TEST_TIMEOUT_SECS`.
pub fn default_timeout() -> Duration {
    let secs = std::env::var("TULS_TEST_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    Duration::from_secs(secs)
}

/// The variable that names another executable to test instead of the binary
/// cargo built: CI's aarch64 step points it at a wrapper that runs the static
/// aarch64 binary under qemu-user (`ci/aarch64.sh`).
pub const BIN_VAR: &str = "TULS_TEST_BIN";

/// Path of the binary under test: [`BIN_VAR`] when set, else cargo's `tuls`.
/// A [`BIN_VAR`] that is not a file fails every test that starts the server.
pub fn bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os(BIN_VAR) {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "{BIN_VAR}={} is not a file", p.display());
            p
        }
        _ => PathBuf::from(env!("CARGO_BIN_EXE_tuls")),
    })
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

/// Standard base64 of `bytes`, as `read_media_file` and `read_text_file`'s
/// media replies carry it.
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The `version` tuls gives a file holding `bytes` (BLAKE3, first 20
/// bytes, as `b3:` and hex).
pub fn version_of(bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes);
    let hex: String = hash.as_bytes()[..20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("b3:{hex}")
}

/// A (UTF-8) path as a `String`, for `json!` arguments and expected texts.
pub fn path_string(path: impl AsRef<Path>) -> String {
    path.as_ref()
        .to_str()
        .expect("test paths are UTF-8")
        .to_owned()
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn print_stderr_if_panicking(what: &str, stderr: &str) {
    if std::thread::panicking() {
        eprintln!("----- {what} stderr -----\n{stderr}\n----- end {what} stderr -----");
    }
}

pub mod assert;
pub mod cli;
pub mod env;
pub mod proc;
pub mod raw;
pub mod reply;
pub mod require;
pub mod server;
pub mod session;
pub mod snapshot;

pub use self::assert::*;
pub use self::cli::*;
pub use self::env::*;
pub use self::proc::*;
pub use self::raw::*;
pub use self::reply::*;
pub use self::require::*;
pub use self::server::*;
pub use self::session::*;
pub use self::snapshot::*;

/// Every tool, in `tools/list` order: written out here, independently of the
/// server's own table, so the tests check it rather than echo it.
pub const ALL_TOOLS: [&str; 17] = [
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "write_file",
    "append_file",
    "edit_file",
    "create_directory",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "move_file",
    "copy_file",
    "search_files",
    "search_file_contents",
    "get_file_info",
    "list_allowed_directories",
];

/// The eleven `filesystem.read` tools, in `tools/list` order.
pub const READ_TOOLS: [&str; 11] = [
    "read_file",
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

/// The six `filesystem.write` tools, in `tools/list` order.
pub const WRITE_TOOLS: [&str; 6] = [
    "write_file",
    "append_file",
    "edit_file",
    "create_directory",
    "move_file",
    "copy_file",
];
