//! `create_directory`: `mkdir -p`, one component at a time through the root
//! handle. Touches: scope.
//!
//! Each prefix (`a`, `a/b`, `a/b/c`) is created with `Dir::create_dir` on the
//! root, which resolves the prefix's parent beneath the root every time, so
//! a component swapped for a symlink out of the root mid-call is an escape
//! error, never a directory created outside. An existing component must be a
//! directory, possibly through an in-root symlink.

use std::io;

use rmcp::schemars::{self, JsonSchema};
use rustix::io::Errno;
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, OsPaths, Result};

/// The tool description.
pub const DESCRIPTION: &str =
    "Create a directory, with any missing parents. Succeeds silently if it already exists.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Create Directory",
    description: DESCRIPTION,
    hints: Hints::write(true, false),
    input: schema::<Params>,
    output: OutputKind::Text,
    plan: Plan::small,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "create_directory";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory to create, with any missing parents.
    pub path: String,
}

/// Creates the directory and its missing parents.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    let given = p.path.as_str();
    if t.walked().is_some() {
        // Path rules: the missing directories are made beneath the handle
        // the rule walk produced, each checked against the rules.
        crate::fs::canon::create_dirs(&t)?;
        return Ok(Output::Text(format!(
            "Successfully created directory {given}"
        )));
    }
    let dir = &t.root.dir;
    let mut prefix = String::new();
    for (i, seg) in t.segs.iter().enumerate() {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(seg);
        // `.` and a non-climbing `..` name directories already checked.
        if seg == "." || seg == ".." {
            continue;
        }
        let last = i + 1 == t.segs.len();
        match dir.create_dir(&prefix) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                existing_dir(dir, &prefix, last, given)?;
            }
            Err(e) => return Err(Error::io("mkdir", given, &e)),
        }
    }
    Ok(Output::Text(format!(
        "Successfully created directory {given}"
    )))
}

/// Checks that an existing `prefix` is (or leads, inside the root, to) a
/// directory.
fn existing_dir(dir: &cap_std::fs::Dir, prefix: &str, last: bool, given: &str) -> Result<()> {
    match dir.metadata(prefix) {
        Ok(md) if md.is_dir() => Ok(()),
        Ok(_) if last => Err(Error::os(Errno::EXIST, "mkdir", OsPaths::one(given))),
        Ok(_) => Err(Error::os(Errno::NOTDIR, "mkdir", OsPaths::one(given))),
        // The name exists but leads nowhere: a dangling in-root link.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::DanglingSymlink {
            path: given.to_owned(),
        }),
        Err(e) => Err(Error::io("mkdir", given, &e)),
    }
}
