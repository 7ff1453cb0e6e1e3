//! Logs on stderr, in one format: `tuls: <level>: <message> key=value...`,
//! the same `tuls: ` prefix as the startup lines and startup errors.
//!
//! Owns: the log filter and the line format. rmcp logs at `error` only: its
//! warnings print protocol errors as Rust debug dumps (`ErrorData { code:
//! ... }`) of replies the client already got; tuls logs what matters itself.
//! May touch: stderr.
//!
//! Stderr may be closed, a broken pipe, or a pipe nobody reads: the host
//! owns it. Nothing written here fails or stalls the server:
//! - no `eprintln!`, which panics on a write error (and a panic in the panic
//!   hook aborts): [`line()`] drops its write error, and tracing-subscriber
//!   is told not to `eprint!` its own;
//! - once the session starts ([`Logger::queue`]), log lines go to stderr
//!   from a thread of their own, through a queue of at most
//!   [`LOG_QUEUE_LINES`] lines of at most [`LOG_LINE_MAX_BYTES`] each. Past
//!   it a line is dropped and counted, and the count is said once stderr
//!   moves again. A client's bad lines, each logged, cannot fill an unread
//!   stderr pipe and so block the thread that reads its requests.

use std::fmt;
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

use crate::cli::LogLevel;
use crate::limits::{LOG_FLUSH_WAIT, LOG_LINE_MAX_BYTES, LOG_QUEUE_LINES};

/// Writes `args` and a newline to stderr as one buffer (so concurrent lines
/// do not interleave mid-line), and drops a write error: a closed stderr
/// must not stop the server (use the [`crate::say`] macro).
pub fn line(args: fmt::Arguments<'_>) {
    write_line(io::stderr().lock(), args);
}

/// `say!("...", args)`: a line on stderr that cannot fail the process, for
/// the startup lines and startup errors ([`line()`]).
#[macro_export]
#[doc(hidden)]
macro_rules! say {
    ($($arg:tt)*) => { $crate::log::line(format_args!($($arg)*)) };
}

/// Writes `args` and a newline to stdout, for the commands whose output is
/// their stdout (`--print-config`, `tuls journal`), and drops a write
/// error: `tuls journal revert ... | head -1` must still finish the revert
/// and record it (use the [`crate::out`] macro). Never in `tuls
/// filesystem`'s session, where stdout is the MCP transport.
pub fn out_line(args: fmt::Arguments<'_>) {
    write_line(io::stdout().lock(), args);
}

/// `args` and a newline, in one `write_all`; a write error is dropped.
fn write_line(mut to: impl io::Write, args: fmt::Arguments<'_>) {
    let mut text = args.to_string();
    text.push('\n');
    let _ = to.write_all(text.as_bytes());
}

/// `out!("...", args)`: a line on stdout that cannot fail the process
/// ([`out_line`]).
#[macro_export]
#[doc(hidden)]
macro_rules! out {
    ($($arg:tt)*) => { $crate::log::out_line(format_args!($($arg)*)) };
}

/// The span a tool call runs in (`src/mcp/call.rs`): its fields (`tool`,
/// `id`) end every line logged in it, as other lines name a call.
pub const CALL_SPAN: &str = "call";

/// The one line format.
struct Line;

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warn",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        write!(writer, "tuls: {level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        // The call the line belongs to, named by its span's fields.
        for span in ctx.event_scope().into_iter().flat_map(|s| s.from_root()) {
            if span.name() != CALL_SPAN {
                continue;
            }
            let ext = span.extensions();
            if let Some(fields) = ext.get::<FormattedFields<N>>()
                && !fields.is_empty()
            {
                write!(writer, " {fields}")?;
            }
        }
        writeln!(writer)
    }
}

/// Installs the stderr logger: `level` for tuls, `error` for rmcp;
/// `RUST_LOG`, when set and valid, wins. A panic is logged in the same
/// format (one line per panic message line) instead of the default hook's.
/// Lines are written straight to stderr until [`Logger::queue`].
pub fn init(level: LogLevel) -> Logger {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{},rmcp=error", level.as_str())));
    let (tx, rx) = mpsc::sync_channel(LOG_QUEUE_LINES);
    let shared = Arc::new(Shared {
        queued: AtomicBool::new(false),
        dropped: AtomicU64::new(0),
        tx,
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ToStderr(shared.clone()))
        .with_ansi(false)
        .log_internal_errors(false)
        .event_format(Line)
        .try_init();
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        tracing::error!("panic{location}: {}", message.replace('\n', " / "));
    }));
    Logger {
        shared,
        rx: Some(rx),
    }
}

