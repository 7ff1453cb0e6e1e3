//! [`RawServer`]: a line-level JSON-RPC client over std pipes, for malformed,
//! oversized or otherwise hand-made messages.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::reply::{Reply, RpcError};
use super::{bin, default_timeout, lock, print_stderr_if_panicking};

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
        Self::spawn(args, env, Stdio::piped())
    }

    /// Like [`RawServer::start_with_env`], with stderr a pipe whose read end
    /// is already closed: every write the server makes there fails with
    /// EPIPE. [`RawServer::stderr`] is then always empty.
    pub fn start_with_stderr_closed(args: &[impl AsRef<OsStr>], env: &[(&str, &str)]) -> RawServer {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        Self::spawn(args, env, Stdio::from(writer))
    }

    /// Like [`RawServer::start_with_env`], with stderr a pipe that nobody
    /// reads until the caller does: its read end is returned. Once the pipe
    /// is full, a write the server makes there blocks.
    pub fn start_with_stderr_unread(
        args: &[impl AsRef<OsStr>],
        env: &[(&str, &str)],
    ) -> (RawServer, std::io::PipeReader) {
        let (reader, writer) = std::io::pipe().expect("pipe");
        (Self::spawn(args, env, Stdio::from(writer)), reader)
    }

    fn spawn(args: &[impl AsRef<OsStr>], env: &[(&str, &str)], stderr: Stdio) -> RawServer {
        let mut cmd = Command::new(bin());
        cmd.arg("filesystem")
            .args(args.iter().map(AsRef::as_ref))
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
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
        if let Some(mut err_pipe) = child.stderr.take() {
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
        }
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

    /// The replies (not notifications, not the server's own requests), in
    /// the order they came, read until `quiet` passes without a message.
    pub fn replies_until_quiet(&mut self, quiet: Duration) -> Vec<Value> {
        let mut replies = Vec::new();
        while let Some(msg) = self.recv(quiet) {
            if msg.get("method").is_none() {
                replies.push(msg);
            }
        }
        replies
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

/// Answers the server's `roots/list` request `id` with these root URIs.
pub fn answer_roots(raw: &mut RawServer, id: &Value, uris: &[String]) {
    let roots: Vec<Value> = uris.iter().map(|u| json!({ "uri": u })).collect();
    raw.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}}));
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
