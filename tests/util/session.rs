//! [`Session`]: a tuls session over std pipes driven by hand, whose replies
//! may go unread (the back-pressure and memory tests need a client that
//! does not read): spawned with `--log-level error`, `initialize`d and
//! `initialized`; [`call`] builds a `tools/call` request to write to it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use super::bin;

/// A `tools/call` request with this id.
pub fn call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}})
}

/// A hand-driven session; the server is killed when it drops.
pub struct Session {
    pub child: Child,
    pub pid: u32,
    /// Taken by a test that writes from a thread, or closes its input.
    pub stdin: Option<ChildStdin>,
    /// Taken by a test that reads on its own, or closes the server's
    /// output.
    pub stdout: Option<BufReader<ChildStdout>>,
}

impl Session {
    /// The session's input, taken.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin not taken yet")
    }

    /// The session's output, to read replies from.
    pub fn out(&mut self) -> &mut BufReader<ChildStdout> {
        self.stdout.as_mut().expect("stdout not taken")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A session over `root`, spawned with `extra` flags, after its
/// `initialize` answer and `notifications/initialized`.
pub fn session(root: impl AsRef<Path>, extra: &[&str]) -> Session {
    let mut child = Command::new(bin())
        .arg("filesystem")
        .arg(root.as_ref())
        .args(extra)
        .args(["--log-level", "error"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tuls");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    writeln!(stdin, "{init}").expect("write");
    let mut line = Vec::new();
    stdout
        .read_until(b'\n', &mut line)
        .expect("initialize answer");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    Session {
        child,
        pid,
        stdin: Some(stdin),
        stdout: Some(stdout),
    }
}
