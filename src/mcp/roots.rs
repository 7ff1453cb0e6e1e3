//! Client roots (MCP roots): everything tuls does with them, in one place.
//!
//! Owns: whether client roots are in use for this session, asking the
//! client for them (`roots/list`), narrowing the operator's roots to the
//! client's, and the wait that keeps a tool call from running while an
//! answer is pending.
//!
//! Rules:
//! - Client roots only narrow: a client root counts only if it lies at or
//!   beneath an operator root, and it is opened through that root's handle.
//! - An empty list narrows nothing: the operator's roots stay in force. A
//!   non-empty list of which none counts gives no access, and every refusal
//!   says why, naming the client's roots ([`decide`]).
//! - Roots are in use when the client declared the `roots` capability in
//!   `initialize` and the operator did not pass `--no-client-roots`.
//! - Every tool call waits (bounded by `--roots-timeout-secs`) while an
//!   answer is pending: at the start of the session and after each
//!   `notifications/roots/list_changed`. After a change the new list may be
//!   narrower, and a call that kept the old, wider scope would be exactly
//!   the slip the first wait exists to prevent. Failing closed costs a short
//!   stall after each change, or a timeout error if the client never
//!   answers.
//! - At most one `roots/list` request is outstanding. A change notified
//!   while it is out only marks its answer stale; that answer is then
//!   discarded and one more request goes out. So a flood of notifications
//!   sends nothing and holds nothing. A request with no answer within the
//!   roots wait (at least 1 s) is dropped (rmcp cancels it towards the
//!   client), and calls fail with the timeout error until a list arrives.
//! - An answer naming more than [`MAX_CLIENT_ROOTS`] distinct roots is
//!   refused whole: no access, and every call says why. The same URI named
//!   twice counts once; roots that are the same directory (device and
//!   inode) by different URIs share one handle.
//! - A call that has passed the wait resolves against the snapshot of the
//!   roots taken when it started ([`crate::fs::scope::Snapshot`]).
//!
//! May touch: the root handles, to open client roots beneath them.

#![allow(deprecated)] // MCP roots are deprecated by SEP-2577 but still used by older sessions

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientNotification, ClientResult, JsonRpcMessage, ListRootsRequest, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RxJsonRpcMessage, ServiceError};
use rmcp::{Peer, RoleServer};
use tokio::sync::watch;

use crate::error::Error;
use crate::fs::resolve::Final;
use crate::fs::roots::Root;
use crate::fs::scope::{Scope, join_display, resolve_in, walk};
use crate::limits::{
    MAX_CLIENT_ROOTS, ROOT_BYTES_NAMED_IN_REFUSAL as NAMED_ROOT_BYTES,
    ROOTS_NAMED_IN_REFUSAL as NAMED_ROOTS,
};
use crate::sync::lock;
use crate::text::fmt::file_uri_path;

/// Whether the roots in force are settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the answer to a `roots/list` request.
    Pending,
    /// Settled.
    Ready,
    /// Settled with no access, for a reason each call is told.
    Refused(Refusal),
}

/// Why the client's roots give no access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The `roots/list` request got no answer in time and was dropped.
    Timeout,
    /// The answer named more than [`MAX_CLIENT_ROOTS`] roots.
    TooMany(usize),
}

/// The one `roots/list` request tuls may have outstanding.
#[derive(Debug, Default)]
struct Asking {
    /// A request is out (or about to go out).
    outstanding: bool,
    /// The client said its roots changed after the outstanding request
    /// went out: its answer is stale, and one more request follows it.
    stale: bool,
}

/// The client-roots state of one session.
#[derive(Debug)]
pub struct ClientRoots {
    scope: Arc<Scope>,
    /// The operator allows client roots (no `--no-client-roots`).
    allowed: bool,
    /// Client roots are in use: allowed, and the client declared them.
    in_use: AtomicBool,
    state: watch::Sender<State>,
    /// At most one `roots/list` request is outstanding; `state` is settled
    /// under this lock.
    asking: Mutex<Asking>,
    wait: Duration,
    max_path_bytes: usize,
}

