//! What a `tools/call` comes back as: a [`Reply`] (a result, possibly
//! `isError`), or an [`RpcError`] / [`CallError`] when the call itself failed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::CallToolResult;
use rmcp::{ErrorData, ServiceError};
use serde_json::Value;

/// The result of a `tools/call` that the server answered with a *result*
/// (possibly `isError: true`).
#[derive(Debug, Clone)]
pub struct Reply {
    /// All `type: "text"` content blocks concatenated (no separator).
    pub text: String,
    pub is_error: bool,
    pub structured: Option<Value>,
    /// The whole `CallToolResult` as JSON.
    pub raw: Value,
}

impl Reply {
    pub fn from_result(result: &CallToolResult) -> Reply {
        let raw = serde_json::to_value(result).expect("serialize CallToolResult");
        Self::from_raw(raw)
    }

    /// Build from a raw `result` object (also used by [`RawServer`]).
    pub fn from_raw(raw: Value) -> Reply {
        let text = Self::texts_of(&raw).concat();
        Reply {
            text,
            is_error: raw.get("isError").and_then(Value::as_bool).unwrap_or(false),
            structured: raw.get("structuredContent").cloned(),
            raw,
        }
    }

    fn texts_of(raw: &Value) -> Vec<String> {
        raw.get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Each text block separately.
    pub fn texts(&self) -> Vec<String> {
        Self::texts_of(&self.raw)
    }

    /// The raw content blocks (`[]` if absent).
    pub fn content(&self) -> Vec<Value> {
        self.raw
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Panic (showing the text) if the tool reported an error.
    #[track_caller]
    pub fn assert_ok(&self) -> &Reply {
        assert!(
            !self.is_error,
            "expected success, got tool error: {}",
            self.text
        );
        self
    }

    /// Panic if the tool did NOT report an error.
    #[track_caller]
    pub fn assert_error(&self) -> &Reply {
        assert!(
            self.is_error,
            "expected a tool error, got success: {}",
            self.raw
        );
        self
    }

    /// Panic unless this is a tool error whose text contains `needle`
    /// (case-insensitive).
    #[track_caller]
    pub fn assert_error_contains(&self, needle: &str) -> &Reply {
        self.assert_error();
        assert!(
            self.text.to_lowercase().contains(&needle.to_lowercase()),
            "tool error text {:?} does not contain {needle:?}",
            self.text
        );
        self
    }

    /// `structuredContent` if present, else the text parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        if let Some(v) = &self.structured {
            return v.clone();
        }
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("reply text is not JSON ({e}): {:?}", self.text))
    }
}

/// A JSON-RPC error response.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
    pub data: Option<Value>,
}

/// Why a request did not produce a result.
#[derive(Debug)]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// No answer within the timeout.
    Timeout(Duration),
    /// Transport closed / unexpected response / other client-side failure.
    Service(String),
}

impl CallError {
    /// The JSON-RPC error, panicking on timeouts and transport failures.
    #[track_caller]
    pub fn rpc(self) -> RpcError {
        match self {
            CallError::Rpc(e) => e,
            other => panic!("expected a JSON-RPC error, got {other:?}"),
        }
    }
}

impl From<ServiceError> for CallError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::McpError(ErrorData {
                code,
                message,
                data,
            }) => CallError::Rpc(RpcError {
                code: code.0,
                message: message.into_owned(),
                data,
            }),
            ServiceError::Timeout { timeout } => CallError::Timeout(timeout),
            other => CallError::Service(other.to_string()),
        }
    }
}

/// Success and failure counts of one kind of call (race tests share one
/// between threads).
#[derive(Debug, Default)]
pub struct Tally {
    ok: AtomicUsize,
    err: AtomicUsize,
}

impl Tally {
    /// Counts one call; returns `ok`.
    pub fn add(&self, ok: bool) -> bool {
        let slot = if ok { &self.ok } else { &self.err };
        slot.fetch_add(1, Ordering::Relaxed);
        ok
    }

    /// Counts one reply as a success unless it is `isError`; returns whether
    /// it succeeded.
    pub fn add_reply(&self, reply: &Reply) -> bool {
        self.add(!reply.is_error)
    }

    /// `(successes, failures)` so far.
    pub fn get(&self) -> (usize, usize) {
        (
            self.ok.load(Ordering::Relaxed),
            self.err.load(Ordering::Relaxed),
        )
    }
}
