//! A redis-server of a test's own: started on a free loopback port in a temp dir, killed
//! on drop. The push queue's tests and the task store's share it.

use crate::redis::test_cluster::{redis_server_binary, spawn_server, start_server};
use crate::test_skip::skip_for_want_of;
use std::path::PathBuf;
use std::process::Child;

/// How to get a redis-server, as a skip says it.
const HOW: &str = "install one (scripts/redis.sh) or name it in A2AD_REDIS_SERVER";

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

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Sends `signal` to the server (SIGSTOP: it keeps its connections and answers
    /// nothing until SIGCONT).
    pub(crate) fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on the pid of a child this value owns (not reaped yet).
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, signal);
        }
    }

    /// SIGKILL: an outage (what the server had not written to its append-only file is gone).
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port and directory, as `extra` asks.
    pub(crate) fn restart(&mut self, extra: &[&str]) {
        self.child = spawn_server(&self.binary, self.port, self.dir.path(), extra).expect("redis-server restarts");
    }
}

/// A Redis Cluster of three primaries of the test's own (`redis/test_cluster.rs`), keeping
/// nothing on disk, or `None` as [`redis`] gives it.
pub(crate) fn redis_cluster() -> Option<crate::redis::test_cluster::RedisCluster> {
    let binary = redis_server_binary().or_else(|| {
        skip_for_want_of("redis-server", "A2AD_REQUIRE_REDIS", HOW);
        None
    })?;
    Some(
        crate::redis::test_cluster::RedisCluster::start(&binary, 3, &["--appendonly", "no"])
            .expect("a Redis Cluster starts"),
    )
}

/// Starts a redis-server keeping nothing on disk, or `None` (a loud skip, see
/// `crate::test_skip`) when there is none to start and the run does not require one.
pub(crate) fn redis() -> Option<RedisServer> {
    redis_with(&["--appendonly", "no"])
}

/// [`redis`] with the server options `extra` (persistence).
pub(crate) fn redis_with(extra: &[&str]) -> Option<RedisServer> {
    let Some(binary) = redis_server_binary() else {
        skip_for_want_of("redis-server", "A2AD_REQUIRE_REDIS", HOW);
        return None;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    match start_server(&binary, dir.path(), extra) {
        Ok((child, port)) => Some(RedisServer { child, port, binary, dir }),
        Err(e) => panic!("could not start {}: {e}", binary.display()),
    }
}
