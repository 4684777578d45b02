//! The extra transports of JSON-RPC: the keys `websocket`, `websocket-queue`,
//! `listen-unix`, `listen-unix-mode` and the `redis-transport:` block.
//!
//! Each transport is off unless configured (see README, "Transports").

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

/// What `websocket-queue` is unless set: frames a WebSocket client may fall behind.
pub const DEFAULT_WEBSOCKET_QUEUE: usize = 256;

/// What `listen-unix-mode` is unless set: owner and group may connect.
pub const DEFAULT_UNIX_MODE: u32 = 0o660;

/// `listen-unix-mode`: octal permission bits, written `0660` (a leading zero) or `0o660`,
/// bare or quoted. A bare number without either prefix (`660`) is refused: whether it
/// means octal or decimal would be a guess. YAML turns a plain `0o660` into the integer
/// 432, so [`unix_mode_as_written`] puts back the key's text before this runs.
pub fn unix_mode<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let refused = || {
        de::Error::custom("must be octal permission bits from 0000 to 0777, with a leading 0 or 0o, e.g. 0660 or 0o660")
    };
    let text = match serde_yaml_ng::Value::deserialize(d)? {
        serde_yaml_ng::Value::String(text) => text,
        _ => return Err(refused()),
    };
    let text = text.trim();
    let digits = match text.strip_prefix("0o") {
        Some(digits) => digits,
        None if text.len() >= 2 && text.starts_with('0') => text,
        None => return Err(refused()),
    };
    if digits.is_empty() || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return Err(refused());
    }
    match u32::from_str_radix(digits, 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(refused()),
    }
}

/// `serialize_with` for [`unix_mode`]: `0o660`, which it reads back.
pub fn show_unix_mode<S: Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{mode:#o}"))
}

/// The `listen-unix-mode` value of a YAML document as written (`0o660`, not the 432 YAML
/// makes of it), when the document is a mapping that has the key with a scalar value.
pub fn unix_mode_as_written(yaml: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Written {
        #[serde(rename = "listen-unix-mode")]
        mode: Option<String>,
    }
    serde_yaml_ng::from_str::<Written>(yaml).ok()?.mode
}

/// A scalar override (an `A2AD_*` variable) as written, for the same reason.
pub fn scalar_as_written(yaml: &str) -> Option<String> {
    serde_yaml_ng::from_str::<String>(yaml).ok()
}

/// `redis-transport:`: JSON-RPC requests read from a Redis stream by a consumer group.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RedisTransportConfig {
    /// `redis://host:port/db`.
    pub url: String,
    /// The stream requests are read from.
    #[serde(default = "default_requests")]
    pub requests: String,
    /// The consumer group the nodes share.
    #[serde(default = "default_group")]
    pub group: String,
    /// This node's name in the group; unique per node (default `<hostname>-<pid>`).
    #[serde(default = "default_consumer")]
    pub consumer: String,
    /// How long one `XREADGROUP` waits for new entries, in milliseconds.
    #[serde(default = "default_block_ms")]
    pub block_ms: u64,
    /// Entries pending this long on any consumer (a dead one) are claimed by this node.
    #[serde(
        default = "default_claim_idle",
        deserialize_with = "crate::units::duration",
        serialize_with = "crate::units::show_duration"
    )]
    pub claim_idle: Duration,
    /// Requests this node handles at once from the stream.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Reply streams are trimmed to about this many entries (`XADD MAXLEN ~`).
    #[serde(default = "default_reply_maxlen")]
    pub reply_maxlen: usize,
}

fn default_requests() -> String {
    "a2ad:requests".into()
}

fn default_group() -> String {
    "a2ad".into()
}

/// `<hostname>-<pid>`: unique on a host, and telling in `XINFO CONSUMERS`.
fn default_consumer() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "a2ad".into());
    format!("{host}-{}", std::process::id())
}

fn default_block_ms() -> u64 {
    2000
}

fn default_claim_idle() -> Duration {
    Duration::from_secs(60)
}

fn default_max_in_flight() -> usize {
    64
}

fn default_reply_maxlen() -> usize {
    10_000
}

impl RedisTransportConfig {
    /// The checks serde's types cannot express; the error names the key.
    pub(super) fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if !(self.url.starts_with("redis://") || self.url.starts_with("unix://")) {
            return Err(("redis-transport.url", "must be a redis:// or unix:// URL"));
        }
        for (key, value) in [
            ("redis-transport.requests", &self.requests),
            ("redis-transport.group", &self.group),
            ("redis-transport.consumer", &self.consumer),
        ] {
            if value.trim().is_empty() {
                return Err((key, "must not be empty"));
            }
        }
        if !(10..=60_000).contains(&self.block_ms) {
            return Err(("redis-transport.block-ms", "must be from 10 to 60000"));
        }
        if self.claim_idle < Duration::from_millis(100) {
            return Err(("redis-transport.claim-idle", "must be at least 100ms"));
        }
        // A node refreshes its running entries between reads; a read must not outlast them.
        if self.claim_idle <= Duration::from_millis(self.block_ms * 2) {
            return Err(("redis-transport.claim-idle", "must be more than twice block-ms"));
        }
        if self.max_in_flight == 0 {
            return Err(("redis-transport.max-in-flight", "must be at least 1"));
        }
        if self.reply_maxlen == 0 {
            return Err(("redis-transport.reply-maxlen", "must be at least 1"));
        }
        Ok(())
    }
}
