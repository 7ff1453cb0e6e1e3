//! The reader thread: bounded lines from stdin, back-pressure, triage.
//!
//! Owns: reading stdin (blocking `read(2)` on its own thread), waiting for a
//! call slot and reply budget before each line, reserving what parsing a
//! line costs, answering what is not a message (too long, not JSON, an id
//! that cannot be echoed, a second `initialize`, no free slot), showing each
//! message to the observers in wire order, handing each to the call
//! lifecycle ([`crate::mcp::call`]), which runs tool calls, and queueing
//! what it gives back for rmcp's service loop. At the end of input it lets
//! the requests still running be answered first.
//! May touch: stdin, and the writer's queue for its error replies.

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use std::sync::Arc;

use crate::limits::MAX_CALLS_IN_FLIGHT;
use crate::mcp::call::Calls;
use crate::mcp::flow::{Flow, Held, Reservation};
use crate::mcp::lines::{
    Line, LineReader, is_unechoable_id, not_a_message, parse_cost, raw_id, top_level_id,
};
use crate::mcp::out::Out;
use crate::mcp::rpc_error;

/// Sees each incoming message in wire order, before the service does.
type Observer = Box<dyn Fn(&RxJsonRpcMessage<RoleServer>) + Send + Sync>;

/// A line whose parse takes at most this much reserves nothing (the calls
/// in flight hold at most 64 of them, 4 MiB), so the common small request
/// costs no semaphore operation.
const SMALL_LINE_COST: u64 = 64 * 1024;

/// stdin, read with `read(2)` directly (the reader buffers).
pub(super) struct RawStdin;

impl std::io::Read for RawStdin {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        rustix::io::read(std::io::stdin(), buf).map_err(std::io::Error::from)
    }
}

/// The reader thread: reads each line (blocking, on its own thread, so a
/// burst costs no hand-off per read), answers what is not a message, hands
/// each message to the call lifecycle, and queues what it gives back for
/// rmcp's service loop.
pub(super) struct Reader {
    pub(super) lines: LineReader<RawStdin>,
    pub(super) max: usize,
    pub(super) flow: Arc<Flow>,
    pub(super) calls: Arc<Calls>,
    pub(super) observe: Observer,
    /// Whether calls in flight may be waiting for an answer the client has
    /// not sent yet (its `roots/list` answer): then the reader reads on
    /// when no call slot is free, since that answer may be behind the calls
    /// that hold every slot, and refuses a request it cannot give a slot.
    pub(super) awaits_client: Box<dyn Fn() -> bool + Send>,
    /// The writer's queue, for error replies (weak: a reader still blocked
    /// on stdin does not keep the writer alive at the end).
    pub(super) replies: tokio::sync::mpsc::WeakSender<Out>,
    pub(super) service: tokio::sync::mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    /// An `initialize` request has gone to rmcp (before it, rmcp takes only
    /// requests: a notification or response ends its session).
    pub(super) started: bool,
    /// The connection's protocol eras (see [`crate::mcp::era`]).
    pub(super) eras: crate::mcp::era::Eras,
}

