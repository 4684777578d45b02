//! The small values the shared store's indexes hold (where they live: `crate::redis::keys`).

use crate::{Owner, TaskRecord};
use a2ad_protocol::TaskState;

/// A state as the indexes hold it: its wire name (`TASK_STATE_WORKING`).
pub(crate) fn state_code(state: TaskState) -> String {
    serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The state a [`state_code`] names.
pub(crate) fn parse_state(code: &str) -> Option<TaskState> {
    serde_json::from_value(serde_json::Value::String(code.to_owned())).ok()
}

/// The owner index's filter value: `<state>:<context id>` (a state has no `:`).
pub(crate) fn owner_meta_value(record: &TaskRecord) -> String {
    format!("{}:{}", state_code(record.state()), record.task.context_id)
}

/// The node-wide index's value: `<state>:<status ms>:<owner JSON>`.
pub(crate) fn all_value(record: &TaskRecord) -> String {
    let owner = serde_json::to_string(&record.owner).unwrap_or_default();
    format!("{}:{}:{owner}", state_code(record.state()), record.status_millis().max(0))
}

/// An [`all_value`] read back: (state, status ms, owner).
pub(crate) fn parse_all_value(value: &str) -> Option<(TaskState, i64, Owner)> {
    let (state, rest) = value.split_once(':')?;
    let (millis, owner) = rest.split_once(':')?;
    Some((parse_state(state)?, millis.parse().ok()?, serde_json::from_str(owner).ok()?))
}
