//! The reply budget of one running call: what it reserved before it
//! started, grown as it opens files by their size (the tool's [`Plan`]),
//! waiting for more while holding nothing, and ended by a cancel.
//! May touch: nothing (no I/O).

use std::sync::{Arc, Mutex};

use tokio::sync::OwnedSemaphorePermit;

use super::held::ENVELOPE;
use super::{Flow, Reservation};
use crate::reply_budget::Plan;
use crate::sync::lock;

/// The reply budget a running call holds: what it reserved before it
/// started, grown as it opens files ([`crate::reply_budget`]).
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

    /// Makes the call's share cover `st.wanted` (plus the envelope, and at
    /// least what it reserved up front): taken now if it is free, or else
    /// waited for holding nothing (two calls each waiting for more while
    /// holding some could deadlock behind one another), until it is free
    /// or the call is cancelled.
    fn cover(&self, mut st: std::sync::MutexGuard<'_, Budgeted>) -> crate::error::Result<()> {
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
        st.permit = None;
        let acquire = self.flow.bytes.clone().acquire_many_owned(want);
        let cancel = self.cancel.clone();
        let got = crate::mcp::workers::blocking(|| {
            crate::sync::block_on(async move {
                tokio::select! {
                    p = acquire => p.ok(),
                    () = cancel.cancelled() => None,
                }
            })
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

impl crate::reply_budget::Grant for CallBudget {
    fn file_opened(&self, bytes: u64) -> crate::error::Result<()> {
        if self.plan.per_file_byte == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        let more = bytes
            .min(self.read_limit)
            .saturating_mul(self.plan.per_file_byte);
        st.wanted = st.wanted.saturating_add(more).min(self.plan.most);
        self.cover(st)
    }

    fn will_hold(&self, bytes: u64) -> crate::error::Result<()> {
        // A plan of no files reserved its most up front.
        if self.plan.per_file_byte == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        if bytes <= st.wanted {
            return Ok(());
        }
        st.wanted = bytes.min(self.plan.most);
        self.cover(st)
    }
}

#[cfg(test)]
mod tests {
    use super::super::UNIT;
    use super::*;

    fn read_plan() -> Plan {
        Plan {
            upfront: 64 * UNIT,
            per_file_byte: 4,
            most: 1000 * UNIT,
        }
    }

    #[test]
    fn a_call_grows_its_budget_by_the_files_it_opens() {
        use crate::reply_budget::Grant as _;
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
    fn a_call_whose_text_outgrows_its_files_share_grows_it_to_the_text() {
        use crate::reply_budget::Grant as _;
        let flow = Arc::new(Flow::new(1024 * UNIT, 4));
        let res = flow.try_reserve(64 * UNIT);
        let budget = CallBudget::new(flow.clone(), read_plan(), res, u64::MAX, Default::default());
        // A file of 50 KiB: 200 KiB of text covered (plus the envelope).
        budget.file_opened(50 * UNIT).unwrap();
        assert_eq!(flow.bytes.available_permits(), 1024 - 201);
        // Text within that share asks for nothing more.
        budget.will_hold(150 * UNIT).unwrap();
        assert_eq!(flow.bytes.available_permits(), 1024 - 201);
        // Numbered lines made 400 KiB of it: the share grows to the text.
        budget.will_hold(400 * UNIT).unwrap();
        assert_eq!(flow.bytes.available_permits(), 1024 - 401);
        // Never past the plan's most.
        budget.will_hold(5_000 * UNIT).unwrap();
        assert_eq!(flow.bytes.available_permits(), 23);
        drop(budget.take());
        assert_eq!(flow.bytes.available_permits(), 1024);
    }

    #[test]
    fn a_call_waits_for_budget_holding_nothing_and_a_cancel_ends_the_wait() {
        use crate::reply_budget::Grant as _;
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
}
