//! Why `tuls filesystem` stopped before or while serving, with the exit
//! status that says so.
//!
//! Owns: the exit status of each kind of startup failure (2 for what the
//! operator must fix in the command line or configuration, 1 for failures at
//! run time). The message is printed by [`crate::run`] as `tuls: error:
//! <message>`.
//! May touch: nothing (no I/O).

/// A failure that stops `tuls filesystem`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartupError {
    /// The command line or a configuration the operator gave is wrong: a
    /// tool selector, an allowed directory, a path rule or rules file, the
    /// audit log or the undo journal. Nothing was served. Exit status 2.
    #[error("{0}")]
    Config(String),
    /// tuls could not start serving (the server or its runtime). Exit status 1.
    #[error("{0}")]
    Start(String),
    /// The session ended with an error. Exit status 1.
    #[error("{0}")]
    Session(String),
}

impl StartupError {
    /// The process's exit status for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            StartupError::Config(_) => 2,
            StartupError::Start(_) | StartupError::Session(_) => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_errors_exit_2_and_run_time_errors_1() {
        let m = || "m".to_owned();
        assert_eq!(StartupError::Config(m()).exit_code(), 2);
        assert_eq!(StartupError::Start(m()).exit_code(), 1);
        assert_eq!(StartupError::Session(m()).exit_code(), 1);
        // The message is the cause's, unchanged.
        assert_eq!(StartupError::Config("bad".into()).to_string(), "bad");
    }
}
