//! The `push-*` keys: push notifications, their queue and their delivery.

pub use crate::push::{PushConfig, PushQueueKind};

use super::units;
use serde::Deserialize;
use std::time::Duration;

/// The keys as written (flattened into the top level of the file by the caller).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub(super) struct PushKeys {
    pub push_notifications: bool,
    pub push_queue: PushQueueKind,
    pub push_allow: Vec<String>,
    pub push_terminal_only: bool,
    #[serde(deserialize_with = "units::duration")]
    pub push_timeout: Duration,
    pub push_max_attempts: u32,
    #[serde(deserialize_with = "units::duration")]
    pub push_max_age: Duration,
    #[serde(deserialize_with = "units::duration")]
    pub push_retry_base: Duration,
    #[serde(deserialize_with = "units::duration")]
    pub push_retry_max: Duration,
    pub push_concurrency: usize,
    pub push_redis_url: Option<String>,
    pub push_stream: String,
    pub push_retry_key: String,
    pub push_dead_stream: String,
    pub push_consumer_group: String,
    pub push_consumer_name: Option<String>,
    pub push_lease_timeout_ms: u64,
}

impl Default for PushKeys {
    fn default() -> Self {
        PushKeys {
            push_notifications: false,
            push_queue: PushQueueKind::LocalFile,
            push_allow: Vec::new(),
            push_terminal_only: false,
            push_timeout: Duration::from_secs(10),
            push_max_attempts: 8,
            push_max_age: Duration::from_secs(3600),
            push_retry_base: Duration::from_secs(1),
            push_retry_max: Duration::from_secs(300),
            push_concurrency: 32,
            push_redis_url: None,
            push_stream: "a2ad:push".into(),
            push_retry_key: "a2ad:push:retry".into(),
            push_dead_stream: "a2ad:push:dead".into(),
            push_consumer_group: "a2ad".into(),
            push_consumer_name: None,
            push_lease_timeout_ms: 30_000,
        }
    }
}

impl PushKeys {
    pub(super) fn check(self) -> Result<PushConfig, super::ConfigError> {
        let invalid = |key: &str, message: &str| super::ConfigError::invalid(key, message);
        if self.push_max_attempts == 0 {
            return Err(invalid("push-max-attempts", "must be at least 1"));
        }
        if self.push_concurrency == 0 {
            return Err(invalid("push-concurrency", "must be at least 1"));
        }
        if self.push_queue == PushQueueKind::RedisStreams && self.push_redis_url.is_none() {
            return Err(invalid("push-redis-url", "is required with push-queue: redis-streams"));
        }
        if let Err(e) = crate::push::url_guard::UrlPolicy::new(&self.push_allow) {
            return Err(super::ConfigError::invalid("push-allow", e));
        }
        Ok(PushConfig {
            enabled: self.push_notifications,
            queue: self.push_queue,
            allow: self.push_allow,
            terminal_only: self.push_terminal_only,
            timeout: self.push_timeout,
            max_attempts: self.push_max_attempts,
            max_age: self.push_max_age,
            retry_base: self.push_retry_base,
            retry_max: self.push_retry_max,
            concurrency: self.push_concurrency,
            redis_url: self.push_redis_url,
            stream: self.push_stream,
            retry_key: self.push_retry_key,
            dead_stream: self.push_dead_stream,
            consumer_group: self.push_consumer_group,
            consumer_name: self.push_consumer_name,
            lease_timeout: Duration::from_millis(self.push_lease_timeout_ms),
        })
    }
}
