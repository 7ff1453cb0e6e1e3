//! Tool calls: every `tools/call`, of either protocol era, from the line
//! reader to its reply, by one lifecycle; and the one table of the
//! session's requests in flight.
//!
//! Owns: the lifecycle of a call. The reader hands every message to
//! [`Calls::route`] in wire order. A `tools/call` is checked as rmcp checks
//! a request ([`super::session`]: its `_meta`, the era it is answered in),
//! refused as an unknown tool when its tool is not enabled (JSON-RPC
//! `-32602`), then admitted (pending client roots, its reply budget; see
//! `Server::admit`) without blocking the reader (when either would wait, a
//! task waits instead), run on a filesystem worker, and answered straight
//! to the writer, shaped for its era as rmcp shapes a result (a legacy peer
//! gets no `resultType`; a 2026-07-28 one gets the server's identity in
//! `_meta`). It holds its call slot until its reply is queued; progress
//! notifications go to the writer from the worker, ahead of the reply, so
//! none comes after it; a panic in the tool is an `isError` result; a call
//! dropped before it ran (no worker thread could start) is answered with an
//! `isError` result. Every other message goes on to rmcp's service
//! (`initialize`, `tools/list`, `ping`, `server/discover`, the client's
//! answers to the server's `roots/list`).
//!
//! The table: every request read, a call or one for rmcp, is in it until
//! its reply is queued (a call's by the call, rmcp's as the service sends
//! it, [`Calls::on_send`]). `notifications/cancelled` takes a request out:
//! a call is cancelled and its reply dropped, as rmcp drops the reply of a
//! request of its own. At the end of input the reader waits until the
//! table is empty (up to the roots wait plus [`EOF_GRACE`]), so every
//! request gets its answer.
//!
//! A call that opens the inline lifecycle (the first request of a session
//! with no `initialize`) makes rmcp open it too: the reader hands rmcp a
//! `tools/list` with the call's `_meta` under an id of tuls's own, whose
//! reply is dropped ([`Calls::on_send`]).
//! May touch: nothing itself (the tools do the filesystem work).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, ErrorData, GetMeta, JsonRpcMessage,
    Notification, ProgressNotificationParam, ProgressToken, RequestId, ServerNotification,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::mpsc::WeakSender;
use tokio_util::sync::CancellationToken;

use super::era;
use super::flow::{Held, Reservation, Slot, held_bytes};
use super::out::Out;
use super::reply;
use super::server::Server;
use super::session::{Admitted, Lifecycle};
use crate::error::Error;
use crate::sync::lock;
use crate::tools::{Progress, Tool};

/// At the end of input, how long the reader waits for requests still
/// running, beyond the roots wait (a call may be waiting for roots that
/// will now never come, and then fails after that wait).
pub const EOF_GRACE: Duration = Duration::from_secs(5);

/// A request in flight.
enum Entry {
    /// A tool call, with its cancellation.
    Call(CancellationToken),
    /// A request rmcp's service answers.
    Service,
}

/// The requests in flight, by id: at most one per id. Each entry has a
/// number of its own, so that a request whose id was freed (by a
/// cancellation) and taken again can only take out its own entry.
#[derive(Default)]
struct Table {
    map: Mutex<HashMap<RequestId, (Entry, u64)>>,
    /// Notified whenever the map becomes empty.
    idle: Condvar,
    /// The number of the next entry.
    next: std::sync::atomic::AtomicU64,
}

