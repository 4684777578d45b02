//! Runtime failures, and the A2A error each one becomes.

use a2ad_protocol::{A2aError, ErrorCode, TaskState};
use a2ad_storage::StoreError;

/// What the actor runtime can refuse or fail with.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The context is running a turn. The exact text is part of our contract.
    #[error("Task is already working.")]
    AlreadyWorking,
    #[error("Task {0} is in terminal state {1} and cannot accept messages")]
    TaskTerminal(String, TaskState),
    #[error("Task {0} is in terminal state {1}: there is nothing to subscribe to")]
    SubscribeTerminal(String, TaskState),
    #[error("Task {0} cannot be canceled: it is already {1}")]
    NotCancelable(String, TaskState),
    #[error("Task not found")]
    TaskNotFound(String),
    /// The skill asked for, and the node's skills (the valid values, listed in the message).
    #[error("Unknown skill `{asked}`: this node's skills are {}", list_skills(.known))]
    UnknownSkill { asked: String, known: Vec<String> },
    #[error("Context is bound to skill `{bound}`; it cannot run skill `{asked}`")]
    SkillMismatch { bound: String, asked: String },
    #[error("message.metadata.a2ad.cwd: the context is bound to another working directory")]
    CwdMismatch,
    #[error("message.metadata.a2ad.cwd: must be a string (an absolute directory path)")]
    BadCwd,
    #[error("The node is at capacity: {0} contexts are live; try again later")]
    NodeFull(usize),
    #[error("Limit reached: {0}")]
    Limit(String),
    #[error("The node is shutting down")]
    ShuttingDown,
    #[error("The context is unavailable, try again")]
    ContextUnavailable,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// `a`, `b`, `c` as the unknown-skill error lists them (`none` on a node with no agent).
fn list_skills(skills: &[String]) -> String {
    match skills.is_empty() {
        true => "none".to_owned(),
        false => skills.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
    }
}

impl From<RuntimeError> for A2aError {
    fn from(e: RuntimeError) -> Self {
        let message = e.to_string();
        match e {
            RuntimeError::AlreadyWorking | RuntimeError::TaskTerminal(..) | RuntimeError::SubscribeTerminal(..) => {
                A2aError::new(ErrorCode::UnsupportedOperation, message)
            }
            RuntimeError::NotCancelable(id, _) => {
                A2aError::new(ErrorCode::TaskNotCancelable, message).with_meta("taskId", id)
            }
            RuntimeError::TaskNotFound(id) => A2aError::task_not_found(&id),
            RuntimeError::UnknownSkill { asked: skill, .. } => {
                A2aError::invalid_params(message).with_meta("field", "message.metadata.skill").with_meta("skill", skill)
            }
            RuntimeError::SkillMismatch { .. } => {
                A2aError::invalid_params(message).with_meta("field", "message.metadata.skill")
            }
            RuntimeError::CwdMismatch | RuntimeError::BadCwd => {
                A2aError::invalid_params(message).with_meta("field", "message.metadata.a2ad.cwd")
            }
            RuntimeError::NodeFull(_) | RuntimeError::ShuttingDown | RuntimeError::ContextUnavailable => {
                A2aError::busy(message)
            }
            RuntimeError::Limit(_) => A2aError::new(ErrorCode::LimitExceeded, message),
            RuntimeError::Store(inner) => inner.into(),
        }
    }
}
