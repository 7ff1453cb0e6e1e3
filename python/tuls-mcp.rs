//! `tuls-mcp`: the tuls binary under the PyPI package's name, so that
//! `uvx tuls-mcp` and `pipx run tuls-mcp` find it. Built only for the wheel
//! (the `pypi-entry-point` feature); the same program as src/main.rs, whose
//! module (with its allocator module) it includes.

#[path = "../src/main.rs"]
mod tuls_main;

fn main() -> std::process::ExitCode {
    tuls_main::main()
}
