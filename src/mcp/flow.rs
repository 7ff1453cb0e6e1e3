//! Flow control: how much a client can make the server hold at once.
//!
//! Owns: the bound on requests in flight ([`crate::limits::MAX_CALLS_IN_FLIGHT`])
//! and the bound on reply bytes held ([`crate::limits::MAX_PENDING_REPLY_BYTES`],
//! `--max-pending-reply-bytes`), and the back-pressure that keeps both: the
//! line reader reads no next line while either is exhausted, so a client that
//! does not read its replies finds stdin full, and the heap stays bounded.
//!
//! Requests: the reader takes a call slot before it reads a line; a request
//! carries its slot (in its rmcp extensions) until its handler is done.
//!
//! Reply bytes: a tool call reserves, before its tool runs, the most its
//! reply can hold while being built ([`reserve_bytes`]); when the reply is
//! built the reservation shrinks to the bytes the reply holds
//! ([`held_bytes`]) and is parked under the request id; the transport's
//! `send` takes it with the reply, and the writer releases it once the reply
//! is written. The writer escapes the text (up to six bytes per byte) and
//! writes it twice (`structuredContent`), but streams both from the one copy
//! held, so held bytes, not wire bytes, are what is counted.
//!
//! The ledger mirrors rmcp's own table of requests in flight: an id enters
//! when its request is read, and leaves when its reply is sent or a
//! `notifications/cancelled` names it (rmcp then drops the reply). A
//! reservation parked for an id not in flight is released at once, so a
//! cancelled call or a reused id cannot leak budget.
//! May touch: nothing (no I/O).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ClientNotification, ContentBlock, GetExtensions, JsonRpcMessage, RequestId,
    ResourceContents,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::limits::{Limits, MAX_WALK_TEXT_BYTES};
use crate::sync::lock;

/// The budget counts bytes in units of this many (a semaphore takes `u32`
/// permits at a time).
const UNIT: u64 = 1024;

/// What a call that builds no large reply reserves.
const SMALL_REPLY: u64 = 64 * 1024;

/// Flow control for one session.
#[derive(Debug)]
pub struct Flow {
    bytes: Arc<Semaphore>,
    units: u32,
    calls: Arc<Semaphore>,
    ledger: Mutex<Ledger>,
}

#[derive(Debug, Default)]
struct Ledger {
    /// Ids of requests read whose reply has not been sent or cancelled.
    in_flight: HashSet<RequestId>,
    /// Reply budget of built replies, waiting for `send`.
    held: HashMap<RequestId, Vec<OwnedSemaphorePermit>>,
}

