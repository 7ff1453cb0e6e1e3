//! The listing tools: `list_directory`, `list_directory_with_sizes`,
//! `directory_tree` (budgeted and whole), and cursor paging of every walk.

mod cursors;
mod directory;
mod tree;
mod tree_whole;

use std::os::unix::net::UnixListener;

use crate::util::TestEnv;

/// The reference probe's fixture (reference-probe.py `build_fixture`), plus
/// a FIFO and a socket, and `outside/secret.txt` (11 bytes) and `outside/odir`.
pub(super) fn ref_fixture() -> (TestEnv, UnixListener) {
    let env = TestEnv::new();
    env.write("hello.txt", "line1\nline2\nline3\n");
    env.write("crlf.txt", b"a\r\nb\r\nc\r\n");
    env.write("noeol.txt", "x\ny\nz");
    env.write("empty.txt", "");
    env.write("utf8.txt", "caf\u{e9} \u{20ac} \u{1F600}\n");
    env.write("bad.bin", b"ab\xff\xfe\x00cd\n");
    env.write("img.png", b"\x89PNG\r\n\x1a\nfakepng");
    env.write("UPPER.PNG", b"PNGUPPER");
    env.write("snd.mp3", b"ID3fake");
    env.write("doc.pdf", b"%PDF-1.4 fake");
    env.write("with space.txt", "spaces\n");
    env.write(".env", "secret\n");
    env.write(".git/config", "[core]\n");
    env.write("node_modules/pkg/index.js", "module.exports=1\n");
    env.write("sub/lib.rs", "pub mod x;\n");
    env.write("sub/nested/a.txt", "x");
    env.write("sub/nested/deep/main.rs", "fn main() {}\n");
    env.write(
        "py.py",
        "def f():\n    if x:\n        return 1\n    return 2\n",
    );
    env.write("dup.txt", "x = 1\ny = 2\nx = 1\n");
    env.mkdir("emptydir");
    std::fs::write(env.outside().join("secret.txt"), "TOP SECRET\n").expect("secret");
    std::fs::create_dir(env.outside().join("odir")).expect("odir");
    std::fs::write(env.outside().join("odir/o.txt"), "o\n").expect("o.txt");
    env.symlink("hello.txt", "link_in");
    env.symlink("sub", "link_dir");
    env.symlink("../outside/secret.txt", "link_out");
    env.symlink("../outside/odir", "link_out_dir");
    env.symlink("nonexistent", "dangling");
    env.mkfifo("pipe");
    let sock = UnixListener::bind(env.path("sock")).expect("bind socket");
    (env, sock)
}
