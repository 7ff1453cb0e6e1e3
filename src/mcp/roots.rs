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
//! - Only the answer to the latest request is applied (answers can arrive
//!   out of order).
//! - A call that has passed the wait resolves against the snapshot of the
//!   roots taken when it started ([`crate::fs::scope::Snapshot`]).
//!
//! May touch: the root handles, to open client roots beneath them.

#![allow(deprecated)] // MCP roots are deprecated by SEP-2577 but still used by older sessions

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientNotification, JsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;
use rmcp::{Peer, RoleServer};
use tokio::sync::watch;

use crate::error::Error;
use crate::fs::roots::Root;
use crate::fs::scope::{Scope, join_display, resolve_in};
use crate::limits::{
    ROOT_BYTES_NAMED_IN_REFUSAL as NAMED_ROOT_BYTES, ROOTS_NAMED_IN_REFUSAL as NAMED_ROOTS,
};
use crate::sync::lock;
use crate::text::fmt::file_uri_path;

/// Whether the roots in force are settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the answer to the latest `roots/list` request.
    Pending,
    /// Settled.
    Ready,
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
    /// Number of the latest `roots/list` request. Only the answer to that
    /// request is applied, with `state`, under this lock.
    generation: Mutex<u64>,
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
            generation: Mutex::new(0),
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

    /// Marks the roots Pending and supersedes any outstanding answer;
    /// returns the new request's generation.
    fn mark_pending(&self) -> u64 {
        let mut g = lock(&self.generation);
        *g += 1;
        self.state.send_replace(State::Pending);
        *g
    }

    /// Observes each incoming message in wire order, before any later one is
    /// read: `roots/list_changed` marks the roots Pending at once, closing
    /// the window in which a call written right after the notification could
    /// run with the old roots (rmcp handles each message as its own task).
    pub fn observe(&self, msg: &RxJsonRpcMessage<RoleServer>) {
        if let JsonRpcMessage::Notification(n) = msg
            && matches!(
                n.notification,
                ClientNotification::RootsListChangedNotification(_)
            )
            && self.in_use()
        {
            self.mark_pending();
        }
    }

    /// Asks the client for its roots and applies the answer. Call after
    /// `initialized` and after each `roots/list_changed`.
    pub fn refresh(self: &Arc<Self>, peer: Peer<RoleServer>) {
        if !self.in_use() {
            tracing::debug!("ignoring a roots refresh: client roots are not in use");
            return;
        }
        let generation = self.mark_pending();
        let this = self.clone();
        tokio::spawn(async move { this.apply(&peer, generation).await });
    }

    async fn apply(&self, peer: &Peer<RoleServer>, generation: u64) {
        let decision = match peer.list_roots().await {
            Ok(list) => {
                let uris: Vec<String> = list.roots.into_iter().map(|r| r.uri).collect();
                decide(self.scope.cli_roots(), &uris, self.max_path_bytes)
            }
            Err(e) => {
                tracing::error!(error = %e, "roots/list failed; failing closed with no access");
                Decision::NoAccess(
                    "the client answered tuls's roots/list request with an error, so tuls fails closed"
                        .to_owned(),
                )
            }
        };
        let latest = lock(&self.generation);
        if *latest != generation {
            tracing::debug!(
                generation,
                latest = *latest,
                "discarding a stale roots/list answer"
            );
            return;
        }
        match decision {
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
        self.state.send_replace(State::Ready);
    }

    /// Waits, bounded, until no `roots/list` answer is pending.
    pub async fn wait_ready(&self) -> Result<(), Error> {
        let mut rx = self.state.subscribe();
        match tokio::time::timeout(self.wait, rx.wait_for(|s| *s == State::Ready)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(Error::RootsTimeout {
                secs: self.wait.as_secs(),
            }),
        }
    }
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
pub fn narrow(cli: &[Arc<Root>], uris: &[String], max_path_bytes: usize) -> Vec<Arc<Root>> {
    let mut out = Vec::new();
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
        let Ok(t) = resolve_in(cli, &path, max_path_bytes) else {
            tracing::warn!(
                uri,
                "ignoring client root: not beneath any allowed directory"
            );
            continue;
        };
        match t.open_dir("open") {
            Ok(dir) => out.push(Arc::new(Root {
                display: join_display(&t.root.display, &t.segs),
                // The client may name it under either spelling of the CLI
                // root (e.g. a symlinked path, or the path it resolves to).
                resolved: t.root.resolved.as_deref().map(|r| join_display(r, &t.segs)),
                dir: Arc::new(dir),
                origin: t.root.origin.clone(),
            })),
            Err(_) => tracing::warn!(
                uri,
                "ignoring client root: not a directory beneath an allowed directory"
            ),
        }
    }
    out
}
