//! The escape vector corpus (corpus/escape/: the `escape` pack in v1/, the
//! `write-then-execute` and `secrets` packs in v2/): loading, a structural
//! check that mirrors corpus/escape/schema.json, and running one vector
//! against a server, judged from ground truth (the tree outside the root,
//! protected files' bytes, whether a real program ran the agent's code, and
//! replies compared with a twin tree's).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::policy::Profile;
use crate::rpc::{CallReply, Era, NoReply, Server, call_reply};
use crate::tree::{BuildError, Sandbox, diff};

pub const CLASSES: [&str; 8] = [
    "content_read",
    "write_outside",
    "metadata_leak",
    "existence_oracle",
    "hang",
    "control",
    "write_then_execute",
    "secrets",
];
pub const PACKS: [&str; 3] = ["escape", "write-then-execute", "secrets"];
const TYPES: [&str; 9] = [
    "file", "dir", "symlink", "fifo", "socket", "chardev", "deep", "hardlink", "git_repo",
];
/// Escape classes that only mean something under the vector's policy: with
/// no policy available they are reported, not counted.
pub const POLICY_CLASSES: [&str; 4] = [
    "executed",
    "control_written",
    "secret_read",
    "hidden_differs",
];

pub struct Vector {
    pub v: Value,
}

impl Vector {
    pub fn id(&self) -> &str {
        self.v["id"].as_str().unwrap_or("?")
    }
    pub fn class(&self) -> &str {
        self.v["class"].as_str().unwrap_or("?")
    }
    /// The pack (`escape` when the vector names none, as every v1 vector).
    pub fn pack(&self) -> &str {
        self.v["pack"].as_str().unwrap_or("escape")
    }
}

/// Every `*.json` beneath `dir` (any depth; schema.json is not a vector).
fn json_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    for e in fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
    {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            json_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "json")
            && p.file_name().is_some_and(|n| n != "schema.json")
        {
            out.push(p);
        }
    }
    Ok(())
}

