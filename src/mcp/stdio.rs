//! stdio: bounded request lines in, replies serialized straight to stdout.
//!
//! Owns: framing, the one reader and the one reply writer. [`serve`] runs a
//! whole session and owns both threads' lives: it starts them, serves,
//! stops the runtime, and only then waits for every queued reply to be
//! written, so no caller has a shutdown step to remember.
//!
//! Reading: one thread reads stdin with blocking `read(2)` (tokio's stdin
//! hands each read to its blocking pool and back, two thread hand-offs per
//! read). Each line is read with at most `max` bytes kept (rmcp's own
//! reader drops an oversized line without a reply, and its writer locks per
//! message, so tuls keeps this one). A longer line is discarded, never
//! buffered past the bound, and answered with a JSON-RPC error at the
//! request's top-level `id` when its first bytes show one, else at `id:
//! null`. A line that is not JSON gets `-32700 Parse error` and one that is
//! JSON but no JSON-RPC message tuls reads gets `-32600 Invalid Request`
//! (see `not_a_message`); the session goes on. Before each line, the
//! reader waits for a call slot and free reply budget ([`super::flow`]).
//! Each message is shown to an observer in wire order before it is handed
//! on (client roots use it; see [`super::roots::ClientRoots::observe`]).
//! A plain `tools/call` then starts as a direct call ([`super::direct`]);
//! every other message goes to rmcp's service loop through a short queue
//! (the reader waits when it is full, so rmcp's pace bounds what is read).
//!
//! Writing: one writer thread serializes each message directly into a
//! buffered, locked stdout, so a 20 MiB reply is never copied into a second
//! whole-message buffer, and flushes when its queue runs dry. A successful
//! tool result gets its `structuredContent` written from its one content
//! block ([`super::reply::mirrors`]), so the text is held once.
//! May touch: stdin and stdout.

use std::io::Write as _;

use rmcp::model::{
    CallToolResult, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde::Serialize;
use std::sync::Arc;

use super::direct::Direct;
use super::flow::{Flow, Held, Reservation};
use super::framing::{
    Line, LineReader, is_unechoable_id, not_a_message, parse_cost, raw_id, top_level_id,
};
use super::reply::mirrors;
use super::server::Server;
use crate::limits::MAX_CALLS_IN_FLIGHT;
use crate::text::fmt::Counted;

#[derive(Serialize)]
struct Envelope<'a, R> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: R,
}

#[derive(Serialize)]
struct Mirrored<'a> {
    #[serde(flatten)]
    result: &'a CallToolResult,
    #[serde(rename = "structuredContent")]
    structured: Mirror<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Mirror<'a> {
    Text {
        content: &'a str,
        #[serde(flatten)]
        extra: Extra<'a>,
    },
    Block {
        content: [&'a rmcp::model::ContentBlock; 1],
        #[serde(flatten)]
        extra: Extra<'a>,
    },
}

/// The fields a mirrored result adds beside `content` (a `version`), taken
/// out of the result so that it is not written twice.
type Extra<'a> = Option<&'a serde_json::Map<String, serde_json::Value>>;

/// Takes the added fields out of a mirrored tool result (see
/// [`super::reply::extra_fields`]).
fn take_extra(item: &mut TxJsonRpcMessage<RoleServer>) -> Option<serde_json::Value> {
    if let JsonRpcMessage::Response(resp) = item
        && let ServerResult::CallToolResult(r) = &mut resp.result
        && mirrors(r)
    {
        return r.structured_content.take();
    }
    None
}

/// A text reply at least this long is escaped once and spliced into its
/// frame twice ([`Splice`]); shorter ones go straight through serde.
const SPLICE_MIN_BYTES: usize = 4096;

/// A large text is escaped and written in pieces of this many bytes.
const STREAM_PIECE_BYTES: usize = 1 << 20;

/// The escaped-text buffer is kept for the next reply when it held at most
/// this many bytes (so a run of large reads does not fault a fresh buffer
/// in each time); a larger one is freed after its reply.
const KEEP_ESCAPED_BYTES: usize = 32 << 20;

