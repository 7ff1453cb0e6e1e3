//! A minimal reader of git's config syntax, for the few keys that name
//! files git runs or obeys (`core.hooksPath`, `include.path`,
//! `includeIf.<condition>.path`).
//!
//! Owns: turning a config file's bytes into `(section, subsection, key,
//! value)` entries by git's rules (`git help config`, "Syntax"): `[section]`
//! and `[section "subsection"]` headers (a section name is folded to lower
//! case, a quoted subsection kept as written, `\` escaping its next
//! character; the old `[section.subsection]` form is folded whole), keys
//! folded to lower case, `key = value` or a bare `key`, a value's
//! surrounding whitespace dropped and the whitespace inside it kept,
//! double quotes, the escapes `\\`, `\"`,
//! `\n`, `\t`, `\b`, a `\` ending a line continuing it, `#` and `;`
//! starting a comment outside quotes, and a key on the header's line
//! (`[core] hooksPath = x`).
//!
//! A line git would refuse is skipped and reading goes on with the next
//! one: git then runs nothing at all, and tuls, reading more than git would,
//! can only protect more. Why not a crate: `gix-config` brings six other
//! `gix-*` crates, `winnow`, `bstr` and more for three keys; this file is
//! bounded by the bytes given (the caller reads at most
//! [`crate::limits::MAX_GIT_CONFIG_BYTES`]).
//! May touch: nothing (no I/O).

/// One `key = value` of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The section, lower case (`core`, `includeif`).
    pub section: String,
    /// The subsection as written (`gitdir:~/work/`), if any.
    pub subsection: Option<String>,
    /// The key, lower case (`hookspath`).
    pub key: String,
    /// The value; `None` for a bare key (a boolean true).
    pub value: Option<String>,
}

impl Entry {
    /// The key as git names it: `section[.subsection].key`, the section and
    /// key as written in git's docs (`includeIf.<condition>.path` reads
    /// `includeif.<condition>.path`).
    pub fn name(&self) -> String {
        match &self.subsection {
            Some(s) => format!("{}.{s}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }
}

/// Reads every entry of `bytes`, a config file. Returns the entries and
/// how many lines were skipped as git would refuse them.
pub fn parse(bytes: &[u8]) -> (Vec<Entry>, usize) {
    let text = String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes));
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        section: None,
        subsection: None,
        out: Vec::new(),
        bad: 0,
    };
    while p.i < p.s.len() {
        if p.line().is_err() {
            p.bad += 1;
            p.skip_line();
        }
    }
    (p.out, p.bad)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    section: Option<String>,
    subsection: Option<String>,
    out: Vec<Entry>,
    bad: usize,
}

