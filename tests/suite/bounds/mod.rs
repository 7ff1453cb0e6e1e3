//! Resource bounds: every named limit at and past its value, the reply
//! budget, cancellation, and peak memory under hostile inputs.

mod limits;
mod memory;
mod reply_budget;
mod walks;

use std::path::Path;

use cap_std::fs::Dir;
use serde_json::{Value, json};

use crate::util::{Reply, Server};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn ambient(path: &Path) -> Dir {
    Dir::open_ambient_dir(path, cap_std::ambient_authority())
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// Creates `n` empty files named by `name` in `dir`.
fn create_files(dir: &Path, n: usize, name: impl Fn(usize) -> String) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let d = ambient(dir);
    let flags = rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY;
    for i in 0..n {
        rustix::fs::openat(&d, name(i), flags, rustix::fs::Mode::from(0o644)).expect("create file");
    }
}

/// A chain of `levels` directories named `d` under `base` (plus an empty
/// sibling `e` at every level with `siblings`), created one level at a time
/// through handles, so no path ever reaches PATH_MAX.
fn deep_chain(base: &Path, levels: usize, siblings: bool) -> Dir {
    std::fs::create_dir_all(base).expect("mkdir");
    let mut d = ambient(base);
    for _ in 0..levels {
        d.create_dir("d").expect("mkdir d");
        if siblings {
            d.create_dir("e").expect("mkdir e");
        }
        d = d.open_dir("d").expect("open d");
    }
    d
}

/// The text before a `[truncated: ...]` note, and the note.
fn split_note(text: &str) -> (&str, Option<&str>) {
    match text.find("\n\n[truncated: ") {
        Some(i) => (&text[..i], Some(&text[i + 2..])),
        None => (text, None),
    }
}

/// Nodes in a `directory_tree` JSON text.
fn count_nodes(v: &Value) -> usize {
    v.as_array().map_or(0, |nodes| {
        nodes
            .iter()
            .map(|n| 1 + n.get("children").map_or(0, count_nodes))
            .sum()
    })
}

fn tree_of(reply: &Reply) -> (Value, Option<String>) {
    reply.assert_ok();
    let (json, note) = split_note(&reply.text);
    let tree = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("tree is not JSON ({e}): {:.300}", reply.text));
    (tree, note.map(str::to_owned))
}

/// A call that shows the session is still usable.
#[track_caller]
fn still_works(server: &Server) {
    let r = server.call("list_allowed_directories", json!({}));
    r.assert_ok();
    assert!(r.text.contains("Allowed directories"), "{:?}", r.text);
}