/// Loads every vector beneath a corpus directory (sorted by path), checked:
/// `corpus/escape` holds every pack, `corpus/escape/v1` the escape pack alone.
pub fn load(dir: &Path) -> Result<Vec<Vector>, String> {
    let mut files = Vec::new();
    json_files(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for f in files {
        let text = fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        let list = match v {
            Value::Array(a) => a,
            one => vec![one],
        };
        for v in list {
            check(&v).map_err(|e| format!("{}: {}: {e}", f.display(), v["id"]))?;
            if !ids.insert(v["id"].as_str().unwrap_or("").to_string()) {
                return Err(format!("{}: duplicate id {}", f.display(), v["id"]));
            }
            out.push(Vector { v });
        }
    }
    if out.is_empty() {
        return Err(format!("{}: no vectors", dir.display()));
    }
    Ok(out)
}

/// The schema's rules that matter to the runner (CI also validates the
/// corpus against corpus/escape/schema.json with a JSON Schema validator).
pub fn check(v: &Value) -> Result<(), String> {
    let o = v.as_object().ok_or("not an object")?;
    for k in o.keys() {
        if ![
            "id",
            "title",
            "class",
            "description",
            "sources",
            "tree",
            "calls",
            "race",
            "same_replies",
            "effects",
            "leak_markers",
            "requires",
            "pack",
            "policy",
            "protected",
            "run",
            "twin",
            "extra_roots",
        ]
        .contains(&k.as_str())
        {
            return Err(format!("unknown field {k}"));
        }
    }
    let id = v["id"].as_str().ok_or("id missing")?;
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("id must be lowercase letters, digits and dashes".into());
    }
    v["title"].as_str().ok_or("title missing")?;
    let class = v["class"].as_str().ok_or("class missing")?;
    if !CLASSES.contains(&class) {
        return Err(format!("unknown class {class}"));
    }
    if let Some(p) = v.get("pack")
        && !p.as_str().is_some_and(|p| PACKS.contains(&p))
    {
        return Err(format!("unknown pack {p}"));
    }
    if let Some(p) = v.get("policy") {
        let o = p.as_object().ok_or("policy must be an object")?;
        for (k, x) in o {
            if !["protect_control_files", "hide", "read_only"].contains(&k.as_str())
                || !x
                    .as_array()
                    .is_some_and(|a| a.iter().all(|s| s.as_str().is_some_and(|s| !s.is_empty())))
            {
                return Err(format!("bad policy entry {k}"));
            }
        }
    }
    for k in ["protected", "extra_roots"] {
        if let Some(x) = v.get(k)
            && !x
                .as_array()
                .is_some_and(|a| a.iter().all(|s| s.as_str().is_some()))
        {
            return Err(format!("{k} must be a list of paths"));
        }
    }
    if let Some(r) = v.get("run") {
        let ok = r.as_array().is_some_and(|a| {
            a.iter().all(|x| {
                x["argv"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty() && a.iter().all(|s| s.as_str().is_some()))
            })
        });
        if !ok {
            return Err("run holds programs, each with a non-empty argv".into());
        }
    }
    let sources = v["sources"].as_array().ok_or("sources missing")?;
    if sources.is_empty() || sources.iter().any(|s| s["ref"].as_str().is_none()) {
        return Err("each vector cites at least one source with a ref".into());
    }
    for side in ["root", "outside"] {
        if let Some(list) = v["tree"].get(side) {
            for e in list.as_array().ok_or("tree entries must be a list")? {
                let t = e["type"].as_str().ok_or("entry type missing")?;
                if !TYPES.contains(&t) || e["path"].as_str().is_none() {
                    return Err(format!("bad tree entry {e}"));
                }
                if t == "symlink" && e["target"].as_str().is_none() {
                    return Err(format!("symlink without target {e}"));
                }
            }
        }
    }
    let calls = v["calls"].as_array().ok_or("calls missing")?;
    if calls.is_empty() {
        return Err("no calls".into());
    }
    for c in calls {
        c["tool"].as_str().ok_or("call without tool")?;
        if !c["arguments"].is_object() {
            return Err("call arguments must be an object".into());
        }
        if !["refused", "succeeded", "any"].contains(&c["expect"].as_str().unwrap_or("")) {
            return Err("call expect must be refused, succeeded or any".into());
        }
    }
    if let Some(pairs) = v.get("same_replies") {
        for p in pairs.as_array().ok_or("same_replies must be a list")? {
            let ok = p.as_array().is_some_and(|a| {
                a.len() == 2
                    && a.iter()
                        .all(|i| i.as_u64().is_some_and(|i| (i as usize) < calls.len()))
            });
            if !ok {
                return Err("same_replies holds pairs of call indexes".into());
            }
        }
    }
    Ok(())
}

/// What one vector did.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub id: String,
    pub class: String,
    pub pack: String,
    /// The server cannot express the vector's policy: why. The vector ran
    /// anyway; what the policy classes would have said is in the notes.
    pub no_policy: Option<String>,
    /// Escape classes seen (content_read, write_outside, metadata_leak, existence_oracle).
    pub escapes: Vec<String>,
    pub hang: bool,
    pub crash: bool,
    pub refused_should_succeed: usize,
    pub wrong_result: usize,
    pub not_refused: usize,
    pub skipped: Option<String>,
    pub harness_error: Option<String>,
    pub notes: Vec<String>,
    pub millis: u128,
}

pub struct RunOpts {
    pub server: Vec<String>,
    pub deadline: Duration,
    pub tmp: PathBuf,
    pub is_root_user: bool,
    /// How the server takes the vectors' policies on its command line.
    pub profile: Profile,
}

pub fn run(vec: &Vector, opts: &RunOpts) -> Outcome {
    let mut out = Outcome {
        id: vec.id().to_string(),
        class: vec.class().to_string(),
        pack: vec.pack().to_string(),
        ..Default::default()
    };
    let v = &vec.v;
    if v["requires"]
        .as_array()
        .is_some_and(|r| r.iter().any(|x| x == "root_user"))
        && !opts.is_root_user
    {
        out.skipped = Some("needs root (device nodes)".into());
        return out;
    }
    let mut sb = match Sandbox::new(&opts.tmp) {
        Ok(s) => s,
        Err(e) => {
            out.harness_error = Some(e);
            return out;
        }
    };
    let t0 = Instant::now();
    run_in(vec, opts, &mut sb, &mut out);
    out.millis = t0.elapsed().as_millis();
    sb.remove();
    out
}

