//! The node's configuration: one struct, read from YAML, then `A2AD_*` environment
//! variables, then command-line flags, each overriding the one before.
//!
//! Keys are kebab-case. An unknown key or a bad value stops start-up with a message that
//! names the key (`agents[1].echo.chunk-delay: unknown duration unit ...`), and the
//! variable or flag when one set it (`environment variable A2AD_BODY_LIMIT (config key
//! `body-limit`): ...`).

mod agents;
mod card;
mod content;
mod dialects;
mod keys;
mod limits;
pub mod retention;
mod store;
mod transports;
mod unknown_key;

pub use crate::push::{PushConfig, PushQueueKind};
pub use agents::{AgentConfig, AgentKind};
pub use card::{CardConfig, CardSigningKey, ProviderConfig, MIN_CARD_SECRET_LEN};
pub use content::{ArtifactsConfig, InputPartsConfig};
pub use dialects::Dialect01Config;
pub use keys::{Origin, Override};
pub use limits::{ExtensionConfig, Limits};
pub use retention::{RetentionConfig, TenantLimits};
pub use store::{RedisStoreConfig, StoreKind};
pub use transports::{RedisTransportConfig, DEFAULT_UNIX_MODE, DEFAULT_WEBSOCKET_QUEUE};

use crate::units;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// sled's page cache unless configured otherwise (`store-cache-size`).
pub const DEFAULT_STORE_CACHE_SIZE: usize = a2ad_storage::DEFAULT_CACHE_BYTES;
/// A floor that keeps a slip (`64KiB` for `64MiB`) from leaving sled next to no cache.
const MIN_STORE_CACHE_SIZE: usize = 1 << 20;

/// The write-ahead log's file size unless configured otherwise (`wal-segment-size`).
pub const DEFAULT_WAL_SEGMENT_SIZE: usize = 64 << 20;
const MIN_WAL_SEGMENT_SIZE: usize = 8 << 20;

/// Where the HTTP+JSON binding is mounted unless configured otherwise (`rest-prefix`).
pub const DEFAULT_REST_PREFIX: &str = "/a2a";

