//! stdio transport: bounded request lines in, responses serialized straight
//! to stdout.
//!
//! Owns: framing. Reading: each line is read with at most `max` bytes kept;
//! a longer line is discarded (never buffered past the bound) and, when its
//! `id` can be read from its first bytes, replaced by a stand-in request that
//! the server answers with a clear JSON-RPC error, so the session goes on. A
//! line that is not JSON-RPC is logged and skipped, as the reference does.
//! Writing: one writer thread serializes each message directly into a
//! buffered, locked stdout, so a 20 MiB reply is never copied into a second
//! whole-message buffer, and flushes when its queue runs dry.
//! May touch: stdin and stdout.

use std::io::Write as _;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ClientNotification, JsonRpcMessage, RequestId, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The method of the stand-in request for an oversized line.
pub const OVERSIZED_METHOD: &str = "tuls/requestTooLarge";

/// The placeholder a text tool result carries as its `structuredContent`:
/// the transport writes `{"content": <the text>}` in its place straight from
/// the one text block, so a large reply is never held twice.
pub const MIRROR_MARKER: &str = "tuls:structured-content-mirrors-the-text";

/// The placeholder a media result carries as its `structuredContent`: the
/// transport writes `{"content": [<the one content block>]}` in its place,
/// so the base64 data is not held twice.
pub const MIRROR_BLOCK_MARKER: &str = "tuls:structured-content-mirrors-the-block";

/// The media marker value (an object, for the same reason as [`mirror_marker`]).
pub fn mirror_block_marker() -> serde_json::Value {
    serde_json::json!({ "content": MIRROR_BLOCK_MARKER })
}

/// Replaces either marker with the real value, for callers that use a
/// result in process rather than through this transport.
pub fn materialize_mirror(r: &mut CallToolResult) {
    if is_mirror(r) {
        let text = mirror_text(r).to_owned();
        r.structured_content = Some(serde_json::json!({ "content": text }));
    } else if is_marked(r, MIRROR_BLOCK_MARKER) {
        let block = r.content.first().cloned();
        r.structured_content = Some(serde_json::json!({ "content": [block] }));
    }
}

fn is_marked(r: &CallToolResult, marker: &str) -> bool {
    r.structured_content
        .as_ref()
        .and_then(|v| v.as_object())
        .is_some_and(|o| o.len() == 1 && o.get("content").is_some_and(|c| c == marker))
}

/// The marker value: an object, because rmcp turns a non-object
/// `structuredContent` into an extra text block for legacy peers.
pub fn mirror_marker() -> serde_json::Value {
    serde_json::json!({ "content": MIRROR_MARKER })
}

fn is_mirror(r: &CallToolResult) -> bool {
    // A text that is itself the marker string still mirrors correctly: the
    // mirrored output is then that same string.
    is_marked(r, MIRROR_MARKER)
}

fn mirror_text(r: &CallToolResult) -> &str {
    r.content
        .first()
        .and_then(|b| b.as_text())
        .map(|t| t.text.as_str())
        .unwrap_or("")
}

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
    },
    Block {
        content: [&'a rmcp::model::ContentBlock; 1],
    },
}

/// Serializes one message, writing a mirrored `structuredContent` from the
/// text block it mirrors.
fn write_message<W: std::io::Write>(
    out: &mut W,
    mut item: TxJsonRpcMessage<RoleServer>,
) -> std::io::Result<()> {
    if let JsonRpcMessage::Response(resp) = &mut item
        && let ServerResult::CallToolResult(r) = &mut resp.result
    {
        let block = is_marked(r, MIRROR_BLOCK_MARKER);
        if block || is_mirror(r) {
            r.structured_content = None;
            let structured = match (block, r.content.first()) {
                (true, Some(first)) => Mirror::Block { content: [first] },
                _ => Mirror::Text {
                    content: mirror_text(r),
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
    }
    serde_json::to_writer(out, &item).map_err(std::io::Error::other)
}

/// How many bytes of an oversized line are kept to look for its id.
const ID_PREFIX: usize = 4096;

/// The server side of stdio.
pub struct Stdio {
    lines: LineReader<tokio::io::Stdin>,
    tx: tokio::sync::mpsc::Sender<TxJsonRpcMessage<RoleServer>>,
    max: usize,
    roots_changed: Option<Hook>,
}

/// A callback run, in order, when a message is received.
pub type Hook = Arc<dyn Fn() + Send + Sync>;

/// Messages queued for the writer thread before `send` waits.
const WRITE_QUEUE: usize = 1024;

static WRITER: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

/// A reply at least this big is followed by handing free heap pages back
/// to the kernel (see [`crate::malloc`]).
const LARGE_REPLY: u64 = 1 << 20;

/// A writer that counts the bytes through it.
struct Counted<W>(u64, W);

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.1.write(buf)?;
        self.0 += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.1.flush()
    }
}

/// stdio with request lines bounded to `max` bytes.
///
/// Replies go through one writer thread that serializes each message
/// straight into a buffered stdout and flushes when its queue is empty, so a
/// burst of small replies costs few `write` calls and no thread hand-off per
/// reply. Call [`finish`] before exiting, to flush what is queued.
pub fn stdio(max: usize) -> Stdio {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<TxJsonRpcMessage<RoleServer>>(WRITE_QUEUE);
    let spawned = std::thread::Builder::new()
        .name("tuls-stdout".to_owned())
        .spawn(move || {
            let mut out = Counted(
                0,
                std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock()),
            );
            while let Some(msg) = rx.blocking_recv() {
                let mut next = Some(msg);
                while let Some(msg) = next.take() {
                    let before = out.0;
                    // write_message consumes (and so frees) the message.
                    if write_message(&mut out, msg)
                        .and_then(|()| out.write_all(b"\n"))
                        .is_err()
                    {
                        return;
                    }
                    if out.0 - before >= LARGE_REPLY {
                        crate::malloc::release_free_memory();
                    }
                    next = rx.try_recv().ok();
                }
                if out.flush().is_err() {
                    return;
                }
            }
            let _ = out.flush();
        });
    match spawned {
        Ok(handle) => *WRITER.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle),
        Err(e) => tracing::error!(error = %e, "cannot start the stdout writer"),
    }
    Stdio {
        lines: LineReader::new(tokio::io::stdin(), max),
        tx,
        max,
        roots_changed: None,
    }
}

