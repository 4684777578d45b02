//! The `retention:` block: how long terminal tasks (with their event logs, artifacts and,
//! once a context has none left, its session) are kept, and when an interrupted task that
//! nobody answers expires.
//!
//! ```yaml
//! retention:
//!   max-age: 30d              # terminal tasks older than this are removed ("never": keep)
//!   max-tasks: never          # keep at most this many terminal tasks per tenant
//!   interrupted-timeout: 7d   # input-/auth-required tasks unanswered this long are CANCELED
//!   sweep-interval: 1m
//!   tenants:
//!     acme: {max-age: 1d, max-tasks: 1000}
//! ```

use crate::units::{self, Scalar};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::time::Duration;

/// The whole block.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Terminal tasks whose last status is older than this are removed; `None` keeps them.
    #[serde(deserialize_with = "age", serialize_with = "show_age")]
    pub max_age: Option<Duration>,
    /// At most this many terminal tasks per tenant (the newest are kept); `None`: no limit.
    #[serde(deserialize_with = "count", serialize_with = "show_count")]
    pub max_tasks: Option<usize>,
    /// An input-required or auth-required task without an answer for this long is
    /// CANCELED (then kept like any terminal task); `None`: interrupted tasks wait forever.
    #[serde(deserialize_with = "age", serialize_with = "show_age")]
    pub interrupted_timeout: Option<Duration>,
    /// How often the sweeper runs.
    #[serde(deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub sweep_interval: Duration,
    /// Per-tenant overrides of the three limits above.
    pub tenants: BTreeMap<String, TenantRetention>,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            max_age: Some(Duration::from_secs(30 * 86_400)),
            max_tasks: None,
            interrupted_timeout: Some(Duration::from_secs(7 * 86_400)),
            sweep_interval: Duration::from_secs(60),
            tenants: BTreeMap::new(),
        }
    }
}

/// One tenant's overrides; an absent key takes the block's value.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TenantRetention {
    #[serde(
        default,
        deserialize_with = "some_age",
        serialize_with = "show_some_age",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_age: Option<Option<Duration>>,
    #[serde(
        default,
        deserialize_with = "some_count",
        serialize_with = "show_some_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_tasks: Option<Option<usize>>,
    #[serde(
        default,
        deserialize_with = "some_age",
        serialize_with = "show_some_age",
        skip_serializing_if = "Option::is_none"
    )]
    pub interrupted_timeout: Option<Option<Duration>>,
}

/// The limits that apply to one tenant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TenantLimits {
    pub max_age: Option<Duration>,
    pub max_tasks: Option<usize>,
    pub interrupted_timeout: Option<Duration>,
}

impl RetentionConfig {
    /// The block's limits with `tenant`'s overrides applied.
    pub fn for_tenant(&self, tenant: &str) -> TenantLimits {
        let own = self.tenants.get(tenant).cloned().unwrap_or_default();
        TenantLimits {
            max_age: own.max_age.unwrap_or(self.max_age),
            max_tasks: own.max_tasks.unwrap_or(self.max_tasks),
            interrupted_timeout: own.interrupted_timeout.unwrap_or(self.interrupted_timeout),
        }
    }
}

/// The words that turn a limit off.
fn is_never(text: &str) -> bool {
    matches!(text.trim(), "never" | "forever" | "off")
}

/// A duration, or `never`.
fn age<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    match Scalar::deserialize(d)? {
        Scalar::Int(n) => Ok(Some(Duration::from_secs(n))),
        Scalar::Float(f) => units::parse_duration(&f.to_string()).map(Some).map_err(de::Error::custom),
        Scalar::Text(t) if is_never(&t) => Ok(None),
        Scalar::Text(t) => {
            units::parse_duration(&t).map(Some).map_err(|e| de::Error::custom(format!("{e}, or `never`")))
        }
    }
}

/// A whole number, or `never`.
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    match Scalar::deserialize(d)? {
        Scalar::Int(n) => usize::try_from(n).map(Some).map_err(|_| de::Error::custom("out of range")),
        Scalar::Text(t) if is_never(&t) => Ok(None),
        _ => Err(de::Error::custom("must be a whole number of tasks, or `never`")),
    }
}

fn some_age<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Duration>>, D::Error> {
    age(d).map(Some)
}

fn some_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<usize>>, D::Error> {
    count(d).map(Some)
}

/// `serialize_with` for [`age`]: `never` for no limit.
fn show_age<S: Serializer>(age: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match age {
        Some(age) => units::show_duration(age, s),
        None => s.serialize_str("never"),
    }
}

/// `serialize_with` for [`count`]: `never` for no limit.
fn show_count<S: Serializer>(count: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
    match count {
        Some(count) => s.serialize_u64(*count as u64),
        None => s.serialize_str("never"),
    }
}

/// A tenant's override; an absent one (the block's value) is null.
fn show_some_age<S: Serializer>(age: &Option<Option<Duration>>, s: S) -> Result<S::Ok, S::Error> {
    match age {
        Some(age) => show_age(age, s),
        None => s.serialize_none(),
    }
}

fn show_some_count<S: Serializer>(count: &Option<Option<usize>>, s: S) -> Result<S::Ok, S::Error> {
    match count {
        Some(count) => show_count(count, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<RetentionConfig, String> {
        serde_path_to_error::deserialize(serde_yaml_ng::Deserializer::from_str(yaml))
            .map_err(|e| format!("{}: {}", e.path().clone(), e.into_inner()))
    }

    #[test]
    fn tenants_override_the_block_and_never_turns_a_limit_off() {
        let config = parse(
            "max-age: 2d\nmax-tasks: 100\nsweep-interval: 200ms\n\
             tenants:\n  acme: {max-age: 1h}\n  keep: {max-age: never, max-tasks: never}\n",
        )
        .unwrap();
        assert_eq!(config.sweep_interval, Duration::from_millis(200));
        let acme = config.for_tenant("acme");
        assert_eq!((acme.max_age, acme.max_tasks), (Some(Duration::from_secs(3600)), Some(100)));
        let keep = config.for_tenant("keep");
        assert_eq!((keep.max_age, keep.max_tasks), (None, None));
        let other = config.for_tenant("other");
        assert_eq!(other.max_age, Some(Duration::from_secs(2 * 86_400)));
        assert_eq!(other.interrupted_timeout, Some(Duration::from_secs(7 * 86_400)), "the default");
    }

    #[test]
    fn bad_values_name_the_key() {
        assert!(parse("max-age: soon\n").unwrap_err().starts_with("max-age"));
        assert!(parse("max-tasks: -3\n").unwrap_err().starts_with("max-tasks"));
        assert!(parse("tenants:\n  acme: {max-agee: 1d}\n").unwrap_err().contains("max-agee"));
    }
}
