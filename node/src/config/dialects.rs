//! The `dialect-01:` block: how the 0.1 dialect (`tasks/sendSubscribe`) behaves.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `dialect-01:`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct Dialect01Config {
    /// A `tasks/sendSubscribe` stream still running after this long gets `event:
    /// heartbeat` (`{"ok": true}`) and is closed: 0.1 gateways reconnect or poll.
    #[serde(deserialize_with = "crate::units::duration", serialize_with = "crate::units::show_duration")]
    pub heartbeat_window: Duration,
}

impl Default for Dialect01Config {
    fn default() -> Self {
        Dialect01Config { heartbeat_window: Duration::from_secs(60) }
    }
}