impl ClientRoots {
    /// The client-roots state over `scope`.
    pub fn new(scope: Arc<Scope>, allowed: bool, wait_secs: u64, max_path_bytes: usize) -> Self {
        let (state, _) = watch::channel(State::Ready);
        Self {
            scope,
            allowed,
            in_use: AtomicBool::new(false),
            state,
            asking: Mutex::new(Asking::default()),
            wait: Duration::from_secs(wait_secs),
            max_path_bytes,
        }
    }

    /// At `initialize`: whether the client declared roots. When it did (and
    /// they are allowed), the roots are Pending from before the initialize
    /// answer goes out, so no call runs with the operator's roots before the
    /// client's arrive.
    pub fn on_initialize(&self, client_declares_roots: bool) {
        if self.allowed && client_declares_roots {
            self.in_use.store(true, Ordering::SeqCst);
            self.state.send_replace(State::Pending);
        }
    }

    /// Whether client roots are in use in this session.
    pub fn in_use(&self) -> bool {
        self.in_use.load(Ordering::SeqCst)
    }

    /// Whether calls wait for a `roots/list` answer the client has not sent
    /// yet (it may sit in stdin behind the calls that wait for it).
    pub fn pending(&self) -> bool {
        *self.state.borrow() == State::Pending
    }

    /// Observes each incoming message in wire order, before any later one is
    /// read: `roots/list_changed` marks the roots Pending (and any
    /// outstanding answer stale) at once, closing the window in which a call
    /// written right after the notification could run with the old roots
    /// (rmcp handles each message as its own task). It sends nothing, so a
    /// flood of notifications costs no memory.
    pub fn observe(&self, msg: &RxJsonRpcMessage<RoleServer>) {
        if let JsonRpcMessage::Notification(n) = msg
            && matches!(
                n.notification,
                ClientNotification::RootsListChangedNotification(_)
            )
            && self.in_use()
        {
            let mut asking = lock(&self.asking);
            asking.stale = asking.outstanding;
            self.state.send_replace(State::Pending);
        }
    }

    /// Asks the client for its roots and applies the answer, unless a
    /// request is already outstanding (its answer is then stale, and one
    /// more request follows it). Call after `initialized` and after each
    /// `roots/list_changed`.
    pub fn refresh(self: &Arc<Self>, peer: Peer<RoleServer>) {
        if !self.in_use() {
            tracing::debug!("ignoring a roots refresh: client roots are not in use");
            return;
        }
        {
            let mut asking = lock(&self.asking);
            self.state.send_replace(State::Pending);
            if asking.outstanding {
                return;
            }
            asking.outstanding = true;
            asking.stale = false;
        }
        let this = self.clone();
        tokio::spawn(async move { this.ask(peer).await });
    }

    /// Sends `roots/list` until an answer arrives that no later change has
    /// made stale, and settles the roots with it.
    async fn ask(&self, peer: Peer<RoleServer>) {
        loop {
            let answer = self.request(&peer).await;
            let (roots, state) = self.apply(answer);
            let mut asking = lock(&self.asking);
            if asking.stale {
                asking.stale = false;
                tracing::debug!("the client's roots changed while tuls asked; asking again");
                continue;
            }
            asking.outstanding = false;
            match roots {
                Decision::Operator => {
                    tracing::info!(
                        "the client's roots list is empty, which narrows nothing: the operator's directories stay in force"
                    );
                    self.scope.set_roots(self.scope.cli_roots().to_vec());
                }
                Decision::Narrowed(narrowed) => {
                    let names: Vec<&str> = narrowed.iter().map(|r| r.display.as_str()).collect();
                    tracing::info!("client roots in force: [{}]", names.join(", "));
                    self.scope.set_roots(narrowed);
                }
                Decision::NoAccess(why) => {
                    tracing::warn!(reason = why.as_str(), "no access in this session");
                    self.scope.set_no_roots(why);
                }
            }
            self.state.send_replace(state);
            return;
        }
    }

