//! Issue 30, item 7: in a home directory more programs obey files than in a
//! project: shells source their start-up files, sshd obeys
//! `authorized_keys` and `~/.ssh/rc`, git the user's config, the desktop
//! session autostarts `.desktop` files, systemd runs user units, editors and
//! agent hosts run what their config names. With the built-in rules each is
//! read-only, under a root that is a home and under a root that contains
//! homes (`home/alice/...`); ground truth: the tree on disk is unchanged.

use serde_json::json;

use crate::util::{Server, TestEnv};

use super::aliases::assert_unwritable;

/// Files in a home that another program runs or obeys: each exists, and
/// each must stay as it is.
const OBEYED: &[&str] = &[
    // Shells (bash, sh, zsh, csh, fish) and readline.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".bashrc.d/10-path.sh",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".config/fish/config.fish",
    ".config/fish/conf.d/x.fish",
    ".inputrc",
    // The login session and the user's service manager.
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
    ".config/environment.d/10-env.conf",
    ".config/autostart/app.desktop",
    ".config/systemd/user/app.service",
    ".local/share/applications/app.desktop",
    ".local/bin/tool",
    ".cargo/bin/cargo-x",
    // ssh, gpg, cloud and cluster clients.
    ".ssh/authorized_keys",
    ".ssh/config",
    ".gnupg/gpg-agent.conf",
    ".aws/config",
    ".kube/config",
    // The user's git config.
    ".gitconfig",
    ".config/git/config",
    // Editors and the terminal multiplexer.
    ".vimrc",
    ".gvimrc",
    ".vim/plugin/x.vim",
    ".exrc",
    ".config/nvim/init.lua",
    ".nvim.lua",
    ".emacs",
    ".emacs.d/init.el",
    ".config/emacs/init.el",
    ".tmux.conf",
    ".config/tmux/tmux.conf",
    ".config/zed/settings.json",
    // Package managers and Python.
    ".npmrc",
    ".yarnrc",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    "venv/pyvenv.cfg",
    // Agent hosts.
    ".codex/config.toml",
    ".claude.json",
];

/// Names not there yet that a program would run once made.
const NEW: &[&str] = &[
    ".ssh/rc",
    ".config/autostart/new.desktop",
    ".config/systemd/user/new.timer",
    ".config/fish/conf.d/ls.fish",
    ".local/bin/git",
    ".codex/hooks.json",
];

/// What stays writable: files no other program runs.
const FREE: &[&str] = &[
    "notes.txt",
    ".config/other/settings.ini",
    "project/src/main.rs",
    ".local/share/notes/todo.md",
];

fn layout(env: &TestEnv, home: &str) {
    for rel in OBEYED.iter().chain(FREE) {
        env.write(format!("{home}{rel}"), "orig\n");
    }
    env.write("scratch.txt", "scratch\n");
}

fn check(env: &TestEnv, home: &str) {
    let s = Server::start(&args![env.root()]);
    for rel in OBEYED.iter().chain(NEW) {
        assert_unwritable(&s, env, &format!("{home}{rel}"), "touch /tmp/pwned\n");
    }
    for rel in OBEYED {
        assert_eq!(env.read_string(format!("{home}{rel}")), "orig\n", "{rel}");
    }
    for rel in FREE {
        let path = format!("{home}{rel}");
        s.call("write_file", json!({"path": path, "content": "new\n"}))
            .assert_ok();
        assert_eq!(env.read_string(&path), "new\n", "{path}");
    }
    // The control: without the built-in protections the same writes land,
    // so the refusals above are the rules', not the layout's.
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    for rel in [".bashrc", ".ssh/authorized_keys", "venv/pyvenv.cfg"] {
        let path = format!("{home}{rel}");
        open.call("write_file", json!({"path": path, "content": "x\n"}))
            .assert_ok();
        assert_eq!(env.read_string(&path), "x\n", "{path}");
    }
}

#[test]
fn a_root_that_is_a_home_keeps_what_other_programs_obey_read_only() {
    let env = TestEnv::new();
    layout(&env, "");
    check(&env, "");
}

#[test]
fn a_root_that_contains_homes_keeps_them_read_only_at_any_depth() {
    let env = TestEnv::new();
    layout(&env, "home/alice/");
    check(&env, "home/alice/");
}