/// Everything a node needs to start, declared once: the file's keys are these fields
/// (kebab-case), their defaults are [`Config::default`], the `A2AD_*` variables are its
/// keys (see `keys.rs`), and [`Config::validate`] checks it in place.
///
/// Two keys are not read by the derive: the `push-*` keys belong to [`PushConfig`]
/// (serde cannot flatten a struct that refuses unknown keys), and `agents` is read entry
/// by entry (`agents.rs`) so that a bad entry is named `agents[1].kind`. Both are
/// written by the derive, so the key set is whole.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct Config {
    /// Where the HTTP server listens (port 0 picks a free port).
    pub listen: SocketAddr,
    /// The base URL clients use, as written in the card; defaults to `http://<listen>`.
    pub public_url: Option<String>,
    /// Where the sled store lives (and, with `store: redis`, the node's own files: the
    /// push key, artifacts).
    pub data_dir: PathBuf,
    /// Where tasks, sessions and event logs live: `sled` (in `data-dir`) or `redis`
    /// (shared by every node on the `redis:` block's server).
    pub store: StoreKind,
    /// The shared store, for `store: redis`.
    pub redis: RedisStoreConfig,
    /// sled's page cache budget, in sled's own accounting (serialized page bytes): a
    /// bound on the cache, not on sled's memory (docs/operating.md, "Memory").
    #[serde(deserialize_with = "units::byte_size")]
    pub store_cache_size: usize,
    /// The most bytes one file of the sled store's write-ahead log grows to before the
    /// next record starts another; a checkpoint removes the files wholly behind it.
    #[serde(deserialize_with = "units::byte_size")]
    pub wal_segment_size: usize,
    /// A context with no turn is evicted from memory after this long.
    #[serde(deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub idle_timeout: Duration,
    /// The largest request body accepted.
    #[serde(deserialize_with = "units::byte_size")]
    pub body_limit: usize,
    /// The time any request body gets to arrive, extended by a second per `body-min-rate`
    /// bytes received; a slower sender is answered 408 and closed.
    #[serde(deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub body_timeout: Duration,
    /// The bytes per second that extend `body-timeout` by one second each.
    #[serde(deserialize_with = "units::byte_size")]
    pub body_min_rate: usize,
    /// Connections open at once on each listener (HTTP, Unix socket, gRPC); past it, new
    /// ones wait in the listen backlog.
    pub max_connections: usize,
    /// The most context actors alive at once.
    pub max_contexts: usize,
    /// HTTP workers and context arbiters; 0 means one per CPU.
    pub workers: usize,
    /// The most messages a context keeps in its session.
    pub session_history_limit: usize,
    /// An SSE comment goes out on a stream idle for this long.
    #[serde(deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub stream_keep_alive: Duration,
    /// Events a stream subscriber may fall behind before it is dropped.
    pub stream_buffer: usize,
    /// How long one stream event may wait for the client's socket to take it before the
    /// stream ends as too slow (and, one more such period later, the connection is reset).
    #[serde(deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub stream_write_timeout: Duration,
    /// The kernel send buffer (`SO_SNDBUF`) of a connection that carries a stream.
    #[serde(deserialize_with = "units::byte_size")]
    pub stream_send_buffer: usize,
    /// Events kept in each task's event log for resuming streams.
    pub event_retention: usize,
    /// Where the HTTP+JSON binding is mounted (`""` for the root).
    pub rest_prefix: String,
    /// On SIGTERM/SIGINT, how long running turns may go on before they are ended.
    #[serde(deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub shutdown_grace: Duration,
    /// Rate and concurrency limits (the `limits:` block).
    pub limits: Limits,
    /// How long finished and unanswered tasks are kept (the `retention:` block).
    pub retention: RetentionConfig,
    /// Extensions announced in the card (`extensions:`).
    pub extensions: Vec<ExtensionConfig>,
    /// Offer the extended card (`GetExtendedAgentCard`, authenticated callers only).
    pub extended_card: bool,
    /// Where the gRPC server listens; `None` turns gRPC off.
    pub grpc_listen: Option<SocketAddr>,
    /// The gRPC `host:port` written in the card; defaults to the bound address.
    pub grpc_public_address: Option<String>,
    /// Serve JSON-RPC over WebSocket at `/ws` (off by default).
    pub websocket: bool,
    /// Outgoing messages a WebSocket client may fall behind.
    pub websocket_queue: usize,
    /// How long an answer waits for room in a full WebSocket queue before the client is
    /// closed as too slow.
    #[serde(deserialize_with = "units::duration", serialize_with = "units::show_duration")]
    pub websocket_send_timeout: Duration,
    /// Also serve every HTTP route on this Unix domain socket.
    pub listen_unix: Option<PathBuf>,
    /// The permission bits the socket file gets after it is bound.
    #[serde(deserialize_with = "transports::unix_mode", serialize_with = "transports::show_unix_mode")]
    pub listen_unix_mode: u32,
    /// JSON-RPC over Redis Streams (the `redis-transport:` block); `None` turns it off.
    pub redis_transport: Option<RedisTransportConfig>,
    pub card: CardConfig,
    /// The agents, the first being the default; never empty.
    #[serde(deserialize_with = "agents::entries")]
    pub agents: Vec<AgentConfig>,
    /// Where workspaces and `file://` parts may lie; empty means the defaults (the
    /// node's working directory and the system temp dir).
    #[serde(deserialize_with = "content::allowed_cwds")]
    pub allowed_cwds: Vec<PathBuf>,
    /// Extra input media types (`input-parts:`).
    pub input_parts: InputPartsConfig,
    /// How agent artifacts are kept (`artifacts:`).
    pub artifacts: ArtifactsConfig,
    /// Pass agents' thinking text on to clients (`metadata.a2ad.thinking`).
    pub thinking_exposure: bool,
    /// Serve `SendStreamingMessage` and `SubscribeToTask` (and their 0.3/0.1 names); off,
    /// the card says `capabilities.streaming: false` and they are UnsupportedOperation.
    pub streaming: bool,
    /// Push notifications (the `push-*` keys).
    #[serde(skip_deserializing, flatten)]
    pub push: PushConfig,
    /// The admin API and the console (the `admin:` block); off without operator tokens.
    pub admin: crate::auth::operators::AdminConfig,
    /// Authentication (the `auth:` block, plus `A2AD_HTTP_TOKEN` / `A2AD_API_KEY`).
    pub auth: crate::auth::AuthConfig,
    /// Whose tasks a caller sees (the `tenancy:` block).
    pub tenancy: crate::auth::TenancyConfig,
    /// The bearer token `GET /metrics` asks for; `None` leaves it open.
    #[serde(deserialize_with = "metrics_token")]
    pub metrics_token: Option<crate::auth::Redacted<String>>,
    /// The 0.1 dialect (the `dialect-01:` block).
    #[serde(rename = "dialect-01")]
    pub dialect_01: Dialect01Config,
    /// How logs are written.
    pub log_format: LogFormat,
    /// The log filter (`info`, `a2ad=debug,warn`, ...) when `RUST_LOG` is not set.
    pub log_level: String,
}

