//! Splicing a large text reply: escaped once, written at both places the
//! frame holds it (the content block and `structuredContent`).
//!
//! Owns: the scratch buffers the writer reuses for that, and the marker
//! that stands in for the text while the frame is serialized. A written
//! text's buffer goes back to the server's spare read buffer
//! ([`crate::fs::io::Spare`]), which the writer is handed at startup.
//! May touch: the writer it is given.

use rmcp::RoleServer;
use rmcp::model::{JsonRpcMessage, ServerResult};
use rmcp::service::TxJsonRpcMessage;

use std::sync::Arc;

use super::frame::{Extra, write_framed};
use crate::fs::io::Spare;
use crate::mcp::reply::mirrors;

/// A text reply at least this long is escaped once and spliced into its
/// frame twice ([`Splice`]); shorter ones go straight through serde.
pub(super) const SPLICE_MIN_BYTES: usize = 4096;

/// A large text is escaped and written in pieces of this many bytes.
pub(super) const STREAM_PIECE_BYTES: usize = 1 << 20;

/// The escaped-text buffer is kept for the next reply when it held at most
/// this many bytes (so a run of large reads does not fault a fresh buffer
/// in each time); a larger one is freed after its reply.
const KEEP_ESCAPED_BYTES: usize = 32 << 20;

/// Scratch space the writer reuses: a large text reply is escaped once
/// into `escaped`, its frame is serialized with an unguessable marker in
/// place of the text (twice: the content block and `structuredContent`),
/// and the escaped bytes are written at both marks.
pub(super) struct Splice {
    /// A random marker no client can predict (it could otherwise plant it
    /// in a request id, which is echoed in the frame).
    pub(super) marker: String,
    /// The marker as it appears in serialized JSON.
    quoted: Vec<u8>,
    escaped: Vec<u8>,
    frame: Vec<u8>,
    /// Where a written text's buffer goes for the next large read.
    spare: Arc<Spare>,
}

impl Splice {
    /// Scratch space that hands written texts' buffers to `spare`.
    pub(super) fn new(spare: Arc<Spare>) -> Self {
        let mut nonce = [0u8; 16];
        // Without randomness the marker is still unusual; the frame check
        // below (exactly two occurrences) keeps the output correct anyway.
        let _ = getrandom::fill(&mut nonce);
        let hex: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let marker = format!("tuls-text-{hex}");
        Self {
            quoted: format!("\"{marker}\"").into_bytes(),
            marker,
            escaped: Vec::new(),
            frame: Vec::new(),
            spare,
        }
    }

    /// Writes a successful text result whose text is large: escape once,
    /// write twice. Gives the message back when it does not apply.
    pub(super) fn write<W: std::io::Write>(
        &mut self,
        out: &mut W,
        mut item: TxJsonRpcMessage<RoleServer>,
        extra: Extra<'_>,
    ) -> std::io::Result<Option<TxJsonRpcMessage<RoleServer>>> {
        let JsonRpcMessage::Response(resp) = &mut item else {
            return Ok(Some(item));
        };
        let ServerResult::CallToolResult(r) = &mut resp.result else {
            return Ok(Some(item));
        };
        if !mirrors(r) {
            return Ok(Some(item));
        }
        let Some(rmcp::model::ContentBlock::Text(t)) = r.content.first_mut() else {
            return Ok(Some(item));
        };
        if t.text.len() < SPLICE_MIN_BYTES {
            return Ok(Some(item));
        }
        let text = std::mem::replace(&mut t.text, self.marker.clone());
        self.frame.clear();
        write_framed(&mut self.frame, &item, extra)?;
        let parts = split_twice(&self.frame, &self.quoted);
        let Some((head, middle, tail)) = parts else {
            // Cannot happen with a random marker; stay correct regardless.
            if let JsonRpcMessage::Response(resp) = &mut item
                && let ServerResult::CallToolResult(r) = &mut resp.result
                && let Some(rmcp::model::ContentBlock::Text(t)) = r.content.first_mut()
            {
                t.text = text;
            }
            return Ok(Some(item));
        };
        drop(item);
        self.escaped.clear();
        // Room for a text with an escape in every fourth byte: only the
        // pages written to become resident, and the buffer is not moved
        // (and faulted in afresh) as it grows.
        self.escaped.reserve(text.len() + text.len() / 4 + 2);
        // The first copy is written as it is escaped, a piece at a time, so
        // escaping the next piece overlaps the client reading this one.
        out.write_all(head)?;
        self.escaped.push(b'"');
        let mut written = 0;
        let mut from = 0;
        while from < text.len() {
            let mut to = (from + STREAM_PIECE_BYTES).min(text.len());
            while !text.is_char_boundary(to) {
                to += 1;
            }
            let piece = text.get(from..to).unwrap_or_default();
            crate::text::json::escape_body_into(&mut self.escaped, piece);
            out.write_all(self.escaped.get(written..).unwrap_or_default())?;
            written = self.escaped.len();
            from = to;
        }
        self.escaped.push(b'"');
        out.write_all(self.escaped.get(written..).unwrap_or_default())?;
        self.spare.give_back(text.into_bytes());
        out.write_all(middle)?;
        out.write_all(&self.escaped)?;
        out.write_all(tail)?;
        if self.escaped.len() > KEEP_ESCAPED_BYTES {
            self.escaped = Vec::new();
        }
        Ok(None)
    }
}

/// `frame` cut at the only two occurrences of `mark`, or `None`.
fn split_twice<'a>(frame: &'a [u8], mark: &[u8]) -> Option<(&'a [u8], &'a [u8], &'a [u8])> {
    let find = |from: usize| {
        frame
            .get(from..)?
            .windows(mark.len())
            .position(|w| w == mark)
            .map(|i| i + from)
    };
    let first = find(0)?;
    let second = find(first + mark.len())?;
    if find(second + mark.len()).is_some() {
        return None;
    }
    Some((
        frame.get(..first)?,
        frame.get(first + mark.len()..second)?,
        frame.get(second + mark.len()..)?,
    ))
}
