//! The referee's library: the corpus runner, the scorecard, and the session
//! fuzzer, shared by the `tuls-referee` binary and the libFuzzer `session`
//! target in fuzz/ (which ClusterFuzzLite runs). See docs/escape-testing.md.

use std::path::PathBuf;

pub mod corpus;
pub mod fuzz;
pub mod policy;
pub mod program;
pub mod rng;
pub mod rpc;
pub mod score;
pub mod session;
pub mod tree;

/// The corpus directory: `--corpus`, else `$TULS_REFEREE_CORPUS`, else
/// `corpus/escape` (every pack) in the current directory, else in this
/// source tree.
pub fn default_corpus() -> PathBuf {
    if let Some(p) = std::env::var_os("TULS_REFEREE_CORPUS") {
        return PathBuf::from(p);
    }
    let here = PathBuf::from("corpus/escape");
    if here.join("VERSION").is_file() {
        return here;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/escape"))
}

/// The corpus version: the `VERSION` file in `dir` or the nearest folder
/// above it.
pub fn corpus_version(dir: &std::path::Path) -> String {
    dir.ancestors()
        .take(4)
        .find_map(|d| std::fs::read_to_string(d.join("VERSION")).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The server runs in a scratch working directory, so relative arguments
/// that name existing files here (`./target/release/tuls`, a script) are
/// made absolute first.
pub fn absolute_args(args: Vec<String>) -> Vec<String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    args.into_iter()
        .map(|a| {
            let p = std::path::Path::new(&a);
            if !a.contains('{') && p.is_relative() && (a.contains('/') || p.is_file()) && p.exists()
            {
                cwd.join(p).to_string_lossy().into_owned()
            } else {
                a
            }
        })
        .collect()
}
