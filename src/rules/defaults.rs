//! The built-in protections: the names another program executes or obeys,
//! each with the program, the exemptions agents need, and the ready
//! `--hide` set for secrets.
//!
//! Owns: the tables only; [`super::config`] turns them into rules.
//! May touch: nothing (no I/O).

/// The built-in protections: read-only, because another program executes
/// or obeys what is written there. `(pattern, program)`.
pub const DEFAULT_READ_ONLY: &[(&str, &str)] = &[
    (
        ".git",
        "git: hooks/, config (core.fsmonitor, core.sshCommand, aliases), refs",
    ),
    (".hg", "Mercurial: .hg/hgrc hooks"),
    (".svn", "Subversion: working-copy metadata"),
    (".jj", "Jujutsu: repo config and the colocated git store"),
    (
        ".claude",
        "Claude Code: settings*.json hooks and permissions",
    ),
    (".cursor", "Cursor: rules, MCP servers (mcp.json)"),
    (".vscode", "VS Code: tasks.json, settings.json, launch.json"),
    (".idea", "JetBrains IDEs: run configurations, tool settings"),
    (".zed", "Zed: tasks.json and settings.json"),
    (
        ".gemini",
        "Gemini CLI: settings.json (MCP servers, tool commands)",
    ),
    (
        ".devcontainer",
        "Dev Containers: initializeCommand runs on the host",
    ),
    (".husky", "husky: git hooks (core.hooksPath)"),
    (
        ".mcp.json",
        "Claude Code and other MCP clients: project MCP server commands",
    ),
    (".envrc", "direnv: sourced by the shell on cd"),
    (
        ".pre-commit-config.yaml",
        "pre-commit: hook commands run by git commit",
    ),
    (".yarnrc.yml", "Yarn: yarnPath names the program yarn runs"),
    // Homes, and roots that contain them (`/home` with users beneath):
    // names without a `/` match at any depth, and those with one are
    // written `**/` so that they do too.
    (".bashrc", "bash: sourced by every interactive shell"),
    (".bash_profile", "bash: sourced by login shells"),
    (".bash_login", "bash: sourced by login shells"),
    (".bash_logout", "bash: sourced when a login shell exits"),
    (
        ".bash_aliases",
        "bash: sourced by the distributions' .bashrc",
    ),
    (".bashrc.d", "bash: each file sourced by Fedora's .bashrc"),
    (".profile", "sh, bash, dash, ksh: sourced by login shells"),
    (".zshrc", "zsh: sourced by interactive shells"),
    (".zshenv", "zsh: sourced by every zsh, scripts too"),
    (".zprofile", "zsh: sourced by login shells"),
    (".zlogin", "zsh: sourced by login shells"),
    (".zlogout", "zsh: sourced when a login shell exits"),
    (".cshrc", "csh, tcsh: sourced by every shell"),
    (".tcshrc", "tcsh: sourced by every shell"),
    (".login", "csh, tcsh: sourced by login shells"),
    ("**/.config/fish", "fish: config.fish, conf.d/, functions/"),
    (
        ".inputrc",
        "readline (bash, python, ...): key macros type commands",
    ),
    (".xprofile", "display managers: sourced at graphical login"),
    (".xinitrc", "startx: run as the X session"),
    (".xsession", "display managers: run as the X session"),
    (
        ".xsessionrc",
        "Debian's Xsession: sourced at graphical login",
    ),
    (
        ".pam_environment",
        "pam_env: the login environment (LD_PRELOAD, PATH)",
    ),
    (
        "**/.config/environment.d",
        "systemd --user: the environment of user services",
    ),
    (
        "**/.config/autostart",
        "desktop sessions (XDG autostart): Exec= runs at login",
    ),
    (
        "**/.config/systemd",
        "systemd --user: units' ExecStart=, user.conf",
    ),
    (
        "**/.local/share/applications",
        "desktop entries: Exec= runs when opened or as a file handler",
    ),
    (
        "**/.local/bin",
        "the shell's PATH: a file named like a command runs instead of it",
    ),
    (
        "**/.cargo/bin",
        "the shell's PATH (rustup): cargo, rustc and installed tools",
    ),
    (
        ".ssh",
        "ssh, sshd: authorized_keys (command=), config (ProxyCommand, LocalCommand), rc",
    ),
    (".gnupg", "GnuPG: gpg-agent.conf names pinentry-program"),
    (".aws", "AWS CLI and SDKs: config credential_process"),
    (".kube", "kubectl: config users[].exec.command"),
    (
        ".gitconfig",
        "git: the user's config (core.fsmonitor, core.sshCommand, aliases)",
    ),
    (
        "**/.config/git",
        "git: the user's config, attributes, ignore",
    ),
    (".vimrc", "Vim: sourced at start"),
    (".gvimrc", "gVim: sourced at start"),
    (".vim", "Vim: plugin/ and ftplugin/ scripts sourced"),
    (".exrc", "vi, Vim (with 'exrc'): sourced in the directory"),
    ("**/.config/nvim", "Neovim: init.lua, init.vim, plugins"),
    (
        ".nvim.lua",
        "Neovim ('exrc', once trusted): run in the directory",
    ),
    (".emacs", "Emacs: evaluated at start"),
    (".emacs.d", "Emacs: init.el evaluated at start"),
    ("**/.config/emacs", "Emacs: init.el evaluated at start"),
    (".tmux.conf", "tmux: run-shell, if-shell"),
    ("**/.config/tmux", "tmux: run-shell, if-shell"),
    (
        "**/.config/zed",
        "Zed: the user's settings.json (context servers) and tasks.json",
    ),
    (".npmrc", "npm: script-shell, git name programs npm runs"),
    (".yarnrc", "Yarn 1: yarn-path names the program yarn runs"),
    (
        "pip.conf",
        "pip: index-url decides whose code pip install runs",
    ),
    (
        "pyvenv.cfg",
        "Python: home decides which interpreter and stdlib run",
    ),
    (
        ".codex",
        "OpenAI Codex CLI: config.toml (MCP servers, notify, hooks)",
    ),
    (
        ".claude.json",
        "Claude Code: the user's MCP servers (mcpServers)",
    ),
];

/// Exemptions from [`DEFAULT_READ_ONLY`]: paths agents write routinely.
pub const DEFAULT_EXEMPT: &[&str] = &[
    "**/.claude/commands",
    "**/.claude/agents",
    "**/.claude/skills",
];

/// A ready `--hide` set for secrets (the docs list it too).
pub const SECRET_PRESET: &[&str] = &[
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    ".aws",
    ".ssh",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".docker/config.json",
    "credentials.json",
    "*.p12",
    "*.pfx",
];
