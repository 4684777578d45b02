//! Settings fields several agent kinds share (`end-state`, the `timeout` default), read
//! and written the same way for each: a leaf module, so that the kinds' settings and
//! [`super::settings`] (which names those settings) do not import each other.

use a2ad_protocol::TaskState;
use serde::Serializer;

/// `end-state`: `completed` or `input-required`, the only two states an agent may be
/// configured to end in.
pub(crate) fn end_state<'de, D: serde::Deserializer<'de>>(d: D) -> Result<TaskState, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum EndState {
        Completed,
        InputRequired,
    }
    Ok(match <EndState as serde::Deserialize>::deserialize(d)? {
        EndState::Completed => TaskState::Completed,
        EndState::InputRequired => TaskState::InputRequired,
    })
}

/// What `end-state` is unless set.
pub(crate) fn completed() -> TaskState {
    TaskState::Completed
}

/// What a command or openai agent's `timeout` is unless set.
pub(crate) fn default_timeout() -> std::time::Duration {
    std::time::Duration::from_secs(600)
}

/// `end-state` as written (see [`end_state`]).
pub(crate) fn show_end_state<S: Serializer>(state: &TaskState, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match state {
        TaskState::InputRequired => "input-required",
        _ => "completed",
    })
}
