//! What the tools add to the `initialize` instructions.
//!
//! Owns: [`Notes`], which each tool's entry carries ([`super::Tool::notes`]):
//! when the tool beats another way, and which bound the instructions state
//! for it; and [`instructions`], which joins the enabled tools' notes (the
//! advice in one sentence, then each bound once, in table order).
//! May touch: nothing (it formats the table and the limits).

use super::TOOLS;
use crate::limits::Limits;

/// What a tool adds to the `initialize` instructions when it is enabled.
#[derive(Debug, Clone, Copy)]
pub struct Notes {
    /// When the tool beats another way, as a clause that starts in lower
    /// case, and its place among the enabled tools' clauses (lower first),
    /// which make one sentence, joined by `; `.
    pub advice: Option<(u8, &'static str)>,
    /// The bound the instructions state for the tool.
    pub bound: Option<Bound>,
}

impl Notes {
    /// Nothing to add.
    pub const NONE: Notes = Notes {
        advice: None,
        bound: None,
    };
}

/// A bound the `initialize` instructions state, once for all the enabled
/// tools it applies to.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// `--max-read-bytes`: a longer file is read in parts.
    Read,
    /// `--max-entries` and `--max-depth`: where a walk stops.
    Walk,
    /// A bound of the tool's own, in its own words (one sentence).
    Own(fn(&Limits) -> String),
}

impl Bound {
    /// The sentence that states the bound.
    fn sentence(&self, limits: &Limits) -> String {
        match self {
            Bound::Read => format!(
                "A file over {} bytes is read in parts (head, tail, or offset and limit).",
                limits.max_read_bytes
            ),
            Bound::Walk => format!(
                "A walk stops at {} entries or {} levels and says so.",
                limits.max_walk_entries, limits.max_walk_depth
            ),
            Bound::Own(own) => own(limits),
        }
    }
}

/// The tools' part of the `initialize` instructions for the tools
/// `enabled` names: the advice of every enabled tool in one sentence, then
/// each bound once, in the order the table first names it. Every sentence
/// starts with a space.
pub fn instructions(enabled: impl Fn(&str) -> bool, limits: &Limits) -> String {
    let on = || TOOLS.iter().filter(|t| enabled(t.name));
    let mut s = String::new();
    let mut advice: Vec<(u8, &str)> = on().filter_map(|t| t.notes.advice).collect();
    advice.sort_by_key(|(place, _)| *place);
    let advice: Vec<&str> = advice.into_iter().map(|(_, clause)| clause).collect();
    let advice = advice.join("; ");
    let mut chars = advice.chars();
    if let Some(first) = chars.next() {
        s.push(' ');
        s.extend(first.to_uppercase());
        s.push_str(chars.as_str());
        s.push('.');
    }
    let mut said = Vec::new();
    for bound in on().filter_map(|t| t.notes.bound) {
        let kind = std::mem::discriminant(&bound);
        if !matches!(bound, Bound::Own(_)) {
            if said.contains(&kind) {
                continue;
            }
            said.push(kind);
        }
        s.push(' ');
        s.push_str(&bound.sentence(limits));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text for every tool, and for a few selections, as the server
    /// said it when these sentences were written out in `server.rs`.
    #[test]
    fn the_enabled_tools_notes_make_the_instructions() {
        let l = Limits::default();
        let (read, walk) = (l.max_read_bytes, l.max_walk_entries);
        let depth = l.max_walk_depth;
        let append = crate::limits::MAX_APPEND_BYTES;
        let ranges = "read part of a file, read_text_file with offset and limit (lineNumbers: true numbers the lines) beats reading it whole.";
        assert_eq!(
            instructions(|_| true, &l),
            format!(
                " To find text, search_file_contents beats reading files; to {ranges} A file over {read} bytes is read in parts (head, tail, or offset and limit). One append_file adds at most {append} bytes. A walk stops at {walk} entries or {depth} levels and says so."
            )
        );
        assert_eq!(
            instructions(|t| t == "read_text_file", &l),
            format!(
                " To {ranges} A file over {read} bytes is read in parts (head, tail, or offset and limit)."
            )
        );
        assert_eq!(
            instructions(|t| t == "search_file_contents", &l),
            format!(
                " To find text, search_file_contents beats reading files. A walk stops at {walk} entries or {depth} levels and says so."
            )
        );
        assert_eq!(instructions(|t| t == "read_media_file", &l), "");
        assert_eq!(instructions(|_| false, &l), "");
    }
}