/// The server's command line for one tree: `{root}` replaced (and followed
/// by the vector's `extra_roots`, for nested operator directories), then the
/// policy's flags. `Err` when the server cannot express the policy (it then
/// runs without them).
fn server_argv(v: &Value, opts: &RunOpts, sb: &Sandbox) -> (Vec<String>, Option<String>) {
    let mut argv = Vec::new();
    for a in &opts.server {
        argv.push(sb.subst(a));
        if a == "{root}"
            && let Some(x) = v["extra_roots"].as_array()
        {
            argv.extend(
                x.iter()
                    .filter_map(|r| r.as_str())
                    .map(|r| sb.root.join(sb.subst(r)).display().to_string()),
            );
        }
    }
    match v.get("policy") {
        None => (argv, None),
        Some(p) => match opts.profile.flags(p, &sb.root) {
            Ok(f) => {
                argv.extend(f);
                (argv, None)
            }
            Err(why) => (argv, Some(why)),
        },
    }
}

/// Builds the tree (the twin leaves out `hidden` entries) and starts the
/// server on it, initialized, with its tool names.
/// Why a vector's server did not start: a layout this machine cannot make
/// (`Ok`, skipped), or a harness error (`Err`).
type StartError = Result<String, String>;

/// A started server, its tool names, and why it has no policy (if so).
type Started = (Server, Vec<String>, Option<String>);

fn start(v: &Value, opts: &RunOpts, sb: &mut Sandbox, twin: bool) -> Result<Started, StartError> {
    sb.plant_default_outside().map_err(Err)?;
    let empty = vec![];
    let root = sb.root.clone();
    let base = sb.base.clone();
    for (side, dir, outside) in [("root", &root, false), ("outside", &base, true)] {
        let entries = v["tree"][side].as_array().unwrap_or(&empty);
        match sb.build_twin(entries, dir, outside, twin) {
            Ok(()) => {}
            Err(BuildError::Unsupported(e)) => return Err(Ok(e)),
            Err(BuildError::Failed(e)) => return Err(Err(e)),
        }
    }
    let (argv, no_policy) = server_argv(v, opts, sb);
    let mut srv = Server::spawn(
        &argv,
        &sb.base.join("cwd"),
        Era::Handshake("2025-06-18".into()),
    )
    .map_err(Err)?;
    let startup = opts.deadline.max(Duration::from_secs(10));
    if let Err(e) = srv.handshake(startup) {
        return Err(Err(format!("{e}; stderr: {}", tail(&srv.stderr_text()))));
    }
    let tools = srv.tool_names(startup).map_err(Err)?;
    Ok((srv, tools, no_policy))
}

/// Makes the calls one by one; with `skip_lacking` (the server's tools), a
/// call to a tool the server lacks is left out (`None`).
fn call_all(
    calls: &[Value],
    skip_lacking: Option<&[String]>,
    sb: &Sandbox,
    srv: &mut Server,
    opts: &RunOpts,
    out: &mut Outcome,
    all_args: &mut String,
) -> Vec<Option<CallReply>> {
    let mut replies = Vec::new();
    for c in calls {
        if skip_lacking.is_some_and(|tools| !tools.iter().any(|t| c["tool"] == t.as_str())) {
            replies.push(None);
            continue;
        }
        let args = sb.subst_value(&c["arguments"]);
        all_args.push_str(&args.to_string());
        let params = json!({"name": c["tool"], "arguments": args});
        match srv.request("tools/call", params, opts.deadline) {
            Ok(r) => {
                let r = call_reply(&r);
                judge_call(c, &r, sb, out);
                replies.push(Some(r));
            }
            Err(NoReply::Timeout) => {
                out.hang = true;
                out.notes.push(format!(
                    "{} did not answer within {:?}",
                    c["tool"], opts.deadline
                ));
                break;
            }
            Err(NoReply::Closed) => {
                out.crash = true;
                break;
            }
        }
    }
    replies
}

/// The vector's protected paths, as programs opening them see them.
fn protected_snapshot(v: &Value, sb: &Sandbox) -> std::collections::BTreeMap<String, String> {
    let list: Vec<String> = v["protected"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str())
        .map(|p| sb.subst(p))
        .collect();
    crate::tree::snapshot_paths(&sb.root, &list)
}

