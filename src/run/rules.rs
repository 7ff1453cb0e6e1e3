//! The path rules of each root, assembled at startup: the flags, the
//! built-in set and the rules file (read here, before Landlock), each
//! root's `--read-only-dir`, nested operator directories, and each root's
//! git repositories and protected links.
//!
//! Owns: joining the rule list ([`crate::rules::config`]) with the opened
//! roots. It lives beside startup, not in `rules/`, because it reads the
//! operator's files and the roots (the `fs` layer), which `rules/` (below
//! `fs`) must not import.
//! May touch: the operator's rules file and `--read-only-dir` paths, once,
//! at startup (through `fs::roots`), and the roots' handles.

use crate::cli::FsArgs;
use crate::fs::roots;

/// Builds the path rules of each root from the flags, the built-in
/// protections and the rules file (read here, at startup, before Landlock),
/// and returns them as `--print-config` shows them. Any error stops startup
/// with exit status 2.
pub(super) fn path_rules(
    args: &FsArgs,
    home: Option<&std::ffi::OsStr>,
    opened: &mut [roots::Root],
) -> Result<(serde_json::Value, crate::journal::rules::RuleSpec), String> {
    use crate::rules::config;
    let file = match &args.rules {
        Some(path) => {
            let path = crate::cli::expand_home(path, home)?;
            let bytes = roots::read_operator_file(&path, crate::limits::MAX_RULES_FILE_BYTES)
                .map_err(|e| format!("rules file: {e} (nothing was loaded)"))?;
            Some((path.display().to_string(), bytes))
        }
        None => None,
    };
    let spec = config::Spec {
        hide: args.hide.clone(),
        read_only: args.read_only_path.clone(),
        allow: args.allow_path.clone(),
        no_default: args.no_default_protection,
        file,
    };
    // --read-only-dir: each must exist and lie inside (or contain) a root.
    let mut dirs = Vec::new();
    for d in &args.read_only_dir {
        let d = crate::cli::expand_home(d, home)?;
        dirs.push((d.display().to_string(), roots::resolve_operator_dir(&d)?));
    }
    // The undo journal keeps the spec, so a revert builds the same rules.
    let kept = crate::journal::rules::RuleSpec::of(&spec, &dirs);
    Ok((apply_rules(&spec, &dirs, opened)?, kept))
}

