//! The tuls server: the rmcp handler of the requests rmcp's service
//! answers (`initialize`, `tools/list`, `server/discover`, the client-roots
//! notifications), and the run of one admitted tool call.
//!
//! Owns: the rmcp `ServerHandler` (it has no `call_tool`: every
//! `tools/call` is the call lifecycle's, [`super::call`]), what a call needs
//! before it runs (`Server::admit`: pending client roots,
//! [`super::roots`], and its reply budget, [`super::flow`]), and running it
//! (`Server::execute`, on a filesystem worker, [`super::workers`]):
//! against one snapshot of the roots, taken when it starts, with the audit
//! record and the journal's refusals; a panic inside a tool becomes an
//! `isError` result for that call only. The server makes, once, what its
//! calls share (the spare read buffer, the walk threads; the undo journal
//! and the audit log, opened at startup, are handed to it), and `execute`
//! makes each call's context ([`Ctx`]): the call's facts (its grant of the
//! reply budget, its change recorder: the journal and the call's own audit
//! note) are values in it, never globals.
//! May touch: the scope, through [`super::roots`] and the tools.

use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolResult, DiscoverResult, Implementation, InitializeRequestParams,
    InitializeResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::era;
use super::flow::{CallBudget, Flow, Reservation};
use super::reply;
use super::roots::ClientRoots;
use super::workers::Workers;
use crate::audit::{Audit, CallRecord, Noting};
use crate::error::Error;
use crate::fs::io::{Io, Spare};
use crate::fs::record::{Recorder, Recorders};
use crate::fs::scope::{Intent, Scope};
use crate::fs::walk::WalkPool;
use crate::journal::Journal;
use crate::limits::{Limits, MAX_CALLS_IN_FLIGHT};
use crate::policy::Policy;
use crate::tools::{self, Ctx, Progress, Tool as ToolDef};

mod resources;

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
    flow: Arc<Flow>,
    instructions: String,
    workers: Workers,
    audit: Option<Arc<Audit>>,
    /// The undo journal, in every call's recorder.
    journal: Option<Arc<Journal>>,
    /// The spare buffer of large whole-file reads, shared by every call's
    /// readers and the stdout writer, which refills it.
    spare: Arc<Spare>,
    /// The walk threads, shared by every call's walks.
    walk: WalkPool,
}

/// Roots named in the `initialize` instructions; more are counted.
const INSTRUCTION_ROOTS: usize = 8;

/// The `instructions` of the `initialize` result: the roots, how paths
/// resolve, the reply budget and how to continue a cut reply, and what the
/// enabled tools add (the cheaper ways to read, their limits; see
/// [`tools::notes`]).
fn instructions(scope: &Scope, limits: &Limits, policy: &Policy) -> String {
    let roots = scope.cli_roots();
    let mut names: Vec<&str> = roots
        .iter()
        .take(INSTRUCTION_ROOTS)
        .map(|r| r.display.as_str())
        .collect();
    let more = roots.len().saturating_sub(INSTRUCTION_ROOTS);
    let more = format!("and {more} more");
    if roots.len() > INSTRUCTION_ROOTS {
        names.push(&more);
    }
    let mut s = format!(
        "Filesystem tools confined to the allowed directories: {}. A relative path resolves against the first one; {} shows those in force (the client's roots may narrow them).",
        names.join(", "),
        tools::list_allowed_directories::TOOL.name
    );
    if limits.max_reply_chars != 0 {
        s.push_str(&format!(
            " A reply carries at most {} characters: a longer one is cut at a whole line or entry and ends with a notice in brackets giving the offset or cursor to call again with for the rest.",
            limits.max_reply_chars
        ));
    }
    // The cheaper ways to read, and the limits, said once here rather than
    // in each tool's description: from the enabled tools' entries.
    s.push_str(&tools::notes::instructions(
        |t| policy.is_enabled(t),
        limits,
    ));
    s
}