impl Table {
    /// Puts `entry` in under `id` and gives its number; `None` when a
    /// request in flight holds `id` (the new one must be refused).
    fn insert(&self, id: RequestId, entry: Entry) -> Option<u64> {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match lock(&self.map).entry(id) {
            std::collections::hash_map::Entry::Occupied(_) => None,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert((entry, n));
                Some(n)
            }
        }
    }

    /// Takes `id` out when `keep` says so; `None` when it is not in (a
    /// cancelled request is not).
    fn remove_if(&self, id: &RequestId, keep: impl Fn(&Entry, u64) -> bool) -> Option<Entry> {
        let mut map = lock(&self.map);
        if !map.get(id).is_some_and(|(e, n)| keep(e, *n)) {
            return None;
        }
        let entry = map.remove(id).map(|(e, _)| e);
        if map.is_empty() {
            self.idle.notify_all();
        }
        entry
    }

    /// Takes out entry number `n` under `id`, if it is still in.
    fn remove_own(&self, id: &RequestId, n: u64) -> Option<Entry> {
        self.remove_if(id, |_, m| m == n)
    }
}

/// The tool calls and requests in flight of one session.
pub struct Calls {
    server: Server,
    tx: WeakSender<Out>,
    table: Arc<Table>,
    lifecycle: Lifecycle,
    grace: Duration,
    runtime: tokio::runtime::Handle,
    /// The id of the request that makes rmcp open the inline lifecycle.
    opener: RequestId,
}

impl Calls {
    /// The calls of a session with `server`, answered through the writer
    /// queue `tx`; a call that must wait to start waits as a task on
    /// `runtime`.
    pub fn new(server: Server, tx: WeakSender<Out>, runtime: tokio::runtime::Handle) -> Self {
        let grace = server.roots_wait() + EOF_GRACE;
        // Not one a client would pick: rmcp answers it, tuls drops that.
        let opener = RequestId::String(format!("tuls/open-inline/{:016x}", rand_u64()).into());
        Self {
            server,
            tx,
            table: Arc::default(),
            lifecycle: Lifecycle::default(),
            grace,
            runtime,
            opener,
        }
    }

