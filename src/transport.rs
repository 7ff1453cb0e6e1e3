//! stdio with a bound on the request line.
//!
//! Owns: reading stdin line by line with at most `max` bytes per line. A
//! longer line is discarded (never buffered past the bound) and, when its
//! `id` can be read from its first bytes, replaced by a request that the
//! server answers with a clear JSON-RPC error; the session goes on.
//! May touch: stdin and stdout.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The method of the stand-in request for an oversized line.
pub const OVERSIZED_METHOD: &str = "tuls/requestTooLarge";

/// A bounded stdin reader and stdout, for `serve`.
pub fn stdio(
    max: usize,
) -> (
    impl AsyncRead + Send + Unpin + 'static,
    impl AsyncWrite + Send + Unpin + 'static,
) {
    let (mut tx, rx) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Err(e) = pump(tokio::io::stdin(), &mut tx, max).await {
            tracing::debug!(error = %e, "stdin pump ended");
        }
        let _ = tx.shutdown().await;
    });
    (rx, tokio::io::stdout())
}

/// Copies lines from `input` to `out`, replacing each line longer than `max`.
pub async fn pump<R, W>(input: R, out: &mut W, max: usize) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line: Vec<u8> = Vec::new();
    let mut oversized = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if !line.is_empty() && !oversized {
                line.push(b'\n');
                out.write_all(&line).await?;
            }
            return Ok(());
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (buf.get(..i).unwrap_or(&[]), Some(i + 1)),
            None => (buf, None),
        };
        if !oversized {
            if line.len() + chunk.len() > max {
                oversized = true;
                // Keep only a prefix, to look for the id.
                let keep = 4096usize.saturating_sub(line.len()).min(chunk.len());
                line.extend_from_slice(chunk.get(..keep).unwrap_or(&[]));
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(buf.len());
        reader.consume(consumed);
        if done.is_some() {
            if oversized {
                tracing::warn!(
                    max,
                    "discarded a request line longer than --max-request-bytes"
                );
                if let Some(id) = scrape_id(&line) {
                    let stand_in = format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{OVERSIZED_METHOD}\",\"params\":{{}}}}\n"
                    );
                    out.write_all(stand_in.as_bytes()).await?;
                }
            } else {
                line.push(b'\n');
                out.write_all(&line).await?;
            }
            out.flush().await?;
            line.clear();
            oversized = false;
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

    #[tokio::test]
    async fn long_lines_are_replaced() {
        let input: &[u8] =
            b"{\"id\":1}\n{\"id\":2,\"x\":\"aaaaaaaaaaaaaaaaaaaaaaaa\"}\n{\"id\":3}\n";
        let mut out = Vec::new();
        pump(input, &mut out, 16).await.unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "{\"id\":1}");
        assert!(lines[1].contains(OVERSIZED_METHOD) && lines[1].contains("\"id\":2"));
        assert_eq!(lines[2], "{\"id\":3}");
    }

    #[tokio::test]
    async fn at_the_limit_passes() {
        let input: &[u8] = b"0123456789\n";
        let mut out = Vec::new();
        pump(input, &mut out, 10).await.unwrap();
        assert_eq!(out, b"0123456789\n");
        let mut out = Vec::new();
        pump(&b"01234567890\n"[..], &mut out, 10).await.unwrap();
        assert!(out.is_empty());
    }
}
