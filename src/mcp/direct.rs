//! Direct tool calls: a `tools/call` goes from the line reader straight to a
//! filesystem worker, and its reply from the worker straight to the writer.
//!
//! Owns: the fast path for the one request clients send in bulk. Through
//! rmcp, a call costs a task, a pass of rmcp's service loop on the way in
//! and another on the way out, and a wake-up of the handler when the worker
//! is done; a pipelined burst spent most of its time in those hand-offs. A
//! direct call crosses three threads (reader, worker, writer) and nothing
//! else.
//!
//! It applies only where rmcp would do nothing but call the handler: once
//! `initialize` was answered with a protocol version before 2026-07-28 and
//! `notifications/initialized` has arrived, to a `tools/call` of an enabled
//! tool whose `_meta` holds at most a `progressToken` and that carries no
//! 2026-07-28 fields. Every other message goes to rmcp as before (a call to
//! a tool that is not enabled too, so its refusal is rmcp's).
//!
//! A direct call keeps the semantics of the rmcp path: it waits for pending
//! client roots and reserves its reply budget (`Server::admit`) without
//! blocking the reader (when either would wait, a task waits instead); it
//! holds its call slot until its reply is queued; `notifications/cancelled`
//! cancels it and drops its reply, as rmcp does; progress notifications go
//! to the writer ahead of the reply; a panic in the tool is an `isError`
//! result; the result is shaped for the legacy peer as rmcp shapes it; a
//! call dropped before it ran (no worker thread could start) is answered
//! with an `isError` result, as on rmcp's path. At
//! the end of input, the reader waits for direct calls still running (up
//! to the roots wait plus [`EOF_GRACE`]), so each gets its answer.
//! May touch: nothing itself (the tools do the filesystem work).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, GetMeta, JsonRpcMessage, Notification,
    ProgressNotificationParam, ProtocolVersion, RequestId, RequestMetaObject, ServerNotification,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::sync::mpsc::WeakSender;
use tokio_util::sync::CancellationToken;

use super::flow::{Held, Reservation, Slot, held_bytes};
use super::reply;
use super::server::Server;
use super::stdio::Out;
use crate::error::Error;
use crate::sync::lock;
use crate::tools::{Progress, Tool};

/// At the end of input, how long the reader waits for direct calls still
/// running, beyond the roots wait (a call may be waiting for roots that
/// will now never come, and then fails after that wait).
pub const EOF_GRACE: Duration = Duration::from_secs(5);

/// Where the session is, as far as direct calls go (an `AtomicU8`: the
/// writer side sees the `initialize` answer, the reader side the rest).
/// Before `initialize` was answered, or answered with a protocol version
/// whose requests rmcp treats differently: everything goes to rmcp.
const OFF: u8 = 0;
/// `initialize` was answered with a legacy version; waiting for
/// `notifications/initialized`.
const ANSWERED: u8 = 1;
/// Tool calls go direct.
const ON: u8 = 2;

/// The direct calls of one session.
pub struct Direct {
    server: Server,
    tx: WeakSender<Out>,
    calls: Arc<Calls>,
    phase: AtomicU8,
    grace: Duration,
    runtime: tokio::runtime::Handle,
}

/// The direct calls in flight, by request id, with their cancellation.
#[derive(Default)]
struct Calls {
    map: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Notified whenever the map becomes empty.
    idle: Condvar,
}

impl Calls {
    /// Takes `id` out, with its token; `None` when it is not in (a
    /// cancelled call is not).
    fn remove(&self, id: &RequestId) -> Option<CancellationToken> {
        let mut map = lock(&self.map);
        let token = map.remove(id);
        if map.is_empty() {
            self.idle.notify_all();
        }
        token
    }
}

impl Direct {
    /// Direct calls to `server`, answered through the writer queue `tx`;
    /// `roots_wait` is the session's roots wait; a call that must wait to
    /// start waits as a task on `runtime`.
    pub fn new(
        server: Server,
        tx: WeakSender<Out>,
        roots_wait: Duration,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        Self {
            server,
            tx,
            calls: Arc::default(),
            phase: AtomicU8::new(OFF),
            grace: roots_wait + EOF_GRACE,
            runtime,
        }
    }

    /// Sees each message the service sends: the `initialize` answer says
    /// which protocol version the session speaks.
    pub fn on_send(&self, msg: &TxJsonRpcMessage<RoleServer>) {
        if let JsonRpcMessage::Response(r) = msg
            && let ServerResult::InitializeResult(init) = &r.result
        {
            let legacy = init.protocol_version < ProtocolVersion::V_2026_07_28;
            self.phase
                .store(if legacy { ANSWERED } else { OFF }, Ordering::SeqCst);
        }
    }

    /// Sees each incoming message in wire order: `notifications/initialized`
    /// turns direct calls on; `notifications/cancelled` cancels a direct call
    /// and drops its reply.
    pub fn observe(&self, msg: &RxJsonRpcMessage<RoleServer>) {
        let JsonRpcMessage::Notification(n) = msg else {
            return;
        };
        match &n.notification {
            ClientNotification::InitializedNotification(_) => {
                let _ =
                    self.phase
                        .compare_exchange(ANSWERED, ON, Ordering::SeqCst, Ordering::SeqCst);
            }
            ClientNotification::CancelledNotification(c) => {
                if let Some(id) = &c.params.request_id
                    && let Some(token) = self.calls.remove(id)
                {
                    token.cancel();
                }
            }
            _ => {}
        }
    }

