//! The admin API's operators: the `admin:` block's tokens, as keyed HMACs of their
//! SHA-256 digests, each with a name and a role. They are authentication's, apart from
//! the tenants' credentials: [`crate::core::Core::authenticate`] refuses them on A2A
//! calls, and [`Operators::new`] refuses a token that is also a tenant's.

pub use super::operator_config::{AdminConfig, AdminListen, AdminTokenConfig, Role};

use super::{AuthError, Authenticator};
use ring::hmac;
use ring::rand::SystemRandom;

/// A signed-in operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    pub name: String,
    pub role: Role,
}

impl Operator {
    /// Logs an action with who did it (`admin action operator=alice action=cancel ...`).
    pub fn log_action(&self, action: &str, target: &str, outcome: &str) {
        tracing::info!(operator = %self.name, role = self.role.as_str(), action, target, outcome, "admin action");
    }
}

/// The operator tokens, as keyed HMACs of their SHA-256 digests (the tenants'
/// credentials are kept the same way), compared in constant time.
pub struct Operators {
    compare_key: hmac::Key,
    entries: Vec<(hmac::Tag, Operator)>,
}

impl std::fmt::Debug for Operators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operators").field("tokens", &self.entries.len()).finish_non_exhaustive()
    }
}

impl Operators {
    /// No operator: the admin API is off.
    pub fn none() -> Operators {
        let key = hmac::Key::new(hmac::HMAC_SHA256, &[0; 32]);
        Operators { compare_key: key, entries: Vec::new() }
    }

    /// Reads `admin.tokens`, refusing a token that is also a tenant's credential (so
    /// that neither side can use the other's) or set twice. Errors name the key.
    pub fn new(config: &AdminConfig, tenants: &Authenticator) -> Result<Operators, (String, String)> {
        let compare_key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new())
            .map_err(|_| ("admin".to_owned(), "the system random source failed".to_owned()))?;
        let mut entries: Vec<(hmac::Tag, Operator)> = Vec::new();
        let mut digests: Vec<[u8; 32]> = Vec::new();
        for (i, token) in config.tokens.iter().enumerate() {
            let key = format!("admin.tokens[{i}]");
            let digest = super::entry_digest(&key, "token", token.token_sha256.as_ref(), token.token.as_ref())
                .map_err(|e| (e.key, e.message))?;
            if tenants.is_tenant_secret(&digest) {
                return Err((key, "is also a tenant credential (auth:); an operator token must be its own".into()));
            }
            if digests.contains(&digest) {
                return Err((key, "the same token is set twice".into()));
            }
            digests.push(digest);
            let operator = Operator { name: token.name.clone(), role: token.role };
            entries.push((hmac::sign(&compare_key, &digest), operator));
        }
        Ok(Operators { compare_key, entries })
    }

    /// Whether the admin API is on (some operator token is set).
    pub fn enabled(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The operator of an `Authorization: Bearer <token>` header.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Operator, AuthError> {
        let token = bearer(authorization).ok_or(AuthError::Missing)?;
        self.find(token).cloned().ok_or(AuthError::Invalid)
    }

    /// Whether `authorization` carries an operator token: A2A calls refuse it.
    pub fn is_operator_credential(&self, authorization: Option<&str>) -> bool {
        self.enabled() && bearer(authorization).is_some_and(|token| self.find(token).is_some())
    }

    /// Every entry is compared, in constant time, whichever matches.
    fn find(&self, token: &str) -> Option<&Operator> {
        let digest = super::sha256(token.as_bytes());
        let mut found = None;
        for (tag, operator) in &self.entries {
            if hmac::verify(&self.compare_key, &digest, tag.as_ref()).is_ok() && found.is_none() {
                found = Some(operator);
            }
        }
        found
    }
}

/// The token of a `Bearer` header, if any.
fn bearer(authorization: Option<&str>) -> Option<&str> {
    let (scheme, token) = authorization?.trim().split_once(char::is_whitespace)?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.len() <= 4096).then_some(token)
}

#[cfg(test)]
#[path = "operators_tests.rs"]
mod tests;
