//! The session's lifecycle, followed in wire order: which protocol era a
//! `tools/call` is answered in, and what its `_meta` must carry.
//!
//! Owns: tuls's record of the lifecycle that rmcp's service keeps for the
//! other requests (none yet; opened by `initialize`, with the version the
//! handshake agreed; or opened inline by a 2026-07-28 request that carries
//! its protocol version and capabilities in `_meta`), and the checks a
//! request's `_meta` must pass before a tool runs, made as rmcp 3.11 makes
//! them for every request (`serve_server` before a lifecycle exists,
//! `handle_request` after): an unsupported protocol version, or missing
//! 2026-07-28 fields where the request needs them, is refused with rmcp's
//! own error. The reader shows it every request in wire order
//! ([`Lifecycle::observe`]) and every message the service sends
//! ([`Lifecycle::on_send`], which gives the version the handshake agreed).
//! May touch: nothing (messages in, decisions out).

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{
    ClientRequest, ErrorData, GetMeta, JsonRpcMessage, ProtocolVersion, RequestId,
    RequestMetaObject, ServerResult,
};
use rmcp::service::TxJsonRpcMessage;

use super::era;
use crate::sync::lock;

/// How long the reader waits for rmcp to answer `initialize` before it
/// reads on (the answer takes microseconds; a service that failed to
/// answer has ended the session).
const HANDSHAKE_WAIT: Duration = Duration::from_secs(30);

/// Where the session's lifecycle is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// No lifecycle yet: only `ping`, `server/discover`, `initialize`, and
    /// a request that opens the inline lifecycle are answered.
    Pre,
    /// Opened by `initialize` (request `id`); the version the handshake
    /// agreed, once rmcp has answered it.
    Handshake(RequestId, Option<ProtocolVersion>),
    /// The handshake failed: rmcp ended the session.
    Failed,
    /// Opened by a request carrying its own protocol version (no
    /// handshake): every request must carry it.
    Inline,
}

/// The session's lifecycle (see the module doc).
pub struct Lifecycle {
    phase: Mutex<Phase>,
    /// Notified when the handshake is answered.
    answered: Condvar,
}

/// How a call that passed its checks is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    /// In the 2026-07-28 era (the version the request names, or else the
    /// one its handshake agreed).
    pub modern: bool,
    /// This call opened the inline lifecycle (rmcp must learn it; see
    /// [`super::call::Calls`]).
    pub opened: bool,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self {
            phase: Mutex::new(Phase::Pre),
            answered: Condvar::new(),
        }
    }
}

/// The protocol version `meta` names, when it carries everything a request
/// that opens the inline lifecycle needs; else rmcp's refusal.
fn inline_version(meta: &RequestMetaObject) -> Result<ProtocolVersion, ErrorData> {
    let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
    match meta.protocol_version() {
        Some(v) if missing.is_empty() => Ok(v),
        _ => Err(super::rpc_error::missing_meta(&missing)),
    }
}

impl Lifecycle {
    /// Follows a request that goes to rmcp's service, as rmcp will: an
    /// `initialize` before any lifecycle opens the handshake; any request
    /// but `ping` and `server/discover` with complete 2026-07-28 `_meta`
    /// of a supported version opens the inline lifecycle.
    pub fn observe(&self, id: &RequestId, request: &ClientRequest, supported: &[ProtocolVersion]) {
        let mut phase = lock(&self.phase);
        if *phase != Phase::Pre {
            return;
        }
        match request {
            ClientRequest::InitializeRequest(_) => *phase = Phase::Handshake(id.clone(), None),
            ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => {}
            r => {
                if inline_version(r.get_meta()).is_ok_and(|v| supported.contains(&v)) {
                    *phase = Phase::Inline;
                }
            }
        }
    }

    /// Sees each message the service sends: the answer to the opening
    /// `initialize` gives the agreed version, or ends the handshake.
    pub fn on_send(&self, msg: &TxJsonRpcMessage<RoleServer>) {
        let mut phase = lock(&self.phase);
        let Phase::Handshake(init, None) = &*phase else {
            return;
        };
        match msg {
            JsonRpcMessage::Response(r) if r.id == *init => {
                *phase = match &r.result {
                    ServerResult::InitializeResult(i) => {
                        Phase::Handshake(init.clone(), Some(i.protocol_version.clone()))
                    }
                    _ => Phase::Failed,
                };
            }
            JsonRpcMessage::Error(e) if e.id.as_ref() == Some(init) => *phase = Phase::Failed,
            _ => return,
        }
        self.answered.notify_all();
    }

