//! HS256 JWT verification with ring::hmac. Only `alg: HS256` is accepted (never `none`,
//! never an asymmetric algorithm whose public key could be abused as an HMAC secret).

use super::{valid_principal, valid_tenant, AuthConfigError, JwtConfig};
use a2ad_storage::Owner;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::hmac;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt;

/// The longest token we look at.
pub(crate) const MAX_TOKEN_LEN: usize = 8 * 1024;

/// Why a JWT was refused. No variant carries any part of the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the token is not a well-formed JWS compact serialization")]
    Malformed,
    #[error("unsupported algorithm (only HS256 is accepted)")]
    UnsupportedAlgorithm,
    #[error("no configured secret matches the token's kid")]
    UnknownKey,
    #[error("bad signature")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token has no exp claim")]
    MissingExpiry,
    #[error("wrong issuer")]
    WrongIssuer,
    #[error("wrong audience")]
    WrongAudience,
    #[error("the token has no `{0}` claim")]
    MissingClaim(String),
    #[error("the `{0}` claim is not valid")]
    InvalidClaim(String),
}

pub(crate) struct JwtKey {
    pub(crate) kid: Option<String>,
    pub(crate) key: hmac::Key,
}

/// A built `jwt:` config.
pub(crate) struct JwtVerifier {
    pub(crate) keys: Vec<JwtKey>,
    pub(crate) issuer: Option<String>,
    pub(crate) audience: Option<String>,
    pub(crate) tenant_claim: String,
    pub(crate) subject_claim: String,
    pub(crate) leeway: i64,
    pub(crate) require_exp: bool,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kids: Vec<Option<&str>> = self.keys.iter().map(|k| k.kid.as_deref()).collect();
        f.debug_struct("JwtVerifier")
            .field("kids", &kids)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("tenant_claim", &self.tenant_claim)
            .field("subject_claim", &self.subject_claim)
            .field("leeway", &self.leeway)
            .field("require_exp", &self.require_exp)
            .finish_non_exhaustive()
    }
}

/// Whether `token` has the shape of a JWS compact serialization (three base64url parts).
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn decode_json(part: &str) -> Result<Map<String, Value>, JwtError> {
    let bytes = URL_SAFE_NO_PAD.decode(part).map_err(|_| JwtError::Malformed)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(JwtError::Malformed),
    }
}

/// A NumericDate: an integer or a fraction of seconds since the epoch.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, JwtError> {
    match claims.get(name) {
        None => Ok(None),
        Some(value) => match value.as_i64() {
            Some(n) => Ok(Some(n)),
            None => match value.as_f64() {
                Some(f) if f.is_finite() => Ok(Some(f.floor() as i64)),
                _ => Err(JwtError::InvalidClaim(name.to_owned())),
            },
        },
    }
}

