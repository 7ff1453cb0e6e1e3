//! Reading part of a regular file by lines: the first `n` lines, the last
//! `n` (read from the end), or a range streamed from the start in constant
//! memory (a hole before the range skipped, not read), each bounded by the
//! scan limit, and the head/tail line logic as the reference has it.
//! Each reader takes the call's facts ([`Io`]): its reply budget covers
//! what a read holds, and its recorder counts what was read.
//! May touch: a root `Dir`, by relative path (through [`super::open_regular`]).

use std::io::{Read, Seek, SeekFrom};

use cap_std::fs::File;
use tokio_util::sync::CancellationToken;

use super::{CHUNK, Covered, open_regular};
use crate::error::{Error, Result};
use crate::fs::io::Io;
use crate::fs::record::Recorder;
use crate::fs::scope::Target;
use crate::fs::version::{self, Version};
use crate::text::lines;

/// The first `n` lines, as the reference's `head` returns them, and the
/// version of the whole file (when it is within `limit`, see
/// [`version::with_read`]).
pub fn read_head(io: &Io, t: &Target, n: f64, limit: u64) -> Result<(String, Option<Version>)> {
    let (file, size) = open_regular(io, t)?;
    version::with_read(&file, limit, &t.given, || {
        let text = head_from(io, &file, size, t, n, limit)?;
        io.recorder.read(text.len() as u64);
        Ok(text)
    })
}

fn head_from(
    io: &Io,
    mut file: &File,
    size: u64,
    t: &Target,
    n: f64,
    limit: u64,
) -> Result<String> {
    let given = t.given.as_str();
    if n <= 0.0 || n.is_nan() {
        return Ok(String::new());
    }
    let want = n.ceil().min(u64::MAX as f64) as u64;
    let mut covered = Covered::new(io, size);
    let mut buf = Vec::new();
    let mut newlines = 0u64;
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let got = file
            .read(&mut chunk)
            .map_err(|e| Error::io("read", given, &e))?;
        if got == 0 {
            break;
        }
        let part = chunk.get(..got).unwrap_or(&[]);
        newlines += part.iter().filter(|&&b| b == b'\n').count() as u64;
        covered.cover((buf.len() + part.len()) as u64)?;
        buf.extend_from_slice(part);
        if newlines >= want {
            break;
        }
        if buf.len() as u64 > limit {
            return Err(scan_limit(given, limit, Some(want)));
        }
    }
    Ok(head_of(&String::from_utf8_lossy(&buf), want))
}

/// The last `n` lines, as the reference's `tail` returns them, with the
/// byte where they start in the file, and the version of the whole file
/// (as [`read_head`]). Reads only from the end of the file (the version
/// alone reads it whole, within `limit`).
pub fn read_tail(
    io: &Io,
    t: &Target,
    n: f64,
    limit: u64,
) -> Result<((String, u64), Option<Version>)> {
    let (file, size) = open_regular(io, t)?;
    version::with_read(&file, limit, &t.given, || {
        let (text, start) = tail_from(io, &file, size, t, n, limit)?;
        io.recorder.read(text.len() as u64);
        Ok((text, start))
    })
}

fn tail_from(
    io: &Io,
    mut file: &File,
    size: u64,
    t: &Target,
    n: f64,
    limit: u64,
) -> Result<(String, u64)> {
    let given = t.given.as_str();
    if n < 0.0 || n.is_nan() {
        return Ok((String::new(), size));
    }
    let want = n.trunc().min(u64::MAX as f64) as u64;
    if want == 0 {
        // The reference's slice(-0) keeps every line.
        if size > limit {
            return Err(scan_limit(given, limit, None));
        }
        let mut covered = Covered::new(io, size);
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; CHUNK];
        let mut room = limit.saturating_add(1);
        while room > 0 {
            let step = usize::try_from(room).unwrap_or(CHUNK).min(CHUNK);
            let got = file
                .read(chunk.get_mut(..step).unwrap_or_default())
                .map_err(|e| Error::io("read", given, &e))?;
            if got == 0 {
                break;
            }
            covered.cover((buf.len() + got) as u64)?;
            buf.extend_from_slice(chunk.get(..got).unwrap_or_default());
            room -= got as u64;
        }
        return Ok((tail_of(&String::from_utf8_lossy(&buf), 0), 0));
    }
    // The chunks, last first, are joined once at the end: prepending each
    // chunk to one buffer made the scan quadratic (about 8 GiB of copying
    // to reach the 32 MiB limit on a file without newlines).
    let mut pos = size;
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut scanned = 0u64;
    let mut newlines = 0u64;
    while pos > 0 && newlines < want {
        let step = (CHUNK as u64).min(pos);
        pos -= step;
        let mut chunk = vec![0u8; step as usize];
        file.seek(SeekFrom::Start(pos))
            .map_err(|e| Error::io("read", given, &e))?;
        file.read_exact(&mut chunk)
            .map_err(|e| Error::io("read", given, &e))?;
        newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        scanned += step;
        chunks.push(chunk);
        // Only a scan that must go on is refused: the last chunk read may
        // pass the limit when it already holds the lines asked for.
        if newlines < want && scanned > limit {
            return Err(scan_limit(given, limit, None));
        }
    }
    let mut buf = Vec::with_capacity(usize::try_from(scanned).unwrap_or(0));
    for chunk in chunks.into_iter().rev() {
        buf.extend_from_slice(&chunk);
    }
    // Where the text starts: after the `want`-th newline from the end, as
    // `tail_of` cuts it (a newline is one byte in the bytes and the text).
    let nth = usize::try_from(want - 1).unwrap_or(usize::MAX);
    let start = buf
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(nth)
        .map_or(0, |(i, _)| i + 1);
    Ok((
        tail_of(&String::from_utf8_lossy(&buf), want),
        pos + start as u64,
    ))
}

