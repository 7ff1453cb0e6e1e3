//! The reply of a content search (`search_file_contents`): matching lines
//! as `rg -n` prints them, the same matches as data, and the notices that
//! end a cut reply.
//!
//! Owns: the one character budget that both forms of the reply keep on
//! their own (the text, and `structuredContent` as compact JSON), and
//! cutting between two matches (never a whole file at once) ([`Reply`]).
//! How a line is printed is in `line` ([`line_text`]: control characters
//! and Unicode line separators escaped, so a line cannot forge an entry or
//! reach a terminal); the notices and the room they are kept
//! ([`notice_reserve`]) are in `notices`; what the search of one file
//! keeps for the reply, bounded, is in `sink` ([`Collect`]).
//! May touch: nothing (no I/O).

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::text::budget::chars;
use crate::text::fmt::printable;

mod line;
mod notices;
mod sink;

use line::push_line;
pub use line::{Line, line_text};
use notices::{Cut, notices};
pub use notices::{Facts, Halted, Next, content_room, notice_reserve};
pub use sink::{Collect, Keep};

/// What the result lists.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OutputMode {
    /// Matching lines (and context lines), as `rg -n`.
    #[default]
    Content,
    /// The paths of files with at least one match, as `rg -l`.
    Files,
    /// Matching lines per file, as `rg -c`.
    Count,
}

/// What the search of one file gave.
#[derive(Debug, Default)]
pub struct Hits {
    /// Groups of contiguous lines (one group when there is no context).
    pub groups: Vec<Vec<Line>>,
    /// Matching lines seen.
    pub count: u64,
    /// Binary data was found: the file is skipped.
    pub binary: bool,
    /// The search of the file stopped with an error.
    pub failed: bool,
    /// Opened and searched.
    pub searched: bool,
    /// Collection stopped because the matches outgrew the reply budget.
    pub size_stopped: bool,
    /// Collection stopped at its chunk's bound: the file is searched again.
    pub incomplete: bool,
}

/// The reply being built, in path order, within one character budget that
/// the text and the data (as compact JSON) each keep on their own.
#[derive(Debug)]
pub struct Reply {
    mode: OutputMode,
    /// Put before each listed path: the client's spelling of the search path.
    prefix: String,
    /// Context lines asked for (0: no `--` separators).
    context: usize,
    /// `maxResults`.
    max: u64,
    /// `--max-reply-chars` as given (0: none).
    max_reply_chars: usize,
    /// Characters the content may take, in either form.
    room: usize,
    text: String,
    chars: usize,
    items: Vec<Value>,
    json: usize,
    /// Matches (content) or files (files, count) taken.
    taken: u64,
    /// Cut by `maxResults`.
    max_cut: bool,
    /// Cut by the reply size.
    size_cut: bool,
    /// When the reply was cut in or just before a file: how many of that
    /// file's matches it took.
    cut_at: Option<u64>,
}

/// Characters of the data's frame: `{"matches":[],"filesSearched":N,
/// "truncated":false}` with the largest `N`.
const JSON_FRAME: usize = 64;

impl Reply {
    /// An empty reply: paths printed under `prefix`, `context` lines of
    /// context, at most `max` results, within `--max-reply-chars`
    /// `max_reply_chars` (0: the walk tools' own text bound).
    pub fn new(
        mode: OutputMode,
        prefix: String,
        context: usize,
        max: u64,
        max_reply_chars: usize,
    ) -> Self {
        Self {
            mode,
            prefix,
            context,
            max,
            max_reply_chars,
            room: content_room(max_reply_chars, max),
            text: String::new(),
            chars: 0,
            items: Vec::new(),
            json: JSON_FRAME,
            taken: 0,
            max_cut: false,
            size_cut: false,
            cut_at: None,
        }
    }

    /// When the last [`Reply::add_file`] cut the reply: how many of that
    /// file's matches it took (0 in the files and count modes), so the next
    /// page goes on from the file with that many skipped.
    pub fn cut_at(&self) -> Option<u64> {
        self.cut_at
    }

    /// The characters the content may take.
    pub fn room(&self) -> usize {
        self.room
    }

