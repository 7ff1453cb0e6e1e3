//! Unit tests of the compiled rule set: effects, composition, the first
//! look against every glob, and failing closed.

use super::*;

impl Rules {
    /// The same rules with every glob run on every path (no first
    /// look at their literals): the oracle for `rules::needles`.
    pub(super) fn without_needles(mut self) -> Self {
        for set in [
            &mut self.hide,
            &mut self.read_only_own,
            &mut self.read_only_default,
            &mut self.exempt,
        ] {
            set.needles = Needles::Always;
        }
        self
    }
}

pub(super) fn rule(p: &str, effect: Effect) -> Rule {
    Rule {
        id: p.to_owned(),
        source: "test".to_owned(),
        pattern: p.to_owned(),
        matcher: Matcher::Glob(p.to_owned()),
        effect,
        default: false,
        position: None,
    }
}

#[test]
fn gitignore_shapes() {
    let r = Rules::new(vec![
        rule(".env", Effect::Hidden),
        rule("/secrets", Effect::Hidden),
        rule("keys/**", Effect::Hidden),
        rule(".git", Effect::ReadOnly),
    ])
    .unwrap();
    let e = |p: &str| r.effect(p, Some(false));
    assert_eq!(e(".env"), Effect::Hidden);
    assert_eq!(e("a/b/.env"), Effect::Hidden);
    assert_eq!(e(".env/x"), Effect::Hidden);
    assert_eq!(e(".envrc"), Effect::None);
    assert_eq!(e("secrets/x"), Effect::Hidden);
    assert_eq!(e("a/secrets/x"), Effect::None);
    assert_eq!(e("keys"), Effect::None);
    assert_eq!(e("keys/k"), Effect::Hidden);
    assert_eq!(e(".git/hooks/pre-commit"), Effect::ReadOnly);
    assert_eq!(e("sub/.git/config"), Effect::ReadOnly);
    assert_eq!(e("src/main.rs"), Effect::None);
    assert_eq!(e(""), Effect::None);
    assert!(r.hides_entry("x/.env", false));
    assert!(!r.hides_entry("x/y", false));
}

/// Where the filesystem folds case (the portable backend, macOS),
/// `./.ENV` is the file `.env`: every rule matches without regard to
/// ASCII case, the walks' quick look too. Elsewhere case counts.
#[test]
fn folding_backends_match_names_without_case() {
    let rules = || {
        let mut file = rule(".ENV-exact", Effect::ReadOnly);
        file.matcher = Matcher::Exact("Docs/Lock".to_owned());
        vec![
            rule(".env", Effect::Hidden),
            rule("/Secrets/**", Effect::Hidden),
            rule(".git", Effect::ReadOnly),
            file,
        ]
    };
    let fold = std::sync::Arc::new(Rules::build(rules(), true).unwrap());
    let exact = std::sync::Arc::new(Rules::build(rules(), false).unwrap());
    for (path, effect) in [
        (".ENV", Effect::Hidden),
        ("a/.Env", Effect::Hidden),
        ("secrets/k", Effect::Hidden),
        ("SECRETS/k", Effect::Hidden),
        (".GIT/config", Effect::ReadOnly),
        ("docs/lock", Effect::ReadOnly),
    ] {
        assert_eq!(fold.effect(path, Some(false)), effect, "{path}");
        assert_eq!(exact.effect(path, Some(false)), Effect::None, "{path}");
    }
    let h = Hide::new(&fold, "a".to_owned()).unwrap();
    assert!(h.hides(".ENV", false) && h.in_dir("").hides(".eNv", false));
    assert!(
        Hide::new(&fold, "SECRETS".to_owned())
            .unwrap()
            .hides("x", false)
    );
    assert!(
        !Hide::new(&exact, "a".to_owned())
            .unwrap()
            .hides(".ENV", false)
    );
    assert_eq!(
        FOLD_CASE,
        cfg!(any(target_os = "macos", feature = "portable"))
    );
}

#[test]
fn exemptions_lift_defaults_only() {
    let mut d = rule(".claude", Effect::ReadOnly);
    d.default = true;
    let mut ex = rule(".claude/commands", Effect::None);
    ex.default = true;
    let r = Rules::new(vec![d, ex, rule("/.claude/commands/x", Effect::ReadOnly)]).unwrap();
    assert_eq!(
        r.effect(".claude/settings.json", Some(false)),
        Effect::ReadOnly
    );
    assert_eq!(r.effect(".claude/commands/a.md", Some(false)), Effect::None);
    assert_eq!(
        r.effect(".claude/commands/x", Some(false)),
        Effect::ReadOnly
    );
}