/// Scratch space the writer reuses: a large text reply is escaped once
/// into `escaped`, its frame is serialized with an unguessable marker in
/// place of the text (twice: the content block and `structuredContent`),
/// and the escaped bytes are written at both marks.
struct Splice {
    /// A random marker no client can predict (it could otherwise plant it
    /// in a request id, which is echoed in the frame).
    marker: String,
    /// The marker as it appears in serialized JSON.
    quoted: Vec<u8>,
    escaped: Vec<u8>,
    frame: Vec<u8>,
}

impl Splice {
    fn new() -> Self {
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
        }
    }

    /// Writes a successful text result whose text is large: escape once,
    /// write twice. Gives the message back when it does not apply.
    fn write<W: std::io::Write>(
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
        crate::fs::file::give_back(text.into_bytes());
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

/// Serializes one message; a large successful text result is escaped once
/// ([`Splice`]).
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

/// Serializes one message through serde; a successful tool result gets its
/// `structuredContent` written from its one content block.
fn write_framed<W: std::io::Write>(
    out: &mut W,
    item: &TxJsonRpcMessage<RoleServer>,
    extra: Extra<'_>,
) -> std::io::Result<()> {
    if let JsonRpcMessage::Response(resp) = item
        && let ServerResult::CallToolResult(r) = &resp.result
        && mirrors(r)
        && let Some(block) = r.content.first()
    {
        let structured = match block.as_text() {
            Some(t) => Mirror::Text {
                content: &t.text,
                extra,
            },
            None => Mirror::Block {
                content: [block],
                extra,
            },
        };
        let env = Envelope {
            jsonrpc: "2.0",
            id: &resp.id,
            result: Mirrored {
                result: r,
                structured,
            },
        };
        return serde_json::to_writer(out, &env).map_err(std::io::Error::other);
    }
    serde_json::to_writer(out, item).map_err(std::io::Error::other)
}

/// Messages queued for the writer thread before `send` waits.
const WRITE_QUEUE: usize = 1024;

/// A reply at least this big is followed by the `after_large_reply` hook
/// (the binary hands free heap pages back to the kernel there).
const LARGE_REPLY: u64 = 1 << 20;

/// What the writer thread writes: one line each. (The message variant is
/// the common one; boxing it would cost an allocation per reply.)
#[allow(clippy::large_enum_variant)]
pub enum Out {
    /// A message from the service, with the reply budget it holds
    /// (released once it is written).
    Message(TxJsonRpcMessage<RoleServer>, Held),
    /// An error reply whose request id could not be read (`id: null`).
    NullIdError(ErrorData),
    /// An error reply to a request whose id is written as the client wrote
    /// it (a number rmcp's id type would change).
    RawIdError(String, ErrorData),
}

/// Process-level hooks the binary supplies (the library has no `unsafe`).
#[derive(Debug, Clone, Copy)]
pub struct Hooks {
    /// Called after a reply of 1 MiB or more has been written and freed.
    pub after_large_reply: fn(),
}

/// Serves one MCP session over stdin/stdout on `runtime`, with request
/// lines bounded to `max_request_bytes`, until the client goes away. Every
/// queued reply is written before this returns.
pub fn serve(
    runtime: tokio::runtime::Runtime,
    server: Server,
    max_request_bytes: usize,
    hooks: Hooks,
) -> Result<(), String> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Out>(WRITE_QUEUE);
    let writer = std::thread::Builder::new()
        .name("tuls-stdout".to_owned())
        .spawn(move || write_loop(rx, hooks))
        .map_err(|e| format!("cannot start the stdout writer: {e}"))?;
    let (to_service, from_reader) = tokio::sync::mpsc::channel(SERVICE_QUEUE);
    let direct = Arc::new(Direct::new(
        server.clone(),
        tx.downgrade(),
        server.roots_wait(),
        runtime.handle().clone(),
    ));
    let roots = server.client_roots();
    let reader = Reader {
        lines: LineReader::new(RawStdin, max_request_bytes),
        max: max_request_bytes,
        flow: server.flow(),
        direct: direct.clone(),
        observe: Box::new({
            let roots = roots.clone();
            move |msg| roots.observe(msg)
        }),
        awaits_client: Box::new(move || roots.pending()),
        replies: tx.downgrade(),
        service: to_service,
        started: false,
        eras: Default::default(),
    };
    // Not joined: at the end of a session it may still be blocked reading
    // stdin, and the process exits under it.
    std::thread::Builder::new()
        .name("tuls-stdin".to_owned())
        .spawn(move || reader.run())
        .map_err(|e| format!("cannot start the stdin reader: {e}"))?;
    let transport = Stdio {
        direct,
        tx,
        from_reader,
        flow: server.flow(),
    };
    let result = runtime.block_on(async move {
        let service = match server.serve(transport).await {
            Ok(service) => service,
            // stdin closed before a client said anything (Ctrl-D, or a
            // client that gave up): nothing went wrong.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        service.waiting().await.map_err(|e| e.to_string())?;
        Ok(())
    });
    // Stopping the runtime drops every sender of the queue; the writer then
    // writes out what is queued and ends.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    let _ = writer.join();
    result
}

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

fn write_loop(mut rx: tokio::sync::mpsc::Receiver<Out>, hooks: Hooks) {
    // Not a pipe, or a lower limit: the kernel's default stays, which is
    // only slower. (Linux only; macOS pipes cannot be resized.)
    #[cfg(target_os = "linux")]
    let _ = rustix::pipe::fcntl_setpipe_size(std::io::stdout(), PIPE_BYTES);
    let mut out = Counted::new(std::io::BufWriter::with_capacity(
        64 * 1024,
        RawStdout(std::io::stdout().lock()),
    ));
    let mut splice = Splice::new();
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

/// Sees each incoming message in wire order, before the service does.
type Observer = Box<dyn Fn(&RxJsonRpcMessage<RoleServer>) + Send + Sync>;

/// The JSON-RPC error code (implementation-defined server error) of a
/// request refused because every call slot is held by calls waiting for
/// the client.
const SERVER_BUSY: ErrorCode = ErrorCode(-32000);

/// A line whose parse takes at most this much reserves nothing (the calls
/// in flight hold at most 64 of them, 4 MiB), so the common small request
/// costs no semaphore operation.
const SMALL_LINE_COST: u64 = 64 * 1024;

/// Messages read and parsed, queued for rmcp's service loop before the
/// reader waits.
const SERVICE_QUEUE: usize = 16;

/// The server side of stdio, as rmcp sees it: messages from the reader
/// thread in, replies to the writer thread out.
struct Stdio {
    /// Sees the `initialize` answer ([`super::direct`]).
    direct: Arc<Direct>,
    tx: tokio::sync::mpsc::Sender<Out>,
    from_reader: tokio::sync::mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    flow: Arc<Flow>,
}

/// stdin, read with `read(2)` directly (the reader buffers).
struct RawStdin;

impl std::io::Read for RawStdin {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        rustix::io::read(std::io::stdin(), buf).map_err(std::io::Error::from)
    }
}

/// The reader thread: reads each line (blocking, on its own thread, so a
/// burst costs no hand-off per read), answers what is not a message, starts
/// direct tool calls, and queues everything else for rmcp's service loop.
struct Reader {
    lines: LineReader<RawStdin>,
    max: usize,
    flow: Arc<Flow>,
    direct: Arc<Direct>,
    observe: Observer,
    /// Whether calls in flight may be waiting for an answer the client has
    /// not sent yet (its `roots/list` answer): then the reader reads on
    /// when no call slot is free, since that answer may be behind the calls
    /// that hold every slot, and refuses a request it cannot give a slot.
    awaits_client: Box<dyn Fn() -> bool + Send>,
    /// The writer's queue, for error replies (weak: a reader still blocked
    /// on stdin does not keep the writer alive at the end).
    replies: tokio::sync::mpsc::WeakSender<Out>,
    service: tokio::sync::mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    /// An `initialize` request has gone to rmcp (before it, rmcp takes only
    /// requests: a notification or response ends its session).
    started: bool,
    /// The connection's protocol eras (see [`super::era`]).
    eras: super::era::Eras,
}

impl Reader {
    fn run(mut self) {
        let mut slot = None;
        loop {
            // Back-pressure: no next line while the calls in flight or the
            // reply budget are used up.
            if slot.is_none() {
                slot = self.flow.try_ready_to_read();
            }
            if slot.is_none() && !(self.awaits_client)() {
                slot = crate::sync::block_on(self.flow.ready_to_read());
                if slot.is_none() {
                    return;
                }
            }
            let line = match self.lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "stdin closed");
                    break;
                }
            };
            match line {
                Line::Complete(bytes) => {
                    if bytes.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    // What parsing the line takes is reply budget too: a
                    // line of tiny values costs about 100 times its bytes.
                    let Some(parsed) = self.reserve_parse(&bytes) else {
                        continue;
                    };
                    if let Some(raw) = raw_id(&bytes)
                        && is_unechoable_id(raw)
                    {
                        self.refuse_id(raw);
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&bytes) {
                        Ok(mut msg) => {
                            self.eras.adjust(&mut msg);
                            drop(bytes);
                            if !self.started && !matches!(msg, JsonRpcMessage::Request(_)) {
                                // rmcp ends the session on a notification
                                // or response before `initialize` (even
                                // after inline-era requests); JSON-RPC says
                                // to ignore them.
                                tracing::warn!(
                                    "ignored a notification or response that came before initialize"
                                );
                                continue;
                            }
                            if let JsonRpcMessage::Request(r) = &msg
                                && matches!(r.request, ClientRequest::InitializeRequest(_))
                            {
                                if self.started {
                                    // One session, one negotiated version:
                                    // rmcp would answer a second one with
                                    // the first version yet keep the new
                                    // one as the peer's.
                                    self.refuse_second_initialize(r.id.clone());
                                    continue;
                                }
                                self.started = true;
                            }
                            (self.observe)(&msg);
                            self.direct.observe(&msg);
                            if let JsonRpcMessage::Request(r) = &msg
                                && slot.is_none()
                            {
                                slot = self.flow.try_ready_to_read();
                                if slot.is_none() {
                                    self.refuse_busy(r.id.clone());
                                    continue;
                                }
                            }
                            if let (JsonRpcMessage::Request(_), Some(s)) = (&msg, slot.as_mut())
                                && let Some(parsed) = parsed
                            {
                                s.carry(parsed);
                            }
                            let Some(mut msg) = self.direct.take(msg, &mut slot) else {
                                continue;
                            };
                            self.flow.on_message(&mut msg, &mut slot);
                            if self.service.blocking_send(msg).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            if let Some((id, error)) = not_a_message(&bytes, &e) {
                                self.reply_error(id, error);
                            }
                        }
                    }
                }
                Line::Oversized(prefix) => {
                    tracing::warn!(
                        max = self.max,
                        "discarded a request line longer than --max-request-bytes"
                    );
                    let error = ErrorData::new(
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Request too large: the line exceeds {} bytes (--max-request-bytes); it was discarded",
                            self.max
                        ),
                        None,
                    );
                    self.reply_error(top_level_id(&prefix), error);
                }
            }
        }
        // The end of input: the calls still running, direct or through
        // rmcp, get their answers first (within one grace); then the
        // service sees the end (this sender drops).
        let deadline = self.direct.deadline();
        self.direct.drain();
        self.flow.drain(deadline);
    }

    /// Reserves the reply budget that parsing `line` may take
    /// ([`parse_cost`]), waiting for it as for any reply; a line that would
    /// take more than the whole budget is refused at its id. `None`: the
    /// line is done with (refused, or the session is over); `Some(None)`:
    /// nothing needs reserving.
    fn reserve_parse(&self, line: &[u8]) -> Option<Option<Reservation>> {
        let cost = parse_cost(line);
        if cost <= SMALL_LINE_COST {
            return Some(None);
        }
        let budget = self.flow.budget_bytes();
        if cost > budget {
            tracing::warn!(
                cost,
                budget,
                "refused a request line that would cost more than the reply budget to parse"
            );
            let error = ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Request too costly to parse: its {} bytes would take about {} MiB of memory, more than the {} MiB reply budget (--max-pending-reply-bytes); send fewer JSON values in one request",
                    line.len(),
                    cost >> 20,
                    budget >> 20
                ),
                None,
            );
            self.reply_error(top_level_id(line), error);
            return None;
        }
        crate::sync::block_on(self.flow.reserve(cost)).map(Some)
    }

    /// Refuses a request whose numeric id would not be echoed as written
    /// ([`is_unechoable_id`]); the error carries the id exactly as sent.
    fn refuse_id(&self, raw: &[u8]) {
        tracing::warn!("refused a request whose id is a number tuls cannot echo as written");
        let error = ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            "Invalid Request: a numeric id must be an integer written plainly (no fraction, exponent, leading zero or -0), so that the reply can carry it as sent",
            None,
        );
        let id = String::from_utf8_lossy(raw).into_owned();
        if let Some(tx) = self.replies.upgrade() {
            let _ = tx.blocking_send(Out::RawIdError(id, error));
        }
    }

    /// Refuses an `initialize` after the first: the session keeps the
    /// version it negotiated.
    fn refuse_second_initialize(&self, id: RequestId) {
        tracing::warn!(%id, "refused a second initialize");
        let error = ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            "Invalid Request: this session is already initialized; a second initialize is refused (the session keeps the protocol version it negotiated). Start a new session to negotiate again",
            None,
        );
        self.reply_error(Some(id), error);
    }

    /// Refuses a request read while every call slot is held and calls wait
    /// for the client's answer (see `awaits_client`).
    fn refuse_busy(&self, id: RequestId) {
        tracing::warn!(
            %id,
            "refused a request: every call slot is held by calls waiting for the client's roots/list answer"
        );
        let error = ErrorData::new(
            SERVER_BUSY,
            format!(
                "Server busy: all {MAX_CALLS_IN_FLIGHT} call slots are held by calls waiting for the client's roots/list answer; this request was not run. Send it again once roots/list is answered"
            ),
            None,
        );
        self.reply_error(Some(id), error);
    }

    /// Queues a reply to a line the service never sees.
    fn reply_error(&self, id: Option<RequestId>, error: ErrorData) {
        let out = match id {
            Some(id) => Out::Message(
                TxJsonRpcMessage::<RoleServer>::error(error, Some(id)),
                Held::default(),
            ),
            None => Out::NullIdError(error),
        };
        if let Some(tx) = self.replies.upgrade() {
            let _ = tx.blocking_send(out);
        }
    }
}

