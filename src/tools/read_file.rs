//! `read_file`: the reference's deprecated name for `read_text_file`, kept
//! so clients and prompts written for the reference keep working. The same
//! arguments, handler and texts. Touches: what `read_text_file` touches.

use super::{
    Bound, Capability, Hints, Notes, OutputKind, Plan, Tool, params, read_text_file, schema,
};

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Read File (Deprecated)",
    description: concat!(
        "Read the complete contents of a file as text. DEPRECATED: Use ",
        read_text_file::name!(),
        " instead."
    ),
    hints: Hints::READ_ONLY,
    input: schema::<read_text_file::Params>,
    paths: &["path"],
    output: OutputKind::Text,
    plan: Plan::text_read,
    notes: Notes {
        advice: None,
        bound: Some(Bound::Read),
    },
    run: |ctx, args| read_text_file::run(ctx, params(NAME, args)?),
};

const NAME: &str = "read_file";
