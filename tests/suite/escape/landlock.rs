//! Landlock, the second wall, is in force where the tests run: the server
//! confines itself (read-write roots when a write tool is enabled, read-only
//! otherwise), and says so at startup. Where the kernel has no Landlock this
//! skips, or fails under `TULS_REQUIRE_LANDLOCK=1` (as in CI), so a CI run
//! never passes the Landlock runs of the escape and race tests without
//! Landlock behind them.

use crate::util::{
    Server, TestEnv, default_timeout, landlock_status, require_landlock, wait_until,
};

#[test]
fn the_server_confines_itself_with_landlock() {
    let env = TestEnv::new();
    if !require_landlock("Landlock confinement of the server", &env.root()) {
        return;
    }
    let full = landlock_status(&env.root());
    assert!(full.starts_with("active ("), "{full}");
    assert!(full.ends_with("; roots read-write)"), "{full}");

    let server = Server::start(&args![env.root(), "--allow", "filesystem.read"]);
    let line = "tuls: landlock: active (";
    let active = || {
        server
            .stderr()
            .lines()
            .any(|l| l.starts_with(line) && l.ends_with("; roots read-only)"))
    };
    assert!(
        wait_until(default_timeout(), active),
        "no {line:?}…read-only line at startup:\n{}",
        server.stderr()
    );
}
