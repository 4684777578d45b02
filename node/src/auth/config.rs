//! The `auth:` block of the config file. Every type here keeps its secrets out of `Debug`,
//! and a plaintext `token` / `key` is hashed (SHA-256) while it is read: only the digest
//! stays in memory.
//!
//! ```yaml
//! auth:
//!   bearer-tokens:
//!     - { token-sha256: 9f86d0…, tenant: acme, principal: ci }
//!   basic-users:
//!     - { user: alice, password-hash: "pbkdf2-sha256$600000$…$…", tenant: acme, principal: alice }
//!   api-keys:
//!     - { key: k-123, tenant: acme, principal: batch }
//!   integrator-keys:
//!     - { key-sha256: 3a7b…, tenant: platform }
//!   jwt:
//!     secrets: [{ kid: "2025-06", secret-env: A2AD_JWT_SECRET }]
//!     issuer: https://idp.example
//!     audience: a2ad
//!   throttle: { failures-per-minute: 10, failure-burst: 10, password-checks: 1, basic-cache: 60s }
//! ```

use ring::digest;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Sets one bearer token (tenant `default`, principal `token`).
pub const ENV_HTTP_TOKEN: &str = "A2AD_HTTP_TOKEN";
/// Sets one API key (tenant `default`, principal `token`).
pub const ENV_API_KEY: &str = "A2AD_API_KEY";
/// The tenant of the credentials set by [`ENV_HTTP_TOKEN`] and [`ENV_API_KEY`].
pub const ENV_TENANT: &str = "default";
/// The principal of the credentials set by [`ENV_HTTP_TOKEN`] and [`ENV_API_KEY`].
pub const ENV_PRINCIPAL: &str = "token";

/// The whole `auth:` block. Empty (the default) means authentication is off, unless one of
/// the environment variables sets a credential.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct AuthConfig {
    pub bearer_tokens: Vec<BearerTokenConfig>,
    pub basic_users: Vec<BasicUserConfig>,
    pub api_keys: Vec<ApiKeyConfig>,
    pub integrator_keys: Vec<IntegratorKeyConfig>,
    pub jwt: Option<JwtConfig>,
    /// How failed attempts are throttled and password checks bounded (`auth.throttle`).
    pub throttle: ThrottleConfig,
}

/// `auth.throttle`: failed authentications are limited per client address and per Basic
/// user name (token buckets: a failure takes a token; with none left, attempts are
/// refused with RATE_LIMITED before any credential is checked); PBKDF2 runs on the
/// blocking pool, at most `password-checks` at once (more are refused, not queued); a
/// verified Basic credential is remembered for `basic-cache`, so that a user does not
/// pay PBKDF2 per request.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ThrottleConfig {
    /// Failed attempts per minute per client address (IPv6: per /64); 0 turns the
    /// address and user limits off.
    pub failures_per_minute: f64,
    /// Failed attempts a client address may make at once above the rate.
    pub failure_burst: u32,
    /// Failed attempts per minute per Basic user name, across addresses; 0: no limit.
    pub user_failures_per_minute: f64,
    /// Failed attempts on one user name at once above the rate.
    pub user_failure_burst: u32,
    /// Client addresses (and, apart, user names) with a bucket of their own; past it,
    /// new ones share one bucket, so memory stays bounded.
    pub tracked_clients: usize,
    /// PBKDF2 verifications running at once (at least 1): the CPU password guessing can take.
    pub password_checks: usize,
    /// How long a verified Basic credential is remembered (0 turns the cache off).
    #[serde(deserialize_with = "crate::units::duration", serialize_with = "crate::units::show_duration")]
    pub basic_cache: std::time::Duration,
    /// How many verified Basic credentials are remembered at most.
    pub basic_cache_size: usize,
}

impl ThrottleConfig {
    /// The first bad value, as (key, message).
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        let rate_ok = |r: f64| r >= 0.0 && r.is_finite();
        if !rate_ok(self.failures_per_minute) {
            return Err(("auth.throttle.failures-per-minute", "must be zero (off) or more"));
        }
        if !rate_ok(self.user_failures_per_minute) {
            return Err(("auth.throttle.user-failures-per-minute", "must be zero (off) or more"));
        }
        let at_least_one = [
            ("auth.throttle.failure-burst", self.failure_burst as usize),
            ("auth.throttle.user-failure-burst", self.user_failure_burst as usize),
            ("auth.throttle.tracked-clients", self.tracked_clients),
            ("auth.throttle.password-checks", self.password_checks),
        ];
        match at_least_one.into_iter().find(|(_, n)| *n == 0) {
            Some((key, _)) => Err((key, "must be at least 1")),
            None => Ok(()),
        }
    }
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            failures_per_minute: 10.0,
            failure_burst: 10,
            user_failures_per_minute: 20.0,
            user_failure_burst: 20,
            tracked_clients: 10_000,
            password_checks: 1,
            basic_cache: std::time::Duration::from_secs(60),
            basic_cache_size: 1024,
        }
    }
}

/// A static bearer token: exactly one of `token-sha256` (hex) or `token` (plaintext, hashed
/// at once).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BearerTokenConfig {
    pub token_sha256: Option<Redacted<String>>,
    pub token: Option<HashedSecret>,
    pub tenant: String,
    pub principal: String,
}

