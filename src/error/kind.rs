//! What kind of failure an [`Error`] is, for the edge and the logs.
//!
//! Owns: the one classification of every [`Error`] variant. The match in
//! [`Error::kind`] names every variant (no `_` arm), so a new variant does not
//! build until it is given a kind.
//! May touch: nothing (no I/O).

use std::fmt;

use super::Error;

/// The kind of a failed tool call: who or what caused it, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The path leads outside every allowed root, or no root is in force:
    /// the confinement refused it. Worth watching: an agent probing.
    Escape,
    /// The server's own configuration refuses the request whatever its
    /// arguments: a path rule, a read-only or special file, `ifMatch`
    /// required, a moved root, or the client's roots not (yet) in force.
    Refused,
    /// The arguments are wrong: they do not match the schema, combine
    /// options that exclude each other, or name something unusable (a bad
    /// pattern, cursor or path string, edits that do not apply).
    Arguments,
    /// A named bound ([`crate::limits`]) was reached: size, count, length,
    /// scan, open files.
    Limit,
    /// The file changed under the request (a version mismatch, a change
    /// during the write, a moved directory, an existing destination): trying
    /// again after a fresh read may succeed.
    Conflict,
    /// The operating system refused the operation (`ENOENT`, `EACCES`, ...).
    Os,
    /// The client cancelled the request.
    Cancelled,
    /// A failure of tuls itself or of the operator's side (a panic, the audit
    /// log or the undo journal unavailable), not of the request.
    Internal,
}

