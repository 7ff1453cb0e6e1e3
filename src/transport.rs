//! stdio transport: bounded request lines in, responses serialized straight
//! to stdout.
//!
//! Owns: framing. Reading: each line is read with at most `max` bytes kept;
//! a longer line is discarded (never buffered past the bound) and, when its
//! `id` can be read from its first bytes, replaced by a stand-in request that
//! the server answers with a clear JSON-RPC error, so the session goes on. A
//! line that is not JSON-RPC is logged and skipped, as the reference does.
//! Writing: each message is serialized directly into a buffered, locked
//! stdout on the blocking pool, so a 20 MiB reply is never copied into a
//! second whole-message buffer.
//! May touch: stdin and stdout.

use std::io::Write as _;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

/// The method of the stand-in request for an oversized line.
pub const OVERSIZED_METHOD: &str = "tuls/requestTooLarge";

/// How many bytes of an oversized line are kept to look for its id.
const ID_PREFIX: usize = 4096;

/// The server side of stdio.
pub struct Stdio {
    reader: BufReader<tokio::io::Stdin>,
    writer: Arc<Mutex<std::io::BufWriter<std::io::Stdout>>>,
    max: usize,
    line: Vec<u8>,
}

/// stdio with request lines bounded to `max` bytes.
pub fn stdio(max: usize) -> Stdio {
    Stdio {
        reader: BufReader::with_capacity(64 * 1024, tokio::io::stdin()),
        writer: Arc::new(Mutex::new(std::io::BufWriter::with_capacity(
            64 * 1024,
            std::io::stdout(),
        ))),
        max,
        line: Vec::new(),
    }
}

/// One line read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line (without its `\n`) is in the buffer.
    Complete,
    /// The line was longer than the bound; the buffer holds its first bytes.
    Oversized,
    /// End of input.
    Eof,
}

/// Reads one `\n`-terminated line into `buf`, keeping at most `max` bytes.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut oversized = false;
    let mut seen_any = false;
    loop {
        let avail = reader.fill_buf().await?;
        if avail.is_empty() {
            return Ok(match (seen_any, oversized) {
                (false, _) => Line::Eof,
                (true, true) => Line::Oversized,
                (true, false) => Line::Complete,
            });
        }
        seen_any = true;
        let (chunk, used, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (avail.get(..i).unwrap_or(&[]), i + 1, true),
            None => (avail, avail.len(), false),
        };
        if !oversized && buf.len() + chunk.len() > max {
            oversized = true;
            let keep = ID_PREFIX.saturating_sub(buf.len()).min(chunk.len());
            buf.extend_from_slice(chunk.get(..keep).unwrap_or(&[]));
        } else if !oversized {
            buf.extend_from_slice(chunk);
        }
        reader.consume(used);
        if done {
            return Ok(if oversized {
                Line::Oversized
            } else {
                Line::Complete
            });
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
        let writer = self.writer.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut out = writer.lock().unwrap_or_else(|p| p.into_inner());
                serde_json::to_writer(&mut *out, &item).map_err(std::io::Error::other)?;
                out.write_all(b"\n")?;
                out.flush()
            })
            .await
            .map_err(std::io::Error::other)?
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = match read_line(&mut self.reader, &mut self.line, self.max).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::debug!(error = %e, "stdin closed");
                    return None;
                }
            };
            match line {
                Line::Eof => return None,
                Line::Complete => {
                    if self.line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match serde_json::from_slice(&self.line) {
                        Ok(msg) => return Some(msg),
                        Err(e) => {
                            tracing::warn!(error = %e, "skipping a line that is not a JSON-RPC message")
                        }
                    }
                }
                Line::Oversized => {
                    tracing::warn!(
                        max = self.max,
                        "discarded a request line longer than --max-request-bytes"
                    );
                    if let Some(id) = scrape_id(&self.line)
                        && let Ok(msg) = serde_json::from_str(&stand_in(&id))
                    {
                        return Some(msg);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let writer = self.writer.clone();
        let mut out = writer.lock().unwrap_or_else(|p| p.into_inner());
        out.flush()
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
    fn stand_in_parses_as_a_request() {
        let msg: Result<RxJsonRpcMessage<RoleServer>, _> = serde_json::from_str(&stand_in("7"));
        assert!(msg.is_ok(), "{msg:?}");
    }

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut r = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            let l = read_line(&mut r, &mut buf, max).await.unwrap();
            if l == Line::Eof {
                return out;
            }
            out.push((l, buf.clone()));
        }
    }

    #[tokio::test]
    async fn bounds_at_and_past_the_limit() {
        let got = lines(b"0123456789\n01234567890\nab", 10).await;
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (Line::Complete, b"0123456789".to_vec()));
        assert_eq!(got[1].0, Line::Oversized);
        assert_eq!(got[2], (Line::Complete, b"ab".to_vec()));
    }

    #[tokio::test]
    async fn oversized_keeps_only_a_prefix() {
        let big = vec![b'x'; 100_000];
        let mut input = big.clone();
        input.push(b'\n');
        let got = lines(&input, 10).await;
        assert_eq!(got[0].0, Line::Oversized);
        assert!(got[0].1.len() <= ID_PREFIX);
    }
}
