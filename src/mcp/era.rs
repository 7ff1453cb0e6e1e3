//! The two protocol eras on one connection.
//!
//! Owns: what a 2026-07-28 result carries beyond rmcp's shaping (the
//! server's identity in `_meta`, and how long `tools/list` and
//! `server/discover` may be cached), and one tolerance rmcp lacks: a
//! connection that opened with a 2026-07-28 request (no handshake) and then
//! sent `initialize` has moved to the handshake era, so its later requests
//! without a per-request protocol version are read as that era's (the
//! version and capabilities of its `initialize` are given to them), instead
//! of being refused for missing `_meta`. A `server/discover` followed by
//! `initialize`, a connection with no discover, and a handshake followed by
//! 2026-07-28 requests need nothing here: rmcp takes each request by its own
//! `_meta`.
//! May touch: nothing (messages in, values out).

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ClientRequest, GetMeta, Implementation, JsonRpcMessage, MetaObject,
    ProtocolVersion,
};
use rmcp::service::RxJsonRpcMessage;

/// How long a client may reuse `tools/list` and `server/discover` on a
/// 2026-07-28 connection: they change only with the server's command line,
/// that is, never within one process.
pub const LIST_TTL_MS: u64 = 3_600_000;

/// The `_meta` key of the server's identity on each 2026-07-28 result.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Whether a request is answered in the 2026-07-28 era (rmcp's test: the
/// version the request names, or else the one its handshake agreed).
pub fn is_modern(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// `meta` with the server's identity added (`_meta` of a 2026-07-28 result).
pub fn with_server_info(meta: Option<MetaObject>, info: &Implementation) -> MetaObject {
    let mut meta = meta.unwrap_or_default();
    if let Ok(v) = serde_json::to_value(info) {
        meta.insert(SERVER_INFO.to_owned(), v);
    }
    meta
}

/// Where the connection is, as far as its eras go.
#[derive(Debug, Default)]
pub enum Eras {
    /// No request that picks an era yet (`ping` and `server/discover`
    /// do not).
    #[default]
    Undecided,
    /// Opened with `initialize`: rmcp's handshake era, nothing to adjust.
    Handshake,
    /// Opened with a 2026-07-28 request (no handshake).
    Inline,
    /// Opened inline, then sent `initialize` asking for this version with
    /// these capabilities.
    InlineThenHandshake(ProtocolVersion, Box<ClientCapabilities>),
}

impl Eras {
    /// Follows the connection's eras, and gives a request without a
    /// protocol version of its own, on a connection that moved from the
    /// inline era to the handshake, the version and capabilities of its
    /// `initialize`.
    pub fn adjust(&mut self, msg: &mut RxJsonRpcMessage<RoleServer>) {
        let JsonRpcMessage::Request(req) = msg else {
            return;
        };
        let request = &mut req.request;
        match (&*self, &*request) {
            (_, ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_)) => {}
            (Eras::Undecided, ClientRequest::InitializeRequest(_)) => *self = Eras::Handshake,
            (Eras::Undecided, r) => {
                if r.get_meta().protocol_version().is_some() {
                    *self = Eras::Inline;
                }
            }
            (Eras::Inline | Eras::InlineThenHandshake(..), ClientRequest::InitializeRequest(i)) => {
                // The version the handshake agrees: the one asked for, or
                // the latest handshake version for a client that asks for
                // 2026-07-28 (which has no handshake), as rmcp answers.
                let v = &i.params.protocol_version;
                let agreed = if is_modern(Some(v)) {
                    ProtocolVersion::V_2025_11_25
                } else {
                    v.clone()
                };
                *self = Eras::InlineThenHandshake(agreed, Box::new(i.params.capabilities.clone()));
            }
            (Eras::InlineThenHandshake(v, caps), _) => {
                let meta = request.get_meta_mut();
                if meta.protocol_version().is_none() {
                    meta.set_protocol_version(v.clone());
                    if meta.client_capabilities().is_none() {
                        meta.set_client_capabilities((**caps).clone());
                    }
                }
            }
            (Eras::Handshake | Eras::Inline, _) => {}
        }
    }
}