fn run_in(vec: &Vector, opts: &RunOpts, sb: &mut Sandbox, out: &mut Outcome) {
    let v = &vec.v;
    let (mut srv, tools, no_policy) = match start(v, opts, sb, false) {
        Ok(x) => x,
        Err(Ok(skip)) => {
            out.skipped = Some(skip);
            return;
        }
        Err(Err(e)) => {
            out.harness_error = Some(e);
            return;
        }
    };
    out.no_policy = no_policy;
    let empty = vec![];
    let calls = v["calls"].as_array().unwrap_or(&empty);
    let twin = v["twin"].as_bool().unwrap_or(false);
    if !twin
        && let Some(missing) = calls.iter().find_map(|c| {
            let t = c["tool"].as_str().unwrap_or("");
            (!tools.iter().any(|x| x == t)).then(|| t.to_string())
        })
    {
        out.skipped = Some(format!("the server has no {missing} tool"));
        return;
    }
    let before = sb.snapshot_outside();
    let protected_before = protected_snapshot(v, sb);
    let mut replies: Vec<Option<CallReply>> = Vec::new();
    let mut all_args = String::new();
    if let Some(race) = v.get("race") {
        run_race(race, calls, sb, &mut srv, opts, out, &mut all_args);
    } else {
        let skip = twin.then_some(tools.as_slice());
        replies = call_all(calls, skip, sb, &mut srv, opts, out, &mut all_args);
    }
    // Ground truth, after the calls.
    srv.drain();
    let scan_lines: Vec<String> = srv.lines.clone();
    let hidden = hidden_forms(v, sb);
    for line in &scan_lines {
        scan(line, &all_args, v, sb, out);
        if hidden.iter().any(|h| line.contains(h.as_str())) {
            add(&mut out.escapes, "secret_read");
            out.notes.push("a hidden file's content in a reply".into());
        }
    }
    let after = sb.snapshot_outside();
    let d = diff(&before, &after);
    if !d.is_empty() {
        add(&mut out.escapes, "write_outside");
        out.notes.extend(d.into_iter().take(5));
    }
    let d = diff(&protected_before, &protected_snapshot(v, sb));
    if !d.is_empty() {
        add(&mut out.escapes, "control_written");
        out.notes
            .extend(d.into_iter().take(3).map(|x| format!("protected: {x}")));
    }
    if let Some(runs) = v["run"].as_array()
        && !out.hang
    {
        let ran = crate::program::run_all(runs, sb);
        if crate::program::code_ran(sb) {
            add(&mut out.escapes, "executed");
            out.notes
                .push(format!("the agent's code ran: {}", ran.join("; ")));
        }
    }
    if let Some(pairs) = v["same_replies"].as_array() {
        for p in pairs {
            let (i, j) = (
                p[0].as_u64().unwrap_or(0) as usize,
                p[1].as_u64().unwrap_or(0) as usize,
            );
            if let (Some(Some(a)), Some(Some(b))) = (replies.get(i), replies.get(j)) {
                let na = normalize(a, &calls[i], sb);
                let nb = normalize(b, &calls[j], sb);
                if na != nb {
                    add(&mut out.escapes, "existence_oracle");
                    out.notes.push(format!("replies differ: {na:?} vs {nb:?}"));
                }
            }
        }
    }
    if let Some(effects) = v["effects"].as_array()
        && !out.hang
    {
        for e in effects {
            if let Err(why) = check_effect(e, sb) {
                out.wrong_result += 1;
                out.notes.push(why);
            }
        }
    }
    // A server stuck in a call is killed at once; otherwise it gets time to exit.
    let status = srv.finish(if out.hang {
        Duration::ZERO
    } else {
        Duration::from_secs(3)
    });
    let err = srv.stderr_text();
    if err.contains("panicked at")
        || status.is_some_and(|s| std::os::unix::process::ExitStatusExt::signal(&s).is_some())
    {
        out.crash = true;
        out.notes.push(format!("stderr: {}", tail(&err)));
    }
    if twin && !out.hang && !out.crash {
        compare_twin(v, calls, &replies, sb, opts, out);
    }
    if out.no_policy.is_some() {
        // What the policy classes saw is reported, not counted.
        let seen: Vec<String> = out
            .escapes
            .iter()
            .filter(|e| POLICY_CLASSES.contains(&e.as_str()))
            .cloned()
            .collect();
        if !seen.is_empty() {
            out.notes
                .insert(0, format!("without the policy: {}", seen.join(", ")));
        }
        out.escapes
            .retain(|e| !POLICY_CLASSES.contains(&e.as_str()));
        out.not_refused = 0;
    }
}