impl Stdio {
    /// Runs `hook` when `notifications/roots/list_changed` is received,
    /// before any later message is read, so a call that follows the
    /// notification on the wire cannot be handled with the old roots.
    pub fn on_roots_list_changed(mut self, hook: Hook) -> Self {
        self.roots_changed = Some(hook);
        self
    }
}

/// Waits for the writer thread to write out every queued reply. Call after
/// the service has stopped (the transport, and with it the queue, dropped).
pub fn finish() {
    let handle = WRITER.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(handle) = handle {
        let _ = handle.join();
    }
}

/// One line read by [`LineReader::next_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line (without its `\n`).
    Complete(Vec<u8>),
    /// A line longer than the bound; only its first bytes are kept.
    Oversized(Vec<u8>),
}

/// Splits input into bounded lines.
///
/// Cancel-safe: rmcp drops the `receive` future when another event wins a
/// `select!`, so every byte consumed from the reader is recorded in `self`
/// before the next `await`, and a dropped call resumes where it stopped.
pub struct LineReader<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    oversized: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Reads lines from `reader`, keeping at most `max` bytes of each.
    pub fn new(reader: R, max: usize) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::new(),
            oversized: false,
            max,
        }
    }

    /// The next line, or `None` at end of input.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            // The only await point; `fill_buf` is cancel-safe.
            let avail = self.reader.fill_buf().await?;
            if avail.is_empty() {
                if self.buf.is_empty() && !self.oversized {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let (chunk, used, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (avail.get(..i).unwrap_or(&[]), i + 1, true),
                None => (avail, avail.len(), false),
            };
            if !self.oversized && self.buf.len() + chunk.len() > self.max {
                self.oversized = true;
                let keep = ID_PREFIX.saturating_sub(self.buf.len()).min(chunk.len());
                self.buf.extend_from_slice(chunk.get(..keep).unwrap_or(&[]));
            } else if !self.oversized {
                self.buf.extend_from_slice(chunk);
            }
            self.reader.consume(used);
            if done {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> Line {
        let buf = std::mem::take(&mut self.buf);
        if std::mem::replace(&mut self.oversized, false) {
            Line::Oversized(buf)
        } else {
            Line::Complete(buf)
        }
    }
}

/// Finds a top-level-looking `"id": <number or string>` in a line prefix.
pub fn scrape_id(prefix: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(prefix);
    let at = text.find("\"id\"")?;
    let rest = text.get(at + 4..)?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        let end = s.find('"')?;
        let id = s.get(..end)?;
        if id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        {
            return Some(format!("\"{id}\""));
        }
        return None;
    }
    let num: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    (!num.is_empty() && num.len() < 20).then_some(num)
}

/// The stand-in request for an oversized line with id `id`.
pub fn stand_in(id: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{OVERSIZED_METHOD}\",\"params\":{{}}}}")
}