/// A range read: its text, how it ended, and the byte where its first line
/// starts in the file (when the file has that line).
pub type Ranged = (String, lines::End, Option<u64>);

/// Lines `range` of the regular file `t` names, read streaming from its
/// start: only as far as the range's end (or the first cap it meets), in
/// constant memory, so any range of a file of any size can be read. The
/// scan to the first line is bounded by `max_scan` bytes, and checked for
/// cancellation between chunks. With it, the version of the whole file (as
/// [`read_head`]; hashing it reads the file whole, within `limit`), and
/// where the range's first line starts in the file (for the cursor that
/// goes on inside a line too long for the reply).
pub fn read_range(
    io: &Io,
    t: &Target,
    range: lines::Range,
    caps: lines::Caps,
    max_scan: u64,
    cancel: &CancellationToken,
    limit: u64,
) -> Result<(Ranged, Option<Version>)> {
    let (file, size) = open_regular(io, t)?;
    version::with_read(&file, limit, &t.given, || {
        let out = range_from(io, &file, size, t, range, caps, max_scan, cancel)?;
        io.recorder.read(out.0.len() as u64);
        Ok(out)
    })
}

/// The range's lines of `file` (of `size` bytes at open). Numbered lines
/// can make more text than the share of the reply budget a read of the
/// file took when it was opened (eight bytes per byte, for four): before a
/// byte is read, the call's share is made to cover the most text this file
/// can make ([`lines::text_most`], [`crate::reply_budget::Grant::will_hold`]),
/// and the text's capacity is kept within it. Bytes a file gained after it
/// was opened are covered as their text is held.
#[allow(clippy::too_many_arguments)]
fn range_from(
    io: &Io,
    mut file: &File,
    size: u64,
    t: &Target,
    range: lines::Range,
    caps: lines::Caps,
    max_scan: u64,
    cancel: &CancellationToken,
) -> Result<Ranged> {
    let given = t.given.as_str();
    // File bytes skipped (holes) beyond the one byte fed for each.
    let mut skipped = 0u64;
    let mut collector = lines::Collector::new(range, caps);
    let mut covered = lines::text_most(range, caps, size);
    io.grant.will_hold(covered)?;
    collector.hold_at_most(covered);
    let mut chunk = vec![0u8; CHUNK];
    let mut scanned = 0u64;
    let mut probe = true;
    let mut pos = file
        .stream_position()
        .map_err(|e| Error::io("read", given, &e))?;
    while !collector.is_done() {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        // Before the range, a hole is skipped, not read: it holds no
        // newline, so it only makes the current line longer (one zero byte
        // fed says so). A sparse file of gigabytes took seconds of CPU to
        // scan to its end (finding F2 of the session fuzzer). Asked at the
        // start and after a chunk of zeros only (a hole reads as zeros).
        if probe && collector.before_range() {
            match crate::fs::sys::next_data(file, pos) {
                crate::fs::sys::Data::At(at) if at > pos => {
                    file.seek(SeekFrom::Start(at))
                        .map_err(|e| Error::io("read", given, &e))?;
                    skipped += at - pos - 1;
                    pos = at;
                    collector.feed(b"\0");
                }
                crate::fs::sys::Data::HoleToEnd => {
                    collector.feed(b"\0");
                    break;
                }
                _ => {}
            }
        }
        if collector.before_range() && scanned > max_scan {
            return Err(Error::LineScanLimit {
                path: given.to_owned(),
                line: range.first,
                limit: max_scan,
            });
        }
        let got = file
            .read(&mut chunk)
            .map_err(|e| Error::io("read", given, &e))?;
        if got == 0 {
            break;
        }
        scanned += got as u64;
        pos += got as u64;
        let read = chunk.get(..got).unwrap_or_default();
        probe = read.iter().all(|&b| b == 0);
        collector.feed(read);
        // Past what the size at open allows only if the file grew. Then
        // covered ahead, by what twice the bytes read so far can make, so
        // that the text grows by doubling, not by a reallocation per line.
        let text = collector.text_bytes();
        if text > covered {
            covered = lines::text_most(range, caps, scanned.saturating_mul(2)).max(text);
            io.grant.will_hold(covered)?;
            collector.hold_at_most(covered);
        }
    }
    // Holes are skipped only before the range: the first line's start is
    // past every one.
    let first = collector.first_start().map(|at| at + skipped);
    let (text, end) = collector.finish();
    Ok((text, end, first))
}

