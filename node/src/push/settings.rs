//! The push settings the node runs with: the top-level `push-*` keys of the config, read
//! straight into [`PushConfig`] (each field is renamed to its key).

use crate::units;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which durable queue holds push jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushQueueKind {
    /// A queue in the node's own sled data dir (the default).
    LocalFile,
    /// Redis Streams, shared by several nodes.
    RedisStreams,
}

/// Every push setting, as the node uses them. The keys sit at the top level of the
/// config file (`push-queue: redis-streams`), so each field names its key; the config
/// hands this struct the `push-*` keys alone.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PushConfig {
    /// Turns on the capability, the four config methods and delivery.
    #[serde(rename = "push-notifications")]
    pub enabled: bool,
    #[serde(rename = "push-queue")]
    pub queue: PushQueueKind,
    /// CIDRs, IPs or host names (`*.example.com`) that webhooks may reach although they
    /// are private (trusted internal receivers).
    #[serde(rename = "push-allow")]
    pub allow: Vec<String>,
    /// Deliver only terminal and interrupted states.
    #[serde(rename = "push-terminal-only")]
    pub terminal_only: bool,
    #[serde(rename = "push-timeout", deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub timeout: Duration,
    #[serde(rename = "push-max-attempts")]
    pub max_attempts: u32,
    #[serde(rename = "push-max-age", deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub max_age: Duration,
    #[serde(rename = "push-retry-base", deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub retry_base: Duration,
    #[serde(rename = "push-retry-max", deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub retry_max: Duration,
    /// Deliveries in flight at once, in all.
    #[serde(rename = "push-concurrency")]
    pub concurrency: usize,
    /// Deliveries in flight at once to one destination (the `host:port` of the URL).
    #[serde(rename = "push-destination-concurrency")]
    pub destination_concurrency: usize,
    /// Deliveries in flight at once for one tenant.
    #[serde(rename = "push-tenant-concurrency")]
    pub tenant_concurrency: usize,
    /// Failed deliveries in a row to one destination that open its circuit.
    #[serde(rename = "push-circuit-failures")]
    pub circuit_failures: u32,
    /// How long an open circuit stays open at first (doubling per failed probe, at most
    /// `push-retry-max`).
    #[serde(
        rename = "push-circuit-open",
        deserialize_with = "units::duration",
        serialize_with = "units::show_duration"
    )]
    pub circuit_open: Duration,
    #[serde(rename = "push-redis-url")]
    pub redis_url: Option<String>,
    #[serde(rename = "push-stream")]
    pub stream: String,
    #[serde(rename = "push-retry-key")]
    pub retry_key: String,
    #[serde(rename = "push-dead-stream")]
    pub dead_stream: String,
    #[serde(rename = "push-consumer-group")]
    pub consumer_group: String,
    #[serde(rename = "push-consumer-name")]
    pub consumer_name: Option<String>,
    #[serde(
        rename = "push-lease-timeout-ms",
        deserialize_with = "units::millis",
        serialize_with = "units::show_millis"
    )]
    pub lease_timeout: Duration,
}

impl Default for PushConfig {
    /// The delivery worker's defaults are its own ([`a2ad_actors::push::PushSettings`]):
    /// said once, there.
    fn default() -> Self {
        let worker = a2ad_actors::push::PushSettings::default();
        PushConfig {
            enabled: false,
            queue: PushQueueKind::LocalFile,
            allow: Vec::new(),
            terminal_only: false,
            timeout: Duration::from_secs(10),
            max_attempts: worker.max_attempts,
            max_age: worker.max_age,
            retry_base: worker.retry_base,
            retry_max: worker.retry_max,
            concurrency: worker.concurrency,
            destination_concurrency: worker.destination_concurrency,
            tenant_concurrency: worker.tenant_concurrency,
            circuit_failures: worker.circuit_failures,
            circuit_open: worker.circuit_open,
            redis_url: None,
            stream: "a2ad:push".into(),
            retry_key: "a2ad:push:retry".into(),
            dead_stream: "a2ad:push:dead".into(),
            consumer_group: "a2ad".into(),
            consumer_name: None,
            lease_timeout: Duration::from_millis(30_000),
        }
    }
}

impl PushConfig {
    /// The checks serde's types cannot express; the error names the key.
    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        if self.max_attempts == 0 {
            return Err(("push-max-attempts", "must be at least 1".into()));
        }
        let at_least_one = [
            ("push-concurrency", self.concurrency),
            ("push-destination-concurrency", self.destination_concurrency),
            ("push-tenant-concurrency", self.tenant_concurrency),
            ("push-circuit-failures", self.circuit_failures as usize),
        ];
        if let Some((key, _)) = at_least_one.iter().find(|(_, value)| *value == 0) {
            return Err((key, "must be at least 1".into()));
        }
        if self.circuit_open.is_zero() {
            return Err(("push-circuit-open", "must be longer than 0s".into()));
        }
        if self.queue == PushQueueKind::RedisStreams && self.redis_url.is_none() {
            return Err(("push-redis-url", "is required with push-queue: redis-streams".into()));
        }
        if let Err(e) = super::url_guard::UrlPolicy::new(&self.allow) {
            return Err(("push-allow", e));
        }
        Ok(())
    }
}
