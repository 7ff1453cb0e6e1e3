//! Version tokens: what a read hands out and a conditional write
//! (`ifMatch`) names.
//!
//! Owns: [`Version`], the hash of a file's whole content, and hashing an
//! open file without holding it in memory. A version is `b3:` and the first
//! 160 bits of the content's BLAKE3 hash, in hex. It is a hash of the bytes,
//! not of metadata: two same-size writes within one timestamp tick give two
//! versions.
//!
//! Why BLAKE3 and not a faster non-cryptographic hash (xxh3): the content is
//! chosen by the agent, the party the check protects against. With a hash
//! whose collisions can be computed, an agent could write a file that
//! carries the version of other content, and a check that trusts the token
//! would let a stale write through; an audit record or a content-addressed
//! pre-image would name the wrong bytes. BLAKE3 is collision resistant (160
//! bits kept: 2^80 work for a collision) and, with the SIMD the `blake3`
//! crate picks at run time, hashes several GB/s on one core, a few
//! milliseconds for the largest file tuls reads whole.
//!
//! May touch: files it is given, by handle (`pread`, never moving the
//! offset).

use std::fmt;

use cap_std::fs::{File, MetadataExt};

use crate::error::{Error, Result};

/// Bytes of the hash a token keeps.
const TOKEN_BYTES: usize = 20;

/// Bytes hashed per `pread` when hashing an open file.
const HASH_CHUNK: usize = 256 * 1024;

/// The prefix that says which hash a token is.
const PREFIX: &str = "b3:";

/// An opaque version of a file's whole content.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version(String);

impl Version {
    /// The version of `bytes`.
    pub fn of(bytes: &[u8]) -> Version {
        Version::from_hasher(&{
            let mut h = blake3::Hasher::new();
            h.update(bytes);
            h
        })
    }

    fn from_hasher(h: &blake3::Hasher) -> Version {
        let hash = h.finalize();
        let kept = hash.as_bytes().get(..TOKEN_BYTES).unwrap_or_default();
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(PREFIX.len() + 2 * TOKEN_BYTES);
        s.push_str(PREFIX);
        for b in kept {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        Version(s)
    }

    /// The version a token names, when it is one (`b3:` and 40 lowercase
    /// hex digits): for the undo journal, which stores tokens.
    pub fn from_token(token: &str) -> Option<Version> {
        let hex = token.strip_prefix(PREFIX)?;
        let ok = hex.len() == 2 * TOKEN_BYTES
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Version(token.to_owned()))
    }

    /// The token as it is written in replies and compared with `ifMatch`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the client's `ifMatch` names this version (exactly; a token
    /// is opaque, so no normalization but surrounding blanks).
    pub fn matches(&self, if_match: &str) -> bool {
        self.0 == if_match.trim()
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What identifies a file's state for "did it change while I hashed it":
/// device, inode, size, mtime and ctime.
fn state(file: &File) -> std::io::Result<(u64, u64, u64, i64, i64, i64, i64)> {
    let md = file.metadata()?;
    Ok((
        md.dev(),
        md.ino(),
        md.len(),
        md.mtime(),
        md.mtime_nsec(),
        md.ctime(),
        md.ctime_nsec(),
    ))
}

/// The version of the whole open regular file `file`, read with `pread`
/// from offset 0 (its offset does not move), in constant memory.
///
/// `None` when the file is larger than `limit` bytes (no version is handed
/// out for a file that cannot be read whole), or when it changed while it
/// was hashed (its size, times or identity moved): a version is only given
/// for content that held still.
pub fn of_file(file: &File, limit: u64, given: &str) -> Result<Option<Version>> {
    let io = |e: std::io::Error| Error::io("read", given, &e);
    let before = state(file).map_err(io)?;
    if before.2 > limit {
        return Ok(None);
    }
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; HASH_CHUNK];
    let mut at = 0u64;
    loop {
        let got = match rustix::io::pread(file, &mut buf[..], at) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(io(e.into())),
        };
        if got == 0 {
            break;
        }
        h.update(buf.get(..got).unwrap_or_default());
        at += got as u64;
        if at > limit {
            return Ok(None);
        }
    }
    let after = state(file).map_err(io)?;
    if before != after || at != after.2 {
        return Ok(None);
    }
    Ok(Some(Version::from_hasher(&h)))
}

/// Runs `read` (a partial read of `file`) and gives the version of the
/// whole file with its result: `None` as in [`of_file`], and also when the
/// file changed between the hash and the end of `read`, so the version
/// always describes the content the part was read from.
pub fn with_read<T>(
    file: &File,
    limit: u64,
    given: &str,
    read: impl FnOnce() -> Result<T>,
) -> Result<(T, Option<Version>)> {
    let before = state(file).map_err(|e| Error::io("read", given, &e))?;
    let version = of_file(file, limit, given)?;
    let out = read()?;
    let after = state(file).map_err(|e| Error::io("read", given, &e))?;
    Ok((out, version.filter(|_| before == after)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_short_stable_and_content_only() {
        let a = Version::of(b"hello");
        assert_eq!(a, Version::of(b"hello"));
        assert_ne!(a, Version::of(b"hellp"));
        assert_eq!(a.as_str().len(), PREFIX.len() + 2 * TOKEN_BYTES);
        assert!(a.as_str().starts_with("b3:"));
        // The BLAKE3 hash of "hello", cut to 160 bits.
        assert_eq!(a.as_str(), "b3:ea8f163db38682925e4491c5e58d4bb3506ef8c1");
        assert!(a.matches(&format!(" {a} ")));
        assert!(!a.matches("b3:"));
    }

    #[test]
    fn a_file_hashes_as_its_bytes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = crate::fs::roots::open(tmp.path()).expect("root");
        let bytes: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
        root.dir.write("f", &bytes).expect("write");
        let f = root.dir.open("f").expect("open");
        let v = of_file(&f, 1 << 20, "f").expect("hash");
        assert_eq!(v, Some(Version::of(&bytes)));
        assert_eq!(of_file(&f, 1000, "f").expect("hash"), None);
    }
}
