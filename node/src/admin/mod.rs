//! The admin API's core: operators and their roles ([`Operators`]), the node's status
//! ([`status`]), tasks across tenants ([`tasks`]) and their filters' values ([`facets`]),
//! dead letters ([`dead`]) and the live
//! feed ([`a2ad_actors::feed`]). The HTTP edge (`src/http/admin.rs`) only reads the
//! request, calls these, and writes JSON; the console (`/console`) is a page over it.
//!
//! Operators are not tenants: their tokens are their own config block (`admin:`), are
//! refused on every A2A method ([`crate::core::Core::authenticate`]) and may not equal
//! a tenant credential. The admin API reads every tenant's tasks with
//! [`a2ad_storage::Scope::Node`], as the node's own work does; tenant isolation is
//! unchanged for A2A callers. Every action that changes something is logged with the
//! operator's name ([`Operator::log_action`]). The operators themselves (tokens, roles)
//! are authentication's ([`crate::auth::operators`]), so that the core can refuse their
//! tokens on A2A calls without depending on this module.

pub mod dead;
pub mod download;
pub mod facets;
pub mod feed;
pub mod series;
pub mod stats;
pub mod status;
pub mod tasks;

pub use crate::auth::operators::{AdminConfig, AdminListen, AdminTokenConfig, Operator, Operators, Role};

use a2ad_protocol::{A2aError, ErrorCode};

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

/// The operator, if its role is at least `needed`; a refusal is logged.
pub fn require(operator: &Operator, needed: Role) -> Result<&Operator, AdminError> {
    if operator.role >= needed {
        return Ok(operator);
    }
    tracing::warn!(operator = %operator.name, role = operator.role.as_str(), needed = needed.as_str(), "admin action refused");
    Err(AdminError::Forbidden { name: operator.name.clone(), has: operator.role.as_str(), needed: needed.as_str() })
}