/// Builds the path rules of `spec` and `dirs` (each `--read-only-dir` as
/// given and resolved) into each of `opened` (also for `tuls journal
/// revert`, from the spec a session recorded); returns them as
/// `--print-config` shows them.
pub(crate) fn apply_rules(
    spec: &crate::rules::config::Spec,
    dirs: &[(String, String)],
    opened: &mut [roots::Root],
) -> Result<serde_json::Value, String> {
    use crate::rules::{Effect, Matcher, Rules, config};
    let config::Built {
        rules,
        notes,
        warnings,
    } = config::build(spec)?;
    for n in &notes {
        tracing::info!("path rules: {n}");
    }
    for w in &warnings {
        tracing::warn!("path rules: {w}");
    }
    let mut used = vec![false; dirs.len()];
    let mut shown: Vec<serde_json::Value> = Vec::new();
    let describe = |r: &crate::rules::Rule| {
        let effect = match r.effect {
            Effect::Hidden => "hide",
            Effect::ReadOnly => "read-only",
            Effect::None => "exempt",
        };
        let method = match r.matcher {
            Matcher::Glob(_) => "glob",
            Matcher::Exact(_) => "exact",
            Matcher::Prefix(_) => "prefix",
            Matcher::Regex(_) => "regex",
            Matcher::Contains(_) => "contains",
            Matcher::All => "all",
        };
        serde_json::json!({"id": r.id, "source": r.source, "pattern": r.pattern,
            "match": method, "effect": effect})
    };
    shown.extend(rules.iter().map(describe));
    // Roots without a --read-only-dir of their own share one compiled set.
    let mut shared: Option<std::sync::Arc<Rules>> = None;
    let mut own: Vec<Vec<crate::rules::Rule>> = Vec::with_capacity(opened.len());
    for root in opened.iter_mut() {
        let mut mine = rules.clone();
        let real = root
            .resolved
            .clone()
            .unwrap_or_else(|| root.display.clone());
        for (i, (given, dir)) in dirs.iter().enumerate() {
            let rel = if let Some(rest) = beneath(dir, &real) {
                rest
            } else if beneath(&real, dir).is_some() {
                String::new()
            } else {
                continue;
            };
            used[i] = true;
            let rule = config::read_only_dir(given, &rel);
            let mut d = describe(&rule);
            d["root"] = serde_json::Value::String(root.display.clone());
            shown.push(d);
            mine.push(rule);
        }
        own.push(mine.clone());
        // git rules are a root's own (src/fs/gitdirs): with them, no sharing.
        root.rules = if mine.len() == rules.len() && spec.no_default {
            match &shared {
                Some(r) => r.clone(),
                None => shared
                    .insert(std::sync::Arc::new(Rules::new(mine)?))
                    .clone(),
            }
        } else {
            std::sync::Arc::new(Rules::new(mine)?)
        };
    }
    nest(opened, own)?;
    // git: what each root's repositories make git run or obey, read-only
    // with the built-in set (src/fs/gitdirs).
    if !spec.no_default {
        let allow: Vec<&str> = spec.allow.iter().map(String::as_str).collect();
        let obeyed = std::sync::Arc::new(Rules::new(rules.clone())?);
        for root in opened.iter() {
            shown.extend(crate::fs::gitdirs::install(
                root,
                &allow,
                Some(obeyed.clone()),
            ));
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(format!(
            "--read-only-dir '{}' is not inside any allowed directory",
            dirs[i].0
        ));
    }
    Ok(serde_json::Value::Array(shown))
}

/// Nested operator directories (`tuls filesystem /r /r/sub`): each root's
/// rules also match a path against the rules of every other operator
/// directory that contains it or lies inside it (`own`: each root's own
/// rule list, in the order of `opened`), so a rule anchored at `/r/sub`
/// holds when the path is spelled through `/r`, and one anchored at `/r`
/// when it is spelled through `/r/sub`.
fn nest(opened: &mut [roots::Root], own: Vec<Vec<crate::rules::Rule>>) -> Result<(), String> {
    use crate::rules::{Relation, Rules};
    let real = |r: &roots::Root| r.resolved.clone().unwrap_or_else(|| r.display.clone());
    let reals: Vec<String> = opened.iter().map(real).collect();
    let sets: Vec<std::sync::Arc<Rules>> = opened.iter().map(|r| r.rules.clone()).collect();
    for (i, mine) in own.into_iter().enumerate() {
        let mut others = Vec::new();
        for (j, other) in reals.iter().enumerate() {
            if i == j {
                continue;
            }
            match (beneath(other, &reals[i]), beneath(&reals[i], other)) {
                (Some(rel), _) if !rel.is_empty() => {
                    others.push((sets[j].clone(), Relation::Inner(rel)));
                }
                (_, Some(rel)) if !rel.is_empty() => {
                    others.push((sets[j].clone(), Relation::Outer(rel)));
                }
                _ => {}
            }
        }
        if !others.is_empty()
            && let Some(root) = opened.get_mut(i)
        {
            root.rules = std::sync::Arc::new(Rules::new(mine)?.with_others(others));
        }
    }
    Ok(())
}

/// `path` relative to `base` when it is `base` or lies beneath it, by whole
/// components (both are absolute, resolved operator paths).
fn beneath(path: &str, base: &str) -> Option<String> {
    let p: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let b: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    (p.len() >= b.len() && p.iter().zip(&b).all(|(x, y)| x == y)).then(|| p[b.len()..].join("/"))
}