impl Reader {
    pub(super) fn run(mut self) {
        let mut slot = None;
        loop {
            // Back-pressure: no next line while the calls in flight or the
            // reply budget are used up.
            if slot.is_none() {
                slot = self.flow.try_ready_to_read();
            }
            if slot.is_none() && !(self.awaits_client)() {
                slot = crate::sync::block_on(self.flow.ready_to_read());
                if slot.is_none() {
                    return;
                }
            }
            let line = match self.lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "stdin closed");
                    break;
                }
            };
            match line {
                Line::Complete(bytes) => {
                    if bytes.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    // What parsing the line takes is reply budget too: a
                    // line of tiny values costs about 100 times its bytes.
                    let Some(parsed) = self.reserve_parse(&bytes) else {
                        continue;
                    };
                    if let Some(raw) = raw_id(&bytes)
                        && is_unechoable_id(raw)
                    {
                        self.refuse_id(raw);
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&bytes) {
                        Ok(mut msg) => {
                            self.eras.adjust(&mut msg);
                            drop(bytes);
                            if !self.started && !matches!(msg, JsonRpcMessage::Request(_)) {
                                // rmcp ends the session on a notification
                                // or response before `initialize` (even
                                // after inline-era requests); JSON-RPC says
                                // to ignore them.
                                tracing::warn!(
                                    "ignored a notification or response that came before initialize"
                                );
                                continue;
                            }
                            let initialize = matches!(&msg, JsonRpcMessage::Request(r)
                                if matches!(r.request, ClientRequest::InitializeRequest(_)));
                            if let JsonRpcMessage::Request(r) = &msg
                                && initialize
                            {
                                if self.started {
                                    // One session, one negotiated version:
                                    // rmcp would answer a second one with
                                    // the first version yet keep the new
                                    // one as the peer's.
                                    self.refuse_second_initialize(r.id.clone());
                                    continue;
                                }
                                self.started = true;
                            }
                            (self.observe)(&msg);
                            if let JsonRpcMessage::Request(r) = &msg
                                && slot.is_none()
                            {
                                slot = self.flow.try_ready_to_read();
                                if slot.is_none() {
                                    self.refuse_busy(r.id.clone());
                                    continue;
                                }
                            }
                            if let (JsonRpcMessage::Request(_), Some(s)) = (&msg, slot.as_mut())
                                && let Some(parsed) = parsed
                            {
                                s.carry(parsed);
                            }
                            if let Some(msg) = self.calls.route(msg, &mut slot)
                                && self.service.blocking_send(msg).is_err()
                            {
                                return;
                            }
                            if initialize {
                                self.calls.wait_handshake();
                            }
                        }
                        Err(e) => {
                            if let Some((id, error)) = not_a_message(&bytes, &e) {
                                self.reply_error(id, error);
                            }
                        }
                    }
                }
                Line::Oversized(prefix) => {
                    tracing::warn!(
                        max = self.max,
                        "discarded a request line longer than --max-request-bytes"
                    );
                    self.reply_error(top_level_id(&prefix), rpc_error::oversized(self.max));
                }
            }
        }
        // The end of input: the requests still running, tool calls or
        // rmcp's, get their answers first (within one grace); then the
        // service sees the end (this sender drops).
        self.calls.drain();
    }

    /// Reserves the reply budget that parsing `line` may take
    /// ([`parse_cost`]), waiting for it as for any reply; a line that would
    /// take more than the whole budget is refused at its id. `None`: the
    /// line is done with (refused, or the session is over); `Some(None)`:
    /// nothing needs reserving.
    fn reserve_parse(&self, line: &[u8]) -> Option<Option<Reservation>> {
        let cost = parse_cost(line);
        if cost <= SMALL_LINE_COST {
            return Some(None);
        }
        let budget = self.flow.budget_bytes();
        if cost > budget {
            tracing::warn!(
                cost,
                budget,
                "refused a request line that would cost more than the reply budget to parse"
            );
            let error = rpc_error::too_costly(line.len(), cost, budget);
            self.reply_error(top_level_id(line), error);
            return None;
        }
        crate::sync::block_on(self.flow.reserve(cost)).map(Some)
    }

    /// Refuses a request whose numeric id would not be echoed as written
    /// ([`is_unechoable_id`]); the error carries the id exactly as sent.
    fn refuse_id(&self, raw: &[u8]) {
        tracing::warn!("refused a request whose id is a number tuls cannot echo as written");
        let error = rpc_error::unechoable_id();
        let id = String::from_utf8_lossy(raw).into_owned();
        if let Some(tx) = self.replies.upgrade() {
            let _ = tx.blocking_send(Out::RawIdError(id, error));
        }
    }

    /// Refuses an `initialize` after the first: the session keeps the
    /// version it negotiated.
    fn refuse_second_initialize(&self, id: RequestId) {
        tracing::warn!(%id, "refused a second initialize");
        self.reply_error(Some(id), rpc_error::second_initialize());
    }

    /// Refuses a request read while every call slot is held and calls wait
    /// for the client's answer (see `awaits_client`).
    fn refuse_busy(&self, id: RequestId) {
        tracing::warn!(
            %id,
            "refused a request: every call slot is held by calls waiting for the client's roots/list answer"
        );
        self.reply_error(Some(id), rpc_error::busy(MAX_CALLS_IN_FLIGHT));
    }

    /// Queues a reply to a line the service never sees.
    fn reply_error(&self, id: Option<RequestId>, error: ErrorData) {
        let out = match id {
            Some(id) => Out::Message(
                TxJsonRpcMessage::<RoleServer>::error(error, Some(id)),
                Held::default(),
            ),
            None => Out::NullIdError(error),
        };
        if let Some(tx) = self.replies.upgrade() {
            let _ = tx.blocking_send(out);
        }
    }
}
