//! The MCP server handler: `initialize`, `tools/list` and `tools/call`.
//!
//! Owns: the rmcp `ServerHandler`. A call to a tool that is not enabled is
//! refused exactly as an unknown tool is (JSON-RPC `-32602`), before its
//! arguments are looked at. Tool work runs on the blocking pool, and a panic
//! inside a tool becomes an `isError` result for that call only. Each call
//! waits for pending client roots ([`super::roots`]) and then resolves
//! against one snapshot of the roots, taken when it starts.
//! May touch: the scope, through [`super::roots`] and the tools.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::reply;
use super::roots::ClientRoots;
use crate::error::Error;
use crate::fs::scope::Scope;
use crate::limits::Limits;
use crate::policy::Policy;
use crate::tools::{self, Ctx, Progress};

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
    roots: Arc<ClientRoots>,
}

impl Server {
    /// A server over `scope` with the enabled tools of `policy`. Fails when
    /// a tool cannot be listed (a bug, caught at startup rather than by a
    /// tool silently missing from `tools/list`).
    pub fn new(
        scope: Arc<Scope>,
        policy: Policy,
        limits: Limits,
        client_roots: bool,
    ) -> Result<Self, String> {
        let tools = tools::list(|name| policy.is_enabled(name))?;
        let roots = Arc::new(ClientRoots::new(
            scope.clone(),
            client_roots,
            limits.roots_wait_secs,
            limits.max_path_bytes,
        ));
        Ok(Self {
            inner: Arc::new(Inner {
                scope,
                limits,
                policy,
                tools,
                roots,
            }),
        })
    }

    /// The session's client roots, for the transport's in-order observer.
    pub fn client_roots(&self) -> Arc<ClientRoots> {
        self.inner.roots.clone()
    }

    /// Runs one tool call to completion, in process (used by the MCP handler
    /// and by the fuzz targets). Returns the MCP result, or `None` when the
    /// tool is not enabled (the caller refuses it as an unknown tool). The
    /// result has no `structuredContent`; see [`reply`].
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        cancel: CancellationToken,
        progress: Option<Progress>,
    ) -> Option<CallToolResult> {
        let tool = tools::find(name).filter(|t| self.inner.policy.is_enabled(t.name))?;
        if let Err(e) = self.inner.roots.wait_ready().await {
            return Some(reply::tool_result(Err(e)));
        }
        let ctx = Ctx {
            scope: self.inner.scope.snapshot(),
            limits: self.inner.limits,
            cancel,
            progress,
        };
        let joined = tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(AssertUnwindSafe(|| tools::dispatch(&ctx, tool, args)))
        })
        .await;
        let result = match joined {
            Ok(Ok(result)) => result,
            Ok(Err(_)) | Err(_) => {
                tracing::error!(
                    tool = tool.name,
                    "tool panicked; the call failed, the server goes on"
                );
                Err(Error::Panicked { tool: tool.name })
            }
        };
        Some(reply::tool_result(result))
    }
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
        #[allow(deprecated)] // MCP roots: deprecated by SEP-2577, still sent by older clients
        let declares_roots = request.capabilities.roots.is_some();
        self.inner.roots.on_initialize(declares_roots);
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.inner.roots.refresh(context.peer);
    }

    #[allow(deprecated)] // MCP roots: deprecated by SEP-2577, still sent by older clients
    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.inner.roots.refresh(context.peer);
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
        // Reports go through one channel to one task, so they reach the
        // client in order; the task ends when the call drops its sink.
        let progress = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
            tokio::spawn(async move {
                while let Some(done) = rx.recv().await {
                    let param = ProgressNotificationParam::new(token.clone(), done as f64);
                    if let Err(e) = peer.notify_progress(param).await {
                        tracing::debug!(error = %e, "progress notification not sent");
                    }
                }
            });
            Progress::new(move |done| {
                let _ = tx.send(done);
            })
        });
        match self
            .call(&request.name, args, context.ct.clone(), progress)
            .await
        {
            Some(r) => Ok(r.into()),
            None => Err(McpError::invalid_params(
                format!("Tool {} not found", request.name),
                None,
            )),
        }
    }
}