/// The contents of the vector's hidden files (raw text holding `{secret}`,
/// and base64 of each whole file): any of them in a reply is a read.
fn hidden_forms(v: &Value, sb: &Sandbox) -> Vec<String> {
    let mut forms = vec![sb.secret.clone()];
    for e in v["tree"]["root"].as_array().into_iter().flatten() {
        if e["hidden"].as_bool().unwrap_or(false)
            && let Some(c) = e["content"].as_str()
        {
            let c = sb.subst(c);
            if c.contains(&sb.secret) {
                forms.push(crate::tree::base64(c.as_bytes()));
            }
        }
    }
    forms
}

/// Runs the same calls on the twin tree (the hidden entries left out, the
/// same flags) and compares each reply with the real tree's, byte for byte
/// once each tree's own paths, canaries and times are masked.
fn compare_twin(
    v: &Value,
    calls: &[Value],
    replies: &[Option<CallReply>],
    sb: &Sandbox,
    opts: &RunOpts,
    out: &mut Outcome,
) {
    let mut tw = match Sandbox::new(&opts.tmp) {
        Ok(s) => s,
        Err(e) => {
            out.harness_error = Some(e);
            return;
        }
    };
    let mut twin_out = Outcome::default();
    match start(v, opts, &mut tw, true) {
        Ok((mut srv, tools, _)) => {
            let mut args = String::new();
            let theirs = call_all(
                calls,
                Some(&tools),
                &tw,
                &mut srv,
                opts,
                &mut twin_out,
                &mut args,
            );
            srv.finish(Duration::from_secs(3));
            let mut differ = 0;
            for (i, (a, b)) in replies.iter().zip(&theirs).enumerate() {
                if let (Some(a), Some(b)) = (a, b) {
                    let (na, nb) = (twin_mask(a, sb), twin_mask(b, &tw));
                    if na != nb {
                        differ += 1;
                        if differ <= 3 {
                            out.notes.push(format!(
                                "call {i} ({}): hidden {:?} vs missing {:?}",
                                calls[i]["tool"],
                                short(&na),
                                short(&nb)
                            ));
                        }
                    }
                }
            }
            if differ > 0 {
                add(&mut out.escapes, "hidden_differs");
                out.notes
                    .push(format!("{differ} calls differ from the twin"));
            }
            if replies.len() != theirs.len() {
                out.notes
                    .push("the twin answered a different number of calls".into());
            }
        }
        Err(Ok(s)) => out.notes.push(format!("twin skipped: {s}")),
        Err(Err(e)) => out.harness_error = Some(format!("twin: {e}")),
    }
    tw.remove();
}

/// A reply with what differs between two sandboxes by construction masked:
/// their paths, canaries, and time stamps (a line whose key names a time).
fn twin_mask(r: &CallReply, sb: &Sandbox) -> String {
    let t = format!("{}:{}", r.refused, r.text)
        .replace(&*sb.root.to_string_lossy(), "{root}")
        .replace(&*sb.base.to_string_lossy(), "{base}")
        .replace(&sb.secret, "{secret}")
        .replace(&sb.canary_name, "{canary_name}")
        .replace(&sb.canary, "{canary}");
    t.lines().map(mask_time_line).collect::<Vec<_>>().join("\n")
}

fn mask_time_line(l: &str) -> String {
    const KEYS: [&str; 7] = [
        "created",
        "modified",
        "accessed",
        "birthtime",
        "mtime",
        "atime",
        "ctime",
    ];
    if let Some(i) = l.find(':') {
        let key = l[..i]
            .trim()
            .trim_matches(|c| c == '"' || c == '-' || c == ' ')
            .to_ascii_lowercase();
        if KEYS.contains(&key.as_str()) {
            return format!("{}: <TIME>", &l[..i]);
        }
    }
    l.to_string()
}