    /// Starts `msg` as a direct call when it is one (taking the call slot
    /// from `slot`), or gives it back for rmcp.
    pub fn take(
        &self,
        msg: RxJsonRpcMessage<RoleServer>,
        slot: &mut Option<Slot>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        if self.phase.load(Ordering::SeqCst) != ON {
            return Some(msg);
        }
        let JsonRpcMessage::Request(req) = &msg else {
            return Some(msg);
        };
        let ClientRequest::CallToolRequest(call) = &req.request else {
            return Some(msg);
        };
        let p = &call.params;
        // rmcp moves a request's `_meta` into its extensions.
        let only_progress = |m: &RequestMetaObject| m.0.0.keys().all(|k| k == "progressToken");
        let plain_meta =
            only_progress(req.request.get_meta()) && p.meta.as_ref().is_none_or(only_progress);
        let legacy = p.input_responses.is_none() && p.request_state.is_none();
        let Some(tool) = self
            .server
            .enabled(&p.name)
            .filter(|_| plain_meta && legacy)
        else {
            return Some(msg);
        };
        let progress = req.request.get_meta().get_progress_token();
        // (Both were matched above.)
        let JsonRpcMessage::Request(req) = msg else {
            return None;
        };
        let ClientRequest::CallToolRequest(call) = req.request else {
            return None;
        };
        let params = call.params;
        let cancel = CancellationToken::new();
        lock(&self.calls.map).insert(req.id.clone(), cancel.clone());
        let call = Call {
            server: self.server.clone(),
            tx: self.tx.clone(),
            calls: self.calls.clone(),
            id: req.id,
            tool,
            args: params
                .arguments
                .map(Value::Object)
                .unwrap_or_else(|| json!({})),
            cancel,
            progress,
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
        None
    }

    /// The end of the grace given at the end of input, from now.
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.grace
    }

    /// At the end of input: waits until no direct call is running, for at
    /// most the grace; cancels those still running then (their replies are
    /// dropped).
    pub fn drain(&self) {
        let deadline = self.deadline();
        let mut map = lock(&self.calls.map);
        while !map.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    calls = map.len(),
                    "input ended; calls still running after the grace are cancelled unanswered"
                );
                for (_, token) in map.drain() {
                    token.cancel();
                }
                break;
            }
            map = self
                .calls
                .idle
                .wait_timeout(map, left)
                .map_or_else(|e| e.into_inner().0, |(m, _)| m);
        }
    }
}

/// One direct call, from its request to its reply.
struct Call {
    server: Server,
    tx: WeakSender<Out>,
    calls: Arc<Calls>,
    id: RequestId,
    tool: &'static Tool,
    args: Value,
    cancel: CancellationToken,
    progress: Option<rmcp::model::ProgressToken>,
    /// Freed once the reply is queued.
    _slot: Option<Slot>,
    /// Set once the call is answered (or its reply dropped as cancelled).
    answered: bool,
}

impl Drop for Call {
    /// A call dropped unanswered (no worker thread could be started, or the
    /// runtime stopped while it waited to start) is answered as rmcp's
    /// path answers it, without waiting (this may run on the reader or on
    /// the runtime): an `isError` result.
    fn drop(&mut self) {
        if self.answered || self.calls.remove(&self.id).is_none() {
            return;
        }
        tracing::error!(id = %self.id, tool = self.tool.name, "a call was dropped before it ran");
        let r = reply::tool_result(Err(Error::Panicked {
            tool: self.tool.name,
        }));
        let msg = legacy_response(r, self.id.clone());
        if let Some(tx) = self.tx.upgrade() {
            let _ = tx.try_send(Out::Message(msg, Held::default()));
        }
    }
}

/// The reply to a call, shaped as rmcp shapes a result for a peer before
/// 2026-07-28.
fn legacy_response(r: CallToolResult, id: RequestId) -> TxJsonRpcMessage<RoleServer> {
    let mut result = ServerResult::CallToolResult(r);
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    TxJsonRpcMessage::<RoleServer>::response(result, id)
}

impl Call {
    /// Hands the admitted call to a worker.
    fn launch(self, admitted: Result<Option<Reservation>, Error>) {
        let server = self.server.clone();
        server.workers().spawn(move || self.run(admitted));
    }

    /// On a worker: runs the tool and queues the reply.
    fn run(mut self, admitted: Result<Option<Reservation>, Error>) {
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
    fn progress_sink(&self, token: rmcp::model::ProgressToken) -> Progress {
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

    /// Queues the reply (waiting for room in the writer's queue), unless the
    /// call was cancelled.
    fn answer(mut self, r: CallToolResult, reservation: Option<Reservation>) {
        self.answered = true;
        // Held before the call leaves the table, so the writer cannot end
        // (once input ended and no call is left) before this reply is in.
        let tx = self.tx.upgrade();
        if self.calls.remove(&self.id).is_none() {
            tracing::debug!(id = %self.id, "dropping the reply of a cancelled call");
            return;
        }
        let held = reservation
            .map(|res| self.server.flow().settle(res, held_bytes(&r)))
            .unwrap_or_default();
        let msg = legacy_response(r, self.id.clone());
        if let Some(tx) = tx {
            let _ = tx.blocking_send(Out::Message(msg, held));
        }
    }
}
