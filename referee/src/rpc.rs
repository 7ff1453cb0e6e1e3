//! A stdio MCP client for any server: spawns the command, writes lines from
//! a writer thread (so a server that stops reading never blocks the referee),
//! reads stdout lines on a reader thread (which the fuzzer can pause, to play
//! a client that stops reading), keeps every line it saw for the oracles, and
//! answers the server's own requests (`roots/list`, `ping`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The protocol era a session speaks.
#[derive(Clone, Debug, PartialEq)]
pub enum Era {
    /// `initialize` with this protocolVersion, then `notifications/initialized`.
    Handshake(String),
    /// 2026-07-28: no handshake; every request carries `_meta`.
    Stateless,
}

pub const MODERN: &str = "2026-07-28";

/// Why a wait ended without the reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoReply {
    Timeout,
    Closed,
}

pub struct Server {
    child: Child,
    tx: Option<Sender<Vec<u8>>>,
    rx: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    paused: Arc<AtomicBool>,
    /// Every stdout line, in order (for canary scans).
    pub lines: Vec<String>,
    /// Replies not yet claimed, by id (as JSON text).
    replies: HashMap<String, Vec<Value>>,
    /// How many replies arrived per id (the fuzzer's exactly-once oracle).
    pub reply_counts: HashMap<String, usize>,
    pub era: Era,
    /// `Some` => answer `roots/list` with these URIs.
    pub roots: Option<Vec<String>>,
    pub roots_requests: usize,
    next_id: u64,
}