/// `log-format`: human-readable lines or one JSON object per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    #[default]
    Pretty,
    Json,
}

/// A secret string; a value of another type is refused without being shown (serde's own
/// message would quote a numeric secret).
fn opaque_secret<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<crate::auth::Redacted<String>>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(secret) => Ok(Some(crate::auth::Redacted(secret))),
        Value::Null => Ok(None),
        _ => Err(serde::de::Error::custom("must be a string (quote it)")),
    }
}

/// `metrics-token`: a string (never echoed in an error); empty means none.
fn metrics_token<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<crate::auth::Redacted<String>>, D::Error> {
    Ok(opaque_secret(deserializer)?.filter(|t| !t.expose().is_empty()))
}

/// The defaults, once: what a key that is not set means.
impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_url: None,
            data_dir: PathBuf::from("a2ad-data"),
            store: StoreKind::Sled,
            redis: RedisStoreConfig::default(),
            store_cache_size: DEFAULT_STORE_CACHE_SIZE,
            wal_segment_size: DEFAULT_WAL_SEGMENT_SIZE,
            idle_timeout: Duration::from_secs(300),
            body_limit: 1024 * 1024,
            body_timeout: Duration::from_secs(10),
            body_min_rate: 1024,
            max_connections: 10_000,
            max_contexts: 1_000_000,
            workers: 0,
            session_history_limit: 200,
            stream_keep_alive: Duration::from_secs(15),
            stream_buffer: 256,
            stream_write_timeout: Duration::from_secs(10),
            stream_send_buffer: 128 * 1024,
            event_retention: 1000,
            rest_prefix: DEFAULT_REST_PREFIX.into(),
            shutdown_grace: Duration::from_secs(10),
            limits: Limits::default(),
            retention: RetentionConfig::default(),
            extensions: Vec::new(),
            extended_card: false,
            grpc_listen: Some(SocketAddr::from(([127, 0, 0, 1], 8081))),
            grpc_public_address: None,
            websocket: false,
            websocket_queue: DEFAULT_WEBSOCKET_QUEUE,
            websocket_send_timeout: Duration::from_secs(10),
            listen_unix: None,
            listen_unix_mode: DEFAULT_UNIX_MODE,
            redis_transport: None,
            card: CardConfig::default(),
            agents: vec![AgentConfig::default_echo()],
            allowed_cwds: Vec::new(),
            input_parts: InputPartsConfig::default(),
            artifacts: ArtifactsConfig::default(),
            thinking_exposure: false,
            streaming: true,
            push: PushConfig::default(),
            admin: crate::auth::operators::AdminConfig::default(),
            auth: crate::auth::AuthConfig::default(),
            tenancy: crate::auth::TenancyConfig::default(),
            metrics_token: None,
            dialect_01: Dialect01Config::default(),
            log_format: LogFormat::Pretty,
            log_level: "info".into(),
        }
    }
}

/// Why the config was refused. Every variant names the key (or the file) at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The cause is in the message, not a `source`: printed with its causes (`{:#}`), a
    /// source would say it twice.
    #[error("cannot read config file {path}: {cause}")]
    Read { path: String, cause: String },
    #[error("config file {path} is not valid YAML: {message}")]
    Syntax { path: String, message: String },
    #[error("config key `{key}`: {message}")]
    Invalid { key: String, message: String },
    /// A bad value set by an `A2AD_*` variable or a flag, named as such.
    #[error("{origin} (config key `{key}`): {message}")]
    Override { origin: Origin, key: String, message: String },
}

impl ConfigError {
    fn invalid(key: &str, message: impl Into<String>) -> Self {
        ConfigError::Invalid { key: key.to_owned(), message: message.into() }
    }

    /// The error said of the override that set the value at fault, if one did (the last
    /// one wins, as when they were applied).
    fn blamed_on(self, overrides: &[Override]) -> Self {
        match self {
            ConfigError::Invalid { key, message } => match overrides.iter().rev().find(|o| o.covers(&key)) {
                Some(found) => ConfigError::Override { origin: found.origin.clone(), key, message },
                None => ConfigError::Invalid { key, message },
            },
            other => other,
        }
    }
}

