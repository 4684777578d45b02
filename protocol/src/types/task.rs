//! `Task`, `TaskStatus`, `Artifact` and the two update events.

use super::{protojson, Message, Metadata, Part, TaskState};
use crate::timestamp::{self, Timestamp};
use serde::{Deserialize, Serialize};

/// The unit of work (`lf.a2a.v1.Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "protojson::vec_or_null")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "protojson::vec_or_null")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// Applies `historyLength` (spec §3.2.4): unset keeps all, 0 keeps none, n keeps the
    /// last n messages.
    pub fn truncate_history(&mut self, history_length: Option<i32>) {
        if let Some(n) = history_length {
            let keep = usize::try_from(n.max(0)).unwrap_or(0);
            let len = self.history.len();
            if keep < len {
                self.history.drain(..len - keep);
            }
        }
    }

    /// Adds an artifact, or appends its parts to the earlier one with the same id when
    /// `append` is set (the semantics of `TaskArtifactUpdateEvent.append`).
    pub fn apply_artifact(&mut self, artifact: Artifact, append: bool) {
        match self.artifacts.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
            Some(existing) if append => existing.parts.extend(artifact.parts),
            Some(existing) => *existing = artifact,
            None => self.artifacts.push(artifact),
        }
    }
}

/// Where a task stands (`lf.a2a.v1.TaskStatus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, with = "timestamp::optional", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

impl TaskStatus {
    /// A status stamped now.
    pub fn now(state: TaskState, message: Option<Message>) -> Self {
        TaskStatus { state, message, timestamp: Some(timestamp::now()) }
    }
}

/// An output of a task (`lf.a2a.v1.Artifact`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "protojson::vec_or_null")]
    pub extensions: Vec<String>,
}

/// A change of a task's status (`lf.a2a.v1.TaskStatusUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A new or grown artifact (`lf.a2a.v1.TaskArtifactUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "protojson::bool_or_null")]
    pub append: bool,
    #[serde(
        default,
        alias = "last_chunk",
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "protojson::bool_or_null"
    )]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// One event of a stream (`lf.a2a.v1.StreamResponse`): exactly one of its four members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    #[serde(alias = "status_update")]
    StatusUpdate(TaskStatusUpdateEvent),
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// A status update carrying `task`'s current status.
    pub fn status_of(task: &Task) -> Self {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: task.status.clone(),
            metadata: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task_with_history(n: usize) -> Task {
        let msg = |i: usize| Message::agent_text(format!("m{i}"), "c", Some("t"), "x");
        Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::now(TaskState::Working, None),
            artifacts: vec![],
            history: (0..n).map(msg).collect(),
            metadata: None,
        }
    }

    #[test]
    fn history_length_keeps_the_last_n() {
        let mut t = task_with_history(5);
        t.truncate_history(None);
        assert_eq!(t.history.len(), 5);
        t.truncate_history(Some(2));
        assert_eq!(t.history.iter().map(|m| m.message_id.as_str()).collect::<Vec<_>>(), ["m3", "m4"]);
        t.truncate_history(Some(0));
        assert!(serde_json::to_value(&t).unwrap().get("history").is_none());
    }

    #[test]
    fn stream_responses_are_tagged_by_member_name() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::Completed, message: None, timestamp: None },
            metadata: None,
        });
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            v,
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}})
        );
        assert_eq!(serde_json::from_value::<StreamResponse>(v).unwrap(), ev);
    }
}
