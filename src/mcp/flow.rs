//! Flow control: how much a client can make the server hold at once.
//!
//! Owns: the bound on requests in flight ([`crate::limits::MAX_CALLS_IN_FLIGHT`])
//! and the bound on reply bytes held ([`crate::limits::MAX_PENDING_REPLY_BYTES`],
//! `--max-pending-reply-bytes`), and the back-pressure that keeps both: the
//! line reader reads no next line while either is exhausted, so a client that
//! does not read its replies finds stdin full, and the heap stays bounded.
//!
//! Requests: the reader takes a call slot before it reads a line; a request
//! carries its slot (in its rmcp extensions, or in its direct call) until
//! its reply is queued.
//!
//! Reply bytes: a tool call reserves, before its tool runs, the most its
//! reply can hold while being built ([`plan`]). A tool that reads one whole
//! file reserves a small share up front and grows it once the file is open,
//! by the file's size, before reading it ([`CallBudget`]): a burst of small
//! reads then runs side by side, where reserving every read's worst case
//! (four times `--max-read-bytes`) let two run at once. (Not a batch: it
//! would wait for more while holding the files it read, uncounted; nor an
//! edit: its reply is made of the request's new text as much as the file.) When the reply
//! is built the reservation shrinks to the bytes the reply holds
//! ([`held_bytes`]) and goes with the reply (a direct call's, at once; an
//! rmcp call's is parked under the request id, and the transport's `send`
//! takes it with the reply); the writer releases it once the reply is
//! written. The writer escapes the text (up to six bytes per byte) and
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

    /// [`Flow::ready_to_read`] without waiting.
    pub fn try_ready_to_read(&self) -> Option<Slot> {
        let slot = self.calls.clone().try_acquire_owned().ok()?;
        drop(self.bytes.try_acquire().ok()?);
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

/// What a call of `tool` reserves before it runs and, for a tool that reads
/// whole files, how much more each file it opens may make it hold
/// ([`CallBudget`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Reserved before the tool runs.
    pub upfront: u64,
    /// Bytes held per byte of a file opened (at most the read limit of
    /// the file counts); 0 for tools whose reply is not made of files.
    pub per_file_byte: u64,
    /// The most the call can hold by the limits in force: what it grows to
    /// at most.
    pub most: u64,
}

/// The [`Plan`] of a call of `tool` under the limits `l`. The most is an
/// estimate from how each tool builds its reply; a reply that ends up
/// larger grows its reservation before it is queued.
pub fn plan(tool: &str, l: &Limits) -> Plan {
    let walk = MAX_WALK_TEXT_BYTES as u64;
    let files = |per_file_byte, most| Plan {
        upfront: SMALL_REPLY,
        per_file_byte,
        most,
    };
    let fixed = |most| Plan {
        upfront: most,
        per_file_byte: 0,
        most,
    };
    match tool {
        // The bytes read, plus their text: lossy decoding of invalid UTF-8
        // takes up to three bytes per byte.
        "read_text_file" => files(4, l.max_read_bytes.saturating_mul(4)),
        // The bytes read, plus base64 (4 per 3).
        "read_media_file" => files(3, l.max_read_bytes.saturating_mul(3)),
        // The text of the batch (lossy, up to three bytes per byte), plus
        // the bytes of the file being read; all of it up front. A batch
        // holds the text of the files it read while it opens the next, so
        // growing its share file by file would mean waiting for more while
        // holding text the budget no longer counts (a wait must hold
        // nothing, or two calls could deadlock).
        "read_multiple_files" => fixed(
            l.max_batch_bytes
                .saturating_mul(3)
                .saturating_add(l.max_read_bytes),
        ),
        // The old text, the new text and the diff; all of it up front: the
        // new text comes from the request, not the file, so growing the
        // share by the file's size would not cover it (a tiny file edited
        // with a large newText makes a large diff).
        "edit_file" => fixed(l.max_read_bytes.saturating_mul(3)),
        // The text, plus the walk's entries and the tree built from them.
        "directory_tree" | "search_files" => fixed(walk.saturating_mul(3)),
        "list_directory" | "list_directory_with_sizes" => fixed(walk.saturating_mul(2)),
        _ => fixed(SMALL_REPLY),
    }
}

/// The reply budget a running call holds: what it reserved before it
/// started, grown as it opens files ([`crate::memory`]).
pub struct CallBudget {
    flow: Arc<Flow>,
    plan: Plan,
    read_limit: u64,
    cancel: tokio_util::sync::CancellationToken,
    state: Mutex<Budgeted>,
}

struct Budgeted {
    permit: Option<OwnedSemaphorePermit>,
    /// The bytes the call may hold by the files it opened so far.
    wanted: u64,
}