impl Server {
    /// A server over `scope` with the enabled tools of `policy`, its walk
    /// threads and filesystem workers sized by `threads` (the CPU count
    /// startup computed), recording to the audit log and the undo journal
    /// when they are on (`records`). Fails when a tool cannot be listed (a
    /// bug, caught at startup rather than by a tool silently missing from
    /// `tools/list`).
    pub fn new(
        scope: Arc<Scope>,
        policy: Policy,
        limits: Limits,
        client_roots: bool,
        records: (Option<Arc<Audit>>, Option<Arc<Journal>>),
        threads: usize,
    ) -> Result<Self, String> {
        let (audit, journal) = records;
        let tools = tools::list(|name| policy.is_enabled(name))?;
        let roots = Arc::new(ClientRoots::new(
            scope.clone(),
            client_roots,
            limits.roots_wait_secs,
            limits.max_path_bytes,
        ));
        let flow = Arc::new(Flow::new(
            limits.max_pending_reply_bytes,
            MAX_CALLS_IN_FLIGHT,
        ));
        let instructions = instructions(&scope, &limits, &policy);
        let walk = WalkPool::new(threads);
        Ok(Self {
            inner: Arc::new(Inner {
                instructions,
                scope,
                limits,
                policy,
                tools,
                roots,
                flow,
                workers: Workers::new(walk.threads()),
                audit,
                journal,
                spare: Arc::default(),
                walk,
            }),
        })
    }

    /// The session's client roots, for the transport's in-order observer.
    pub fn client_roots(&self) -> Arc<ClientRoots> {
        self.inner.roots.clone()
    }