    /// Put before each path listed.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Results still wanted.
    pub fn wanted(&self) -> u64 {
        self.max - self.taken.min(self.max)
    }

    /// Whether nothing more will be added.
    pub fn done(&self) -> bool {
        self.max_cut || self.size_cut
    }

    /// Whether anything was cut (by `maxResults` or by size).
    pub fn is_cut(&self) -> bool {
        self.done()
    }

    /// Appends `piece` (lines without the final newline) and `items` if
    /// both fit, each form on its own.
    fn fits(&mut self, piece: &str, items: Vec<Value>) -> bool {
        let n = chars(piece) + usize::from(!self.text.is_empty());
        let j: usize = items.iter().map(|v| json_chars(v) + 1).sum();
        if self.chars + n > self.room || self.json + j > self.room {
            self.size_cut = true;
            return false;
        }
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(piece);
        self.chars += n;
        self.json += j;
        self.items.extend(items);
        true
    }

    /// Adds what one file gave.
    pub fn add_file(&mut self, path: &str, hits: Hits) {
        let (was_done, before) = (self.done(), self.taken);
        self.add(path, hits);
        if !was_done && self.done() {
            self.cut_at = Some(match self.mode {
                OutputMode::Content => self.taken - before,
                OutputMode::Files | OutputMode::Count => 0,
            });
        }
    }

    fn add(&mut self, path: &str, hits: Hits) {
        match self.mode {
            OutputMode::Files | OutputMode::Count => {
                if hits.count == 0 {
                    return;
                }
                if self.taken >= self.max {
                    self.max_cut = true;
                    return;
                }
                let shown = printable(path);
                let (line, item) = if self.mode == OutputMode::Files {
                    (shown.into_owned(), json!({"path": path}))
                } else {
                    (
                        format!("{shown}:{}", hits.count),
                        json!({"path": path, "count": hits.count}),
                    )
                };
                if self.fits(&line, vec![item]) {
                    self.taken += 1;
                }
            }
            OutputMode::Content => {
                let shown_matches = hits.groups.iter().flatten().filter(|l| l.is_match).count();
                let more = hits.count > shown_matches as u64;
                for group in &hits.groups {
                    if !self.add_group(path, group) {
                        return;
                    }
                }
                if more && self.taken >= self.max {
                    self.max_cut = true;
                }
                if hits.size_stopped {
                    self.size_cut = true;
                }
            }
        }
    }

    /// Adds a group's matches one at a time, each with its context lines,
    /// while they fit; false once the reply is cut.
    fn add_group(&mut self, path: &str, group: &[Line]) -> bool {
        let shown = printable(path);
        for (k, seg) in segments(group, self.context).into_iter().enumerate() {
            if self.taken >= self.max {
                self.max_cut = true;
                return false;
            }
            let mut piece = String::new();
            if k == 0 && self.context > 0 && !self.text.is_empty() {
                piece.push_str("--\n");
            }
            let lines = group.get(seg.start..seg.end).unwrap_or_default();
            for (i, l) in lines.iter().enumerate() {
                if i > 0 {
                    piece.push('\n');
                }
                push_line(&mut piece, &shown, l);
            }
            let item = seg.item(path, group, self.context);
            if self.fits(&piece, vec![item]) {
                self.taken += 1;
                continue;
            }
            if self.taken == 0 {
                self.first_match_alone(path, &shown, group, seg.at);
            }
            return false;
        }
        true
    }

    /// The first match of the reply did not fit with its context: it is
    /// shown alone, its text cut to the room left, so that a reply never
    /// says less than that a match exists.
    fn first_match_alone(&mut self, path: &str, shown: &str, group: &[Line], at: usize) {
        let Some(l) = group.get(at) else { return };
        let head = format!("{shown}:{}:", l.number);
        let frame = json_chars(&json!({"path": path, "line": l.number, "text": ""}));
        let left = self
            .room
            .saturating_sub(chars(&head).max(frame) + JSON_FRAME + 16);
        // Cut by characters, then shrink until its JSON (escapes count) fits.
        let mut keep: String = l.text.chars().take(left).collect();
        while json_chars(&Value::String(keep.clone())) > left + 2 && !keep.is_empty() {
            keep.pop();
        }
        let line = Line {
            number: l.number,
            text: keep,
            is_match: true,
        };
        let mut piece = String::new();
        push_line(&mut piece, shown, &line);
        let item = json!({"path": path, "line": line.number, "text": line.text});
        if self.fits(&piece, vec![item]) {
            self.taken += 1;
        }
        self.size_cut = true;
    }