impl CallBudget {
    /// The budget of a call of the plan `plan` that reserved `reserved`,
    /// reading files of at most `read_limit` bytes, cancelled by `cancel`.
    pub fn new(
        flow: Arc<Flow>,
        plan: Plan,
        reserved: Option<Reservation>,
        read_limit: u64,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Self {
        Self {
            flow,
            plan,
            read_limit,
            cancel,
            state: Mutex::new(Budgeted {
                permit: reserved.map(|r| r.0),
                wanted: 0,
            }),
        }
    }

    /// What the call holds now, to shrink to its reply.
    pub fn take(&self) -> Option<Reservation> {
        lock(&self.state).permit.take().map(Reservation)
    }
}

impl crate::memory::Grant for CallBudget {
    fn file_opened(&self, bytes: u64) -> crate::error::Result<()> {
        if self.plan.per_file_byte == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        let more = bytes
            .min(self.read_limit)
            .saturating_mul(self.plan.per_file_byte);
        st.wanted = st.wanted.saturating_add(more).min(self.plan.most);
        let want = self
            .flow
            .units_for(st.wanted.saturating_add(ENVELOPE).max(self.plan.upfront));
        let have = st
            .permit
            .as_ref()
            .map_or(0, |p| u32::try_from(p.num_permits()).unwrap_or(u32::MAX));
        if have >= want {
            return Ok(());
        }
        if let Ok(extra) = self.flow.bytes.clone().try_acquire_many_owned(want - have) {
            match &mut st.permit {
                Some(p) => p.merge(extra),
                None => st.permit = Some(extra),
            }
            return Ok(());
        }
        // Wait holding nothing: two calls each waiting for more while
        // holding some could deadlock behind one another.
        st.permit = None;
        let acquire = self.flow.bytes.clone().acquire_many_owned(want);
        let cancel = self.cancel.clone();
        let got = crate::sync::block_on(async move {
            tokio::select! {
                p = acquire => p.ok(),
                () = cancel.cancelled() => None,
            }
        });
        match got {
            Some(p) => {
                st.permit = Some(p);
                Ok(())
            }
            None => Err(crate::error::Error::Cancelled),
        }
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
    // The small fields a mirrored result adds (a version, a batch's list
    // of versions).
    if super::reply::mirrors(r)
        && let Some(extra) = super::reply::extra_fields(r)
    {
        let len: usize = extra.iter().map(|(k, v)| k.len() + value_len(v)).sum();
        n = n.saturating_add(len as u64);
    }
    n
}

/// About the bytes a small JSON value holds (strings and their keys; a
/// few bytes for anything else), without serializing it.
fn value_len(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::String(s) => s.len() + 2,
        Value::Array(a) => a.iter().map(value_len).sum::<usize>() + 2,
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + 4 + value_len(v)).sum(),
        _ => 8,
    }
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

    fn read_plan() -> Plan {
        Plan {
            upfront: 64 * UNIT,
            per_file_byte: 4,
            most: 1000 * UNIT,
        }
    }

    #[test]
    fn a_call_grows_its_budget_by_the_files_it_opens() {
        use crate::memory::Grant as _;
        let flow = Arc::new(Flow::new(1024 * UNIT, 4));
        let res = flow.try_reserve(64 * UNIT);
        let budget = CallBudget::new(flow.clone(), read_plan(), res, u64::MAX, Default::default());
        assert_eq!(flow.bytes.available_permits(), 960);
        // A small file fits the share reserved up front.
        budget.file_opened(UNIT).unwrap();
        assert_eq!(flow.bytes.available_permits(), 960);
        // A large one grows it (four bytes per byte, plus the envelope).
        budget.file_opened(100 * UNIT).unwrap();
        assert_eq!(flow.bytes.available_permits(), 1024 - 405);
        // Never past the plan's most.
        budget.file_opened(10_000 * UNIT).unwrap();
        assert_eq!(flow.bytes.available_permits(), 23);
        drop(budget.take());
        assert_eq!(flow.bytes.available_permits(), 1024);
    }

    #[test]
    fn a_call_waits_for_budget_holding_nothing_and_a_cancel_ends_the_wait() {
        use crate::memory::Grant as _;
        let flow = Arc::new(Flow::new(1024 * UNIT, 4));
        let other = flow.try_reserve(900 * UNIT).unwrap();
        let cancel = tokio_util::sync::CancellationToken::new();
        let budget = Arc::new(CallBudget::new(
            flow.clone(),
            read_plan(),
            flow.try_reserve(64 * UNIT),
            u64::MAX,
            cancel.clone(),
        ));
        let b = budget.clone();
        let waiter = std::thread::spawn(move || b.file_opened(100 * UNIT));
        // It gives back its share and queues for the whole 401 (the
        // semaphore hands the waiter what is free, so none is left free).
        let f = flow.clone();
        let start = std::time::Instant::now();
        while f.bytes.available_permits() != 0 {
            assert!(start.elapsed() < std::time::Duration::from_secs(10));
            std::thread::yield_now();
        }
        drop(other);
        assert!(waiter.join().unwrap().is_ok());
        assert_eq!(flow.bytes.available_permits(), 1024 - 401);

        // Waiting again, cancelled: an error, and nothing held.
        let hog = flow.try_reserve(600 * UNIT).unwrap();
        let b = budget.clone();
        let waiter = std::thread::spawn(move || b.file_opened(200 * UNIT));
        while f.bytes.available_permits() != 0 {
            assert!(start.elapsed() < std::time::Duration::from_secs(10));
            std::thread::yield_now();
        }
        cancel.cancel();
        assert!(matches!(
            waiter.join().unwrap(),
            Err(crate::error::Error::Cancelled)
        ));
        assert!(budget.take().is_none());
        drop(hog);
        assert_eq!(flow.bytes.available_permits(), 1024);
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