fn scan_limit(given: &str, limit: u64, head: Option<u64>) -> Error {
    Error::ScanLimit {
        path: given.to_owned(),
        limit,
        head,
    }
}

/// Complete lines (split on `\n`) plus a non-empty final partial line; the
/// first `want`, joined with `\n` and no trailing newline.
pub fn head_of(text: &str, want: u64) -> String {
    // Cut at the `want`-th newline rather than splitting into a Vec of every
    // line: 15 million short lines would cost 240 MB of slices.
    let Some(nth) = usize::try_from(want).unwrap_or(usize::MAX).checked_sub(1) else {
        return String::new();
    };
    let end = match text.match_indices('\n').nth(nth) {
        Some((i, _)) => i,
        None => text.strip_suffix('\n').unwrap_or(text).len(),
    };
    text.get(..end).unwrap_or_default().to_owned()
}

/// The file's bytes after the `want`-th newline from the end, line endings
/// kept as they are (the reference turns CRLF into LF here; tuls returns the
/// same bytes as a whole read and `head` do). As if the text were split on
/// `\n` (so a trailing newline yields an empty last line) and the last
/// `want` parts joined with `\n`; `0` keeps every part.
pub fn tail_of(text: &str, want: u64) -> String {
    // Start after the `want`-th newline from the end (as in head_of, no Vec
    // of every line).
    let start = match usize::try_from(want).unwrap_or(usize::MAX).checked_sub(1) {
        None => 0,
        Some(nth) => text.rmatch_indices('\n').nth(nth).map_or(0, |(i, _)| i + 1),
    };
    text.get(start..).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_matches_reference() {
        assert_eq!(head_of("line1\nline2\nline3\n", 2), "line1\nline2");
        assert_eq!(head_of("line1\nline2\nline3\n", 9), "line1\nline2\nline3");
        assert_eq!(head_of("a\r\nb\r\nc\r\n", 2), "a\r\nb\r");
        assert_eq!(head_of("x\ny\nz", 5), "x\ny\nz");
        assert_eq!(head_of("", 3), "");
    }

    #[test]
    fn tail_matches_reference() {
        assert_eq!(tail_of("line1\nline2\nline3\n", 2), "line3\n");
        assert_eq!(tail_of("line1\nline2\nline3\n", 1), "");
        assert_eq!(tail_of("a\r\nb\r\nc\r\n", 2), "c\r\n");
        assert_eq!(tail_of("x\ny\nz", 2), "y\nz");
        assert_eq!(tail_of("x\ny\nz", 10), "x\ny\nz");
        assert_eq!(tail_of("", 1), "");
    }

    /// The split-and-join definitions the cuts replace.
    fn head_by_split(text: &str, want: u64) -> String {
        let mut parts: Vec<&str> = text.split('\n').collect();
        if parts.last().is_some_and(|l| l.is_empty()) {
            parts.pop();
        }
        let take = usize::try_from(want).unwrap_or(usize::MAX).min(parts.len());
        parts[..take].join("\n")
    }

    fn tail_by_split(text: &str, want: u64) -> String {
        let parts: Vec<&str> = text.split('\n').collect();
        let want = usize::try_from(want).unwrap_or(usize::MAX);
        let start = if want == 0 {
            0
        } else {
            parts.len().saturating_sub(want)
        };
        parts[start..].join("\n")
    }

    #[test]
    fn cuts_match_split_and_join() {
        let texts = [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\n\n",
            "\na",
            "a\nb",
            "a\r\nb\r\n",
            "\r\n\r\n",
            "\r\r\n\r",
            "x\r\n\ny\r",
            "é\nü\r\n",
            "1\n2\n3\n4\n5",
        ];
        for text in texts {
            for want in [0, 1, 2, 3, 4, 5, 9, u64::MAX] {
                assert_eq!(
                    head_of(text, want),
                    head_by_split(text, want),
                    "head {text:?} {want}"
                );
                assert_eq!(
                    tail_of(text, want),
                    tail_by_split(text, want),
                    "tail {text:?} {want}"
                );
            }
        }
    }
}
