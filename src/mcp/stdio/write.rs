//! The writer thread: each message serialized straight into a buffered,
//! locked stdout, one line each, flushed when the queue runs dry.
//!
//! Owns: writing each reply in its wire shape (`frame`; a large text
//! through `splice`), stdout's
//! pipe size and its raw large writes, and the `after_large_reply` hook's
//! call. A large text goes through [`super::splice`].
//! May touch: stdout.

use std::io::Write as _;

use rmcp::RoleServer;
use rmcp::model::{JsonRpcMessage, ServerResult};
use rmcp::service::TxJsonRpcMessage;

use super::frame::write_framed;
use super::splice::Splice;
use crate::mcp::out::Out;
use crate::mcp::reply::mirrors;
use crate::text::fmt::Counted;

/// Takes the added fields out of a mirrored tool result (see
/// [`crate::mcp::reply::extra_fields`]).
fn take_extra(item: &mut TxJsonRpcMessage<RoleServer>) -> Option<serde_json::Value> {
    if let JsonRpcMessage::Response(resp) = item
        && let ServerResult::CallToolResult(r) = &mut resp.result
        && mirrors(r)
    {
        return r.structured_content.take();
    }
    None
}

/// Serializes one message; a large successful text result is escaped once
/// (`Splice`).
fn write_message<W: std::io::Write>(
    out: &mut W,
    item: TxJsonRpcMessage<RoleServer>,
    splice: &mut Splice,
) -> std::io::Result<()> {
    let mut item = item;
    let extra = take_extra(&mut item);
    let extra = extra.as_ref().and_then(serde_json::Value::as_object);
    match splice.write(out, item, extra)? {
        None => Ok(()),
        Some(item) => write_framed(out, &item, extra),
    }
}

/// Process-level hooks the binary supplies (the library has no `unsafe`).
#[derive(Debug, Clone, Copy)]
pub struct Hooks {
    /// Called after a reply of 1 MiB or more has been written and freed.
    pub after_large_reply: fn(),
}

/// A reply at least this big is followed by the `after_large_reply` hook
/// (the binary hands free heap pages back to the kernel there).
const LARGE_REPLY: u64 = 1 << 20;

/// The pipe buffer asked for when stdout is a pipe (Linux lets any process
/// raise its pipes to 1 MiB, `/proc/sys/fs/pipe-max-size`): a large reply
/// then crosses in a few wake-ups of the client instead of one per 64 KiB.
#[cfg(target_os = "linux")]
const PIPE_BYTES: usize = 1 << 20;

