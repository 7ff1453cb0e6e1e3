//! The MCP server: `tools/list`, `tools/call` and client roots.
//!
//! Owns: the rmcp `ServerHandler`. A call to a tool that is not enabled is
//! refused exactly as an unknown tool is (JSON-RPC `-32602`), before its
//! arguments are looked at. Tool work runs on the blocking pool, and a panic
//! inside a tool becomes an `isError` result for that call only.
//! Client roots (MCP roots, legacy sessions) can only narrow the operator's
//! roots; tool calls wait, bounded, for the first answer and for the answer
//! after each `roots/list_changed`.
//! May touch: the scope (to install client roots), through [`crate::scope`].

#![allow(deprecated)] // MCP roots are deprecated by SEP-2577 but still used by legacy sessions

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::limits::Limits;
use crate::policy::Policy;
use crate::roots::Root;
use crate::scope::{Scope, file_uri_path, join_display, resolve_in};
use crate::tools::{self, Ctx, Output};

/// Whether the roots in force are settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootsState {
    /// Waiting for the answer to the latest `roots/list` request: the first
    /// one of the session, or the one a `roots/list_changed` triggered.
    Pending,
    /// Settled.
    Ready,
}

/// The tuls filesystem MCP server.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    scope: Arc<Scope>,
    limits: Limits,
    policy: Policy,
    tools: Vec<Tool>,
    client_roots: bool,
    /// Whether client roots are in use: the client declared the `roots`
    /// capability in `initialize` and `--no-client-roots` was not given.
    roots_in_use: AtomicBool,
    roots_state: watch::Sender<RootsState>,
    /// Number of the latest `roots/list` request. Only the answer to that
    /// request is applied (answers can arrive out of order), and it is
    /// applied, with `roots_state`, under this lock.
    roots_generation: Mutex<u64>,
}

impl Server {
    /// A server over `scope` with the enabled tools of `policy`.
    pub fn new(scope: Arc<Scope>, policy: Policy, limits: Limits, client_roots: bool) -> Self {
        let tools = tools::SPECS
            .iter()
            .filter(|s| policy.is_enabled(s.name))
            .filter_map(|s| serde_json::from_value::<Tool>(tools::tool_json(s)).ok())
            .collect();
        let (roots_state, _) = watch::channel(RootsState::Ready);
        Self {
            inner: Arc::new(Inner {
                scope,
                limits,
                policy,
                tools,
                client_roots,
                roots_in_use: AtomicBool::new(false),
                roots_state,
                roots_generation: Mutex::new(0),
            }),
        }
    }