    /// Takes one message from the reader, in wire order: starts (or
    /// refuses) a `tools/call`, taking its call slot from `slot`; follows
    /// the others, and gives back what rmcp's service must see.
    pub fn route(
        &self,
        msg: RxJsonRpcMessage<RoleServer>,
        slot: &mut Option<Slot>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut req = match msg {
            JsonRpcMessage::Request(req) => req,
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                    && let Some(Entry::Call(token)) =
                        self.table.remove_if(id, |e, _| matches!(e, Entry::Call(_)))
                {
                    token.cancel();
                }
                return Some(JsonRpcMessage::Notification(n));
            }
            other => return Some(other),
        };
        let supported = self.server.supported_protocol_versions();
        if !matches!(req.request, ClientRequest::CallToolRequest(_)) || self.lifecycle.failed() {
            // (After a failed handshake the service is gone: the reader
            // stops when it hands it the request, as for any request.)
            if self.table.insert(req.id.clone(), Entry::Service).is_none() {
                self.refuse(req.id, super::rpc_error::id_in_use());
                return None;
            }
            self.lifecycle.observe(&req.id, &req.request, &supported);
            if let Some(taken) = slot.take() {
                super::flow::attach(&mut req.request, taken);
            }
            return Some(JsonRpcMessage::Request(req));
        }
        let admitted = self
            .lifecycle
            .admit_call(req.request.get_meta(), &supported);
        let progress = req.request.get_meta().get_progress_token();
        let opener = match &admitted {
            Ok(Admitted { opened: true, .. }) => self.opener_for(req.request.get_meta()),
            _ => None,
        };
        let ClientRequest::CallToolRequest(call) = req.request else {
            return opener;
        };
        let admitted = match admitted {
            Ok(a) => a,
            Err(e) => {
                self.refuse(req.id, e);
                return opener;
            }
        };
        let Some(tool) = self.server.enabled(&call.params.name) else {
            self.refuse(req.id, not_found(&call.params.name));
            return opener;
        };
        let cancel = CancellationToken::new();
        let Some(entry) = self
            .table
            .insert(req.id.clone(), Entry::Call(cancel.clone()))
        else {
            self.refuse(req.id, super::rpc_error::id_in_use());
            return opener;
        };
        let call = InFlight {
            server: self.server.clone(),
            tx: self.tx.clone(),
            table: self.table.clone(),
            id: req.id,
            entry,
            tool,
            args: call
                .params
                .arguments
                .map(Value::Object)
                .unwrap_or_else(|| json!({})),
            cancel,
            progress,
            modern: admitted.modern,
            _slot: slot.take(),
            answered: false,
        };
        let carried = call._slot.as_ref().and_then(Slot::take_carried);
        match self.server.admit_now(tool, carried) {
            Ok(admitted) => call.launch(admitted),
            Err(carried) => {
                self.runtime.spawn(async move {
                    let admitted = call.server.admit(call.tool, carried).await;
                    call.launch(admitted);
                });
            }
        }
        opener
    }

    /// The request that makes rmcp open the inline lifecycle as a call
    /// with `meta` just did: a `tools/list` with the same `_meta`.
    fn opener_for(
        &self,
        meta: &rmcp::model::RequestMetaObject,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        let msg = json!({"jsonrpc": "2.0", "id": self.opener, "method": "tools/list",
            "params": {"_meta": meta}});
        serde_json::from_value(msg)
            .inspect_err(|e| tracing::error!(error = %e, "cannot build the inline opener"))
            .ok()
    }

    /// Answers a refused call with `error` (no tool ran).
    fn refuse(&self, id: RequestId, error: ErrorData) {
        let msg = TxJsonRpcMessage::<RoleServer>::error(error, Some(id));
        if let Some(tx) = self.tx.upgrade() {
            let _ = tx.blocking_send(Out::Message(msg, Held::default()));
        }
    }

    /// After an `initialize` went to rmcp: waits until it is answered, so
    /// that the calls read after it are answered in the era it agreed.
    pub fn wait_handshake(&self) {
        self.lifecycle.wait_handshake();
    }

    /// Sees each message rmcp's service sends: its reply takes its request
    /// out of the table. `false`: the message is not for the client (the
    /// reply to the inline opener).
    pub fn on_send(&self, msg: &TxJsonRpcMessage<RoleServer>) -> bool {
        self.lifecycle.on_send(msg);
        let id = match msg {
            JsonRpcMessage::Response(r) => &r.id,
            JsonRpcMessage::Error(e) => match &e.id {
                Some(id) => id,
                None => return true,
            },
            _ => return true,
        };
        if *id == self.opener {
            return false;
        }
        self.table.remove_if(id, |e, _| matches!(e, Entry::Service));
        true
    }

    /// The end of the grace given at the end of input, from now.
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.grace
    }

    /// At the end of input: waits until no request is in flight, for at
    /// most the grace; cancels the calls still running then (their replies
    /// are dropped; rmcp drops its own).
    pub fn drain(&self) {
        let deadline = self.deadline();
        let mut map = lock(&self.table.map);
        while !map.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    requests = map.len(),
                    "input ended; requests still running after the grace are dropped unanswered"
                );
                for (_, (entry, _)) in map.drain() {
                    if let Entry::Call(token) = entry {
                        token.cancel();
                    }
                }
                break;
            }
            map = self
                .table
                .idle
                .wait_timeout(map, left)
                .map_or_else(|e| e.into_inner().0, |(m, _)| m);
        }
    }
}

/// A value that differs between processes (the opener's id).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

/// The refusal of a call to a tool that is not enabled: exactly that of
/// an unknown tool (JSON-RPC `-32602`).
fn not_found(name: &str) -> ErrorData {
    tracing::debug!(tool = name, "refused a call to a tool that is not enabled");
    super::rpc_error::unknown_tool(name)
}

/// One call, from its request to its reply.
struct InFlight {
    server: Server,
    tx: WeakSender<Out>,
    table: Arc<Table>,
    id: RequestId,
    /// The number of its entry in the table.
    entry: u64,
    tool: &'static Tool,
    args: Value,
    cancel: CancellationToken,
    progress: Option<ProgressToken>,
    /// Answered in the 2026-07-28 era.
    modern: bool,
    /// Freed once the reply is queued.
    _slot: Option<Slot>,
    /// Set once the call is answered (or its reply dropped as cancelled).
    answered: bool,
}