fn judge_call(c: &Value, r: &CallReply, sb: &Sandbox, out: &mut Outcome) {
    match c["expect"].as_str().unwrap_or("any") {
        "refused" if !r.refused => out.not_refused += 1,
        "succeeded" if r.refused => {
            out.refused_should_succeed += 1;
            out.notes
                .push(format!("{} refused: {}", c["tool"], short(&r.text)));
        }
        "succeeded" => {
            if let Some(want) = c["reply_contains"].as_array() {
                for w in want {
                    let w = sb.subst(w.as_str().unwrap_or(""));
                    if !r.text.contains(&w) {
                        out.wrong_result += 1;
                        out.notes.push(format!(
                            "{}: reply lacks {w:?}: {}",
                            c["tool"],
                            short(&r.text)
                        ));
                    }
                }
            }
        }
        _ => {}
    }
}

/// Scans one stdout line for the canaries and the vector's markers.
fn scan(line: &str, args: &str, v: &Value, sb: &Sandbox, out: &mut Outcome) {
    // A canary the calls themselves carried proves nothing (vectors avoid it).
    let echoed = args.contains(&sb.canary);
    if (line.contains(&sb.canary) && !echoed)
        || sb.encoded.iter().any(|e| line.contains(e.as_str()))
    {
        add(&mut out.escapes, "content_read");
    }
    if line.contains(&sb.canary_name) && !args.contains(&sb.canary_name) {
        add(&mut out.escapes, "metadata_leak");
    }
    if let Some(m) = v["leak_markers"].as_array() {
        for m in m.iter().filter_map(|m| m.as_str()) {
            let m = sb.subst(m);
            if line.contains(&m) && !args.contains(&m) {
                add(&mut out.escapes, "metadata_leak");
                out.notes.push(format!("marker {m:?} in a reply"));
            }
        }
    }
}

/// A reply with the call's own path spellings replaced, for comparison.
fn normalize(r: &CallReply, call: &Value, sb: &Sandbox) -> String {
    let mut t = format!("{}:{}", r.refused, r.text);
    let args = sb.subst_value(&call["arguments"]);
    if let Some(o) = args.as_object() {
        for val in o.values() {
            if let Some(s) = val.as_str() {
                // The spelling given, its lexical normal form, and the same
                // relative to the root: a server may print any of them.
                let lex = lexical(s);
                let rel = lex
                    .strip_prefix(&*sb.root.to_string_lossy())
                    .map(|r| r.trim_start_matches('/').to_string())
                    .unwrap_or_default();
                let mut forms = [s.to_string(), lex.clone(), rel];
                forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
                for f in forms.iter().filter(|f| f.len() > 1) {
                    t = t.replace(f.as_str(), "<PATH>");
                }
                if let Some(name) = Path::new(&lex).file_name() {
                    t = t.replace(&*name.to_string_lossy(), "<NAME>");
                }
                if let Some(parent) = Path::new(&lex).parent() {
                    let p = parent.to_string_lossy();
                    if p.len() > 1 {
                        t = t.replace(&*p, "<DIR>");
                    }
                }
            }
        }
    }
    t
}

/// `a/./b/../c` -> `a/c`, without touching the filesystem.
fn lexical(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let j = parts.join("/");
    if p.starts_with('/') {
        format!("/{j}")
    } else {
        j
    }
}

fn check_effect(e: &Value, sb: &Sandbox) -> Result<(), String> {
    let rel = sb.subst(e["path"].as_str().unwrap_or(""));
    let p = sb.root.join(&rel);
    let m = fs::symlink_metadata(&p);
    match e["type"].as_str().unwrap_or("file") {
        "absent" => match m {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("{rel} should not exist")),
        },
        "dir" => match m {
            Ok(m) if m.is_dir() => Ok(()),
            _ => Err(format!("{rel} should be a directory")),
        },
        "symlink" => match m {
            Ok(m) if m.file_type().is_symlink() => Ok(()),
            _ => Err(format!("{rel} should still be a symlink")),
        },
        _ => {
            let got = fs::read(&p).map_err(|x| format!("{rel}: {x}"))?;
            if !m.map(|m| m.is_file()).unwrap_or(false) {
                return Err(format!("{rel} should be a regular file"));
            }
            if let Some(want) = e["content"].as_str() {
                let want = sb.subst(want);
                if got != want.as_bytes() {
                    return Err(format!(
                        "{rel} holds {:?}, not {want:?}",
                        String::from_utf8_lossy(&got)
                    ));
                }
            }
            Ok(())
        }
    }
}