    /// The reply's text and data, ending with the notices that apply.
    pub fn finish(mut self, facts: &Facts, next: &Next) -> (String, Value) {
        let mut text = if !self.text.is_empty() {
            std::mem::take(&mut self.text)
        } else if self.size_cut {
            "Matches were found, but the first does not fit the reply limit.".to_owned()
        } else {
            "No matches found".to_owned()
        };
        let cut = Cut {
            max_cut: self.max_cut,
            size_cut: self.size_cut,
            mode: self.mode,
            max: self.max,
            max_reply_chars: self.max_reply_chars,
            reserve: notice_reserve(self.max_reply_chars, self.max),
            any_shown: !self.items.is_empty(),
        };
        let mut notes = notices(&cut, facts, next);
        let all = chars(&text) + notes.iter().map(|n| chars(n) + 1).sum::<usize>() + 2;
        if self.max_reply_chars != 0 && all > self.max_reply_chars {
            // No room left for the cursor (a small budget).
            notes = notices(&cut, facts, &Next::Narrow);
        }
        if !notes.is_empty() {
            text.push_str("\n\n");
            text.push_str(&notes.join("\n"));
        }
        let truncated = self.max_cut || self.size_cut || facts.halted.is_some();
        let key = if self.mode == OutputMode::Content {
            "matches"
        } else {
            "files"
        };
        let data = json!({
            key: self.items,
            "filesSearched": facts.searched,
            "truncated": truncated,
        });
        (text, data)
    }
}

/// Characters of `v` as compact JSON.
fn json_chars(v: &Value) -> usize {
    serde_json::to_string(v).map_or(0, |s| chars(&s))
}

/// One match of a group with the context lines that belong to it: those
/// before it (after the previous match's share) and after it (up to
/// `context` lines, the rest going to the next match). The segments of a
/// group cover it, in order, once.
struct Segment {
    start: usize,
    at: usize,
    end: usize,
}

impl Segment {
    fn item(&self, path: &str, group: &[Line], context: usize) -> Value {
        let entry = |l: &Line| json!({"line": l.number, "text": l.text});
        let Some(l) = group.get(self.at) else {
            return Value::Null;
        };
        let mut item = json!({"path": path, "line": l.number, "text": l.text});
        if context > 0 {
            let before = group.get(self.start..self.at).unwrap_or_default();
            let after = group.get(self.at + 1..self.end).unwrap_or_default();
            item["before"] = before.iter().map(entry).collect();
            item["after"] = after.iter().map(entry).collect();
        }
        item
    }
}