    /// The session's roots wait (`--roots-wait-secs`).
    pub fn roots_wait(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.inner.limits.roots_wait_secs)
    }

    /// The spare read buffer, which the stdout writer refills with the
    /// buffers of written replies.
    pub fn spare(&self) -> Arc<Spare> {
        self.inner.spare.clone()
    }

    /// The session's flow control, for the transport.
    pub fn flow(&self) -> Arc<Flow> {
        self.inner.flow.clone()
    }

    /// The tool called `name`, when it is enabled.
    pub(super) fn enabled(&self, name: &str) -> Option<&'static ToolDef> {
        tools::find(name).filter(|t| self.inner.policy.is_enabled(t.name))
    }

    /// Lets a call of `tool` start: waits, bounded, for pending client roots,
    /// then reserves the reply budget its result may need, counting in the
    /// budget its parsed request holds (`carried`, see
    /// [`Flow::reserve_with`]).
    pub(super) async fn admit(
        &self,
        tool: &ToolDef,
        carried: Option<Reservation>,
    ) -> Result<Option<Reservation>, Error> {
        self.inner.roots.wait_ready().await?;
        Ok(self
            .inner
            .flow
            .reserve_with(carried, (tool.plan)(&self.inner.limits).upfront)
            .await)
    }

    /// [`Server::admit`] without waiting: `Err` gives `carried` back when
    /// it would wait.
    pub(super) fn admit_now(
        &self,
        tool: &ToolDef,
        carried: Option<Reservation>,
    ) -> Result<Result<Option<Reservation>, Error>, Option<Reservation>> {
        match self.inner.roots.ready_now() {
            None => Err(carried),
            Some(Err(e)) => Ok(Err(e)),
            Some(Ok(())) => self
                .inner
                .flow
                .try_reserve_with(carried, (tool.plan)(&self.inner.limits).upfront)
                .map(|r| Ok(Some(r))),
        }
    }

    /// Runs an admitted call of `tool` on this thread (a filesystem
    /// worker), against a snapshot of the roots taken now, holding the
    /// reply budget `reserved` (grown as the tool opens files: the grant is
    /// in the call's [`Io`], see [`crate::reply_budget`]). Returns the result and
    /// the budget held at the end. A panic inside the tool becomes an
    /// `isError` result for this call only.
    pub(super) fn execute(
        &self,
        tool: &'static ToolDef,
        args: Value,
        cancel: CancellationToken,
        progress: Option<Progress>,
        reserved: Option<Reservation>,
    ) -> (CallToolResult, Option<Reservation>) {
        let limits = self.inner.limits;
        let budget = Arc::new(CallBudget::new(
            self.inner.flow.clone(),
            (tool.plan)(&limits),
            reserved,
            limits.max_read_bytes,
            cancel.clone(),
        ));
        let audit = self.inner.audit.as_deref();
        // A tool that only reads resolves its paths for reading (the rule
        // walk is skipped where the rules hide nothing; the writer refuses
        // such a path).
        let intent = match tool.capability {
            tools::Capability::Read => Intent::Read,
            tools::Capability::Write => Intent::Any,
        };
        let (ctx, note) = self.ctx(intent, cancel, progress, budget.clone());
        let mutation = tool.capability == tools::Capability::Write;
        if mutation && let Some(why) = audit.and_then(Audit::refusal) {
            return (
                reply::tool_result(Err(Error::AuditUnavailable { why })),
                budget.take(),
            );
        }
        let journal = self.inner.journal.as_deref();
        if mutation && let Some(why) = journal.and_then(Journal::refusal) {
            return (
                reply::tool_result(Err(Error::JournalUnavailable { why })),
                budget.take(),
            );
        }
        let given = audit.map(|_| path_args(tool, &args));
        let run = std::panic::AssertUnwindSafe(|| tools::dispatch(&ctx, tool, args));
        let (result, panic) = match std::panic::catch_unwind(run) {
            Ok(result) => (result, false),
            Err(_) => (Err(Error::Panicked { tool: tool.name }), true),
        };
        if mutation
            && let (Some(j), Err(e @ (Error::Protected { .. } | Error::MoveChangesRules { .. }))) =
                (journal, &result)
        {
            let path = match e {
                Error::Protected { path, .. } => path.clone(),
                Error::MoveChangesRules { from, to } => format!("{from} -> {to}"),
                _ => String::new(),
            };
            j.refused_by_rules(tool.name, &path, &e.to_string());
        }
        let result = match (audit, given, &note) {
            (Some(audit), Some(given), Some(note)) => {
                audited(audit, tool, &given, result, note.take())
            }
            _ => result,
        };
        let result = if panic {
            panicked(tool)
        } else {
            reply::tool_result(result)
        };
        (result, budget.take())
    }

    /// The context of one call: a snapshot of the roots taken now, resolved
    /// for `intent`, with the call's reply budget and audit note.
    fn ctx(
        &self,
        intent: Intent,
        cancel: CancellationToken,
        progress: Option<Progress>,
        budget: Arc<CallBudget>,
    ) -> (Ctx, Option<Arc<Noting>>) {
        // The call's recorder: the journal, then the call's own audit note.
        let note = self
            .inner
            .audit
            .as_ref()
            .map(|_| Arc::new(Noting::default()));
        let mut recorders: Vec<Arc<dyn Recorder>> = Vec::new();
        if let Some(j) = &self.inner.journal {
            recorders.push(j.clone());
        }
        if let Some(n) = &note {
            recorders.push(n.clone());
        }
        let recorder = Recorders::new(recorders);
        let ctx = Ctx {
            scope: self
                .inner
                .scope
                .snapshot()
                .with_intent(intent)
                .with_recorder(recorder.clone()),
            limits: self.inner.limits,
            cancel,
            progress,
            io: Io {
                grant: budget,
                recorder,
                spare: self.inner.spare.clone(),
            },
            walk: self.inner.walk.clone(),
        };
        (ctx, note)
    }

    /// The session's filesystem workers.
    pub(super) fn workers(&self) -> &Workers {
        &self.inner.workers
    }
}