fn run_race(
    race: &Value,
    calls: &[Value],
    sb: &Sandbox,
    srv: &mut Server,
    opts: &RunOpts,
    out: &mut Outcome,
    all_args: &mut String,
) {
    let repeat = race["repeat"].as_u64().unwrap_or(200);
    let stop = Arc::new(AtomicBool::new(false));
    // Without `swap`, the calls race only with each other (pipelined).
    let swapping = race["swap"].as_str().map(|s| {
        let swap = sb.root.join(sb.subst(s));
        let target = sb.subst(race["target"].as_str().unwrap_or("{outside}"));
        let hold = swap.with_extension("referee-hold");
        let (s2, swap2, hold2) = (stop.clone(), swap.clone(), hold.clone());
        let swapper = thread::spawn(move || {
            let mut flips = 0u64;
            while !s2.load(Ordering::Relaxed) {
                if fs::rename(&swap2, &hold2).is_ok() {
                    let _ = std::os::unix::fs::symlink(&target, &swap2);
                    thread::yield_now();
                    let _ = fs::remove_file(&swap2);
                    let _ = fs::rename(&hold2, &swap2);
                    flips += 1;
                }
                thread::yield_now();
            }
            flips
        });
        (swap, hold, swapper)
    });
    let started = Instant::now();
    'outer: for n in 0..repeat {
        // Pipelined: every call of the round sent before any reply is read.
        let mut ids = Vec::new();
        for c in calls {
            let args = sb.subst_value(&c["arguments"]);
            let args: Value =
                serde_json::from_str(&args.to_string().replace("{n}", &n.to_string()))
                    .unwrap_or(args);
            if n == 0 {
                all_args.push_str(&args.to_string());
            }
            let id = srv.fresh_id();
            srv.send_request(
                &id,
                "tools/call",
                json!({"name": c["tool"], "arguments": args}),
            );
            ids.push(id);
        }
        for id in ids {
            match srv.wait_reply(&id, Instant::now() + opts.deadline) {
                Ok(_) => {}
                Err(NoReply::Timeout) => {
                    out.hang = true;
                    break 'outer;
                }
                Err(NoReply::Closed) => {
                    out.crash = true;
                    break 'outer;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut flips = 0;
    if let Some((swap, hold, swapper)) = swapping {
        flips = swapper.join().unwrap_or(0);
        if fs::symlink_metadata(&swap).is_err() {
            let _ = fs::rename(&hold, &swap);
        }
    }
    out.notes.push(format!(
        "race: {repeat} rounds, {flips} swaps in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
}

fn add(list: &mut Vec<String>, c: &str) {
    if !list.iter().any(|x| x == c) {
        list.push(c.to_string());
    }
}

fn short(s: &str) -> String {
    let s: String = s.chars().take(160).collect();
    s.replace('\n', " ")
}

pub fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation_never_touches_the_disk() {
        assert_eq!(lexical("/a/b/../c/./d"), "/a/c/d");
        assert_eq!(lexical("/a/../../x"), "/x");
        assert_eq!(lexical("a//b/"), "a/b");
    }

    #[test]
    fn the_shipped_corpus_loads_and_every_class_is_seeded() {
        let v = load(&crate::default_corpus()).unwrap();
        for c in CLASSES {
            assert!(v.iter().any(|x| x.class() == c), "no vector of class {c}");
        }
    }

    #[test]
    fn malformed_vectors_are_refused() {
        let ok = json!({"id": "x", "title": "t", "class": "content_read", "sources": [{"ref": "r"}],
            "tree": {}, "calls": [{"tool": "t", "arguments": {}, "expect": "refused"}]});
        assert!(check(&ok).is_ok());
        let mut bad = ok.clone();
        bad["extra"] = json!(1);
        assert!(check(&bad).is_err());
        let mut bad = ok.clone();
        bad["calls"][0]["expect"] = json!("maybe");
        assert!(check(&bad).is_err());
        let mut bad = ok;
        bad["same_replies"] = json!([[0, 5]]);
        assert!(check(&bad).is_err());
    }
}