/// One request's place among those in flight; rides in the request's rmcp
/// extensions and is freed when the handler drops its context.
#[derive(Debug, Clone)]
struct CallSlot(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// A free call slot, taken by the reader before it reads a line.
#[derive(Debug)]
pub struct Slot(OwnedSemaphorePermit);

/// Reply bytes reserved for one call, released when dropped.
#[derive(Debug)]
pub struct Reservation(OwnedSemaphorePermit);

/// Reply bytes that travel with a reply to the writer, released once it
/// has been written.
#[derive(Debug, Default)]
pub struct Held(#[allow(dead_code)] Vec<OwnedSemaphorePermit>);

impl Flow {
    /// Flow control with `max_pending_reply_bytes` of reply budget and
    /// `max_calls` requests in flight.
    pub fn new(max_pending_reply_bytes: u64, max_calls: usize) -> Self {
        let units = u32::try_from(max_pending_reply_bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .clamp(1, u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX));
        Self {
            bytes: Arc::new(Semaphore::new(units as usize)),
            units,
            calls: Arc::new(Semaphore::new(max_calls.max(1))),
            ledger: Mutex::new(Ledger::default()),
        }
    }

    fn units_for(&self, bytes: u64) -> u32 {
        u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .clamp(1, self.units)
    }

    /// Waits until another request may be read: a call slot is free, and
    /// the reply budget is not used up (waiting in turn behind reservations
    /// already waiting). `None` only if the session is over.
    pub async fn ready_to_read(&self) -> Option<Slot> {
        tracing::trace!(
            calls_free = self.calls.available_permits(),
            budget_free_kib = self.bytes.available_permits(),
            "before reading a line"
        );
        let slot = self.calls.clone().acquire_owned().await.ok()?;
        drop(self.bytes.acquire().await.ok()?);
        Some(Slot(slot))
    }

    /// Sees each message as it is handed to rmcp: a request takes `slot`
    /// and enters the ledger; `notifications/cancelled` takes its request
    /// out (rmcp drops a cancelled call's reply, so its budget goes now).
    pub fn on_message(&self, msg: &mut RxJsonRpcMessage<RoleServer>, slot: &mut Option<Slot>) {
        match msg {
            JsonRpcMessage::Request(r) => {
                if let Some(Slot(permit)) = slot.take() {
                    r.request
                        .extensions_mut()
                        .insert(CallSlot(Arc::new(permit)));
                }
                lock(&self.ledger).in_flight.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    let mut ledger = lock(&self.ledger);
                    ledger.in_flight.remove(id);
                    ledger.held.remove(id);
                }
            }
            _ => {}
        }
    }

    /// Sees each outgoing message as rmcp hands it to the transport: a reply
    /// leaves the ledger and takes the budget parked for its id.
    pub fn on_send(&self, msg: &TxJsonRpcMessage<RoleServer>) -> Held {
        let id = match msg {
            JsonRpcMessage::Response(r) => &r.id,
            JsonRpcMessage::Error(e) => match &e.id {
                Some(id) => id,
                None => return Held::default(),
            },
            _ => return Held::default(),
        };
        let mut ledger = lock(&self.ledger);
        ledger.in_flight.remove(id);
        Held(ledger.held.remove(id).unwrap_or_default())
    }

    /// Reserves `bytes` of reply budget (at most the whole budget), waiting
    /// until they are free. `None` only if the session is over.
    pub async fn reserve(&self, bytes: u64) -> Option<Reservation> {
        let units = self.units_for(bytes);
        let permit = self.bytes.clone().acquire_many_owned(units).await.ok()?;
        Some(Reservation(permit))
    }

    /// [`Flow::reserve`] without waiting: `None` when the bytes are not
    /// free now (a reservation already waiting takes what is freed first,
    /// so this never overtakes it).
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        let units = self.units_for(bytes);
        let permit = self.bytes.clone().try_acquire_many_owned(units).ok()?;
        Some(Reservation(permit))
    }

    /// Parks the budget of a built reply of `bytes` for request `id`
    /// ([`Flow::settle`]), until `send` takes it with the reply. Released at
    /// once if `id` is no longer in flight.
    pub fn hold(&self, id: &RequestId, res: Reservation, bytes: u64) {
        let permit = self.settle(res, bytes);
        let mut ledger = lock(&self.ledger);
        if ledger.in_flight.contains(id) {
            ledger.held.entry(id.clone()).or_default().extend(permit.0);
        }
    }

    /// The budget of a built reply of `bytes`, to travel with it to the
    /// writer: `res` shrunk to fit it, or grown if the estimate was short
    /// and budget is free (never waiting: a call that waited for more while
    /// holding some could deadlock with a reservation queued for the whole
    /// budget).
    pub fn settle(&self, res: Reservation, bytes: u64) -> Held {
        let want = self.units_for(bytes);
        let Reservation(mut permit) = res;
        let have = u32::try_from(permit.num_permits()).unwrap_or(u32::MAX);
        if have > want {
            drop(permit.split((have - want) as usize));
        } else if have < want {
            match self.bytes.clone().try_acquire_many_owned(want - have) {
                Ok(more) => permit.merge(more),
                Err(_) => tracing::debug!(
                    bytes,
                    reserved_kib = have,
                    "a reply outgrew its reservation; counting the reservation"
                ),
            }
        }
        Held(vec![permit])
    }
}

