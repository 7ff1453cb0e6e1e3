//! The `tuls` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    tuls::run::main()
}
