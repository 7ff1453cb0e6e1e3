//! Logs on stderr, in one format: `tuls: <level>: <message> key=value...`,
//! the same `tuls: ` prefix as the startup lines and startup errors.
//!
//! Owns: the log filter and the line format. rmcp logs at `error` only: its
//! warnings print protocol errors as Rust debug dumps (`ErrorData { code:
//! ... }`) of replies the client already got; tuls logs what matters itself.
//! May touch: stderr.
//!
//! Stderr may be closed or a broken pipe: the host owns it, and some hosts
//! stop reading it. Nothing written here fails the server (no `eprintln!`,
//! which panics on a write error, and a panic in the panic hook aborts):
//! [`line()`] drops its write error, and tracing-subscriber is told not to
//! `eprint!` its own.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::cli::LogLevel;

/// Writes `args` and a newline to stderr as one buffer (so concurrent lines
/// do not interleave mid-line), and drops a write error: a closed stderr
/// must not stop the server (use the [`crate::say`] macro).
pub fn line(args: fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut text = args.to_string();
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
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
    use std::io::Write as _;
    let mut text = args.to_string();
    text.push('\n');
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// `out!("...", args)`: a line on stdout that cannot fail the process
/// ([`out_line`]).
#[macro_export]
#[doc(hidden)]
macro_rules! out {
    ($($arg:tt)*) => { $crate::log::out_line(format_args!($($arg)*)) };
}

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
        writeln!(writer)
    }
}

/// Installs the stderr logger: `level` for tuls, `error` for rmcp;
/// `RUST_LOG`, when set and valid, wins. A panic is logged in the same
/// format (one line per panic message line) instead of the default hook's.
pub fn init(level: LogLevel) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{},rmcp=error", level.as_str())));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
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
}
