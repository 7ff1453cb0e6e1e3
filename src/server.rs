//! The MCP server: `tools/list`, `tools/call` and client roots.
//!
//! Owns: the rmcp `ServerHandler`. A call to a tool that is not enabled is
//! refused exactly as an unknown tool is (JSON-RPC `-32602`), before its
//! arguments are looked at. Tool work runs on the blocking pool, and a panic
//! inside a tool becomes an `isError` result for that call only.
//! Client roots (MCP roots, legacy sessions) can only narrow the operator's
//! roots; path tools wait, bounded, for the first answer.
//! May touch: the scope (to install client roots), through [`crate::scope`].

#![allow(deprecated)] // MCP roots are deprecated by SEP-2577 but still used by legacy sessions

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
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
    /// Waiting for the client's first `roots/list` answer.
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
    roots_state: watch::Sender<RootsState>,
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
                roots_state,
            }),
        }
    }

    /// Runs one tool call to completion, in process (used by the MCP handler
    /// and by the fuzz targets). Returns the MCP result, or `None` when the
    /// tool is not enabled (the caller refuses it as an unknown tool).
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        ctx_ct: tokio_util::sync::CancellationToken,
    ) -> Option<CallToolResult> {
        if !self.inner.policy.is_enabled(name) {
            return None;
        }
        if tools::takes_path(name)
            && let Err(msg) = self.wait_for_roots().await
        {
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

    async fn refresh_roots(&self, peer: &Peer<RoleServer>) {
        let scope = &self.inner.scope;
        match peer.list_roots().await {
            Ok(list) => {
                let uris: Vec<String> = list.roots.into_iter().map(|r| r.uri).collect();
                let narrowed = narrow(scope.cli_roots(), &uris, self.inner.limits.max_path_bytes);
                tracing::info!(
                    roots = ?narrowed.iter().map(|r| r.display.as_str()).collect::<Vec<_>>(),
                    "client roots in force"
                );
                scope.set_roots(narrowed);
            }
            Err(e) => {
                tracing::error!(error = %e, "roots/list failed; failing closed with no access");
                scope.set_roots(Vec::new());
            }
        }
        self.inner.roots_state.send_replace(RootsState::Ready);
    }
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
                resolved: None,
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
            let structured = json!({ "content": text });
            (ContentBlock::text(text), structured)
        }
        Output::Media(v) => {
            let structured = json!({ "content": [v.clone()] });
            match serde_json::from_value::<ContentBlock>(v) {
                Ok(block) => (block, structured),
                Err(e) => return error_result(format!("cannot build media block: {e}")),
            }
        }
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
            self.inner.roots_state.send_replace(RootsState::Pending);
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if *self.inner.roots_state.borrow() == RootsState::Pending {
            let this = self.clone();
            tokio::spawn(async move { this.refresh_roots(&context.peer).await });
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        if self.inner.client_roots {
            let this = self.clone();
            tokio::spawn(async move { this.refresh_roots(&context.peer).await });
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