pub fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Server {
    pub fn spawn(argv: &[String], cwd: &Path, era: Era) -> Result<Server, String> {
        let (prog, args) = argv.split_first().ok_or("empty server command")?;
        let mut child = Command::new(prog)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {prog}: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut stderr_pipe = child.stderr.take().ok_or("no stderr")?;
        let (tx, wrx) = channel::<Vec<u8>>();
        thread::spawn(move || {
            for buf in wrx {
                if stdin.write_all(&buf).and_then(|_| stdin.flush()).is_err() {
                    break;
                }
            }
        });
        let (otx, rx) = channel();
        let paused = Arc::new(AtomicBool::new(false));
        let p2 = paused.clone();
        thread::spawn(move || {
            let mut r = BufReader::with_capacity(1 << 16, stdout);
            let mut buf = Vec::new();
            loop {
                while p2.load(Ordering::Relaxed) {
                    thread::sleep(Duration::from_millis(5));
                }
                buf.clear();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let s = String::from_utf8_lossy(&buf).trim_end().to_string();
                        if otx.send(s).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let e2 = stderr.clone();
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = stderr_pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut g = e2.lock().unwrap_or_else(|p| p.into_inner());
                // Keep the first 4 MiB: enough for a panic message.
                if g.len() < 4 << 20 {
                    g.extend_from_slice(&chunk[..n]);
                }
            }
        });
        Ok(Server {
            child,
            tx: Some(tx),
            rx,
            stderr,
            paused,
            lines: Vec::new(),
            replies: HashMap::new(),
            reply_counts: HashMap::new(),
            era,
            roots: None,
            roots_requests: 0,
            next_id: 1000,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send_raw(&self, bytes: Vec<u8>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(bytes);
        }
    }

    pub fn send(&self, msg: &Value) {
        let mut b = msg.to_string().into_bytes();
        b.push(b'\n');
        self.send_raw(b);
    }

    /// Closes the server's stdin (end of session).
    pub fn close_stdin(&mut self) {
        self.tx = None;
    }

    pub fn pause_reading(&self, on: bool) {
        self.paused.store(on, Ordering::Relaxed);
    }

    pub fn fresh_id(&mut self) -> Value {
        self.next_id += 1;
        json!(self.next_id)
    }

    /// `params` with the era's `_meta` added (stateless era only).
    pub fn with_meta(&self, mut params: Value) -> Value {
        if self.era == Era::Stateless
            && let Some(o) = params.as_object_mut()
        {
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert(
                    "io.modelcontextprotocol/protocolVersion".into(),
                    json!(MODERN),
                );
                m.insert(
                    "io.modelcontextprotocol/clientCapabilities".into(),
                    json!({}),
                );
            }
        }
        params
    }

    /// Sends a request with `id`; returns at once.
    pub fn send_request(&self, id: &Value, method: &str, params: Value) {
        let params = self.with_meta(params);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// Handles one stdout line: a reply is stored, a server request answered.
    fn take_line(&mut self, line: String) {
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        self.lines.push(line);
        if v.get("method").is_some() {
            if let Some(id) = v.get("id") {
                let method = v["method"].as_str().unwrap_or("");
                let reply = match (method, &self.roots) {
                    ("roots/list", Some(roots)) => {
                        self.roots_requests += 1;
                        let list: Vec<Value> = roots
                            .iter()
                            .map(|u| json!({"uri": u, "name": "r"}))
                            .collect();
                        json!({"jsonrpc": "2.0", "id": id, "result": {"roots": list}})
                    }
                    ("ping", _) => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                    _ => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "not supported"}}),
                };
                self.send(&reply);
            }
            return;
        }
        if let Some(id) = v.get("id") {
            let k = id_key(id);
            *self.reply_counts.entry(k.clone()).or_default() += 1;
            self.replies.entry(k).or_default().push(v);
        }
    }

    /// Waits for one stdout line (handled as it arrives) until the deadline.
    pub fn pump(&mut self, deadline: Instant) -> Option<NoReply> {
        let now = Instant::now();
        if now >= deadline {
            return Some(NoReply::Timeout);
        }
        match self.rx.recv_timeout(deadline - now) {
            Ok(line) => {
                self.take_line(line);
                None
            }
            Err(RecvTimeoutError::Timeout) => Some(NoReply::Timeout),
            Err(RecvTimeoutError::Disconnected) => Some(NoReply::Closed),
        }
    }

    /// Drains whatever is readable now, without waiting.
    pub fn drain(&mut self) {
        while let Ok(line) = self.rx.try_recv() {
            self.take_line(line);
        }
    }

    pub fn wait_reply(&mut self, id: &Value, deadline: Instant) -> Result<Value, NoReply> {
        let k = id_key(id);
        loop {
            if let Some(list) = self.replies.get_mut(&k)
                && !list.is_empty()
            {
                return Ok(list.remove(0));
            }
            if let Some(why) = self.pump(deadline) {
                return Err(why);
            }
        }
    }

    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, NoReply> {
        let id = self.fresh_id();
        self.send_request(&id, method, params);
        self.wait_reply(&id, Instant::now() + timeout)
    }

    /// The era's opening: `initialize` + `notifications/initialized`, or
    /// nothing (stateless).
    pub fn handshake(&mut self, timeout: Duration) -> Result<(), String> {
        let Era::Handshake(version) = self.era.clone() else {
            return Ok(());
        };
        let caps = if self.roots.is_some() {
            json!({"roots": {"listChanged": true}})
        } else {
            json!({})
        };
        let r = self
            .request(
                "initialize",
                json!({"protocolVersion": version, "capabilities": caps,
                    "clientInfo": {"name": "tuls-referee", "version": env!("CARGO_PKG_VERSION")}}),
                timeout,
            )
            .map_err(|e| format!("no answer to initialize ({e:?})"))?;
        if r.get("result").is_none() {
            return Err(format!("initialize failed: {r}"));
        }
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        Ok(())
    }

    pub fn tool_names(&mut self, timeout: Duration) -> Result<Vec<String>, String> {
        let r = self
            .request("tools/list", json!({}), timeout)
            .map_err(|e| format!("no answer to tools/list ({e:?})"))?;
        let tools = r["result"]["tools"]
            .as_array()
            .ok_or_else(|| format!("tools/list failed: {r}"))?;
        Ok(tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(String::from))
            .collect())
    }

    pub fn stderr_text(&self) -> String {
        let g = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&g).into_owned()
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Closes stdin, waits up to `grace` for a clean exit, then kills.
    /// Returns the exit status when the server exited by itself.
    pub fn finish(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        self.close_stdin();
        let end = Instant::now() + grace;
        while Instant::now() < end {
            self.drain();
            if let Some(s) = self.exited() {
                return Some(s);
            }
            thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        None
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.exited().is_none() {
            self.kill();
        }
    }
}

/// A tool call's reply, as the oracles see it.
#[derive(Debug, Clone)]
pub struct CallReply {
    pub refused: bool,
    /// The text of the content blocks, joined (for `reply_contains`).
    pub text: String,
}

pub fn call_reply(v: &Value) -> CallReply {
    if v.get("error").is_some() {
        let text = v["error"]["message"].as_str().unwrap_or("").to_string();
        return CallReply {
            refused: true,
            text,
        };
    }
    let r = &v["result"];
    let refused = r["isError"].as_bool().unwrap_or(false);
    let mut text = String::new();
    if let Some(c) = r["content"].as_array() {
        for b in c {
            for k in ["text", "data"] {
                if let Some(s) = b[k].as_str() {
                    text.push_str(s);
                    text.push('\n');
                }
            }
            if let Some(s) = b["resource"]["text"].as_str() {
                text.push_str(s);
            }
        }
    }
    CallReply { refused, text }
}