    /// Runs one tool call to completion, in process (used by the MCP handler
    /// and by the fuzz targets). Returns the MCP result, or `None` when the
    /// tool is not enabled (the caller refuses it as an unknown tool).
    /// A text result's `structuredContent` is the transport's mirror marker;
    /// in-process callers use [`crate::transport::materialize_mirror`].
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        ctx_ct: tokio_util::sync::CancellationToken,
    ) -> Option<CallToolResult> {
        if !self.inner.policy.is_enabled(name) {
            return None;
        }
        // Every tool waits while the client's roots are pending, not only
        // the path tools: list_allowed_directories would otherwise report the
        // CLI roots (or the old list) as if they were in force.
        if let Err(msg) = self.wait_for_roots().await {
            return Some(error_result(msg));
        }
        let ctx = Ctx {
            scope: self.inner.scope.clone(),
            limits: self.inner.limits,
            cancel: ctx_ct,
        };
        let owned = name.to_owned();
        let joined = tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(AssertUnwindSafe(|| tools::dispatch(&ctx, &owned, args)))
        })
        .await;
        Some(match joined {
            Ok(Ok(Ok(out))) => success_result(out),
            Ok(Ok(Err(e))) => error_result(e.to_string()),
            Ok(Err(_)) | Err(_) => {
                tracing::error!(
                    tool = name,
                    "tool panicked; the call failed, the server goes on"
                );
                error_result(format!(
                    "Internal error in tool {name}; the server is still running"
                ))
            }
        })
    }

    async fn wait_for_roots(&self) -> Result<(), String> {
        let mut rx = self.inner.roots_state.subscribe();
        let wait = Duration::from_secs(self.inner.limits.roots_wait_secs);
        match tokio::time::timeout(wait, rx.wait_for(|s| *s == RootsState::Ready)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(format!(
                "Timed out after {}s waiting for the client's roots/list answer; no access until the client answers",
                wait.as_secs()
            )),
        }
    }

    /// Asks the client for its roots, and marks the roots Pending until the
    /// answer is applied.
    ///
    /// Decision: during every refresh (not only the first), tool calls wait
    /// (bounded by `--roots-timeout-secs`) instead of going on with the roots
    /// in force. After `roots/list_changed` the new list may be narrower, and
    /// a call that kept the old, wider scope would be exactly the slip the
    /// first-answer wait exists to prevent. The cost is a short stall after
    /// each change, or a timeout error if the client never answers: failing
    /// closed. Calls already past the wait finish with the scope they read.
    /// rmcp runs each incoming message as its own task, so a `tools/call`
    /// the client writes right after the notification could be scheduled
    /// before this runs; [`Server::roots_changed_hook`], which the transport
    /// runs in wire order, closes that window.
    fn start_refresh(&self, peer: Peer<RoleServer>) {
        let generation = {
            let mut g = lock(&self.inner.roots_generation);
            *g += 1;
            self.inner.roots_state.send_replace(RootsState::Pending);
            *g
        };
        let this = self.clone();
        tokio::spawn(async move { this.refresh_roots(&peer, generation).await });
    }

    /// For the transport: marks the roots Pending the moment
    /// `roots/list_changed` is read off the wire, before any later message
    /// is, closing the window in which a call written right after the
    /// notification could run with the old roots. It also supersedes any
    /// `roots/list` answer still outstanding.
    pub fn roots_changed_hook(&self) -> crate::transport::Hook {
        let inner = self.inner.clone();
        Arc::new(move || {
            if inner.roots_in_use.load(Ordering::SeqCst) {
                let mut g = lock(&inner.roots_generation);
                *g += 1;
                inner.roots_state.send_replace(RootsState::Pending);
            }
        })
    }

    async fn refresh_roots(&self, peer: &Peer<RoleServer>, generation: u64) {
        let scope = &self.inner.scope;
        let narrowed = match peer.list_roots().await {
            Ok(list) => {
                let uris: Vec<String> = list.roots.into_iter().map(|r| r.uri).collect();
                narrow(scope.cli_roots(), &uris, self.inner.limits.max_path_bytes)
            }
            Err(e) => {
                tracing::error!(error = %e, "roots/list failed; failing closed with no access");
                Vec::new()
            }
        };
        let latest = lock(&self.inner.roots_generation);
        if *latest != generation {
            // A newer roots/list request is out; its answer decides.
            tracing::debug!(
                generation,
                latest = *latest,
                "discarding a stale roots/list answer"
            );
            return;
        }
        tracing::info!(
            roots = ?narrowed.iter().map(|r| r.display.as_str()).collect::<Vec<_>>(),
            "client roots in force"
        );
        scope.set_roots(narrowed);
        self.inner.roots_state.send_replace(RootsState::Ready);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The client roots that lie at or beneath a CLI root, each opened through
/// that root's handle. Others are ignored, with a log line.
pub fn narrow(cli: &[Arc<Root>], uris: &[String], max_path_bytes: usize) -> Vec<Arc<Root>> {
    let mut out = Vec::new();
    for uri in uris {
        let Some(path) = file_uri_path(uri) else {
            tracing::warn!(uri, "ignoring client root: not a file:// URI");
            continue;
        };
        // A `..` would leave a spelling that tool paths never match (and
        // normalizing it by string could disagree with the kernel across a
        // symlink), so such a root is ignored: ignoring only narrows.
        if path.split('/').any(|seg| seg == "..") {
            tracing::warn!(uri, "ignoring client root: it contains '..'");
            continue;
        }
        let t = match resolve_in(cli, &path, max_path_bytes) {
            Ok(t) => t,
            Err(_) => {
                tracing::warn!(
                    uri,
                    "ignoring client root: not beneath any allowed directory"
                );
                continue;
            }
        };
        match t.root.dir.open_dir(t.rel()) {
            Ok(dir) => out.push(Arc::new(Root {
                display: join_display(&t.root.display, &t.segs),
                // The client may name it under either spelling of the CLI
                // root (e.g. a symlinked path, or the path it resolves to).
                resolved: t.root.resolved.as_deref().map(|r| join_display(r, &t.segs)),
                dir: Arc::new(dir),
            })),
            Err(_) => tracing::warn!(
                uri,
                "ignoring client root: not a directory beneath an allowed directory"
            ),
        }
    }
    out
}

fn success_result(out: Output) -> CallToolResult {
    let (block, structured) = match out {
        Output::Text(text) => {
            // The transport writes {"content": text} from the text block
            // itself (see transport::MIRROR_MARKER): no second copy.
            let structured = crate::transport::mirror_marker();
            (ContentBlock::text(text), structured)
        }
        Output::Media(v) => match serde_json::from_value::<ContentBlock>(v) {
            // The transport writes {"content": [block]} from the block itself.
            Ok(block) => (block, crate::transport::mirror_block_marker()),
            Err(e) => return error_result(format!("cannot build media block: {e}")),
        },
    };
    let mut r = CallToolResult::success(vec![block]);
    r.structured_content = Some(structured);
    r
}

fn error_result(msg: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg)])
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tuls", env!("CARGO_PKG_VERSION")))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        if self.inner.client_roots && request.capabilities.roots.is_some() {
            // Pending from before the initialize answer goes out, so no call
            // can run with the CLI roots before the client's roots arrive.
            self.inner.roots_in_use.store(true, Ordering::SeqCst);
            self.inner.roots_state.send_replace(RootsState::Pending);
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.inner.roots_in_use.load(Ordering::SeqCst) {
            self.start_refresh(context.peer);
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        // A client that did not declare roots has none to send (and the
        // protocol forbids asking it); --no-client-roots ignores them all.
        if self.inner.roots_in_use.load(Ordering::SeqCst) {
            self.start_refresh(context.peer);
        } else {
            tracing::debug!("ignoring roots/list_changed: client roots are not in use");
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        if request.method == crate::transport::OVERSIZED_METHOD {
            return Err(McpError::invalid_request(
                format!(
                    "Request too large: the line exceeds {} bytes (--max-request-bytes); it was discarded",
                    self.inner.limits.max_request_bytes
                ),
                None,
            ));
        }
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {}", request.method),
            None,
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| json!({}));
        match self.call(&request.name, args, context.ct.clone()).await {
            Some(r) => Ok(r.into()),
            None => Err(McpError::invalid_params(
                format!("Tool {} not found", request.name),
                None,
            )),
        }
    }
}