/// The most a call of `tool` can hold while its reply is built, by the
/// limits in force. An estimate from how each tool builds its reply; a
/// reply that ends up larger grows its reservation before it is queued.
pub fn reserve_bytes(tool: &str, l: &Limits) -> u64 {
    let walk = MAX_WALK_TEXT_BYTES as u64;
    match tool {
        // The bytes read, plus their text: lossy decoding of invalid UTF-8
        // takes up to three bytes per byte.
        "read_text_file" => l.max_read_bytes.saturating_mul(4),
        // The bytes read, plus base64 (4 per 3).
        "read_media_file" => l.max_read_bytes.saturating_mul(3),
        // The text of the batch (lossy, up to three bytes per byte), plus
        // the bytes of the file being read.
        "read_multiple_files" => l
            .max_batch_bytes
            .saturating_mul(3)
            .saturating_add(l.max_read_bytes),
        // The text, plus the walk's entries and the tree built from them.
        "directory_tree" | "search_files" => walk.saturating_mul(3),
        "list_directory" | "list_directory_with_sizes" => walk.saturating_mul(2),
        // The old text, the new text and the diff.
        "edit_file" => l.max_read_bytes.saturating_mul(3),
        _ => SMALL_REPLY,
    }
}

/// What a reply holds besides its text and data (the envelope, names).
const ENVELOPE: u64 = 1024;

/// The bytes a built tool result holds (its text and data, once).
pub fn held_bytes(r: &CallToolResult) -> u64 {
    let mut n = ENVELOPE;
    for block in &r.content {
        let len = match block {
            ContentBlock::Text(t) => t.text.len(),
            ContentBlock::Image(i) => i.data.len(),
            ContentBlock::Audio(a) => a.data.len(),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => text.len(),
                ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
                #[allow(unreachable_patterns)]
                _ => 0,
            },
            _ => 0,
        };
        n = n.saturating_add(len as u64);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reservation_shrinks_to_the_reply_and_goes_with_it() {
        let flow = Flow::new(1024 * UNIT, 4);
        let id = RequestId::Number(1);
        lock(&flow.ledger).in_flight.insert(id.clone());
        let res = flow.reserve(800 * UNIT).await.unwrap();
        assert_eq!(flow.bytes.available_permits(), 224);
        flow.hold(&id, res, 100 * UNIT);
        assert_eq!(flow.bytes.available_permits(), 924);
        let msg: TxJsonRpcMessage<RoleServer> =
            JsonRpcMessage::response(rmcp::model::ServerResult::empty(()), id.clone());
        let held = flow.on_send(&msg);
        assert_eq!(flow.bytes.available_permits(), 924);
        drop(held);
        assert_eq!(flow.bytes.available_permits(), 1024);
    }

    #[tokio::test]
    async fn a_reply_that_outgrows_its_reservation_never_waits_behind_the_whole_budget() {
        let flow = Arc::new(Flow::new(1024 * UNIT, 4));
        let id = RequestId::Number(1);
        lock(&flow.ledger).in_flight.insert(id.clone());
        let small = flow.reserve(64 * UNIT).await.unwrap();
        let f = flow.clone();
        let big = tokio::spawn(async move { f.reserve(1024 * UNIT).await.map(drop) });
        tokio::task::yield_now().await;
        flow.hold(&id, small, 100 * UNIT);
        let msg: TxJsonRpcMessage<RoleServer> =
            JsonRpcMessage::response(rmcp::model::ServerResult::empty(()), id);
        drop(flow.on_send(&msg));
        big.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn budget_for_an_id_not_in_flight_is_released_at_once() {
        let flow = Flow::new(1024 * UNIT, 4);
        let res = flow.reserve(10_000 * UNIT).await.unwrap();
        assert_eq!(flow.bytes.available_permits(), 0, "capped at the budget");
        flow.hold(&RequestId::Number(9), res, 10 * UNIT);
        assert_eq!(flow.bytes.available_permits(), 1024);
    }
}