impl Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.direct.on_send(&item);
        let tx = self.tx.clone();
        let held = self.flow.on_send(&item);
        async move {
            tx.send(Out::Message(item, held)).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
            })
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancel-safe: a message stays in the channel until taken.
        self.from_reader.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_mirror_their_block_on_the_wire() {
        use rmcp::model::ContentBlock;
        let msg = |r: CallToolResult| -> TxJsonRpcMessage<RoleServer> {
            JsonRpcMessage::response(ServerResult::CallToolResult(r), RequestId::Number(3))
        };
        let mut splice = Splice::new();
        let mut wire = |r: CallToolResult| -> serde_json::Value {
            let mut out = Vec::new();
            write_message(&mut out, msg(r), &mut splice).unwrap();
            serde_json::from_slice(&out).unwrap()
        };
        let text = "line1\n\"quoted\" é";
        let plain = CallToolResult::success(vec![ContentBlock::text(text)]);
        let expect = serde_json::to_value(msg(super::super::reply::with_structured_content(
            plain.clone(),
        )))
        .unwrap();
        assert_eq!(wire(plain), expect);
        assert_eq!(expect["result"]["structuredContent"]["content"], text);

        let img = ContentBlock::image("aGk=", "image/png");
        let plain = CallToolResult::success(vec![img.clone()]);
        let expect = serde_json::to_value(msg(super::super::reply::with_structured_content(
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
        let mut splice = Splice::new();
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
        let mut splice = Splice::new();
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