/// The built-in set: an exemption lifts the protections matched at or
/// above its path, never one matched beneath it.
#[test]
fn an_exemption_lifts_only_what_is_above_it() {
    let rules = super::config::build(&super::config::Spec::default())
        .unwrap()
        .rules;
    let r = Rules::new(rules).unwrap();
    let ro = |p: &str| r.effect(p, Some(false)) == Effect::ReadOnly;
    assert!(ro(".claude/settings.json"));
    assert!(!ro(".claude/skills/foo/SKILL.md"));
    assert!(!ro(".claude/commands/x.md"));
    for p in [
        ".claude/skills/foo/.git/config",
        ".claude/skills/foo/.git/hooks/pre-commit",
        ".claude/skills/foo/.envrc",
        ".claude/skills/foo/.mcp.json",
        ".claude/skills/foo/.vscode/tasks.json",
        ".claude/skills/foo/.husky/pre-commit",
        ".claude/skills/foo/.claude/settings.json",
        ".claude/commands/.git/config",
    ] {
        assert!(ro(p), "{p}");
    }
    assert!(!ro(".claude/skills/foo/.claude/skills/bar/SKILL.md"));
    // A path not yet there is checked both ways.
    assert_eq!(r.effect(".claude/skills/foo/.git", None), Effect::ReadOnly);
    assert_eq!(r.effect(".claude/skills/new", None), Effect::None);
}

/// Patterns for the random rule sets.
const PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "!.env.example",
    "*.pem",
    "id_rsa*",
    "node_modules",
    "node_modules/",
    "**/node_modules/**",
    "/secrets",
    "secrets/**",
    "a/b",
    "a/**/c",
    "**/b/*.txt",
    "!a/b",
    "!b",
    "*",
    "!*.txt",
    "x?z",
    "{b,c}",
    "*.[tT]xt",
    "a/{b,c}",
    "/a",
    "b/",
    "**/c",
    "!**/c",
    "C",
    "a/B/**",
    "ÉÉ",
    "é/x",
    "\\!a",
    "a//b",
    "./a",
    "**",
    "k*",
    "!k1",
    "/k/x",
    "k/**",
    "**/*.pem",
    "**/.env*",
    "/**/k*",
    "**/**/b",
    "**/b/",
    "**/a/**",
    "*key*",
    "k*.pem",
    "*.pem.*",
    "a b",
    "b  ",
    "*1",
    "?1",
    "/*.txt",
    "**/x*/**",
];
/// Names for the random paths.
const NAMES: &[&str] = &[
    "a",
    "b",
    "c",
    "C",
    "A",
    ".env",
    ".ENV",
    ".env.example",
    "k1",
    "k2",
    "key.pem",
    "id_rsa.pub",
    "node_modules",
    "secrets",
    "x.txt",
    "x.TXT",
    "xyz",
    "ÉÉ",
    "éé",
    "é",
    "x",
    "\u{212a}1",
    "\u{212a}",
    "key",
    "monkey",
    "k1.pem",
    "x.pem.bak",
    ".envrc",
    "a b",
    "b ",
    "id",
    "i",
    "kx",
    "x.pen",
    "mod004",
    "ssecrets",
];