impl JwtVerifier {
    /// Verifies `token` at `now` (Unix seconds) and maps it to its owner.
    pub(crate) fn verify(&self, token: &str, now: i64) -> Result<Owner, JwtError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(JwtError::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed);
        };

        let header = decode_json(header_b64)?;
        if header.get("alg").and_then(Value::as_str) != Some("HS256") {
            return Err(JwtError::UnsupportedAlgorithm);
        }
        // We understand no extension, so a critical one makes the token unusable (RFC 7515 §4.1.11).
        if header.contains_key("crit") {
            return Err(JwtError::Malformed);
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.as_str()),
            Some(_) => return Err(JwtError::Malformed),
        };

        let candidates: Vec<&JwtKey> = match kid {
            None => self.keys.iter().collect(),
            Some(kid) => {
                let by_kid: Vec<&JwtKey> = self.keys.iter().filter(|k| k.kid.as_deref() == Some(kid)).collect();
                if by_kid.is_empty() {
                    self.keys.iter().filter(|k| k.kid.is_none()).collect()
                } else {
                    by_kid
                }
            }
        };
        if candidates.is_empty() {
            return Err(JwtError::UnknownKey);
        }

        let signature = URL_SAFE_NO_PAD.decode(signature_b64).map_err(|_| JwtError::Malformed)?;
        let signing_input = &token.as_bytes()[..header_b64.len() + 1 + payload_b64.len()];
        if !candidates.iter().any(|k| hmac::verify(&k.key, signing_input, &signature).is_ok()) {
            return Err(JwtError::BadSignature);
        }

        // Only a token we signed gets its claims read.
        let claims = decode_json(payload_b64)?;
        match numeric_date(&claims, "exp")? {
            Some(exp) if now >= exp.saturating_add(self.leeway) => return Err(JwtError::Expired),
            None if self.require_exp => return Err(JwtError::MissingExpiry),
            _ => {}
        }
        if let Some(nbf) = numeric_date(&claims, "nbf")? {
            if now.saturating_add(self.leeway) < nbf {
                return Err(JwtError::NotYetValid);
            }
        }
        if let Some(issuer) = &self.issuer {
            if claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str()) {
                return Err(JwtError::WrongIssuer);
            }
        }
        if let Some(audience) = &self.audience {
            let ok = match claims.get("aud") {
                Some(Value::String(aud)) => aud == audience,
                Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(audience.as_str())),
                _ => false,
            };
            if !ok {
                return Err(JwtError::WrongAudience);
            }
        }

        let tenant = self.string_claim(&claims, &self.tenant_claim)?;
        let principal = self.string_claim(&claims, &self.subject_claim)?;
        if !valid_tenant(tenant) {
            return Err(JwtError::InvalidClaim(self.tenant_claim.clone()));
        }
        if !valid_principal(principal) {
            return Err(JwtError::InvalidClaim(self.subject_claim.clone()));
        }
        Ok(Owner { tenant: tenant.to_owned(), principal: principal.to_owned() })
    }

    fn string_claim<'a>(&self, claims: &'a Map<String, Value>, name: &str) -> Result<&'a str, JwtError> {
        match claims.get(name) {
            None | Some(Value::Null) => Err(JwtError::MissingClaim(name.to_owned())),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(JwtError::InvalidClaim(name.to_owned())),
        }
    }
}

/// The smallest HS256 secret (RFC 7518 §3.2: at least the hash size).
const MIN_JWT_SECRET_LEN: usize = 32;

/// The verifier of the `auth.jwt` block; errors name the key.
pub(super) fn build(config: &JwtConfig, env: &impl Fn(&str) -> Option<String>) -> Result<JwtVerifier, AuthConfigError> {
    if config.secrets.is_empty() {
        return Err(AuthConfigError::new("auth.jwt.secrets", "at least one secret is required"));
    }
    let mut kids = BTreeSet::new();
    let mut keys = Vec::new();
    for (i, entry) in config.secrets.iter().enumerate() {
        let key = format!("auth.jwt.secrets[{i}]");
        if let Some(kid) = &entry.kid {
            if kid.is_empty() {
                return Err(AuthConfigError::new(format!("{key}.kid"), "must not be empty"));
            }
            if !kids.insert(kid.as_str()) {
                return Err(AuthConfigError::new(format!("{key}.kid"), "this kid is used twice"));
            }
        }
        let (secret, secret_key) = match (&entry.secret, &entry.secret_env) {
            (Some(secret), None) => (secret.expose().clone(), format!("{key}.secret")),
            (None, Some(var)) => {
                let secret_key = format!("{key}.secret-env");
                let secret = env(var).ok_or_else(|| {
                    AuthConfigError::new(&secret_key, format!("the environment variable {var} is not set"))
                })?;
                (secret, secret_key)
            }
            _ => return Err(AuthConfigError::new(key, "set exactly one of `secret` or `secret-env`")),
        };
        if secret.len() < MIN_JWT_SECRET_LEN {
            return Err(AuthConfigError::new(
                secret_key,
                format!("an HS256 secret must be at least {MIN_JWT_SECRET_LEN} bytes"),
            ));
        }
        keys.push(JwtKey { kid: entry.kid.clone(), key: hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()) });
    }
    for (name, claim) in [("tenant-claim", &config.tenant_claim), ("subject-claim", &config.subject_claim)] {
        if claim.is_empty() {
            return Err(AuthConfigError::new(format!("auth.jwt.{name}"), "must not be empty"));
        }
    }
    let leeway = i64::try_from(config.leeway_seconds)
        .ok()
        .filter(|l| *l <= 24 * 3600)
        .ok_or_else(|| AuthConfigError::new("auth.jwt.leeway-seconds", "must be at most 86400"))?;
    Ok(JwtVerifier {
        keys,
        issuer: config.issuer.clone(),
        audience: config.audience.clone(),
        tenant_claim: config.tenant_claim.clone(),
        subject_claim: config.subject_claim.clone(),
        leeway,
        require_exp: config.require_exp,
    })
}
