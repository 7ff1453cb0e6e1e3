//! The rest of a line too long for one reply: read from a byte offset a
//! [`crate::fs::cursor::LineCursor`] gave, skipping what was already
//! shown, up to one reply's worth of characters or the line's end.
//! Reads a bounded window (four bytes a character at most), never the
//! whole line, so a line of any length is read piece by piece in constant
//! memory, each piece costing what it shows.
//! May touch: a root `Dir`, by relative path (through [`super::open_regular`]).

use std::io::{Read, Seek, SeekFrom};

use super::{CHUNK, Covered, open_regular};
use crate::error::{Error, Result};
use crate::fs::io::Io;
use crate::fs::record::Recorder;
use crate::fs::scope::Target;
use crate::fs::version::{self, Version};
use crate::text::lines;

/// A piece of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rest {
    /// Its text (a `\n` that ends the line included).
    pub text: String,
    /// The byte in the file where it starts (after what was skipped).
    pub at: u64,
    /// Its characters.
    pub chars: usize,
    /// Whether it ends the line.
    pub ends_line: bool,
    /// Whether the file goes on after the line (when it ends).
    pub more: bool,
}

/// The piece of the line in the regular file `t` names that starts `skip`
/// characters after byte `at`: at most `take` characters, up to and
/// including the line's `\n`; and the version of the whole file (as
/// [`super::read_head`]).
pub fn read_rest(
    io: &Io,
    t: &Target,
    (at, skip): (u64, usize),
    take: usize,
    limit: u64,
) -> Result<(Rest, Option<Version>)> {
    let (file, size) = open_regular(io, t)?;
    version::with_read(&file, limit, &t.given, || {
        let given = t.given.as_str();
        let mut file = &file;
        file.seek(SeekFrom::Start(at))
            .map_err(|e| Error::io("read", given, &e))?;
        // Every character is at most four bytes, so the window holds the
        // skipped and the shown ones whole, and one more.
        let window = skip
            .saturating_add(take)
            .saturating_add(1)
            .saturating_mul(4)
            .min(usize::try_from(limit).unwrap_or(usize::MAX).max(4));
        let mut covered = Covered::new(io, size);
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; CHUNK];
        let mut eof = false;
        while buf.len() < window {
            let step = (window - buf.len()).min(CHUNK);
            let got = file
                .read(chunk.get_mut(..step).unwrap_or_default())
                .map_err(|e| Error::io("read", given, &e))?;
            if got == 0 {
                eof = true;
                break;
            }
            let part = chunk.get(..got).unwrap_or_default();
            covered.cover((buf.len() + got) as u64)?;
            buf.extend_from_slice(part);
            if part.contains(&b'\n') {
                break;
            }
        }
        let p = lines::piece(&buf, skip, take, eof);
        let bytes = buf.get(p.start..p.end).unwrap_or_default();
        io.recorder.read(bytes.len() as u64);
        let end = at.saturating_add(p.end as u64);
        Ok(Rest {
            text: String::from_utf8_lossy(bytes).into_owned(),
            at: at.saturating_add(p.start as u64),
            chars: p.chars,
            ends_line: p.ends_line,
            more: p.ends_line && end < size,
        })
    })
}