/// An HTTP Basic user. `password-hash` is `pbkdf2-sha256$<iterations>$<b64 salt>$<b64 hash>`
/// (see [`super::hash_password`]); plaintext passwords are not accepted.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BasicUserConfig {
    pub user: String,
    pub password_hash: Redacted<String>,
    pub tenant: String,
    pub principal: String,
}

/// An API key sent in `X-Api-Key`: exactly one of `key-sha256` or `key`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ApiKeyConfig {
    pub key_sha256: Option<Redacted<String>>,
    pub key: Option<HashedSecret>,
    pub tenant: String,
    pub principal: String,
}

/// An integrator key: `X-Api-Key` plus `X-Platform-User-Id`, whose value becomes the
/// principal. The integrator is trusted with every principal of its tenant, so that tenant
/// may not be used by any other static credential.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IntegratorKeyConfig {
    pub key_sha256: Option<Redacted<String>>,
    pub key: Option<HashedSecret>,
    pub tenant: String,
}

/// HS256 JWTs in `Authorization: Bearer`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct JwtConfig {
    /// One or more secrets (key rotation). A token's `kid` picks the secret with that
    /// `kid`; a token without `kid` (or with one no secret has) is tried against every
    /// secret without `kid` — or all secrets, when it has no `kid` at all.
    pub secrets: Vec<JwtSecretConfig>,
    /// When set, `iss` must equal it.
    #[serde(default)]
    pub issuer: Option<String>,
    /// When set, `aud` (a string or an array) must contain it.
    #[serde(default)]
    pub audience: Option<String>,
    /// The claim that names the tenant.
    #[serde(default = "default_tenant_claim")]
    pub tenant_claim: String,
    /// The claim that names the principal.
    #[serde(default = "default_subject_claim")]
    pub subject_claim: String,
    /// Clock skew allowed on `exp` and `nbf`.
    #[serde(default = "default_leeway")]
    pub leeway_seconds: u64,
    /// Refuse tokens without `exp` (on by default: such a token would never expire).
    #[serde(default = "default_true")]
    pub require_exp: bool,
}

impl JwtConfig {
    /// A config with these secrets and every default.
    pub fn new(secrets: Vec<JwtSecretConfig>) -> Self {
        JwtConfig {
            secrets,
            issuer: None,
            audience: None,
            tenant_claim: default_tenant_claim(),
            subject_claim: default_subject_claim(),
            leeway_seconds: default_leeway(),
            require_exp: true,
        }
    }
}

/// One HMAC secret: exactly one of `secret` (at least 32 bytes) or `secret-env` (the name
/// of an environment variable that holds it).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct JwtSecretConfig {
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub secret: Option<Redacted<String>>,
    #[serde(default)]
    pub secret_env: Option<String>,
}

fn default_tenant_claim() -> String {
    "tenant".to_owned()
}

fn default_subject_claim() -> String {
    "sub".to_owned()
}

fn default_leeway() -> u64 {
    30
}

fn default_true() -> bool {
    true
}

/// A value that `Debug` never shows, nor serializing (which writes `<redacted>`).
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(transparent)]
pub struct Redacted<T>(pub T);

impl<T> Redacted<T> {
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> From<T> for Redacted<T> {
    fn from(value: T) -> Self {
        Redacted(value)
    }
}

impl From<&str> for Redacted<String> {
    fn from(value: &str) -> Self {
        Redacted(value.to_owned())
    }
}

impl<T> Serialize for Redacted<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("<redacted>")
    }
}

impl<T> fmt::Debug for Redacted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The SHA-256 digest of a secret written in plaintext: the plaintext is dropped as soon as
/// it is read. An empty secret is refused.
#[derive(Clone, PartialEq, Eq)]
pub struct HashedSecret([u8; 32]);

impl HashedSecret {
    /// Hashes `secret`.
    pub fn from_plaintext(secret: &str) -> Self {
        HashedSecret(sha256(secret.as_bytes()))
    }

    /// Reads 64 hex digits.
    pub fn from_hex(hex: &str) -> Result<Self, String> {
        let hex = hex.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("must be 64 hex digits (a SHA-256 digest)".to_owned());
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(HashedSecret(out))
    }

    pub(crate) fn digest(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest as the `*-sha256` keys take it (64 lower-case hex digits).
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for HashedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<sha256 redacted>")
    }
}

/// Only the fact that there is a digest is written, never the digest.
impl Serialize for HashedSecret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("<sha256 redacted>")
    }
}

impl<'de> Deserialize<'de> for HashedSecret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let plaintext = String::deserialize(deserializer)?;
        if plaintext.is_empty() {
            return Err(serde::de::Error::custom("must not be empty"));
        }
        Ok(HashedSecret::from_plaintext(&plaintext))
    }
}

pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
    out
}

/// A bad `auth` setting; `key` is its path (`auth.basic-users[0].password-hash`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct AuthConfigError {
    pub key: String,
    pub message: String,
}

impl AuthConfigError {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        AuthConfigError { key: key.into(), message: message.into() }
    }
}
