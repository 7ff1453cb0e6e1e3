//! Flow control: how much a client can make the server hold at once.
//!
//! Owns: the bound on requests in flight ([`crate::limits::MAX_CALLS_IN_FLIGHT`])
//! and the bound on reply bytes held ([`crate::limits::MAX_PENDING_REPLY_BYTES`],
//! `--max-pending-reply-bytes`), and the back-pressure that keeps both: the
//! line reader reads no next line while either is exhausted, so a client that
//! does not read its replies finds stdin full, and the heap stays bounded.
//!
//! Requests: the reader takes a call slot before it reads a line; a request
//! carries its slot (in its tool call, or in its rmcp extensions for the
//! requests rmcp's service answers) until its reply is queued.
//!
//! Reply bytes: a tool call reserves, before its tool runs, the most its
//! reply can hold while being built (the tool's [`crate::reply_budget::Plan`], in
//! its table entry). A tool that reads one whole file reserves a small
//! share up front and grows it once the file is open, by the file's size,
//! before reading it ([`CallBudget`]): a burst of small reads then runs side
//! by side, where reserving every read's worst case (four times
//! `--max-read-bytes`) let two run at once. (Not a batch: it would wait for
//! more while holding the files it read, uncounted; nor an edit: its reply
//! is made of the request's new text as much as the file.) When the reply
//! is built the reservation shrinks to the bytes the reply holds
//! ([`held_bytes`], [`Flow::settle`]) and goes with the reply to the
//! writer, which releases it once the reply is written. The writer escapes
//! the text (up to six bytes per byte) and writes it twice
//! (`structuredContent`), but streams both from the one copy held, so held
//! bytes, not wire bytes, are what is counted.
//!
//! Which requests are in flight is not kept here: the one table of them is
//! the call lifecycle's ([`super::call`]).
//!
//! Here: the session's [`Flow`] (call slots, the byte budget).
//! A running call's growing share is in `share` ([`CallBudget`]); what a
//! built reply holds is measured in `held` ([`held_bytes`]).
//! May touch: nothing (no I/O).

use std::sync::{Arc, Mutex};

use rmcp::model::{ClientRequest, GetExtensions};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::sync::lock;

mod held;
mod share;

pub use held::{held_bytes, value_heap_bytes};
pub use share::CallBudget;

/// The budget counts bytes in units of this many (a semaphore takes `u32`
/// permits at a time).
const UNIT: u64 = 1024;

/// Flow control for one session.
#[derive(Debug)]
pub struct Flow {
    bytes: Arc<Semaphore>,
    units: u32,
    calls: Arc<Semaphore>,
}

/// One request's place among those in flight; rides in the request's rmcp
/// extensions and is freed when the handler drops its context.
#[derive(Debug, Clone)]
struct CallSlot(#[allow(dead_code)] Arc<Slot>);

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

/// Makes a request for rmcp's service hold `slot` (in its extensions),
/// until the handler drops its context.
pub fn attach(request: &mut ClientRequest, slot: Slot) {
    request.extensions_mut().insert(CallSlot(Arc::new(slot)));
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
        let res = flow.reserve(800 * UNIT).await.unwrap();
        assert_eq!(flow.bytes.available_permits(), 224);
        let held = flow.settle(res, 100 * UNIT);
        assert_eq!(flow.bytes.available_permits(), 924);
        drop(held);
        assert_eq!(flow.bytes.available_permits(), 1024);
    }

    #[tokio::test]
    async fn a_reply_that_outgrows_its_reservation_never_waits_behind_the_whole_budget() {
        let flow = Arc::new(Flow::new(1024 * UNIT, 4));
        let small = flow.reserve(64 * UNIT).await.unwrap();
        let f = flow.clone();
        let big = tokio::spawn(async move { f.reserve(1024 * UNIT).await.map(drop) });
        tokio::task::yield_now().await;
        drop(flow.settle(small, 100 * UNIT));
        big.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_reservation_is_capped_at_the_budget() {
        let flow = Flow::new(1024 * UNIT, 4);
        let res = flow.reserve(10_000 * UNIT).await.unwrap();
        assert_eq!(flow.bytes.available_permits(), 0, "capped at the budget");
        drop(res);
        assert_eq!(flow.bytes.available_permits(), 1024);
    }
}
