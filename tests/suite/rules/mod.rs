//! Path rules (`--hide`, `--read-only-path`, the built-in protections),
//! through the binary, case by case for every tool.

mod cases;