impl Drop for InFlight {
    /// A call dropped unanswered (no worker thread could be started, or the
    /// runtime stopped while it waited to start) is answered without
    /// waiting (this may run on the reader or on the runtime): an `isError`
    /// result.
    fn drop(&mut self) {
        if self.answered || self.table.remove_own(&self.id, self.entry).is_none() {
            return;
        }
        tracing::error!(id = %self.id, tool = self.tool.name, "a call was dropped before it ran");
        let r = reply::tool_result(Err(Error::Panicked {
            tool: self.tool.name,
        }));
        let msg = self.response(r);
        if let Some(tx) = self.tx.upgrade() {
            let _ = tx.try_send(Out::Message(msg, Held::default()));
        }
    }
}

impl InFlight {
    /// Hands the admitted call to a worker.
    fn launch(self, admitted: Result<Option<Reservation>, Error>) {
        let server = self.server.clone();
        server.workers().spawn(move || self.run(admitted));
    }

    /// On a worker: runs the tool and queues the reply. What is logged
    /// meanwhile on this thread names the call (`tool`, `id`: the span's
    /// fields, which `crate::log` writes after each line's own).
    fn run(mut self, admitted: Result<Option<Reservation>, Error>) {
        let span = tracing::info_span!(crate::log::CALL_SPAN, tool = self.tool.name, id = %self.id);
        let _in_call = span.enter();
        let (result, reservation) = match admitted {
            Ok(reservation) => {
                let progress = self.progress.clone().map(|token| self.progress_sink(token));
                let args = std::mem::take(&mut self.args);
                self.server
                    .execute(self.tool, args, self.cancel.clone(), progress, reservation)
            }
            Err(e) => (reply::tool_result(Err(e)), None),
        };
        self.answer(result, reservation);
    }

    /// Progress reports as notifications to the writer, queued ahead of the
    /// reply. A report that finds the queue full is dropped (a later one
    /// says more).
    fn progress_sink(&self, token: ProgressToken) -> Progress {
        let tx = self.tx.clone();
        Progress::new(move |done| {
            let param = ProgressNotificationParam::new(token.clone(), done as f64);
            let msg = TxJsonRpcMessage::<RoleServer>::notification(
                ServerNotification::ProgressNotification(Notification::new(param)),
            );
            if let Some(tx) = tx.upgrade() {
                let _ = tx.try_send(Out::Message(msg, Held::default()));
            }
        })
    }

    /// The reply to this call, shaped for its era as rmcp shapes a tool
    /// result: a 2026-07-28 one carries the server's identity in `_meta`;
    /// a legacy one has no `resultType` and no non-object output.
    fn response(&self, mut r: CallToolResult) -> TxJsonRpcMessage<RoleServer> {
        if self.modern {
            r.meta = Some(era::with_server_info(
                r.meta,
                &self.server.get_info().server_info,
            ));
        }
        let mut result = ServerResult::CallToolResult(r);
        if self.modern {
            result.fill_missing_cache_hints();
        } else {
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
        }
        TxJsonRpcMessage::<RoleServer>::response(result, self.id.clone())
    }

    /// Queues the reply (waiting for room in the writer's queue), unless the
    /// call was cancelled.
    fn answer(mut self, r: CallToolResult, reservation: Option<Reservation>) {
        self.answered = true;
        // Held before the call leaves the table, so the writer cannot end
        // (once input ended and no request is left) before this reply is in.
        let tx = self.tx.upgrade();
        if self.table.remove_own(&self.id, self.entry).is_none() {
            tracing::debug!(id = %self.id, "dropping the reply of a cancelled call");
            return;
        }
        let held = reservation
            .map(|res| self.server.flow().settle(res, held_bytes(&r)))
            .unwrap_or_default();
        let msg = self.response(r);
        if let Some(tx) = tx {
            let _ = tx.blocking_send(Out::Message(msg, held));
        }
    }
}
