//! The `card:` block: what the public card says about the node, how it is signed, and
//! whether it also carries the 0.3 fields.

use super::opaque_secret;
use serde::{Deserialize, Serialize};

/// What the card says about the node.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct CardConfig {
    pub name: String,
    pub description: String,
    pub version: String,
    pub provider: Option<ProviderConfig>,
    pub documentation_url: Option<String>,
    pub icon_url: Option<String>,
    /// `card.signing-keys`: the card carries one HS256 signature per key, in this order
    /// (several keys during a rotation). Empty: the card is not signed.
    #[serde(deserialize_with = "card_signing_keys")]
    pub signing_keys: Vec<CardSigningKey>,
    /// `card.compat-v03`: the card also carries the 0.3 fields (`url`,
    /// `preferredTransport`, `protocolVersion: "0.3.0"`, …, each security scheme in its 0.3
    /// shape too) and lists the 0.3 interfaces. Off, the card is pure 1.0: a strict 1.0
    /// reader accepts it and no 1.0 client takes the node for a 0.3 one. 0.3 clients need
    /// it on to discover the node (the 0.3 methods are served either way).
    pub compat_v03: bool,
}

impl Default for CardConfig {
    fn default() -> Self {
        CardConfig {
            name: "a2ad".into(),
            description: "An A2A 1.0 task orchestration node.".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: None,
            documentation_url: None,
            icon_url: None,
            signing_keys: Vec::new(),
            compat_v03: false,
        }
    }
}

/// One card signing key (`card.signing-keys[i]`): a `kid` and exactly one of `secret` or
/// `secret-env` (the name of an environment variable that holds it, read when the config is
/// loaded, so an unset variable stops start-up). The secret is at least 32 bytes (RFC 7518
/// §3.2) and never appears in `Debug` or in an error.
#[derive(Clone, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "CardSigningKeyEntry", rename_all = "kebab-case")]
pub struct CardSigningKey {
    pub kid: String,
    /// Where the secret came from, when it was not written in the file.
    pub secret_env: Option<String>,
    secret: crate::auth::Redacted<Vec<u8>>,
}

/// The shortest secret accepted for HS256 (the size of its hash output).
pub const MIN_CARD_SECRET_LEN: usize = 32;

impl CardSigningKey {
    /// A key from a secret held in memory (what `secret:` in the file gives).
    pub fn new(kid: impl Into<String>, secret: impl Into<Vec<u8>>) -> Result<Self, String> {
        Self::checked(kid.into(), secret.into(), None)
    }

    /// A key whose secret is read from the environment variable `var` through `env`.
    pub fn from_env(kid: impl Into<String>, var: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let secret = env(var).ok_or_else(|| format!("secret-env: the environment variable {var} is not set"))?;
        Self::checked(kid.into(), secret.into_bytes(), Some(var.to_owned()))
    }

    fn checked(kid: String, secret: Vec<u8>, secret_env: Option<String>) -> Result<Self, String> {
        if kid.is_empty() {
            return Err("kid: must not be empty".into());
        }
        if secret.len() < MIN_CARD_SECRET_LEN {
            let field = if secret_env.is_some() { "secret-env" } else { "secret" };
            return Err(format!("{field}: an HS256 secret must be at least {MIN_CARD_SECRET_LEN} bytes"));
        }
        Ok(CardSigningKey { kid, secret_env, secret: secret.into() })
    }

    /// The key for [`crate::card_signing`].
    pub fn signing_key(&self) -> crate::card_signing::SigningKey {
        crate::card_signing::SigningKey::new(self.kid.clone(), self.secret.expose().clone())
            .expect("the kid and secret were checked when the key was made")
    }
}

impl std::fmt::Debug for CardSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigningKey")
            .field("kid", &self.kid)
            .field("secret_env", &self.secret_env)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// `card.signing-keys[i]` as written.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct CardSigningKeyEntry {
    kid: String,
    #[serde(default, deserialize_with = "opaque_secret")]
    secret: Option<crate::auth::Redacted<String>>,
    #[serde(default)]
    secret_env: Option<String>,
}

impl TryFrom<CardSigningKeyEntry> for CardSigningKey {
    type Error = String;

    fn try_from(entry: CardSigningKeyEntry) -> Result<Self, String> {
        match (entry.secret, entry.secret_env) {
            (Some(secret), None) => CardSigningKey::new(entry.kid, secret.expose().as_bytes()),
            (None, Some(var)) => CardSigningKey::from_env(entry.kid, &var, |name| std::env::var(name).ok()),
            _ => Err("set exactly one of `secret` or `secret-env`".into()),
        }
    }
}

/// `card.signing-keys`: every key valid, no kid twice.
fn card_signing_keys<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<CardSigningKey>, D::Error> {
    let keys = Vec::<CardSigningKey>::deserialize(deserializer)?;
    for (i, key) in keys.iter().enumerate() {
        if keys[..i].iter().any(|k| k.kid == key.kid) {
            return Err(serde::de::Error::custom(format!("[{i}].kid: kid {:?} is used twice", key.kid)));
        }
    }
    Ok(keys)
}

/// `card.provider`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProviderConfig {
    pub organization: String,
    pub url: String,
}
