//! A redis-server of a test's own: started on a free loopback port in a temp dir, killed
//! on drop. The push queue's tests and the task store's share it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A redis-server of the test's own, on a free loopback port, killed on drop.
pub(crate) struct RedisServer {
    child: Child,
    port: u16,
    binary: PathBuf,
    dir: tempfile::TempDir,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

impl RedisServer {
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// SIGKILL: an outage (what the server had not written to its append-only file is gone).
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port and directory, as `extra` asks.
    pub(crate) fn restart(&mut self, extra: &[&str]) {
        self.child = spawn(&self.binary, self.port, self.dir.path(), extra).expect("redis-server restarts");
    }
}

/// A Redis Cluster of three primaries of the test's own (`test_redis_cluster.rs`), keeping
/// nothing on disk, or `None` as [`redis`] gives it.
pub(crate) fn redis_cluster() -> Option<crate::test_redis_cluster::RedisCluster> {
    let binary = redis_server_binary().or_else(|| {
        assert!(
            std::env::var_os("A2AD_REQUIRE_REDIS").is_none(),
            "A2AD_REQUIRE_REDIS is set but there is no redis-server"
        );
        eprintln!("skipped: no redis-server (set A2AD_REDIS_SERVER or run scripts/redis.sh)");
        None
    })?;
    Some(
        crate::test_redis_cluster::RedisCluster::start(&binary, 3, &["--appendonly", "no"])
            .expect("a Redis Cluster starts"),
    )
}

/// `A2AD_REDIS_SERVER`, else `redis-server` on PATH.
fn redis_server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("A2AD_REDIS_SERVER").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
}

/// Starts a redis-server keeping nothing on disk, or `None` (with a notice) when there is
/// none to start and `A2AD_REQUIRE_REDIS` is unset.
pub(crate) fn redis() -> Option<RedisServer> {
    redis_with(&["--appendonly", "no"])
}

/// [`redis`] with the server options `extra` (persistence).
pub(crate) fn redis_with(extra: &[&str]) -> Option<RedisServer> {
    let Some(binary) = redis_server_binary() else {
        if std::env::var_os("A2AD_REQUIRE_REDIS").is_some() {
            panic!("A2AD_REQUIRE_REDIS is set but there is no redis-server (set A2AD_REDIS_SERVER or run scripts/redis.sh)");
        }
        eprintln!("skipped: no redis-server (set A2AD_REDIS_SERVER or run scripts/redis.sh; A2AD_REQUIRE_REDIS=1 makes this fail)");
        return None;
    };
    // Another process may take the free port between our probe and redis binding it.
    let mut last_error = String::new();
    for _ in 0..3 {
        match start(&binary, extra) {
            Ok(server) => return Some(server),
            Err(e) => last_error = e,
        }
    }
    panic!("could not start {}: {last_error}", binary.display());
}

fn start(binary: &Path, extra: &[&str]) -> Result<RedisServer, String> {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let child = spawn(binary, port, dir.path(), extra)?;
    Ok(RedisServer { child, port, binary: binary.to_owned(), dir })
}

/// A redis-server on `port` in `dir`, once it answers PING.
fn spawn(binary: &Path, port: u16, dir: &Path, extra: &[&str]) -> Result<Child, String> {
    let mut command = Command::new(binary);
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
        .args(extra)
        .arg("--dir")
        .arg(dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = crate::test_redis_cluster::spawn_tied(command).map_err(|e| e.to_string())?;
    crate::test_redis_cluster::wait_until_serving(&mut child, port)?;
    Ok(child)
}