    /// One `roots/list` request, dropped (and cancelled towards the client)
    /// when no answer comes within the roots wait (at least one second, so
    /// `--roots-timeout-secs 0` still lets a prompt answer in).
    async fn request(&self, peer: &Peer<RoleServer>) -> Result<Vec<String>, Asked> {
        let request = ServerRequest::ListRootsRequest(ListRootsRequest {
            method: Default::default(),
            extensions: Default::default(),
        });
        let options = PeerRequestOptions::with_timeout(self.wait.max(Duration::from_secs(1)));
        let answer = match peer.send_request_with_option(request, options).await {
            Ok(handle) => handle.await_response().await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(ClientResult::ListRootsResult(list)) => {
                Ok(list.roots.into_iter().map(|r| r.uri).collect())
            }
            Ok(_) => Err(Asked::Failed(
                "an answer that is not a roots list".to_owned(),
            )),
            Err(ServiceError::Timeout { .. }) => Err(Asked::Timeout),
            Err(e) => Err(Asked::Failed(e.to_string())),
        }
    }

    /// What one answer puts in force, and the state it settles in.
    fn apply(&self, answer: Result<Vec<String>, Asked>) -> (Decision, State) {
        // The same URI named twice is one root: duplicates are dropped
        // before the count (a list of 21,000 copies of one URI is one root).
        let answer = answer.map(distinct);
        match answer {
            Ok(uris) if uris.len() > MAX_CLIENT_ROOTS => {
                tracing::error!(
                    count = uris.len(),
                    max = MAX_CLIENT_ROOTS,
                    "roots/list named too many roots; failing closed with no access"
                );
                let why = format!(
                    "the client named {} roots, more than the {MAX_CLIENT_ROOTS} tuls accepts",
                    uris.len()
                );
                (
                    Decision::NoAccess(why),
                    State::Refused(Refusal::TooMany(uris.len())),
                )
            }
            Ok(uris) => (
                decide(self.scope.cli_roots(), &uris, self.max_path_bytes),
                State::Ready,
            ),
            Err(Asked::Timeout) => {
                tracing::error!(
                    secs = self.wait.as_secs(),
                    "roots/list got no answer in time; dropped it, failing closed with no access"
                );
                (
                    Decision::NoAccess(
                        "the client did not answer tuls's roots/list request in time, so tuls fails closed"
                            .to_owned(),
                    ),
                    State::Refused(Refusal::Timeout),
                )
            }
            Err(Asked::Failed(e)) => {
                tracing::error!(error = %e, "roots/list failed; failing closed with no access");
                (
                    Decision::NoAccess(
                        "the client answered tuls's roots/list request with an error, so tuls fails closed"
                            .to_owned(),
                    ),
                    State::Ready,
                )
            }
        }
    }

    /// Waits, bounded, until no `roots/list` answer is pending.
    pub async fn wait_ready(&self) -> Result<(), Error> {
        let mut rx = self.state.subscribe();
        match tokio::time::timeout(self.wait, rx.wait_for(|s| *s != State::Pending)).await {
            Ok(Ok(state)) => self.settled(&state),
            _ => Err(Error::RootsTimeout {
                secs: self.wait.as_secs(),
            }),
        }
    }

    /// What [`ClientRoots::wait_ready`] would give, without waiting: `None`
    /// while a `roots/list` answer is pending.
    pub fn ready_now(&self) -> Option<Result<(), Error>> {
        let state = self.state.borrow();
        (*state != State::Pending).then(|| self.settled(&state))
    }

    /// A settled state as a call sees it.
    fn settled(&self, state: &State) -> Result<(), Error> {
        match *state {
            State::Refused(Refusal::TooMany(count)) => Err(Error::TooManyClientRoots {
                count,
                max: MAX_CLIENT_ROOTS,
            }),
            State::Refused(Refusal::Timeout) => Err(Error::RootsTimeout {
                secs: self.wait.as_secs(),
            }),
            State::Ready | State::Pending => Ok(()),
        }
    }
}

/// Why a `roots/list` request brought no list.
#[derive(Debug)]
enum Asked {
    /// No answer within the wait.
    Timeout,
    /// An error answer, or the session ended.
    Failed(String),
}

/// What a client's roots list puts in force.
#[derive(Debug)]
pub enum Decision {
    /// An empty list: the client expressed no narrowing (today's MCP
    /// Inspector declares roots and answers `[]`), so the operator's roots
    /// stay in force.
    Operator,
    /// The client roots that count (at least one).
    Narrowed(Vec<Arc<Root>>),
    /// A non-empty list of which none counts, or a failed `roots/list`: no
    /// access, and this reason (plain words, naming the client's roots) in
    /// every refusal and in `list_allowed_directories`.
    NoAccess(String),
}

