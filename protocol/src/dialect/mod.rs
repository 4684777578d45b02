//! The shapes of older A2A versions, converted to and from 1.0 (no I/O).
//!
//! * [`v03`]: A2A 0.3 JSON-RPC (`message/send`, `kind` discriminators, lowercase states,
//!   unwrapped results) and its error codes, and the 0.3 fields of the agent card.
//! * [`v03_rest`]: the 0.3 HTTP+JSON binding under `/v1/` (ProtoJSON of the 0.3
//!   `a2a.v1` proto), converted through the 0.3 JSON-RPC shapes.
//! * [`v03_security`]: a card's security schemes in the 1.0 and the 0.3 shape at once.
//! * [`v01`]: the 0.1 dialect that JSON-RPC gateways still speak (`tasks/send`,
//!   `capability_id`, flat results).
//!
//! Requests are converted into 1.0 request types (so every check of the core applies
//! unchanged); results and stream events are converted from the 1.0 types.

pub mod v01;
pub mod v03;
pub mod v03_rest;
pub mod v03_security;

use serde_json::{Map, Value};

/// The object in `value`, or an InvalidParams error naming `field`.
pub(crate) fn object(value: Value, field: &str) -> Result<Map<String, Value>, crate::A2aError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(crate::A2aError::invalid_field(field, "must be an object")),
    }
}

/// `message` with every 1.0 state name in it (`TASK_STATE_COMPLETED`, as the core writes
/// its errors) replaced by the dialect's `name` for that state, so that an older caller
/// reads "already completed" in its own words. No 1.0 name is a prefix of another, so
/// plain replacement is exact.
pub fn rename_states(message: &str, name: impl Fn(crate::TaskState) -> &'static str) -> String {
    if !message.contains("TASK_STATE_") {
        return message.to_owned();
    }
    crate::TaskState::ALL.iter().fold(message.to_owned(), |text, &state| text.replace(state.as_str(), name(state)))
}