impl Config {
    /// The defaults: the echo agent on sled in `./a2ad-data`.
    pub fn default_node() -> Self {
        Config::default()
    }

    /// Reads `path` (if any), then applies `overrides` in order: each is merged into the
    /// file's mapping by key before anything is deserialized, and a value refused under
    /// an override's key is reported as that variable's or flag's.
    pub fn load(path: Option<&Path>, overrides: &[Override]) -> Result<Self, ConfigError> {
        let mut root = match path {
            None => Value::Mapping(Mapping::new()),
            Some(path) => read_yaml(path)?,
        };
        if root.is_null() {
            root = Value::Mapping(Mapping::new());
        }
        let Value::Mapping(map) = &mut root else {
            return Err(ConfigError::invalid(".", "the config file must be a mapping of keys to values"));
        };
        for Override { key, value, .. } in overrides {
            keys::insert_override(map, key, keys::override_value(key, value));
        }
        Self::from_value(root).map_err(|e| e.blamed_on(overrides))
    }

    /// Deserializes the mapping, then checks it in place.
    fn from_value(root: Value) -> Result<Self, ConfigError> {
        let Value::Mapping(mut all) = root else {
            return Err(ConfigError::invalid(".", "the config file must be a mapping of keys to values"));
        };
        let agents = all.remove("agents");
        let (push, rest): (Mapping, Mapping) =
            all.into_iter().partition(|(k, _)| k.as_str().is_some_and(|k| k.starts_with("push-")));
        let mut config: Config = deserialize_named(Value::Mapping(rest))?;
        config.push = deserialize_named(Value::Mapping(push))?;
        config.agents = agents::read_all(agents)?;
        config.validate()?;
        Ok(config)
    }

    /// The checks that serde's types cannot express, made on the config as read; the
    /// one value that is normalized (`public-url` loses a trailing `/`) is changed in
    /// place.
    pub fn validate(&mut self) -> Result<(), ConfigError> {
        self.push.check().map_err(|(key, message)| ConfigError::invalid(key, message))?;
        self.auth.throttle.check().map_err(|(key, message)| ConfigError::invalid(key, message))?;
        self.check_values()?;
        if let Some(url) = &mut self.public_url {
            url.truncate(url.trim_end_matches('/').len());
        }
        self.check_transports()?;
        self.admin.check(self.listen_unix.is_some()).map_err(|(key, message)| ConfigError::invalid(&key, message))?;
        agents::check_all(&self.agents)
    }