/// Decides what a client's roots list (`uris`) puts in force over the
/// operator's roots `cli`.
pub fn decide(cli: &[Arc<Root>], uris: &[String], max_path_bytes: usize) -> Decision {
    if uris.is_empty() {
        return Decision::Operator;
    }
    let narrowed = narrow(cli, uris, max_path_bytes);
    if !narrowed.is_empty() {
        return Decision::Narrowed(narrowed);
    }
    let mut named: Vec<String> = uris
        .iter()
        .take(NAMED_ROOTS)
        .map(|u| crate::text::fmt::cut(u, NAMED_ROOT_BYTES).to_owned())
        .collect();
    if uris.len() > NAMED_ROOTS {
        named.push(format!("and {} more", uris.len() - NAMED_ROOTS));
    }
    Decision::NoAccess(format!(
        "none of the client's roots ({}) is a directory inside the directories tuls serves, and client roots can only narrow those",
        named.join(", ")
    ))
}

/// The client roots that lie at or beneath an operator root, each opened
/// through that root's handle. Others are ignored, with a log line.
/// Roots that are the same directory (device and inode) share one handle,
/// and one named the same way twice counts once.
pub fn narrow(cli: &[Arc<Root>], uris: &[String], max_path_bytes: usize) -> Vec<Arc<Root>> {
    let mut out = Vec::new();
    let mut dirs: HashMap<(u64, u64), Arc<cap_std::fs::Dir>> = HashMap::new();
    let mut named: HashSet<(u64, u64, String)> = HashSet::new();
    for uri in uris {
        let Some(path) = file_uri_path(uri) else {
            tracing::warn!(uri, "ignoring client root: not a file:// URI");
            continue;
        };
        // A `..` would leave a spelling that tool paths never match (and
        // normalizing it by string could disagree with the kernel across a
        // symlink), so such a root is ignored: ignoring only narrows.
        if path.split('/').any(|seg| seg == "..") {
            tracing::warn!(uri, "ignoring client root: it contains '..'");
            continue;
        }
        let Ok(mut t) = resolve_in(cli, &path, max_path_bytes) else {
            tracing::warn!(
                uri,
                "ignoring client root: not beneath any allowed directory"
            );
            continue;
        };
        // Path rules: a client root is matched from its canonical place in
        // the operator's root, so it cannot lift a rule anchored there (and
        // one the rules hide is not a directory the client can have).
        if walk(&mut t, Final::Follow).is_err() || t.resolved().void.is_some() {
            tracing::warn!(
                uri,
                "ignoring client root: not a directory beneath an allowed directory"
            );
            continue;
        }
        let prefix = t.root.rule_path(&t.resolved().local);
        let Ok(dir) = t.open_dir("open") else {
            tracing::warn!(
                uri,
                "ignoring client root: not a directory beneath an allowed directory"
            );
            continue;
        };
        let Ok(st) = rustix::fs::fstat(&dir) else {
            tracing::warn!(uri, "ignoring client root: cannot stat it");
            continue;
        };
        let key = crate::fs::sys::dev_ino(&st);
        let display = join_display(&t.root.display, &t.segs);
        if !named.insert((key.0, key.1, display.clone())) {
            tracing::debug!(uri, "ignoring client root: named twice");
            continue;
        }
        // A second name for a directory already open shares its handle.
        let dir = dirs.entry(key).or_insert_with(|| Arc::new(dir)).clone();
        out.push(Arc::new(Root {
            display,
            // The client may name it under either spelling of the CLI root
            // (e.g. a symlinked path, or the path it resolves to).
            resolved: t.root.resolved.as_deref().map(|r| join_display(r, &t.segs)),
            dir,
            origin: t.root.origin.clone(),
            rules: t.root.rules.clone(),
            prefix,
        }));
    }
    out
}

/// `uris` with repeats dropped, first occurrence kept.
fn distinct(uris: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::with_capacity(uris.len());
    uris.into_iter()
        .filter(|u| seen.insert(u.clone()))
        .collect()
}
