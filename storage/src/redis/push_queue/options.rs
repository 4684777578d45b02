//! Where the Redis push queue lives and who this worker is: the `push-queue-redis` options
//! with their defaults, and the URL redaction every message and log that names the
//! server goes through, so a password in the URL never leaves the process.

use crate::redis::link::Topology;
use std::fmt;
use std::time::Duration;

/// The keys of one shard of the queue: its stream, retry set and dead stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueKeys {
    pub stream: String,
    pub retry_key: String,
    pub dead_stream: String,
}

/// Where the Redis queue lives and who this worker is.
#[derive(Clone)]
pub struct RedisQueueOptions {
    /// `redis://[user][:password@]host[:port][/db]` (no TLS).
    pub url: String,
    /// The stream of ready jobs.
    pub stream: String,
    /// The sorted set of scheduled retries.
    pub retry_key: String,
    /// The stream of dead jobs.
    pub dead_stream: String,
    /// The consumer group every worker of the queue joins.
    pub group: String,
    /// This worker's name in the group; unique per process.
    pub consumer: String,
    /// How long a worker may hold a job before another worker takes it over.
    pub lease_timeout: Duration,
    /// One server, or a Redis Cluster (`url` is one of its nodes).
    pub topology: Topology,
    /// The queue's shards, when it is the shared store's ([`crate::RedisStore::queue_keys`]:
    /// each shard's steps add their jobs to the shard's stream, in their own hash slot);
    /// empty for the one set of keys above.
    pub shards: Vec<QueueKeys>,
}

impl RedisQueueOptions {
    /// The queue's shards: [`RedisQueueOptions::shards`], or the one set of keys.
    pub fn queue_keys(&self) -> Vec<QueueKeys> {
        match self.shards.is_empty() {
            true => vec![QueueKeys {
                stream: self.stream.clone(),
                retry_key: self.retry_key.clone(),
                dead_stream: self.dead_stream.clone(),
            }],
            false => self.shards.clone(),
        }
    }
}

impl Default for RedisQueueOptions {
    fn default() -> Self {
        RedisQueueOptions {
            url: "redis://127.0.0.1:6379/".to_owned(),
            stream: "a2ad:push".to_owned(),
            retry_key: "a2ad:push:retry".to_owned(),
            dead_stream: "a2ad:push:dead".to_owned(),
            group: "a2ad".to_owned(),
            consumer: default_consumer(),
            lease_timeout: Duration::from_secs(30),
            topology: Topology::Single,
            shards: Vec::new(),
        }
    }
}

/// Never shows the URL's password.
impl fmt::Debug for RedisQueueOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisQueueOptions")
            .field("url", &crate::redact_url(&self.url))
            .field("stream", &self.stream)
            .field("retry_key", &self.retry_key)
            .field("dead_stream", &self.dead_stream)
            .field("group", &self.group)
            .field("consumer", &self.consumer)
            .field("lease_timeout", &self.lease_timeout)
            .field("topology", &self.topology)
            .field("shards", &self.shards.len())
            .finish()
    }
}

/// `hostname-pid`: unique per process, and a restarted node is a new consumer (the old
/// one's unsettled jobs are reclaimed once their lease expires).
fn default_consumer() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "a2ad".to_owned());
    format!("{host}-{}", std::process::id())
}
