//! Path rules (`--hide`, `--read-only-path`, the built-in protections),
//! through the binary: case by case for every tool, the operator's flags,
//! and links swapped in or made outside tuls.

mod aliases;
mod cases;
mod exempt;
mod flags;
mod git;
mod homes;
mod links;
mod nested;
mod refusals;
mod twin;