/// The path arguments of a call, as given: the arguments the tool's table
/// entry names as paths ([`ToolDef::paths`]), each a string or an array of
/// strings, for its audit record. Another argument is never taken as a
/// path, whatever its name.
fn path_args(tool: &ToolDef, args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in tool.paths {
        match args.get(key) {
            Some(Value::String(p)) => out.push(p.clone()),
            Some(Value::Array(list)) => {
                out.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            _ => {}
        }
    }
    out
}

/// Records a finished call in the audit log, its paths named as the call
/// resolved them (noted in `note`). A change is acknowledged only once its
/// record is synced: if it cannot be, the reply says the change was made
/// but not recorded (and later changes are refused).
fn audited(
    audit: &Audit,
    tool: &ToolDef,
    given: &[String],
    result: Result<tools::Output, Error>,
    mut note: crate::audit::Note,
) -> Result<tools::Output, Error> {
    let paths = given
        .iter()
        .zip(note.canonical(given))
        .map(|(g, canonical)| json!({"given": g, "canonical": canonical}))
        .collect();
    let mutation = tool.capability == tools::Capability::Write;
    let written = audit.record(CallRecord {
        tool: tool.name,
        paths,
        outcome: if result.is_ok() { "ok" } else { "error" },
        error: result.as_ref().err().map(Error::name),
        mutation,
        note,
    });
    match result {
        Ok(_) if mutation && !written => Err(Error::AuditNotRecorded {
            why: audit.refusal().unwrap_or_default(),
        }),
        other => other,
    }
}

/// The result of a call whose tool panicked.
fn panicked(tool: &ToolDef) -> CallToolResult {
    tracing::error!(
        tool = tool.name,
        "tool panicked; the call failed, the server goes on"
    );
    reply::tool_result(Err(Error::Panicked { tool: tool.name }))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        // Resources: the one `file://` template (reads, no listing), while
        // the read tools it stands in for are enabled.
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        if self.serves_resources() {
            capabilities.resources = Some(Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("tuls", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.inner.instructions.clone())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        if let Some(audit) = &self.inner.audit {
            audit.set_client(&request.client_info.name, &request.client_info.version);
        }
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut r = ListToolsResult::with_all_items(self.inner.tools.clone());
        if era::is_modern(context.protocol_version().as_ref()) {
            r.meta = Some(era::with_server_info(r.meta, &self.get_info().server_info));
            r = r
                .with_ttl_ms(era::LIST_TTL_MS)
                .with_cache_scope(CacheScope::Private);
        }
        Ok(r)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        )
        .with_ttl_ms(era::LIST_TTL_MS)
        .with_cache_scope(CacheScope::Private))
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(super::rpc_error::method_not_found(&request.method))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        if !self.serves_resources() {
            return Err(super::rpc_error::method_not_found("resources/list"));
        }
        let mut r = ListResourcesResult::with_all_items(Vec::new());
        if era::is_modern(context.protocol_version().as_ref()) {
            r.meta = Some(era::with_server_info(r.meta, &self.get_info().server_info));
            r = r
                .with_ttl_ms(era::LIST_TTL_MS)
                .with_cache_scope(CacheScope::Private);
        }
        Ok(r)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        if !self.serves_resources() {
            return Err(super::rpc_error::method_not_found(
                "resources/templates/list",
            ));
        }
        let mut r = ListResourceTemplatesResult::with_all_items(vec![resources::template()]);
        if era::is_modern(context.protocol_version().as_ref()) {
            r.meta = Some(era::with_server_info(r.meta, &self.get_info().server_info));
            r = r
                .with_ttl_ms(era::LIST_TTL_MS)
                .with_cache_scope(CacheScope::Private);
        }
        Ok(r)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let modern = era::is_modern(context.protocol_version().as_ref());
        let mut r = self.read_file_resource(&request.uri, context.ct).await?;
        if modern {
            r.meta = Some(era::with_server_info(r.meta, &self.get_info().server_info));
            // A file can change at any time, and its contents are this user's.
            r = r.with_ttl_ms(0).with_cache_scope(CacheScope::Private);
        }
        Ok(r.into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }
}
