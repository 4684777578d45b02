//! The config's keys, taken from the struct itself: [`Config::default`] serialized to a
//! YAML mapping names every key (`data-dir`) and every key of a block that has one by
//! default (`card.compat-v03`). `A2AD_<KEY>` variables and the binary's flags set keys by
//! name, merged into the file's mapping before it is deserialized, so they are read,
//! checked and reported exactly as the file's own keys are.

use super::{transports, Config, UNIX_MODE_KEY};
use serde_yaml_ng::{Mapping, Value};
use std::sync::OnceLock;

/// The prefix of the variables that set keys (`A2AD_DATA_DIR` sets `data-dir`).
const ENV_PREFIX: &str = "A2AD_";

impl Config {
    /// Every key, top-level and nested, dotted (`card.compat-v03`), in the struct's order.
    pub fn keys() -> &'static [String] {
        static KEYS: OnceLock<Vec<String>> = OnceLock::new();
        KEYS.get_or_init(|| {
            // Serializing plain data into a `Value` cannot fail; were it to, no variable
            // would be taken (and the tests, which list known keys, would say so).
            let defaults = serde_yaml_ng::to_value(Config::default()).unwrap_or(Value::Null);
            let mut keys = Vec::new();
            collect_keys(&defaults, "", &mut keys);
            keys
        })
    }

    /// The overrides found in `A2AD_*` environment variables: a variable is taken when
    /// its name is a key's (upper case, `-` and `.` as `_`). Other `A2AD_*` variables
    /// belong to other features (`A2AD_HTTP_TOKEN`) and are left alone.
    pub fn env_overrides(vars: impl Iterator<Item = (String, String)>) -> Vec<Override> {
        let mut found: Vec<Override> = vars
            .filter_map(|(name, value)| {
                let key = key_of_variable(&name)?;
                Some(Override { key: key.to_owned(), value, origin: Origin::Variable(name) })
            })
            .collect();
        found.sort_by(|a, b| a.key.cmp(&b.key));
        found
    }
}

/// One key set outside the file, and where: merged into the file's mapping before it is
/// read, so its value is checked as the file's own would be, and an error names the
/// variable or flag it came from rather than a key the file does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// The dotted key it sets (`card.compat-v03`).
    pub key: String,
    /// The value as given (read as YAML when it parses: see [`override_value`]).
    pub value: String,
    pub origin: Origin,
}

impl Override {
    /// A command-line flag, named as its key is (`--data-dir` sets `data-dir`).
    pub fn flag(key: &str, value: impl Into<String>) -> Self {
        Override { key: key.to_owned(), value: value.into(), origin: Origin::Flag(format!("--{key}")) }
    }

    /// Whether a value refused at `key` is this override's: its own key, or a key inside
    /// the block it set (`redis-transport.url` for `A2AD_REDIS_TRANSPORT`).
    pub(super) fn covers(&self, key: &str) -> bool {
        key.strip_prefix(self.key.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    }
}

/// Where an [`Override`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An `A2AD_*` environment variable, by name.
    Variable(String),
    /// A command-line flag, as written (`--body-limit`).
    Flag(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Variable(name) => write!(f, "environment variable {name}"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// The key an `A2AD_*` variable sets, if any. A top-level key wins over a nested one of
/// the same spelling (there is none: a test checks).
pub(super) fn key_of_variable(name: &str) -> Option<&'static str> {
    let wanted = name.strip_prefix(ENV_PREFIX)?;
    Config::keys().iter().find(|key| variable_suffix(key) == wanted).map(String::as_str)
}

/// `card.compat-v03` → `CARD_COMPAT_V03`.
pub(super) fn variable_suffix(key: &str) -> String {
    key.to_ascii_uppercase().replace(['-', '.'], "_")
}

/// The keys of `value` below `prefix`: each key of a mapping, then the keys of its value
/// when that is a mapping too.
fn collect_keys(value: &Value, prefix: &str, keys: &mut Vec<String>) {
    let Value::Mapping(map) = value else { return };
    for (key, nested) in map {
        let Some(key) = key.as_str() else { continue };
        let dotted = if prefix.is_empty() { key.to_owned() } else { format!("{prefix}.{key}") };
        keys.push(dotted.clone());
        collect_keys(nested, &dotted, keys);
    }
}

/// An override's value: YAML when it parses (`8`, `true`, `{url: ...}`), else the text.
/// `listen-unix-mode` keeps its text (`0o660` would be read as the integer 432).
pub(super) fn override_value(key: &str, raw: &str) -> Value {
    let value = match key {
        UNIX_MODE_KEY => transports::scalar_as_written(raw).map(Value::String),
        _ => serde_yaml_ng::from_str::<Value>(raw).ok(),
    };
    value.unwrap_or_else(|| Value::String(raw.to_owned()))
}

/// Sets `key` in the file's mapping; a dotted key (`card.compat-v03`) sets that key of the
/// nested block, adding the block when the file has none. A block that is not a mapping
/// is left as written, so the file's own error is the one reported.
pub(super) fn insert_override(map: &mut Mapping, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            map.insert(Value::String(key.to_owned()), value);
        }
        Some((block, rest)) => {
            let entry = map.entry(Value::String(block.to_owned())).or_insert_with(|| Value::Mapping(Mapping::new()));
            if entry.is_null() {
                *entry = Value::Mapping(Mapping::new());
            }
            if let Value::Mapping(nested) = entry {
                insert_override(nested, rest, value);
            }
        }
    }
}