fn segments(group: &[Line], context: usize) -> Vec<Segment> {
    let idx: Vec<usize> = group
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_match)
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::with_capacity(idx.len());
    for (k, &i) in idx.iter().enumerate() {
        let start = match k.checked_sub(1).and_then(|p| idx.get(p)) {
            None => 0,
            Some(&p) => p + 1 + (i - p - 1).min(context),
        };
        let end = match idx.get(k + 1) {
            None => group.len(),
            Some(&n) => i + 1 + (n - i - 1).min(context),
        };
        out.push(Segment { start, at: i, end });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: u64, text: &str, is_match: bool) -> Line {
        Line {
            number,
            text: text.to_owned(),
            is_match,
        }
    }

    #[test]
    fn context_lines_go_to_the_nearer_match() {
        // 2 lines of context: b m1 c1 c2 c3 m2 (3 between: 2 after m1, 1 before m2).
        let g = [
            line(1, "b", false),
            line(2, "m1", true),
            line(3, "c1", false),
            line(4, "c2", false),
            line(5, "c3", false),
            line(6, "m2", true),
        ];
        let segs = segments(&g, 2);
        let m: Vec<Value> = segs.iter().map(|s| s.item("p", &g, 2)).collect();
        assert_eq!(m[0]["before"], json!([{"line": 1, "text": "b"}]));
        assert_eq!(
            m[0]["after"],
            json!([{"line": 3, "text": "c1"}, {"line": 4, "text": "c2"}])
        );
        assert_eq!(m[1]["before"], json!([{"line": 5, "text": "c3"}]));
        assert_eq!(m[1]["after"], json!([]));
        // Without context, no before/after keys.
        let m = segments(&g, 0)[0].item("p", &g, 0);
        assert_eq!(m, json!({"path": "p", "line": 2, "text": "m1"}));
    }

    fn reply(max: u64, max_reply_chars: usize, context: usize) -> Reply {
        Reply::new(
            OutputMode::Content,
            String::new(),
            context,
            max,
            max_reply_chars,
        )
    }

    #[test]
    fn the_reply_cuts_at_max_results_inside_a_group() {
        let mut r = reply(2, crate::limits::MAX_REPLY_CHARS, 1);
        let hits = Hits {
            groups: vec![vec![
                line(1, "m", true),
                line(2, "m", true),
                line(3, "c", false),
                line(4, "m", true),
            ]],
            count: 3,
            ..Hits::default()
        };
        r.add_file("f", hits);
        assert_eq!(r.text, "f:1:m\nf:2:m\nf-3-c");
        assert!(r.max_cut);
        assert_eq!(r.items.len(), 2);
    }

    #[test]
    fn a_group_larger_than_the_reply_is_cut_between_matches() {
        let group: Vec<Line> = (1..=2000)
            .map(|i| line(i, &format!("ERROR request {i} failed"), true))
            .collect();
        let mut r = reply(5000, 4096, 0);
        r.add_file(
            "logs/server.log",
            Hits {
                groups: vec![group],
                count: 2000,
                ..Hits::default()
            },
        );
        assert!(r.size_cut);
        assert!(r.taken > 10, "{}", r.taken);
        let (text, data) = r.finish(&Facts::default(), &Next::Narrow);
        assert!(text.starts_with("logs/server.log:1:ERROR request 1 failed\n"));
        assert!(chars(&text) <= 4096, "{}", chars(&text));
        assert!(json_chars(&data) <= 4096, "{}", json_chars(&data));
    }

    #[test]
    fn every_notice_at_once_fits_the_reserve() {
        for budget in [1024, 4096, crate::limits::MAX_REPLY_CHARS] {
            let mut r = reply(5000, budget, 3);
            let group: Vec<Line> = (1..=5000).map(|i| line(i, &"x".repeat(40), true)).collect();
            r.add_file(
                "p",
                Hits {
                    groups: vec![group],
                    count: 5000,
                    ..Hits::default()
                },
            );
            let facts = Facts {
                halted: Some(Halted::Paths(usize::MAX)),
                failed: u64::MAX,
                big_ignore: u64::MAX,
                binary: 3,
                binary_asked: false,
                searched: u64::MAX,
            };
            let (text, data) = r.finish(&facts, &Next::Narrow);
            assert!(chars(&text) <= budget, "{budget}: {}", chars(&text));
            assert!(
                json_chars(&data) <= budget,
                "{budget}: {}",
                json_chars(&data)
            );
            assert!(
                text.contains(&format!("its {budget}-character limit")),
                "{text}"
            );
        }
    }

    #[test]
    fn a_first_match_too_long_for_the_reply_is_shown_cut() {
        let long = "y".repeat(480);
        let path = "d/".repeat(200) + "f";
        let mut r = reply(10, 1024, 0);
        r.add_file(
            &path,
            Hits {
                groups: vec![vec![line(1, &long, true)]],
                count: 1,
                ..Hits::default()
            },
        );
        let (text, data) = r.finish(&Facts::default(), &Next::Narrow);
        assert!(!text.starts_with("No matches found"), "{text}");
        assert!(chars(&text) <= 1024);
        assert!(json_chars(&data) <= 1024);
    }
}
