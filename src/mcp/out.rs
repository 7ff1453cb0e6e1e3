//! What the writer thread writes: the queue item shared by everything that
//! answers (the reader's own refusals, tool calls, and rmcp's service).
//!
//! Owns: the [`Out`] type only, so that the reader, the call lifecycle and
//! the writer depend on it and not on one another.
//! May touch: nothing.

use rmcp::RoleServer;
use rmcp::model::ErrorData;
use rmcp::service::TxJsonRpcMessage;

use super::flow::Held;

/// One line for the writer thread. (The message variant is the common one;
/// boxing it would cost an allocation per reply.)
#[allow(clippy::large_enum_variant)]
pub enum Out {
    /// A message, with the reply budget it holds (released once it is
    /// written).
    Message(TxJsonRpcMessage<RoleServer>, Held),
    /// An error reply whose request id could not be read (`id: null`).
    NullIdError(ErrorData),
    /// An error reply to a request whose id is written as the client wrote
    /// it (a number rmcp's id type would change).
    RawIdError(String, ErrorData),
}
