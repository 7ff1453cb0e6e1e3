//! `move_file`: placeholder until the write side lands.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Ctx, Output};
use crate::error::{Error, Result};

/// The tool description.
pub const DESCRIPTION: &str = "not yet implemented";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The path.
    pub path: String,
}

/// Not implemented yet.
pub fn run(_ctx: &Ctx, _p: Params) -> Result<Output> {
    Err(Error::Invalid("not implemented".to_owned()))
}