/// A line git refuses.
struct Bad;

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r')) {
            self.i += 1;
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == b'\n' {
                break;
            }
        }
    }

    /// One line (and, for a header, the key that may follow it).
    fn line(&mut self) -> Result<(), Bad> {
        self.skip_blanks();
        if self.peek() == Some(b'[') {
            self.i += 1;
            self.header()?;
            self.skip_blanks();
        }
        match self.peek() {
            None => Ok(()),
            Some(b'\n') => {
                self.i += 1;
                Ok(())
            }
            Some(b'#' | b';') => {
                self.skip_line();
                Ok(())
            }
            Some(_) => self.entry(),
        }
    }

    /// `[section]`, `[section "sub"]` or `[section.sub]`, after the `[`.
    fn header(&mut self) -> Result<(), Bad> {
        let mut name = String::new();
        loop {
            match self.peek() {
                Some(b']') => {
                    self.i += 1;
                    if name.is_empty() {
                        return Err(Bad);
                    }
                    self.section = Some(name);
                    self.subsection = None;
                    return Ok(());
                }
                Some(b' ' | b'\t') => break,
                Some(c) if c.is_ascii_alphanumeric() || c == b'-' || c == b'.' => {
                    name.push(c.to_ascii_lowercase() as char);
                    self.i += 1;
                }
                _ => return Err(Bad),
            }
        }
        self.skip_blanks();
        if self.peek() != Some(b'"') || name.is_empty() {
            return Err(Bad);
        }
        self.i += 1;
        let mut sub = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => return Err(Bad),
                Some(b'"') => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        None | Some(b'\n') => return Err(Bad),
                        Some(c) => sub.push(c),
                    }
                    self.i += 1;
                }
                Some(c) => {
                    sub.push(c);
                    self.i += 1;
                }
            }
        }
        if self.peek() != Some(b']') {
            return Err(Bad);
        }
        self.i += 1;
        self.section = Some(name);
        self.subsection = Some(String::from_utf8_lossy(&sub).into_owned());
        Ok(())
    }

    /// `key = value` or a bare `key`, to the end of its (continued) line.
    fn entry(&mut self) -> Result<(), Bad> {
        let Some(section) = self.section.clone() else {
            return Err(Bad);
        };
        let mut key = String::new();
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() => {}
            _ => return Err(Bad),
        }
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'-' {
                key.push(c.to_ascii_lowercase() as char);
                self.i += 1;
            } else {
                break;
            }
        }
        self.skip_blanks();
        let value = match self.peek() {
            None => None,
            Some(b'\n') => {
                self.i += 1;
                None
            }
            Some(b'#' | b';') => {
                self.skip_line();
                None
            }
            Some(b'=') => {
                self.i += 1;
                Some(self.value()?)
            }
            Some(_) => return Err(Bad),
        };
        self.out.push(Entry {
            section,
            subsection: self.subsection.clone(),
            key,
            value,
        });
        Ok(())
    }

    /// A value, after the `=`, through the end of its line.
    fn value(&mut self) -> Result<String, Bad> {
        let mut out = Vec::new();
        let mut quote = false;
        let mut space: Vec<u8> = Vec::new();
        let mut comment = false;
        loop {
            let c = match self.peek() {
                // An open quote at the end of the line: the newline is left
                // for the caller's skip.
                None | Some(b'\n') if quote => return Err(Bad),
                None => break,
                Some(b'\n') => {
                    self.i += 1;
                    break;
                }
                Some(c) => c,
            };
            self.i += 1;
            if comment {
                continue;
            }
            if (c == b' ' || c == b'\t' || c == b'\r') && !quote {
                if !out.is_empty() {
                    space.push(c);
                }
                continue;
            }
            if !quote && (c == b'#' || c == b';') {
                comment = true;
                continue;
            }
            out.append(&mut space);
            match c {
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(Bad);
                    };
                    self.i += 1;
                    match e {
                        b'\n' => {}
                        b'\r' if self.peek() == Some(b'\n') => self.i += 1,
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'n' => out.push(b'\n'),
                        b'\\' | b'"' => out.push(e),
                        _ => return Err(Bad),
                    }
                }
                b'"' => quote = !quote,
                c => out.push(c),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(text: &str, name: &str) -> Vec<Option<String>> {
        parse(text.as_bytes())
            .0
            .into_iter()
            .filter(|e| e.name() == name)
            .map(|e| e.value)
            .collect()
    }

    #[test]
    fn reads_git_syntax() {
        let text = "\u{feff}# c\n[Core]\n\tHooksPath = .githooks ; comment\n\
                    [include]\npath=\"a b\"   # x\n\
                    [includeIf \"gitdir:~/w\\\"x/\"]\n  PATH = one\\\n two\n\
                    [core] hookspath = \"q;#\"\\t\n[a.B]\nk\n[x \"Y\"] k = 1\n";
        assert_eq!(
            get(text, "core.hookspath"),
            [Some(".githooks".into()), Some("q;#\t".into())]
        );
        assert_eq!(get(text, "include.path"), [Some("a b".into())]);
        assert_eq!(
            get(text, "includeif.gitdir:~/w\"x/.path"),
            [Some("one two".into())]
        );
        assert_eq!(get(text, "a.b.k"), [None]);
        assert_eq!(get(text, "x.Y.k"), [Some("1".into())]);
    }

    #[test]
    fn whitespace_inside_a_value_is_kept_and_the_ends_are_dropped() {
        assert_eq!(get("[c]\nk =  a \t b  \n", "c.k"), [Some("a \t b".into())]);
        assert_eq!(get("[c]\nk = \" a \"\n", "c.k"), [Some(" a ".into())]);
    }

    #[test]
    fn a_bad_line_is_skipped_and_reading_goes_on() {
        let (e, bad) = parse(b"k = before\n[c]\n1x = y\nk = \"open\n[d]\nk = z\n[e \"s\n[f]k=w");
        assert_eq!(bad, 4);
        let names: Vec<String> = e.iter().map(Entry::name).collect();
        assert_eq!(names, ["d.k", "f.k"]);
    }
}
