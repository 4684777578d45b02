//! `store:` and the `redis:` block: where tasks, sessions and event logs live.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which store holds the node's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// The embedded store in `data-dir` (the default): one node owns it.
    #[default]
    Sled,
    /// One Redis shared by every node that points at it (`redis:`): any node serves any
    /// task (docs/cluster.md).
    Redis,
    /// Everything in the node's memory, gone when it stops: for tests, demos and
    /// ephemeral deployments (as every SDK offers), bounded by retention. The data dir
    /// keeps only the files agents write (artifacts, turn directories).
    Memory,
}

/// `redis:`: the shared store of `store: redis`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct RedisStoreConfig {
    /// `redis://[user][:password@]host[:port][/db]` or `unix://...`; with `cluster`, one
    /// node of the Redis Cluster (the others are found from it).
    pub url: String,
    /// `url` is a node of a Redis Cluster: commands go to the primary of their keys' hash
    /// slot (docs/cluster.md, "Redis Cluster").
    pub cluster: bool,
    /// How many hash tags the keys are spread over: an owner's keys share one, so every
    /// commit is one slot's script. Default 1 on one server, 16 on a cluster; fixed for
    /// the life of the data (a node refuses to start on a store made with another count).
    pub shards: Option<u16>,
    /// What every key starts with: nodes of one cluster share it.
    pub prefix: String,
    /// Connections each node keeps to Redis (commands in flight at once).
    pub connections: usize,
    /// How long a context's lease outlives its node's last renewal: a node that dies
    /// mid-turn holds the context this long, then another node fails the turn.
    #[serde(deserialize_with = "crate::units::duration", serialize_with = "crate::units::show_duration")]
    pub lease_ttl: Duration,
    /// Start although Redis may lose acknowledged writes (`appendonly no`, or
    /// `appendfsync` other than `always`): for development only.
    pub allow_weak_persistence: bool,
    /// Answer a step only once this many replicas of the primary confirmed it (`WAIT`):
    /// then a failover to a replica loses nothing acknowledged. 0 (the default): the
    /// primary's own persistence only. One server only (not with `cluster`).
    pub replica_acks: u32,
}

impl Default for RedisStoreConfig {
    fn default() -> Self {
        RedisStoreConfig {
            url: String::new(),
            cluster: false,
            shards: None,
            prefix: "a2ad:store".into(),
            connections: 8,
            lease_ttl: Duration::from_secs(10),
            allow_weak_persistence: false,
            replica_acks: 0,
        }
    }
}

impl RedisStoreConfig {
    /// The key at fault and why, for a `redis:` block that `store: redis` cannot use.
    pub(super) fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if !(self.url.starts_with("redis://") || self.url.starts_with("unix://")) {
            return Err(("redis.url", "must be a redis:// or unix:// URL (store: redis needs one)"));
        }
        if self.prefix.is_empty() || self.prefix.contains(['{', '}']) {
            return Err(("redis.prefix", "must be non-empty, without braces"));
        }
        if self.connections == 0 || self.connections > 256 {
            return Err(("redis.connections", "must be from 1 to 256"));
        }
        if self.lease_ttl < Duration::from_millis(500) {
            return Err(("redis.lease-ttl", "must be at least 500ms"));
        }
        if self.cluster && self.url.starts_with("unix://") {
            return Err((
                "redis.url",
                "must be a redis:// URL with redis.cluster (a cluster's nodes are found by address)",
            ));
        }
        if self.replica_acks > 16 {
            return Err(("redis.replica-acks", "must be from 0 to 16"));
        }
        if self.replica_acks > 0 && self.cluster {
            return Err(("redis.replica-acks", "is for one server with replicas, not with redis.cluster"));
        }
        if self.shards.is_some_and(|n| n == 0 || n > a2ad_storage::MAX_SHARDS) {
            return Err(("redis.shards", "must be from 1 to 1024"));
        }
        Ok(())
    }

    /// `shards`, or its default: 1 on one server, 16 on a cluster (enough to share the
    /// owners out over a few primaries).
    pub fn shard_count(&self) -> u16 {
        self.shards.unwrap_or(if self.cluster { 16 } else { 1 })
    }

    /// The storage crate's options.
    pub fn store_options(&self) -> a2ad_storage::RedisStoreOptions {
        a2ad_storage::RedisStoreOptions {
            url: self.url.clone(),
            topology: if self.cluster { a2ad_storage::Topology::Cluster } else { a2ad_storage::Topology::Single },
            shards: self.shard_count(),
            prefix: self.prefix.clone(),
            connections: self.connections,
            push_stream: None,
            lease_ttl: self.lease_ttl,
            replica_acks: self.replica_acks,
            ..a2ad_storage::RedisStoreOptions::default()
        }
    }
}
