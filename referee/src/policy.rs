//! A vector's policy, named server-neutrally, and its mapping to each
//! server's command-line flags (`--policy` picks the mapping).
//!
//! A vector's `policy` object:
//! - `protect_control_files`: the control paths of its tree (root-relative)
//!   that a server protecting control files must keep read-only;
//! - `hide`: `.gitignore`-style patterns the server must hide (read exactly
//!   like missing);
//! - `read_only`: root-relative paths the operator makes read-only.
//!
//! A server that cannot express a policy gets "no policy available": the
//! vector still runs, and what it showed is reported apart from failures.

use std::path::Path;

use serde_json::Value;

/// How a server takes rules on its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// tuls: control files are read-only by its default rules; `--hide P`,
    /// `--read-only-path /P`.
    Tuls,
    /// The reference server 2.3.0: `--read-only-dir DIR` (existing
    /// directories only); nothing hides.
    Reference23,
    /// The naive control: `--read-only NAME` and `--hide NAME`, matched
    /// lexically on the path as spelled.
    Naive,
    /// No rules at all.
    None,
}

impl Profile {
    pub fn parse(s: &str) -> Option<Profile> {
        Some(match s {
            "tuls" => Profile::Tuls,
            "reference-2.3" => Profile::Reference23,
            "naive" => Profile::Naive,
            "none" => Profile::None,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::Tuls => "tuls",
            Profile::Reference23 => "reference-2.3",
            Profile::Naive => "naive",
            Profile::None => "none",
        }
    }

    /// The flags that give the server `policy` for the tree under `root`
    /// (already built), or why it has none.
    pub fn flags(self, policy: &Value, root: &Path) -> Result<Vec<String>, String> {
        let list = |k: &str| -> Vec<String> {
            policy[k]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (protect, hide, read_only) = (
            list("protect_control_files"),
            list("hide"),
            list("read_only"),
        );
        let mut flags = Vec::new();
        match self {
            Profile::Tuls => {
                // protect_control_files: the default rules, no flag.
                for h in &hide {
                    flags.extend(["--hide".to_string(), h.clone()]);
                }
                for r in &read_only {
                    flags.extend(["--read-only-path".to_string(), format!("/{r}")]);
                }
            }
            Profile::Naive => {
                for p in protect.iter().chain(&read_only) {
                    flags.extend(["--read-only".to_string(), p.clone()]);
                }
                for h in &hide {
                    flags.extend(["--hide".to_string(), h.clone()]);
                }
            }
            Profile::Reference23 => {
                if !hide.is_empty() {
                    return Err("hide: the server has no rule that hides".into());
                }
                for p in protect.iter().chain(&read_only) {
                    let full = root.join(p);
                    if !full.is_dir() {
                        return Err(format!(
                            "--read-only-dir takes an existing directory; {p} is {}",
                            if full.exists() { "a file" } else { "missing" }
                        ));
                    }
                    flags.extend(["--read-only-dir".to_string(), full.display().to_string()]);
                }
            }
            Profile::None => {
                if !(protect.is_empty() && hide.is_empty() && read_only.is_empty()) {
                    return Err("the server takes no path rules".into());
                }
            }
        }
        Ok(flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_profile_maps_or_says_why_not() {
        let dir = std::env::temp_dir().join(format!("referee-policy-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join(".mcp.json"), "{}").unwrap();
        let git = json!({"protect_control_files": [".git"]});
        let mcp = json!({"protect_control_files": [".git", ".mcp.json"]});
        let hide = json!({"hide": [".env", "secrets"]});
        assert_eq!(Profile::Tuls.flags(&git, &dir), Ok(vec![]));
        assert_eq!(
            Profile::Tuls.flags(&hide, &dir),
            Ok(["--hide", ".env", "--hide", "secrets"]
                .map(String::from)
                .to_vec())
        );
        assert_eq!(
            Profile::Reference23.flags(&git, &dir),
            Ok(vec![
                "--read-only-dir".into(),
                dir.join(".git").display().to_string()
            ])
        );
        assert!(Profile::Reference23.flags(&mcp, &dir).is_err());
        assert!(Profile::Reference23.flags(&hide, &dir).is_err());
        assert_eq!(
            Profile::Naive.flags(&mcp, &dir),
            Ok(["--read-only", ".git", "--read-only", ".mcp.json"]
                .map(String::from)
                .to_vec())
        );
        assert!(Profile::None.flags(&git, &dir).is_err());
        assert_eq!(Profile::None.flags(&json!({}), &dir), Ok(vec![]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
