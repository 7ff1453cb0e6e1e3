//! [`run_cli`]: run the binary to completion (stdin at EOF), with a timeout.

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::bin;

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
    run(args, timeout, Stdio::piped())
}

/// [`run_cli`]'s output as the bytes the binary wrote, for tests that scan
/// them (a lossy `String` would hide bytes that are not UTF-8).
#[derive(Debug, Clone)]
pub struct RawCliOutput {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// [`run_cli`], keeping the output's bytes as written.
pub fn run_cli_raw(args: &[impl AsRef<OsStr>], timeout: Duration) -> RawCliOutput {
    let (code, stdout, stderr, _) = run_bytes(args, timeout, Stdio::piped());
    RawCliOutput {
        code,
        stdout,
        stderr,
    }
}

/// Like [`run_cli`], with stdout a pipe whose read end is already closed
/// (`tuls journal list | head -0`): every write there fails with EPIPE, and
/// [`CliOutput::stdout`] is empty.
pub fn run_cli_stdout_closed(args: &[impl AsRef<OsStr>], timeout: Duration) -> CliOutput {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    run(args, timeout, Stdio::from(writer))
}

fn run(args: &[impl AsRef<OsStr>], timeout: Duration, stdout: Stdio) -> CliOutput {
    let (code, stdout, stderr, timed_out) = run_bytes(args, timeout, stdout);
    CliOutput {
        code,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        timed_out,
    }
}

fn run_bytes(
    args: &[impl AsRef<OsStr>],
    timeout: Duration,
    stdout: Stdio,
) -> (Option<i32>, Vec<u8>, Vec<u8>, bool) {
    let mut child = Command::new(bin())
        .args(args.iter().map(AsRef::as_ref))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tuls");
    let out = child.stdout.take().map(capture_thread);
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
    let stdout = out
        .map(|o| o.join().expect("stdout reader"))
        .unwrap_or_default();
    let stderr = err.join().expect("stderr reader");
    (status.code(), stdout, stderr, timed_out)
}
