//! Driving the binary through the rmcp client: [`Client`] (async, over
//! `TokioChildProcess`, stderr captured) and [`Server`] (a blocking wrapper with
//! its own runtime; `&Server` is `Sync`, so race tests share it between threads).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ListRootsResult,
    ProtocolVersion, Root, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, Peer, ServiceExt as _};
use serde_json::Value;

use super::cli::run_cli;
use super::reply::{CallError, Reply, RpcError};
use super::{bin, default_timeout, lock, print_stderr_if_panicking, wait_until};

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
    /// A command the binary runs under (e.g. `strace -e inject=...`): the
    /// child is `wrapper... tuls filesystem args...`. Empty: the binary itself.
    pub wrapper: Vec<OsString>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            protocol_version: ProtocolVersion::V_2025_11_25,
            roots: None,
            env: Vec::new(),
            current_dir: None,
            timeout: default_timeout(),
            wrapper: Vec::new(),
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
    pub fn wrapper(mut self, argv: &[impl AsRef<OsStr>]) -> Options {
        self.wrapper = argv.iter().map(|a| a.as_ref().to_os_string()).collect();
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
        let mut cmd = match opts.wrapper.split_first() {
            Some((first, rest)) => {
                let mut cmd = tokio::process::Command::new(first);
                cmd.args(rest).arg(bin());
                cmd
            }
            None => tokio::process::Command::new(bin()),
        };
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

    /// The directories `list_allowed_directories` reports (the lines after
    /// its heading, up to the first blank line).
    pub fn allowed_directories(&self) -> Vec<String> {
        let r = self.call("list_allowed_directories", serde_json::json!({}));
        r.text
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The exact refusal of an escape through `p` on this server
    /// ([`super::escape_denial`] with the roots it reports).
    pub fn escape_denial(&self, p: &str) -> String {
        super::escape_denial(p, &self.allowed_directories())
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

/// Compile-time check that `&Server` can be shared between std threads.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Server>();
    assert_send_sync::<Client>();
};
