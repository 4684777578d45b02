//! The push settings the node runs with (the `push-*` keys, parsed by the config).

use serde::Deserialize;
use std::time::Duration;

/// Which durable queue holds push jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushQueueKind {
    /// A queue in the node's own sled data dir (the default).
    LocalFile,
    /// Redis Streams, shared by several nodes.
    RedisStreams,
}

/// Every push setting, as the node uses them.
#[derive(Debug, Clone, PartialEq)]
pub struct PushConfig {
    /// Turns on the capability, the four config methods and delivery.
    pub enabled: bool,
    pub queue: PushQueueKind,
    /// CIDRs, IPs or host names (`*.example.com`) that webhooks may reach although they
    /// are private (trusted internal receivers).
    pub allow: Vec<String>,
    /// Deliver only terminal and interrupted states.
    pub terminal_only: bool,
    pub timeout: Duration,
    pub max_attempts: u32,
    pub max_age: Duration,
    pub retry_base: Duration,
    pub retry_max: Duration,
    pub concurrency: usize,
    pub redis_url: Option<String>,
    pub stream: String,
    pub retry_key: String,
    pub dead_stream: String,
    pub consumer_group: String,
    pub consumer_name: Option<String>,
    pub lease_timeout: Duration,
}
