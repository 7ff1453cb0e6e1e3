//! The stable name of each [`Error`] variant, for the audit log.
//!
//! Owns: [`Error::name`]. The match names every variant (no `_` arm), so a
//! new variant does not build until it is given a name; a name, once in
//! audit logs, does not change (a test in `kind` checks that each is the
//! variant's own).
//! May touch: nothing (no I/O).

use super::Error;

impl Error {
    /// The variant's name (`OutsideRoots`, `Os`, `VersionMismatch`, …):
    /// what an audit record says went wrong, without the message (which
    /// names paths and details).
    pub fn name(&self) -> &'static str {
        match self {
            Error::OutsideRoots { .. } => "OutsideRoots",
            Error::ParentMissing { .. } => "ParentMissing",
            Error::NoRootInForce { .. } => "NoRootInForce",
            Error::RootMoved { .. } => "RootMoved",
            Error::Protected { .. } => "Protected",
            Error::MoveChangesRules { .. } => "MoveChangesRules",
            Error::InvalidPath { .. } => "InvalidPath",
            Error::NotARegularFile { .. } => "NotARegularFile",
            Error::TooLarge { .. } => "TooLarge",
            Error::InvalidArguments { .. } => "InvalidArguments",
            Error::EmptyList { .. } => "EmptyList",
            Error::RangeAndHeadTail => "RangeAndHeadTail",
            Error::InvalidCursor { .. } => "InvalidCursor",
            Error::BelowMinimum { .. } => "BelowMinimum",
            Error::LineScanLimit { .. } => "LineScanLimit",
            Error::HeadAndTail => "HeadAndTail",
            Error::WindowsPath { .. } => "WindowsPath",
            Error::TooManyPaths { .. } => "TooManyPaths",
            Error::TooManyEdits { .. } => "TooManyEdits",
            Error::TooManyPatterns { .. } => "TooManyPatterns",
            Error::PatternTooLong { .. } => "PatternTooLong",
            Error::PatternsTooLong { .. } => "PatternsTooLong",
            Error::PatternTooComplex { .. } => "PatternTooComplex",
            Error::InvalidGlob { .. } => "InvalidGlob",
            Error::InvalidExclude { .. } => "InvalidExclude",
            Error::ScanLimit { .. } => "ScanLimit",
            Error::NotUtf8 { .. } => "NotUtf8",
            Error::EditFailed { .. } => "EditFailed",
            Error::InvalidRegex { .. } => "InvalidRegex",
            Error::RegexTooBig { .. } => "RegexTooBig",
            Error::RegexTooLong { .. } => "RegexTooLong",
            Error::ArgumentOutOfRange { .. } => "ArgumentOutOfRange",
            Error::Cancelled => "Cancelled",
            Error::OutOfDescriptors => "OutOfDescriptors",
            Error::RootsTimeout { .. } => "RootsTimeout",
            Error::TooManyClientRoots { .. } => "TooManyClientRoots",
            Error::Panicked { .. } => "Panicked",
            Error::Internal(_) => "Internal",
            Error::Os { .. } => "Os",
            Error::ReadOnly { .. } => "ReadOnly",
            Error::DanglingSymlink { .. } => "DanglingSymlink",
            Error::Changed { .. } => "Changed",
            Error::VersionMismatch { .. } => "VersionMismatch",
            Error::AuditUnavailable { .. } => "AuditUnavailable",
            Error::AuditNotRecorded { .. } => "AuditNotRecorded",
            Error::JournalUnavailable { .. } => "JournalUnavailable",
            Error::JournalNotRecorded { .. } => "JournalNotRecorded",
            Error::JournalFull { .. } => "JournalFull",
            Error::IfMatchRequired { .. } => "IfMatchRequired",
            Error::DirectoryMoved { .. } => "DirectoryMoved",
            Error::AccessControlNotKept { .. } => "AccessControlNotKept",
            Error::AppendTooLarge { .. } => "AppendTooLarge",
            Error::DestinationExists { .. } => "DestinationExists",
            Error::Move { .. } => "Move",
            Error::Other { .. } => "Other",
        }
    }
}