    fn check_values(&self) -> Result<(), ConfigError> {
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log_level) {
            return Err(ConfigError::invalid("log-level", format!("not a log filter: {e}")));
        }
        if let Some(url) = &self.public_url {
            if !(url.starts_with("http://") || url.starts_with("https://")) || url.contains(char::is_whitespace) {
                return Err(ConfigError::invalid("public-url", "must be an http:// or https:// URL"));
            }
        }
        if self.dialect_01.heartbeat_window.is_zero() {
            return Err(ConfigError::invalid("dialect-01.heartbeat-window", "must be more than zero"));
        }
        if self.idle_timeout.is_zero() {
            return Err(ConfigError::invalid("idle-timeout", "must be more than zero"));
        }
        if self.store_cache_size < MIN_STORE_CACHE_SIZE {
            return Err(ConfigError::invalid("store-cache-size", "must be at least 1MiB"));
        }
        // A record never spans two files, and one step's record holds its messages more
        // than once (the task's history, its events, the session).
        if self.wal_segment_size < MIN_WAL_SEGMENT_SIZE.max(4 * self.body_limit) {
            return Err(ConfigError::invalid(
                "wal-segment-size",
                "must be at least 8MiB and at least 4 times body-limit (a step's record must fit in one file)",
            ));
        }
        if self.body_limit < 1024 {
            return Err(ConfigError::invalid("body-limit", "must be at least 1KiB"));
        }
        if self.stream_keep_alive < Duration::from_millis(10) {
            return Err(ConfigError::invalid("stream-keep-alive", "must be at least 10ms"));
        }
        if self.stream_buffer == 0 {
            return Err(ConfigError::invalid("stream-buffer", "must be at least 1"));
        }
        self.check_edges()?;
        if self.event_retention == 0 {
            return Err(ConfigError::invalid("event-retention", "must be at least 1"));
        }
        if self.retention.sweep_interval.is_zero() {
            return Err(ConfigError::invalid("retention.sweep-interval", "must be more than zero"));
        }
        if !rest_prefix_ok(&self.rest_prefix) {
            return Err(ConfigError::invalid(
                "rest-prefix",
                "must be empty or a path like /a2a (letters, digits, - _ .)",
            ));
        }
        if !(self.limits.rate_per_second >= 0.0 && self.limits.rate_per_second.is_finite()) {
            return Err(ConfigError::invalid("limits.rate-per-second", "must be zero (off) or more"));
        }
        if self.max_contexts == 0 {
            return Err(ConfigError::invalid("max-contexts", "must be at least 1"));
        }
        Ok(())
    }

    /// The bounds of connections, bodies and streams.
    fn check_edges(&self) -> Result<(), ConfigError> {
        if self.body_timeout < Duration::from_millis(100) {
            return Err(ConfigError::invalid("body-timeout", "must be at least 100ms"));
        }
        if self.body_min_rate == 0 {
            return Err(ConfigError::invalid("body-min-rate", "must be at least 1 byte (per second)"));
        }
        if self.max_connections == 0 {
            return Err(ConfigError::invalid("max-connections", "must be at least 1"));
        }
        if self.stream_write_timeout < Duration::from_millis(10) {
            return Err(ConfigError::invalid("stream-write-timeout", "must be at least 10ms"));
        }
        if self.stream_send_buffer < 4096 {
            return Err(ConfigError::invalid("stream-send-buffer", "must be at least 4KiB"));
        }
        Ok(())
    }

    fn check_transports(&self) -> Result<(), ConfigError> {
        if self.websocket_queue == 0 {
            return Err(ConfigError::invalid("websocket-queue", "must be at least 1"));
        }
        if self.websocket_send_timeout < Duration::from_millis(10) {
            return Err(ConfigError::invalid("websocket-send-timeout", "must be at least 10ms"));
        }
        if self.listen_unix.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
            return Err(ConfigError::invalid("listen-unix", "must be a path"));
        }
        if let Some(redis) = &self.redis_transport {
            redis.check().map_err(|(key, message)| ConfigError::invalid(key, message))?;
        }
        if self.store == StoreKind::Redis {
            self.redis.check().map_err(|(key, message)| ConfigError::invalid(key, message))?;
            // The queue's keys get the store's shard tags: a brace of their own would be
            // taken for the tag, and put a commit's push jobs in another hash slot.
            let queue_keys = [
                ("push-stream", &self.push.stream),
                ("push-retry-key", &self.push.retry_key),
                ("push-dead-stream", &self.push.dead_stream),
            ];
            if let Some((key, _)) = queue_keys.iter().find(|(_, name)| name.contains(['{', '}'])) {
                return Err(ConfigError::invalid(key, "must not contain braces with store: redis"));
            }
        }
        Ok(())
    }
}

/// `rest-prefix`: empty, or `/`-separated segments of letters, digits, `-`, `_`, `.`.
fn rest_prefix_ok(prefix: &str) -> bool {
    prefix.is_empty()
        || (prefix.starts_with('/')
            && !prefix.ends_with('/')
            && prefix[1..]
                .split('/')
                .all(|seg| !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))))
}

/// Deserializes, naming the key at fault.
fn deserialize_named<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        let message = e.into_inner().to_string();
        let message = unknown_key::explain(&key, &message).unwrap_or(message);
        ConfigError::Invalid { key, message }
    })
}

fn read_yaml(path: &Path) -> Result<Value, ConfigError> {
    let shown = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| ConfigError::Read { path: shown.clone(), cause: e.to_string() })?;
    let mut root: Value =
        serde_yaml_ng::from_str(&text).map_err(|e| ConfigError::Syntax { path: shown, message: e.to_string() })?;
    if let (Value::Mapping(map), Some(written)) = (&mut root, transports::unix_mode_as_written(&text)) {
        map.insert(Value::String(UNIX_MODE_KEY.into()), Value::String(written));
    }
    Ok(root)
}

/// The key whose value is read as written (see [`transports::unix_mode`]).
pub(crate) const UNIX_MODE_KEY: &str = "listen-unix-mode";

#[cfg(test)]
mod configuration_page_keys;
#[cfg(test)]
mod tests;
