//! What a node needs to reach its Redis store: [`RedisStoreOptions`], read from the
//! node's `redis.*` keys (`docs/configuration.md`). Its `Debug` redacts the URL's password.

use super::lease;
use crate::redis::link::Topology;
use std::time::Duration;

/// Where the store lives.
#[derive(Clone)]
pub struct RedisStoreOptions {
    /// `redis://[user][:password@]host[:port][/db]`: the server, or with
    /// [`Topology::Cluster`] one node of the Redis Cluster.
    pub url: String,
    /// One server, or a Redis Cluster.
    pub topology: Topology,
    /// How many hash tags the keys are spread over (`keys.rs`): 1 on one server; on a
    /// cluster, enough for its primaries to share the owners out. Fixed for the life of
    /// the data: every node of a store must use the same.
    pub shards: u16,
    /// What every key starts with.
    pub prefix: String,
    /// How many connections the node keeps (commands in flight at once).
    pub connections: usize,
    /// The push queue's stream, when push jobs go to Redis Streams: a step's jobs are
    /// added to it by the step's own commit script.
    pub push_stream: Option<String>,
    /// How long a context's lease outlives its node's last renewal.
    pub lease_ttl: Duration,
    /// This node's id in leases (default: `<host>-<pid>-<random>`, unique per process).
    pub node_id: String,
    /// Replicas that must confirm each step (`WAIT`) before it counts as written; 0: none.
    pub replica_acks: u32,
}

impl Default for RedisStoreOptions {
    fn default() -> Self {
        RedisStoreOptions {
            url: "redis://127.0.0.1:6379/".to_owned(),
            topology: Topology::Single,
            shards: 1,
            prefix: "a2ad:store".to_owned(),
            connections: 8,
            push_stream: None,
            lease_ttl: Duration::from_secs(10),
            node_id: lease::new_node_id(),
            replica_acks: 0,
        }
    }
}

impl std::fmt::Debug for RedisStoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStoreOptions")
            .field("url", &crate::redact_url(&self.url))
            .field("topology", &self.topology)
            .field("shards", &self.shards)
            .field("prefix", &self.prefix)
            .field("connections", &self.connections)
            .field("push_stream", &self.push_stream)
            .field("lease_ttl", &self.lease_ttl)
            .field("node_id", &self.node_id)
            .field("replica_acks", &self.replica_acks)
            .finish()
    }
}