impl Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let tx = self.tx.clone();
        async move {
            tx.send(item).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
            })
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = match self.lines.next_line().await {
                Ok(Some(l)) => l,
                Ok(None) => return None,
                Err(e) => {
                    tracing::debug!(error = %e, "stdin closed");
                    return None;
                }
            };
            match line {
                Line::Complete(bytes) => {
                    if bytes.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&bytes) {
                        Ok(msg) => {
                            if let (Some(hook), JsonRpcMessage::Notification(n)) =
                                (&self.roots_changed, &msg)
                                && matches!(
                                    n.notification,
                                    ClientNotification::RootsListChangedNotification(_)
                                )
                            {
                                hook();
                            }
                            return Some(msg);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "skipping a line that is not a JSON-RPC message")
                        }
                    }
                }
                Line::Oversized(prefix) => {
                    tracing::warn!(
                        max = self.max,
                        "discarded a request line longer than --max-request-bytes"
                    );
                    if let Some(id) = scrape_id(&prefix)
                        && let Ok(msg) = serde_json::from_str(&stand_in(&id))
                    {
                        return Some(msg);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert_eq!(
            scrape_id(br#"{"jsonrpc":"2.0","id":42,"method":"x"#).as_deref(),
            Some("42")
        );
        assert_eq!(
            scrape_id(br#"{"id": "ab-1", "#).as_deref(),
            Some("\"ab-1\"")
        );
        assert_eq!(scrape_id(br#"{"method":"x""#), None);
        assert_eq!(scrape_id(br#"{"id":"a\"b"}"#), None);
    }

    #[test]
    fn mirrored_results_serialize_like_plain_ones() {
        use rmcp::model::ContentBlock;
        let text = "line1\n\"quoted\" é";
        let mut plain = CallToolResult::success(vec![ContentBlock::text(text)]);
        plain.structured_content = Some(serde_json::json!({ "content": text }));
        let mut marked = CallToolResult::success(vec![ContentBlock::text(text)]);
        marked.structured_content = Some(mirror_marker());
        let msg = |r: CallToolResult| -> TxJsonRpcMessage<RoleServer> {
            JsonRpcMessage::response(ServerResult::CallToolResult(r), RequestId::Number(3))
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_message(&mut a, msg(plain.clone())).unwrap();
        write_message(&mut b, msg(marked.clone())).unwrap();
        let (va, vb): (serde_json::Value, serde_json::Value) = (
            serde_json::from_slice(&a).unwrap(),
            serde_json::from_slice(&b).unwrap(),
        );
        assert_eq!(va, vb);
        assert_eq!(vb["result"]["structuredContent"]["content"], text);
        materialize_mirror(&mut marked);
        assert_eq!(marked, plain);

        let img = ContentBlock::image("aGk=", "image/png");
        let mut plain = CallToolResult::success(vec![img.clone()]);
        plain.structured_content = Some(serde_json::json!({ "content": [img.clone()] }));
        let mut marked = CallToolResult::success(vec![img]);
        marked.structured_content = Some(mirror_block_marker());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_message(&mut a, msg(plain.clone())).unwrap();
        write_message(&mut b, msg(marked.clone())).unwrap();
        let (va, vb): (serde_json::Value, serde_json::Value) = (
            serde_json::from_slice(&a).unwrap(),
            serde_json::from_slice(&b).unwrap(),
        );
        assert_eq!(va, vb);
        materialize_mirror(&mut marked);
        assert_eq!(marked, plain);
    }

    #[test]
    fn stand_in_parses_as_a_request() {
        let msg: Result<RxJsonRpcMessage<RoleServer>, _> = serde_json::from_str(&stand_in("7"));
        assert!(msg.is_ok(), "{msg:?}");
    }

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().await.unwrap() {
            out.push(l);
        }
        out
    }

    #[tokio::test]
    async fn bounds_at_and_past_the_limit() {
        let got = lines(b"0123456789\n01234567890\nab", 10).await;
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], Line::Complete(b"0123456789".to_vec()));
        assert!(matches!(got[1], Line::Oversized(_)));
        assert_eq!(got[2], Line::Complete(b"ab".to_vec()));
    }

    #[tokio::test]
    async fn oversized_keeps_only_a_prefix() {
        let mut input = vec![b'x'; 100_000];
        input.push(b'\n');
        let got = lines(&input, 10).await;
        let Line::Oversized(prefix) = &got[0] else {
            panic!("{got:?}")
        };
        assert!(prefix.len() <= ID_PREFIX);
    }

    #[tokio::test]
    async fn a_cancelled_read_loses_nothing() {
        // A reader that delivers one byte per poll and is cancelled
        // (timed out) over and over, as rmcp's select! does.
        let (mut tx, rx) = tokio::io::duplex(8);
        let text = b"{\"a\":1}\n{\"b\":2}\n".to_vec();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for b in text {
                tx.write_all(&[b]).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        });
        let mut r = LineReader::new(rx, 100);
        let mut got = Vec::new();
        while got.len() < 2 {
            if let Ok(res) =
                tokio::time::timeout(std::time::Duration::from_millis(1), r.next_line()).await
            {
                got.push(res.unwrap().unwrap());
            }
        }
        assert_eq!(got[0], Line::Complete(b"{\"a\":1}".to_vec()));
        assert_eq!(got[1], Line::Complete(b"{\"b\":2}".to_vec()));
    }
}