impl ErrorKind {
    /// The kind's name, as logs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Escape => "escape",
            ErrorKind::Refused => "refused",
            ErrorKind::Arguments => "arguments",
            ErrorKind::Limit => "limit",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Os => "os",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// What kind of failure this is (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Error::OutsideRoots { .. }
            | Error::NoRootInForce { .. }
            | Error::WindowsPath { .. } => K::Escape,
            Error::RootMoved { .. }
            | Error::Protected { .. }
            | Error::MoveChangesRules { .. }
            | Error::NotARegularFile { .. }
            | Error::ReadOnly { .. }
            | Error::DanglingSymlink { .. }
            | Error::IfMatchRequired { .. }
            | Error::AccessControlNotKept { .. }
            | Error::RootsTimeout { .. }
            | Error::Move { .. } => K::Refused,
            Error::InvalidPath { .. }
            | Error::InvalidArguments { .. }
            | Error::EmptyList { .. }
            | Error::RangeAndHeadTail
            | Error::InvalidCursor { .. }
            | Error::BelowMinimum { .. }
            | Error::HeadAndTail
            | Error::InvalidGlob { .. }
            | Error::InvalidExclude { .. }
            | Error::NotUtf8 { .. }
            | Error::EditFailed { .. }
            | Error::InvalidRegex { .. }
            | Error::ArgumentOutOfRange { .. } => K::Arguments,
            Error::TooLarge { .. }
            | Error::LineScanLimit { .. }
            | Error::TooManyPaths { .. }
            | Error::TooManyEdits { .. }
            | Error::TooManyPatterns { .. }
            | Error::PatternTooLong { .. }
            | Error::PatternsTooLong { .. }
            | Error::PatternTooComplex { .. }
            | Error::ScanLimit { .. }
            | Error::RegexTooBig { .. }
            | Error::RegexTooLong { .. }
            | Error::OutOfDescriptors
            | Error::TooManyClientRoots { .. }
            | Error::AppendTooLarge { .. }
            | Error::JournalFull { .. } => K::Limit,
            Error::Changed { .. }
            | Error::VersionMismatch { .. }
            | Error::DirectoryMoved { .. }
            | Error::DestinationExists { .. } => K::Conflict,
            Error::Os { .. } | Error::ParentMissing { .. } | Error::Other { .. } => K::Os,
            Error::Cancelled => K::Cancelled,
            Error::Panicked { .. }
            | Error::Internal(_)
            | Error::AuditUnavailable { .. }
            | Error::AuditNotRecorded { .. }
            | Error::JournalUnavailable { .. }
            | Error::JournalNotRecorded { .. } => K::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One value of every variant, with its kind. The match in `every` has no
    /// `_` arm: a new variant fails to build here until it is listed.
    fn every() -> Vec<(Error, ErrorKind)> {
        use ErrorKind as K;
        let p = || "p".to_owned();
        let all = vec![
            (
                Error::OutsideRoots {
                    path: p(),
                    why: super::super::Outside::Path,
                },
                K::Escape,
            ),
            (
                Error::NoRootInForce {
                    path: p(),
                    why: p(),
                },
                K::Escape,
            ),
            (Error::WindowsPath { path: p() }, K::Escape),
            (Error::RootMoved { path: p() }, K::Refused),
            (
                Error::Protected {
                    path: p(),
                    rule: None,
                },
                K::Refused,
            ),
            (Error::MoveChangesRules { from: p(), to: p() }, K::Refused),
            (
                Error::NotARegularFile {
                    path: p(),
                    kind: "FIFO",
                },
                K::Refused,
            ),
            (
                Error::ReadOnly {
                    path: p(),
                    mode: 0o444,
                },
                K::Refused,
            ),
            (Error::DanglingSymlink { path: p() }, K::Refused),
            (
                Error::IfMatchRequired {
                    readers: "r",
                    op: "write",
                    path: p(),
                    tool: "write_file",
                },
                K::Refused,
            ),
            (
                Error::AccessControlNotKept {
                    path: p(),
                    attr: p(),
                    reason: p(),
                },
                K::Refused,
            ),
            (Error::RootsTimeout { secs: 1 }, K::Refused),
            (
                Error::Move {
                    from: p(),
                    to: p(),
                    reason: "r".to_owned(),
                },
                K::Refused,
            ),
            (
                Error::InvalidPath {
                    path: p(),
                    reason: "r",
                },
                K::Arguments,
            ),
            (
                Error::InvalidArguments {
                    tool: "t",
                    detail: p(),
                },
                K::Arguments,
            ),
            (
                Error::EmptyList {
                    tool: "t",
                    field: "f",
                },
                K::Arguments,
            ),
            (Error::RangeAndHeadTail, K::Arguments),
            (Error::InvalidCursor { reason: "r" }, K::Arguments),
            (
                Error::BelowMinimum {
                    arg: "a",
                    value: -1,
                    min: 0,
                },
                K::Arguments,
            ),
            (Error::HeadAndTail, K::Arguments),
            (
                Error::InvalidGlob {
                    pattern: p(),
                    reason: p(),
                },
                K::Arguments,
            ),
            (Error::InvalidExclude { reason: p() }, K::Arguments),
            (
                Error::NotUtf8 {
                    tool: "edit_file",
                    path: p(),
                    offset: 0,
                },
                K::Arguments,
            ),
            (
                Error::EditFailed {
                    path: p(),
                    reason: p().into(),
                },
                K::Arguments,
            ),
            (Error::InvalidRegex { reason: p() }, K::Arguments),
            (
                Error::ArgumentOutOfRange {
                    tool: "t",
                    field: "f",
                    given: 9,
                    min: 0,
                    max: 1,
                },
                K::Arguments,
            ),
            (
                Error::TooLarge {
                    path: p(),
                    size: 2,
                    limit: 1,
                    hint: "",
                },
                K::Limit,
            ),
            (
                Error::LineScanLimit {
                    path: p(),
                    line: 1,
                    limit: 1,
                },
                K::Limit,
            ),
            (Error::TooManyPaths { given: 2, limit: 1 }, K::Limit),
            (Error::TooManyEdits { given: 2, limit: 1 }, K::Limit),
            (Error::TooManyPatterns { given: 2, limit: 1 }, K::Limit),
            (Error::PatternTooLong { len: 2, limit: 1 }, K::Limit),
            (Error::PatternsTooLong { total: 2, limit: 1 }, K::Limit),
            (
                Error::PatternTooComplex {
                    pattern: p(),
                    why: p(),
                },
                K::Limit,
            ),
            (
                Error::ScanLimit {
                    path: p(),
                    limit: 1,
                    head: None,
                },
                K::Limit,
            ),
            (Error::RegexTooBig { limit: 1 }, K::Limit),
            (Error::RegexTooLong { len: 2, limit: 1 }, K::Limit),
            (Error::OutOfDescriptors, K::Limit),
            (Error::TooManyClientRoots { count: 2, max: 1 }, K::Limit),
            (
                Error::AppendTooLarge {
                    path: p(),
                    size: 2,
                    limit: 1,
                },
                K::Limit,
            ),
            (Error::Changed { path: p() }, K::Conflict),
            (
                Error::VersionMismatch {
                    op: "write",
                    path: p(),
                    given: p(),
                    current: p(),
                },
                K::Conflict,
            ),
            (Error::DirectoryMoved { path: p() }, K::Conflict),
            (Error::DestinationExists { path: p() }, K::Conflict),
            (
                Error::io("open", "p", &rustix::io::Errno::NOENT.into()),
                K::Os,
            ),
            (
                Error::Other {
                    op: "open",
                    path: p(),
                    kind: p(),
                },
                K::Os,
            ),
            (Error::Cancelled, K::Cancelled),
            (Error::Panicked { tool: "t" }, K::Internal),
            (Error::Internal(p()), K::Internal),
            (Error::AuditUnavailable { why: p() }, K::Internal),
            (Error::AuditNotRecorded { why: p() }, K::Internal),
            (Error::JournalUnavailable { why: p() }, K::Internal),
            (Error::JournalNotRecorded { why: p() }, K::Internal),
            (
                Error::JournalFull {
                    path: p(),
                    why: p(),
                },
                K::Limit,
            ),
            (Error::ParentMissing { dir: p() }, K::Os),
        ];
        all
    }

