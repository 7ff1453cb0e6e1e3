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
//! reply can hold while being built (the tool's [`crate::memory::Plan`], in its table entry). A tool that reads one whole
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
//!
//! Here: the session's [`Flow`] (call slots, the byte budget, the ledger).
//! A running call's growing share is in `call` ([`CallBudget`]); what a
//! built reply holds is measured in `held` ([`held_bytes`]).
//! May touch: nothing (no I/O).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, GetExtensions, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::sync::lock;

mod call;
mod held;

pub use call::CallBudget;
pub use held::{held_bytes, value_heap_bytes};

/// The budget counts bytes in units of this many (a semaphore takes `u32`
/// permits at a time).
const UNIT: u64 = 1024;

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
struct CallSlot(Arc<Slot>);

/// A free call slot, taken by the reader before it reads a line; once a
/// request takes it, it also carries the budget its parsed message holds
/// ([`Slot::carry`]), until the call is admitted and takes that budget into
/// its own reservation ([`Flow::reserve_with`]).
#[derive(Debug)]
pub struct Slot(
    #[allow(dead_code)] OwnedSemaphorePermit,
    Mutex<Option<Reservation>>,
);

impl Slot {
    fn new(permit: OwnedSemaphorePermit) -> Self {
        Self(permit, Mutex::new(None))
    }

    /// Makes the slot hold `parsed` (the reply budget reserved for what
    /// parsing the request's line takes) until the call is admitted.
    pub fn carry(&mut self, parsed: Reservation) {
        *self
            .1
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(parsed);
    }

    /// The parse budget the slot carries, taken out (the call's admission
    /// counts it into the call's own reservation).
    pub fn take_carried(&self) -> Option<Reservation> {
        lock(&self.1).take()
    }
}

/// The parse budget carried by the call slot in a request's rmcp
/// extensions, taken out ([`Slot::take_carried`]).
pub fn take_carried(extensions: &rmcp::model::Extensions) -> Option<Reservation> {
    extensions
        .get::<CallSlot>()
        .and_then(|slot| slot.0.take_carried())
}

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

    /// The whole reply budget, in bytes.
    pub fn budget_bytes(&self) -> u64 {
        u64::from(self.units) * UNIT
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
        Some(Slot::new(slot))
    }

    /// [`Flow::ready_to_read`] without waiting.
    pub fn try_ready_to_read(&self) -> Option<Slot> {
        let slot = self.calls.clone().try_acquire_owned().ok()?;
        drop(self.bytes.try_acquire().ok()?);
        Some(Slot::new(slot))
    }

    /// Sees each message as it is handed to rmcp: a request takes `slot`
    /// and enters the ledger; `notifications/cancelled` takes its request
    /// out (rmcp drops a cancelled call's reply, so its budget goes now).
    pub fn on_message(&self, msg: &mut RxJsonRpcMessage<RoleServer>, slot: &mut Option<Slot>) {
        match msg {
            JsonRpcMessage::Request(r) => {
                if let Some(taken) = slot.take() {
                    r.request.extensions_mut().insert(CallSlot(Arc::new(taken)));
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

    /// At the end of input: waits until every request handed to rmcp has
    /// been answered (or cancelled), until `deadline` at the latest, so
    /// that rmcp's path answers its calls as the direct path does (rmcp
    /// itself drops the calls still running when its input ends).
    pub fn drain(&self, deadline: std::time::Instant) {
        while !lock(&self.ledger).in_flight.is_empty() {
            if std::time::Instant::now() >= deadline {
                tracing::warn!(
                    requests = lock(&self.ledger).in_flight.len(),
                    "input ended; requests still running after the grace are dropped unanswered"
                );
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
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

    /// Reserves `bytes` of reply budget for a call on top of `carried`
    /// (the budget its parsed request already holds), as one reservation of
    /// both (at most the whole budget). When that is not free now, it waits
    /// holding nothing: a call that waited while holding its parse budget
    /// could wait forever behind a reservation queued for the whole budget,
    /// or behind its own (finding F3: one `list_directory` whose line cost
    /// more than 64 KiB to parse, with a plan of the whole budget, stopped
    /// the session). `None` only if the session is over.
    pub async fn reserve_with(
        &self,
        carried: Option<Reservation>,
        bytes: u64,
    ) -> Option<Reservation> {
        match self.try_reserve_with(carried, bytes) {
            Ok(r) => Some(r),
            Err(carried) => {
                let units = self.units_with(carried.as_ref(), bytes);
                drop(carried);
                let permit = self.bytes.clone().acquire_many_owned(units).await.ok()?;
                Some(Reservation(permit))
            }
        }
    }

    /// [`Flow::reserve_with`] without waiting: gives `carried` back when
    /// the rest is not free now.
    pub fn try_reserve_with(
        &self,
        carried: Option<Reservation>,
        bytes: u64,
    ) -> Result<Reservation, Option<Reservation>> {
        let units = self.units_with(carried.as_ref(), bytes);
        let Some(Reservation(mut permit)) = carried else {
            return self
                .bytes
                .clone()
                .try_acquire_many_owned(units)
                .map(Reservation)
                .map_err(|_| None);
        };
        let have = u32::try_from(permit.num_permits()).unwrap_or(u32::MAX);
        if have >= units {
            return Ok(Reservation(permit));
        }
        match self.bytes.clone().try_acquire_many_owned(units - have) {
            Ok(more) => {
                permit.merge(more);
                Ok(Reservation(permit))
            }
            Err(_) => Err(Some(Reservation(permit))),
        }
    }

    /// The units of `carried` plus `bytes`, at most the whole budget.
    fn units_with(&self, carried: Option<&Reservation>, bytes: u64) -> u32 {
        let have = carried.map_or(0, |r| r.0.num_permits() as u64);
        self.units_for(have.saturating_mul(UNIT).saturating_add(bytes))
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