/// The walks' quick look decides exactly as the full rule set, on
/// random rule sets (name and path globs, `!`, classes, braces, exact
/// paths, regexes) and random paths, folding case or not.
#[test]
fn quick_look_agrees_with_the_full_set() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut checked = 0;
    for round in 0..400 {
        let mut rules = Vec::new();
        for _ in 0..1 + next(6) {
            let mut r = rule(PATTERNS[next(PATTERNS.len())], Effect::Hidden);
            match next(12) {
                0 => r.matcher = Matcher::Exact(["a/b", "secrets", "c"][next(3)].to_owned()),
                1 => {
                    r.matcher = Matcher::Regex(Box::new(Regex::new("b/k").unwrap()));
                }
                _ => {}
            }
            rules.push(r);
        }
        let fold = round % 2 == 1;
        let r = std::sync::Arc::new(Rules::build(rules.clone(), fold).unwrap());
        let oracle = Rules::build(rules.clone(), fold).unwrap().without_needles();
        for _ in 0..40 {
            let depth = next(4);
            let dir: Vec<&str> = (0..depth).map(|_| NAMES[next(NAMES.len())]).collect();
            let (base, rel_dir) = dir.split_at(next(depth + 1));
            let base = base.join("/");
            let rel_dir = rel_dir.join("/");
            let name = NAMES[next(NAMES.len())];
            let is_dir = next(2) == 0;
            let full: Vec<&str> = dir.iter().copied().chain([name]).collect();
            let want = oracle.hides_entry(&full.join("/"), is_dir);
            let h = Hide::new(&r, base.clone()).expect("hides");
            let rel = if rel_dir.is_empty() {
                name.to_owned()
            } else {
                format!("{rel_dir}/{name}")
            };
            let shown = format!("{rules:?} fold={fold} base={base:?} rel={rel:?} dir={is_dir}");
            assert_eq!(
                r.hides_entry(&full.join("/"), is_dir),
                want,
                "hides_entry {shown}"
            );
            assert_eq!(h.hides(&rel, is_dir), want, "Hide::hides {shown}");
            assert_eq!(h.hides(&rel, is_dir), want, "Hide::hides again {shown}");
            assert_eq!(
                h.in_dir(&rel_dir).hides(name, is_dir),
                want,
                "HideDir {shown}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 400 * 40);
}

/// A name that is not UTF-8 is hidden as its lossy spelling is, whether
/// its bytes are looked at or it takes the full check: with literals and
/// components that are ASCII or not, folding case or not.
#[test]
fn names_that_are_not_utf8_are_matched_as_their_lossy_spelling() {
    let names: &[&[u8]] = &[
        b"a\xff",
        b"\xff.pem",
        b"id_rsa\xff",
        b"\xef\xbf\xbd",
        b"\xff",
        b".env\xfe",
        b"x\xc3",
        "\u{e9}".as_bytes(),
        b"\xffx",
        b"\xff\xff.pem",
        b"node_modules\xff",
        b"id_rsa",
        b"k.pem",
    ];
    let ascii = ["*.pem", "id_rsa*", ".env*", "**/a/**", "!k.pem"];
    let other = [
        "\u{fffd}*",
        "*\u{fffd}",
        "**/\u{fffd}x/**",
        "\u{e9}",
        "/a\u{fffd}",
    ];
    let mut sets: Vec<Vec<&str>> = vec![ascii.to_vec(), other.to_vec()];
    sets.extend(other.iter().map(|o| {
        let mut v = ascii.to_vec();
        v.push(o);
        v
    }));
    for fold in [false, true] {
        for set in &sets {
            let rules: Vec<Rule> = set.iter().map(|p| rule(p, Effect::Hidden)).collect();
            let r = std::sync::Arc::new(Rules::build(rules.clone(), fold).unwrap());
            let oracle = Rules::build(rules, fold).unwrap().without_needles();
            for base in ["", "a", "b"] {
                let h = Hide::new(&r, base.to_owned()).expect("hides");
                let mut d = h.in_dir("");
                for name in names {
                    for is_dir in [false, true] {
                        let lossy = String::from_utf8_lossy(name);
                        let path = if base.is_empty() {
                            lossy.to_string()
                        } else {
                            format!("{base}/{lossy}")
                        };
                        assert_eq!(
                            d.hides_bytes(name, is_dir),
                            oracle.hides_entry(&path, is_dir),
                            "{set:?} fold={fold} {path:?} dir={is_dir}"
                        );
                    }
                }
            }
        }
    }
}

/// The resolver's first look at a path (`rules::needles`) decides
/// exactly as running every glob, for every effect (hidden, read-only,
/// a default and its exemption), on random rule sets and paths, every
/// kind of path (file, directory, not existing), folding case or not.
#[test]
fn first_look_agrees_with_every_glob() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut checked = 0;
    for round in 0..400 {
        let mut rules = Vec::new();
        for _ in 0..1 + next(8) {
            let (effect, default) = [
                (Effect::Hidden, false),
                (Effect::ReadOnly, false),
                (Effect::ReadOnly, true),
                (Effect::None, true),
            ][next(4)];
            let mut r = rule(PATTERNS[next(PATTERNS.len())], effect);
            r.default = default;
            if next(12) == 0 {
                r.matcher = Matcher::Exact(["a/b", "secrets", "c"][next(3)].to_owned());
            }
            rules.push(r);
        }
        let fold = round % 2 == 1;
        let r = Rules::build(rules.clone(), fold).unwrap();
        let oracle = Rules::build(rules.clone(), fold).unwrap().without_needles();
        for _ in 0..40 {
            let depth = 1 + next(4);
            let path: Vec<&str> = (0..depth).map(|_| NAMES[next(NAMES.len())]).collect();
            let path = path.join("/");
            for kind in [Some(false), Some(true), None] {
                assert_eq!(
                    r.effect(&path, kind),
                    oracle.effect(&path, kind),
                    "{rules:?} fold={fold} path={path:?} kind={kind:?}"
                );
            }
            assert_eq!(
                r.hides_entry(&path, false),
                oracle.hides_entry(&path, false),
                "{rules:?} fold={fold} path={path:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 400 * 40);
}

/// Globs that did not compile (only possible past `EAGER_GLOB_BYTES`,
/// where startup stops on it) fail closed: a hidden or read-only set
/// covers every path its globs must decide, an exemption lifts nothing.
#[test]
fn globs_that_did_not_compile_fail_closed() {
    let mut d = rule(".claude", Effect::ReadOnly);
    d.default = true;
    let mut ex = rule("**/.claude/commands", Effect::None);
    ex.default = true;
    let mut r = Rules::new(vec![rule(".env", Effect::Hidden), d, ex]).unwrap();
    for set in [&mut r.hide, &mut r.read_only_default, &mut r.exempt] {
        set.globs.compiled = OnceLock::from(None);
    }
    assert_eq!(r.effect("a/.env", Some(false)), Effect::Hidden);
    assert_eq!(
        r.effect(".claude/commands/x", Some(false)),
        Effect::ReadOnly
    );
    // A path holding none of the globs' literals never needed them.
    assert_eq!(r.effect("src/main.rs", Some(false)), Effect::None);
    let r = std::sync::Arc::new(r);
    let h = Hide::new(&r, String::new()).unwrap();
    assert!(h.hides(".env", false) && h.in_dir("a").hides(".env", false));
    assert!(!h.hides("main.rs", false));
}

/// A set past `EAGER_GLOB_BYTES` is compiled by `Rules::new` (so a set
/// too big to compile stops startup); a smaller one when first needed.
#[test]
fn big_sets_compile_at_startup() {
    let small = Rules::new(vec![rule(".env", Effect::Hidden)]).unwrap();
    assert!(small.hide.globs.compiled.get().is_none());
    assert_eq!(small.effect(".env", Some(false)), Effect::Hidden);
    assert!(small.hide.globs.compiled.get().is_some());
    let many: Vec<Rule> = (0..EAGER_GLOB_BYTES / 8)
        .map(|i| rule(&format!("n{i:06}.x"), Effect::Hidden))
        .collect();
    let big = Rules::new(many).unwrap();
    assert!(matches!(big.hide.globs.compiled.get(), Some(Some(_))));
}

/// Only a line with a class, braces or an escape can fail to parse, so
/// only such a line is parsed at startup: a bad one still stops it,
/// naming the rule; the others parse when first needed.
#[test]
fn lines_that_may_not_parse_are_parsed_at_startup() {
    for bad in ["*.[z-a]", "{a,b", "a}", "x\\"] {
        let e = Rules::new(vec![rule(bad, Effect::Hidden)]).unwrap_err();
        assert!(e.contains(&format!("rule '{bad}'")), "{bad}: {e}");
    }
    let r = Rules::new(vec![rule("**/a**b?/c*", Effect::Hidden)]).unwrap();
    assert!(r.hide.globs.compiled.get().is_none());
    assert_eq!(r.effect("x/aZZb1/cd", Some(false)), Effect::Hidden);
    assert!(matches!(r.hide.globs.compiled.get(), Some(Some(_))));
}

/// The built-in set covers a home's start-up files at any depth (a root
/// that contains homes), and `--allow-path 'dotfiles/**'` lifts them in a
/// dotfiles repository, as the docs say.
#[test]
fn home_files_are_protected_at_any_depth_and_can_be_lifted() {
    let spec = super::config::Spec {
        allow: vec!["dotfiles/**".to_owned()],
        ..Default::default()
    };
    let r = Rules::new(super::config::build(&spec).unwrap().rules).unwrap();
    let ro = |p: &str| r.effect(p, Some(false)) == Effect::ReadOnly;
    for p in [
        ".bashrc",
        "home/alice/.bashrc",
        "home/alice/.config/systemd/user/x.service",
        "home/bob/.ssh/authorized_keys",
        "srv/app/venv/pyvenv.cfg",
    ] {
        assert!(ro(p), "{p}");
    }
    assert!(!ro("dotfiles/.bashrc"));
    assert!(!ro("home/alice/.config/other/x"));
}

/// The four rules-file methods read one path form, the path with a leading
/// `/`: `contains "/.env"` covers the top-level `.env`, `regex "^/secrets"`
/// the top-level `secrets`; `exact` and `prefix` take the `/` or leave it.
#[test]
fn rules_file_methods_agree_on_a_leading_slash() {
    let file = r#"{"rules":[
      {"id":"c","pattern":"/.env","match":"contains","operations":["read"]},
      {"id":"r","pattern":"^/secrets","match":"regex","operations":["read"]},
      {"id":"e","pattern":"/Cargo.lock","match":"exact","operations":["write"]},
      {"id":"p","pattern":"docs/private","match":"prefix","operations":["write"]}
    ]}"#;
    let spec = super::config::Spec {
        no_default: true,
        file: Some(("r.json".to_owned(), file.as_bytes().to_vec())),
        ..Default::default()
    };
    let r = Rules::new(super::config::build(&spec).unwrap().rules).unwrap();
    let e = |p: &str| r.effect(p, Some(false));
    for p in [".env", "a/.env", "secrets", "secrets/k"] {
        assert_eq!(e(p), Effect::Hidden, "{p}");
    }
    for p in ["Cargo.lock", "docs/private/x"] {
        assert_eq!(e(p), Effect::ReadOnly, "{p}");
    }
    for p in ["a/secrets/k", "x.env", "my-secrets", "a/Cargo.lock", "docs"] {
        assert_eq!(e(p), Effect::None, "{p}");
    }
}

/// A rule that can never do what it reads stops startup naming it; an
/// `--allow-path` under no built-in protection is a warning.
#[test]
fn rules_that_cannot_do_what_they_read_are_refused() {
    let flags = |hide: &[&str], allow: &[&str], no_default: bool| {
        super::config::build(&super::config::Spec {
            hide: hide.iter().map(|s| (*s).to_owned()).collect(),
            allow: allow.iter().map(|s| (*s).to_owned()).collect(),
            no_default,
            ..Default::default()
        })
    };
    for (hide, needle) in [
        (&["/"][..], "names no path"),
        (&["!"], "names no path"),
        (&["//"], "names no path"),
        (&["a[b"], "unclosed '['"),
        (&["[]"], "unclosed '['"),
        (&["!x"], "lifts nothing"),
        (&["!.env.example", ".env*"], "comes before '.env*'"),
        (
            &[".env", "!.env.example", ".env.*"],
            "comes before '.env.*'",
        ),
        (&["!*.bak", "*"], "comes before '*'"),
    ] {
        let e = flags(hide, &[], false).unwrap_err();
        assert!(
            e.contains("rule '--hide'") && e.contains(needle),
            "{hide:?}: {e}"
        );
    }
    for hide in [
        &[".env*", "!.env.example"][..],
        &["**"],
        &["a\\[b", "[ab]c", "[]]x", "[!]]y"],
        &["secrets", "!secrets/readme"],
    ] {
        let b = flags(hide, &[], false).unwrap();
        assert!(b.warnings.is_empty(), "{hide:?}: {:?}", b.warnings);
    }
    let warned = |allow: &str, no_default: bool| {
        !flags(&[], &[allow], no_default)
            .unwrap()
            .warnings
            .is_empty()
    };
    assert!(warned("src/generated", false));
    assert!(warned("/build", false));
    assert!(warned(".vscode", true));
    for allow in [
        ".vscode",
        "/.git/hooks",
        ".claude/settings.json",
        "**/x",
        ".bashrc",
    ] {
        assert!(!warned(allow, false), "{allow}");
    }
}