    /// The position of a variant in `every`'s list; exhaustive by design.
    fn rank(e: &Error) -> usize {
        match e {
            Error::OutsideRoots { .. } => 0,
            Error::NoRootInForce { .. } => 1,
            Error::WindowsPath { .. } => 2,
            Error::RootMoved { .. } => 3,
            Error::Protected { .. } => 4,
            Error::MoveChangesRules { .. } => 5,
            Error::NotARegularFile { .. } => 6,
            Error::ReadOnly { .. } => 7,
            Error::DanglingSymlink { .. } => 8,
            Error::IfMatchRequired { .. } => 9,
            Error::AccessControlNotKept { .. } => 10,
            Error::RootsTimeout { .. } => 11,
            Error::Move { .. } => 12,
            Error::InvalidPath { .. } => 13,
            Error::InvalidArguments { .. } => 14,
            Error::EmptyList { .. } => 15,
            Error::RangeAndHeadTail => 16,
            Error::InvalidCursor { .. } => 17,
            Error::BelowMinimum { .. } => 18,
            Error::HeadAndTail => 19,
            Error::InvalidGlob { .. } => 20,
            Error::InvalidExclude { .. } => 21,
            Error::NotUtf8 { .. } => 22,
            Error::EditFailed { .. } => 23,
            Error::InvalidRegex { .. } => 24,
            Error::ArgumentOutOfRange { .. } => 25,
            Error::TooLarge { .. } => 26,
            Error::LineScanLimit { .. } => 27,
            Error::TooManyPaths { .. } => 28,
            Error::TooManyEdits { .. } => 29,
            Error::TooManyPatterns { .. } => 30,
            Error::PatternTooLong { .. } => 31,
            Error::PatternsTooLong { .. } => 32,
            Error::PatternTooComplex { .. } => 33,
            Error::ScanLimit { .. } => 34,
            Error::RegexTooBig { .. } => 35,
            Error::RegexTooLong { .. } => 36,
            Error::OutOfDescriptors => 37,
            Error::TooManyClientRoots { .. } => 38,
            Error::AppendTooLarge { .. } => 39,
            Error::Changed { .. } => 40,
            Error::VersionMismatch { .. } => 41,
            Error::DirectoryMoved { .. } => 42,
            Error::DestinationExists { .. } => 43,
            Error::Os { .. } => 44,
            Error::Other { .. } => 45,
            Error::Cancelled => 46,
            Error::Panicked { .. } => 47,
            Error::Internal(_) => 48,
            Error::AuditUnavailable { .. } => 49,
            Error::AuditNotRecorded { .. } => 50,
            Error::JournalUnavailable { .. } => 51,
            Error::JournalNotRecorded { .. } => 52,
            Error::JournalFull { .. } => 53,
            Error::ParentMissing { .. } => 54,
        }
    }

    #[test]
    fn every_variant_has_its_kind() {
        let all = every();
        for (i, (e, kind)) in all.iter().enumerate() {
            assert_eq!(rank(e), i, "{e:?} is listed out of place or twice");
            assert_eq!(e.kind(), *kind, "{e:?}");
            // The name is the variant's own, as audit records have it.
            let debug = format!("{e:?}");
            let variant = debug.split(|c: char| !c.is_alphanumeric()).next();
            assert_eq!(Some(e.name()), variant, "{e:?}");
        }
        // `rank` is exhaustive, so its largest value + 1 is the number of
        // variants: every one is listed above.
        assert_eq!(all.len(), 55);
    }

    #[test]
    fn kinds_spell_as_logs_show_them() {
        assert_eq!(ErrorKind::Escape.to_string(), "escape");
        assert_eq!(Error::Cancelled.kind().as_str(), "cancelled");
    }
}