/// The logger's handle: [`Logger::queue`] when the session starts; dropping
/// it waits (at most [`LOG_FLUSH_WAIT`]) for the queued lines to reach
/// stderr.
pub struct Logger {
    shared: Arc<Shared>,
    /// The queue's far end, until the writer thread takes it.
    rx: Option<mpsc::Receiver<Msg>>,
}

/// What the logger's writer and its thread share.
struct Shared {
    /// Whether lines go through the queue (else straight to stderr).
    queued: AtomicBool,
    /// Lines dropped because the queue was full, not yet said.
    dropped: AtomicU64,
    tx: mpsc::SyncSender<Msg>,
}

/// One message to the writer thread.
enum Msg {
    Line(Vec<u8>),
    /// Answer when every line before this one is written.
    Flush(mpsc::SyncSender<()>),
}

impl Logger {
    /// From now on, log lines go through the queue and a thread of their
    /// own. If that thread cannot be made, they go on straight to stderr.
    pub fn queue(&mut self) {
        let Some(rx) = self.rx.take() else { return };
        let shared = self.shared.clone();
        let made = std::thread::Builder::new()
            .name("tuls-log".into())
            .spawn(move || write_queued(&rx, &shared));
        if made.is_ok() {
            self.shared.queued.store(true, Ordering::Release);
        }
    }
}

impl Drop for Logger {
    fn drop(&mut self) {
        if !self.shared.queued.load(Ordering::Acquire) {
            return;
        }
        let until = Instant::now() + LOG_FLUSH_WAIT;
        let (ack, done) = mpsc::sync_channel(1);
        let mut msg = Msg::Flush(ack);
        loop {
            match self.shared.tx.try_send(msg) {
                Ok(()) => break,
                Err(mpsc::TrySendError::Full(m)) if Instant::now() < until => {
                    msg = m;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return,
            }
        }
        let _ = done.recv_timeout(until.saturating_duration_since(Instant::now()));
    }
}

/// The writer thread: each line in order, then the count of lines dropped
/// since the last one, if any.
fn write_queued(rx: &mpsc::Receiver<Msg>, shared: &Shared) {
    let mut err = io::stderr();
    for msg in rx {
        match msg {
            Msg::Line(bytes) => {
                let _ = err.write_all(&bytes);
            }
            Msg::Flush(ack) => {
                let _ = ack.send(());
            }
        }
        let dropped = shared.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let _ = writeln!(
                err,
                "tuls: warn: {dropped} log line(s) dropped: stderr was not read fast enough"
            );
        }
    }
}

/// tracing-subscriber's writer: one `write` per formatted line.
#[derive(Clone)]
struct ToStderr(Arc<Shared>);

impl<'a> MakeWriter<'a> for ToStderr {
    type Writer = LineOut<'a>;
    fn make_writer(&'a self) -> LineOut<'a> {
        LineOut(&self.0)
    }
}

/// Writes one log line: queued once the session runs, cut to
/// [`LOG_LINE_MAX_BYTES`], dropped and counted when the queue is full.
struct LineOut<'a>(&'a Shared);

impl io::Write for LineOut<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let line = cut(buf);
        if !self.0.queued.load(Ordering::Acquire) {
            let _ = io::stderr().write_all(&line);
        } else if self.0.tx.try_send(Msg::Line(line)).is_err() {
            self.0.dropped.fetch_add(1, Ordering::Relaxed);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `line` cut to [`LOG_LINE_MAX_BYTES`] at a character boundary, ending in
/// `… (cut)` and its newline.
fn cut(line: &[u8]) -> Vec<u8> {
    if line.len() <= LOG_LINE_MAX_BYTES {
        return line.to_vec();
    }
    const MARK: &[u8] = " \u{2026} (cut)\n".as_bytes();
    let mut end = LOG_LINE_MAX_BYTES - MARK.len();
    // Back to the start of a UTF-8 character (at most 3 continuation bytes).
    while end > 0 && line.get(end).is_some_and(|b| b & 0xC0 == 0x80) {
        end -= 1;
    }
    let mut out = line.get(..end).unwrap_or_default().to_vec();
    out.extend_from_slice(MARK);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_at_a_character_boundary() {
        let short = b"tuls: warn: short\n";
        assert_eq!(cut(short), short);
        let long = format!("tuls: warn: {}\n", "\u{e9}".repeat(LOG_LINE_MAX_BYTES));
        let out = cut(long.as_bytes());
        assert!(out.len() <= LOG_LINE_MAX_BYTES, "{}", out.len());
        let text = String::from_utf8(out).expect("still UTF-8");
        assert!(text.ends_with(" \u{2026} (cut)\n"), "{text}");
    }
}