    /// Waits (bounded) until the opening `initialize` is answered, so that
    /// the calls read after it are answered in the era it agreed.
    pub fn wait_handshake(&self) {
        let deadline = Instant::now() + HANDSHAKE_WAIT;
        let mut phase = lock(&self.phase);
        while matches!(&*phase, Phase::Handshake(_, None)) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!("initialize was not answered in time; reading on");
                return;
            }
            phase = self
                .answered
                .wait_timeout(phase, left)
                .map_or_else(|e| e.into_inner().0, |(p, _)| p);
        }
    }

    /// Whether the opening handshake failed: rmcp's service has ended the
    /// session, and nothing more is answered.
    pub fn failed(&self) -> bool {
        *lock(&self.phase) == Phase::Failed
    }

    /// Checks a `tools/call` with this `_meta` as rmcp checks a request
    /// before its handler runs, and says in which era it is answered. A
    /// call that opens the inline lifecycle opens it here.
    pub fn admit_call(
        &self,
        meta: &RequestMetaObject,
        supported: &[ProtocolVersion],
    ) -> Result<Admitted, ErrorData> {
        let mut phase = lock(&self.phase);
        let mut opened = false;
        if *phase == Phase::Pre {
            let v = inline_version(meta)?;
            if !supported.contains(&v) {
                return Err(super::rpc_error::unsupported_version(v, supported));
            }
            *phase = Phase::Inline;
            opened = true;
        }
        let requested = meta.protocol_version();
        if let Some(v) = &requested
            && !supported.contains(v)
        {
            return Err(super::rpc_error::unsupported_version(v.clone(), supported));
        }
        let needs_meta = *phase == Phase::Inline || era::is_modern(requested.as_ref());
        if needs_meta {
            let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
            if !missing.is_empty() {
                return Err(super::rpc_error::missing_meta(&missing));
            }
        }
        let version = requested.or_else(|| match &*phase {
            Phase::Handshake(_, v) => v.clone(),
            _ => None,
        });
        Ok(Admitted {
            modern: era::is_modern(version.as_ref()),
            opened,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: serde_json::Value) -> RequestMetaObject {
        serde_json::from_value(v).unwrap()
    }

    fn supported() -> Vec<ProtocolVersion> {
        ProtocolVersion::KNOWN_VERSIONS.to_vec()
    }

    fn modern_meta() -> RequestMetaObject {
        meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }))
    }

    #[test]
    fn before_any_lifecycle_a_call_needs_complete_meta_and_then_opens_it() {
        let s = Lifecycle::default();
        let e = s.admit_call(&meta(json!({})), &supported()).unwrap_err();
        assert!(e.message.contains("protocolVersion"), "{e:?}");
        let a = s.admit_call(&modern_meta(), &supported()).unwrap();
        assert_eq!(
            a,
            Admitted {
                modern: true,
                opened: true
            }
        );
        // Inline: a call without its own version is refused.
        assert!(s.admit_call(&meta(json!({})), &supported()).is_err());
    }

    #[test]
    fn a_handshake_session_answers_in_the_agreed_era() {
        let s = Lifecycle::default();
        let init: ClientRequest = serde_json::from_value(json!({
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}
        }))
        .unwrap();
        let id = RequestId::Number(1);
        s.observe(&id, &init, &supported());
        let answer: TxJsonRpcMessage<RoleServer> = JsonRpcMessage::response(
            ServerResult::InitializeResult(
                serde_json::from_value(json!({
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "serverInfo": {"name": "tuls", "version": "1"}
                }))
                .unwrap(),
            ),
            id,
        );
        s.on_send(&answer);
        s.wait_handshake();
        let plain = s.admit_call(&meta(json!({})), &supported()).unwrap();
        assert!(!plain.modern && !plain.opened);
        assert!(s.admit_call(&modern_meta(), &supported()).unwrap().modern);
        let bad = meta(json!({"io.modelcontextprotocol/protocolVersion": "1999-01-01"}));
        assert!(s.admit_call(&bad, &supported()).is_err());
    }
}
