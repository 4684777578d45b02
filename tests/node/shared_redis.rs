//! The shared store's Redis for the multi-node tests: one redis-server, or a Redis Cluster
//! of three primaries when the suite runs with `A2AD_TEST_STORE=redis-cluster` (the third
//! pass of `scripts/test.sh`), so the same scenarios run on both topologies.

use crate::redis::RedisServer;

/// The storage crate's cluster harness, the very same file (it needs only std, `redis`
/// and `tempfile`); the storage tests use parts of it these do not.
#[allow(dead_code)]
#[path = "../../storage/src/redis/test_cluster.rs"]
mod harness;
pub(crate) use harness::{redis_server_binary, spawn_server, start_server, RedisCluster};

/// Whether this run puts the shared store on a Redis Cluster.
pub(crate) fn on_a_cluster() -> bool {
    std::env::var("A2AD_TEST_STORE").as_deref() == Ok("redis-cluster")
}

/// One server or a cluster; killed on drop.
pub(crate) enum SharedRedis {
    Server(RedisServer),
    Cluster(RedisCluster),
}

impl SharedRedis {
    /// The topology this run asks for, with the server options `extra` (persistence);
    /// `None` (skip) without a redis-server, as [`RedisServer::start_with`].
    pub(crate) fn start_with(extra: &[&str]) -> Option<SharedRedis> {
        if !on_a_cluster() {
            return RedisServer::start_with(extra).map(SharedRedis::Server);
        }
        let binary =
            redis_server_binary().expect("A2AD_TEST_STORE=redis-cluster: no redis-server (set A2AD_REDIS_SERVER)");
        let cluster = RedisCluster::start(&binary, 3, extra);
        Some(SharedRedis::Cluster(cluster.unwrap_or_else(|e| panic!("A2AD_TEST_STORE=redis-cluster: {e}"))))
    }

    /// The URL a node is given: the server's, or the cluster's seed node's.
    pub(crate) fn url(&self) -> String {
        match self {
            SharedRedis::Server(server) => format!("redis://127.0.0.1:{}/", server.port),
            SharedRedis::Cluster(cluster) => cluster.url(),
        }
    }

    /// The `redis:` block's lines (two-space indented) that name it.
    pub(crate) fn config_lines(&self) -> String {
        format!("  url: {}\n  cluster: {}\n", self.url(), matches!(self, SharedRedis::Cluster(_)))
    }

    /// SIGKILL of the server, or of every node of the cluster.
    pub(crate) fn kill(&mut self) {
        match self {
            SharedRedis::Server(server) => server.kill(),
            SharedRedis::Cluster(cluster) => cluster.kill(),
        }
    }

    /// Starts it again as it was (a server with the options `extra`).
    pub(crate) fn restart(&mut self, extra: &[&str]) {
        match self {
            SharedRedis::Server(server) => server.restart(extra),
            SharedRedis::Cluster(cluster) => cluster.restart().expect("the cluster comes back"),
        }
    }
}