/// Locked stdout, with large writes made by `write(2)` directly. std's
/// stdout is line-buffered: every write looks for the last newline in what
/// it is given, which for a 20 MiB reply (whose newlines are all escaped)
/// was a scan of the whole text, twice. Smaller writes go through std as
/// before (the writer's `BufWriter` hands it whole buffers).
struct RawStdout(std::io::StdoutLock<'static>);

/// Writes at least this large bypass std's line buffering.
const RAW_WRITE_BYTES: usize = 64 * 1024;

impl std::io::Write for RawStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() < RAW_WRITE_BYTES {
            return self.0.write(buf);
        }
        use std::os::fd::AsFd as _;
        // Whatever std still holds goes first, in order.
        self.0.flush()?;
        rustix::io::write(self.0.as_fd(), buf).map_err(std::io::Error::from)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

pub(super) fn write_loop(
    mut rx: tokio::sync::mpsc::Receiver<Out>,
    hooks: Hooks,
    spare: std::sync::Arc<crate::fs::io::Spare>,
) {
    // Not a pipe, or a lower limit: the kernel's default stays, which is
    // only slower. (Linux only; macOS pipes cannot be resized.)
    #[cfg(target_os = "linux")]
    let _ = rustix::pipe::fcntl_setpipe_size(std::io::stdout(), PIPE_BYTES);
    let mut out = Counted::new(std::io::BufWriter::with_capacity(
        64 * 1024,
        RawStdout(std::io::stdout().lock()),
    ));
    let mut splice = Splice::new(spare);
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        while let Some(item) = next.take() {
            let before = out.count;
            // The message is consumed (and so freed) as it is written; its
            // reservation of the reply budget is released with it.
            let written = match item {
                Out::Message(msg, held) => {
                    let written = write_message(&mut out, msg, &mut splice);
                    drop(held);
                    written
                }
                Out::NullIdError(error) => serde_json::to_writer(
                    &mut out,
                    &serde_json::json!({"jsonrpc": "2.0", "id": null, "error": error}),
                )
                .map_err(std::io::Error::other),
                Out::RawIdError(id, error) => (|| {
                    // The id is a JSON number token as the client sent it
                    // (checked by `is_unechoable_id`), written verbatim.
                    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
                    out.write_all(id.as_bytes())?;
                    out.write_all(b",\"error\":")?;
                    serde_json::to_writer(&mut out, &error).map_err(std::io::Error::other)?;
                    out.write_all(b"}")
                })(),
            };
            if written.and_then(|()| out.write_all(b"\n")).is_err() {
                return;
            }
            if out.count - before >= LARGE_REPLY {
                (hooks.after_large_reply)();
            }
            next = rx.try_recv().ok();
        }
        if out.flush().is_err() {
            return;
        }
    }
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::super::splice::SPLICE_MIN_BYTES;
    use super::super::splice::STREAM_PIECE_BYTES;
    use super::*;
    use rmcp::model::{CallToolResult, RequestId};

    #[test]
    fn tool_results_mirror_their_block_on_the_wire() {
        use rmcp::model::ContentBlock;
        let msg = |r: CallToolResult| -> TxJsonRpcMessage<RoleServer> {
            JsonRpcMessage::response(ServerResult::CallToolResult(r), RequestId::Number(3))
        };
        let mut splice = Splice::new(Default::default());
        let mut wire = |r: CallToolResult| -> serde_json::Value {
            let mut out = Vec::new();
            write_message(&mut out, msg(r), &mut splice).unwrap();
            serde_json::from_slice(&out).unwrap()
        };
        let text = "line1\n\"quoted\" é";
        let plain = CallToolResult::success(vec![ContentBlock::text(text)]);
        let expect = serde_json::to_value(msg(crate::mcp::reply::with_structured_content(
            plain.clone(),
        )))
        .unwrap();
        assert_eq!(wire(plain), expect);
        assert_eq!(expect["result"]["structuredContent"]["content"], text);

        let img = ContentBlock::image("aGk=", "image/png");
        let plain = CallToolResult::success(vec![img.clone()]);
        let expect = serde_json::to_value(msg(crate::mcp::reply::with_structured_content(
            plain.clone(),
        )))
        .unwrap();
        assert_eq!(wire(plain), expect);
        assert_eq!(
            expect["result"]["structuredContent"]["content"][0]["data"],
            "aGk="
        );

        let err = CallToolResult::error(vec![ContentBlock::text("no")]);
        assert!(wire(err)["result"].get("structuredContent").is_none());
    }

    #[test]
    fn large_text_is_spliced_byte_for_byte_as_serde_writes_it() {
        use rmcp::model::ContentBlock;
        let mut splice = Splice::new(Default::default());
        let big: String = (0..3000)
            .map(|i| format!("line {i}: \"q\" \\ \t é\u{1}\n"))
            .collect();
        for id in [
            RequestId::Number(7),
            RequestId::String(splice.marker.clone().into()),
        ] {
            let r = CallToolResult::success(vec![ContentBlock::text(big.clone())]);
            let m = |r: CallToolResult| -> TxJsonRpcMessage<RoleServer> {
                JsonRpcMessage::response(ServerResult::CallToolResult(r), id.clone())
            };
            let mut plain = Vec::new();
            write_framed(&mut plain, &m(r.clone()), None).unwrap();
            let mut spliced = Vec::new();
            write_message(&mut spliced, m(r), &mut splice).unwrap();
            assert_eq!(
                String::from_utf8(spliced).unwrap(),
                String::from_utf8(plain).unwrap()
            );
        }
        assert!(big.len() >= SPLICE_MIN_BYTES);
    }

    #[test]
    fn a_text_written_in_pieces_is_spliced_byte_for_byte() {
        use rmcp::model::ContentBlock;
        let mut splice = Splice::new(Default::default());
        let m = |r: CallToolResult| -> TxJsonRpcMessage<RoleServer> {
            JsonRpcMessage::response(ServerResult::CallToolResult(r), RequestId::Number(1))
        };
        // Shifted by 0..4 bytes, the piece ends fall inside multi-byte
        // characters and next to escapes.
        for shift in 0..4 {
            let big = "x".repeat(shift) + &"aé\"日\n🎉\\\u{1}".repeat(STREAM_PIECE_BYTES / 6);
            assert!(big.len() > 2 * STREAM_PIECE_BYTES);
            let r = CallToolResult::success(vec![ContentBlock::text(big)]);
            let mut plain = Vec::new();
            write_framed(&mut plain, &m(r.clone()), None).unwrap();
            let mut spliced = Vec::new();
            write_message(&mut spliced, m(r), &mut splice).unwrap();
            assert!(
                spliced == plain,
                "the spliced frame differs (shift {shift})"
            );
        }
    }
}
