//! The admin API's core: operators and their roles ([`Operators`]), the node's status
//! ([`status`]), tasks across tenants ([`tasks`]), dead letters ([`dead`]) and the live
//! feed ([`a2ad_actors::feed`]). The HTTP edge (`src/http/admin.rs`) only reads the
//! request, calls these, and writes JSON; the console (`/console`) is a page over it.
//!
//! Operators are not tenants: their tokens are their own config block (`admin:`), are
//! refused on every A2A method ([`crate::core::Core::authenticate`]) and may not equal
//! a tenant credential. The admin API reads every tenant's tasks with
//! [`a2ad_storage::Scope::Node`], as the node's own work does; tenant isolation is
//! unchanged for A2A callers. Every action that changes something is logged with the
//! operator's name ([`Operator::log_action`]).

mod config;
pub mod dead;
pub mod feed;
pub mod stats;
pub mod status;
pub mod tasks;

pub use config::{AdminConfig, AdminListen, AdminTokenConfig, Role};

use crate::auth::Authenticator;
use a2ad_protocol::{A2aError, ErrorCode};
use ring::hmac;
use ring::rand::SystemRandom;

/// Why an admin request was refused. Each becomes an [`A2aError`] (the one table), so
/// the admin API answers in the HTTP+JSON binding's error shape.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("an operator token is required (Authorization: Bearer)")]
    Unauthenticated,
    #[error("the {needed} role is required; {name} is a {has}")]
    Forbidden { name: String, has: &'static str, needed: &'static str },
    #[error("admin requests from another site's page are refused")]
    ForeignOrigin,
    #[error("`{field}` {problem}")]
    Invalid { field: &'static str, problem: String },
    #[error("no dead job {0}")]
    NoDeadJob(String),
    #[error("push notifications are off on this node")]
    PushOff,
    #[error(transparent)]
    A2a(#[from] A2aError),
    #[error("the store failed: {0}")]
    Store(#[from] a2ad_storage::StoreError),
}

impl From<AdminError> for A2aError {
    fn from(error: AdminError) -> A2aError {
        let message = error.to_string();
        match error {
            AdminError::Unauthenticated => A2aError::new(ErrorCode::Unauthenticated, message),
            AdminError::Forbidden { .. } | AdminError::ForeignOrigin => {
                A2aError::new(ErrorCode::PermissionDenied, message)
            }
            AdminError::Invalid { field, problem } => A2aError::invalid_field(field, &problem),
            AdminError::NoDeadJob(id) => A2aError::new(ErrorCode::TaskNotFound, message).with_meta("jobId", id),
            AdminError::PushOff => A2aError::of(ErrorCode::PushNotificationNotSupported),
            AdminError::A2a(error) => error,
            AdminError::Store(error) => error.into(),
        }
    }
}

/// A signed-in operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    pub name: String,
    pub role: Role,
}

impl Operator {
    /// The operator, if its role is at least `needed`.
    pub fn require(&self, needed: Role) -> Result<&Operator, AdminError> {
        if self.role >= needed {
            return Ok(self);
        }
        tracing::warn!(operator = %self.name, role = self.role.as_str(), needed = needed.as_str(), "admin action refused");
        Err(AdminError::Forbidden { name: self.name.clone(), has: self.role.as_str(), needed: needed.as_str() })
    }

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
            let digest = crate::auth::entry_digest(&key, "token", token.token_sha256.as_ref(), token.token.as_ref())
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
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Operator, AdminError> {
        let token = bearer(authorization).ok_or(AdminError::Unauthenticated)?;
        self.find(token).cloned().ok_or(AdminError::Unauthenticated)
    }

    /// Whether `authorization` carries an operator token: A2A calls refuse it.
    pub fn is_operator_credential(&self, authorization: Option<&str>) -> bool {
        self.enabled() && bearer(authorization).is_some_and(|token| self.find(token).is_some())
    }

    /// Every entry is compared, in constant time, whichever matches.
    fn find(&self, token: &str) -> Option<&Operator> {
        let digest = crate::auth::sha256(token.as_bytes());
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
mod tests;
