//! Request and response messages of every A2A 1.0 method.
//!
//! Each request has an optional `tenant`. Fields are read in camelCase or snake_case;
//! `int32` fields also accept decimal strings (ProtoJSON).

use super::{protojson, Message, Metadata, Task, TaskPushNotificationConfig, TaskState};
use crate::timestamp::{self, Timestamp};
use serde::{Deserialize, Serialize};

/// `SendMessage` and `SendStreamingMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// How the client wants `SendMessage` to behave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(
        default,
        alias = "accepted_output_modes",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "protojson::vec_or_null"
    )]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, alias = "task_push_notification_config", skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "protojson::opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    /// False (the default) blocks until the task is terminal or interrupted.
    #[serde(
        default,
        alias = "return_immediately",
        deserialize_with = "protojson::bool_or_null",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub return_immediately: bool,
}

/// `SendMessage` result: exactly one of a task or a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

/// `GetTask` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "protojson::opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
}

/// `ListTasks` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(
        default,
        alias = "page_size",
        deserialize_with = "protojson::opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token", skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "protojson::opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    #[serde(
        default,
        alias = "status_timestamp_after",
        with = "timestamp::optional",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_timestamp_after: Option<Timestamp>,
    #[serde(default, alias = "include_artifacts", skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// `ListTasks` result. All four fields are always present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    #[serde(alias = "page_size")]
    pub page_size: i32,
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// `CancelTask` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `SubscribeToTask` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    /// a2ad extension, the same as the SSE `Last-Event-ID` header: replay the task's
    /// events after this sequence number, then continue live.
    #[serde(
        default,
        alias = "last_event_id",
        deserialize_with = "protojson::opt_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_event_id: Option<u64>,
}

/// `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub task_id: String,
    pub id: String,
}

/// `GetTaskPushNotificationConfig` params.
pub type GetTaskPushNotificationConfigRequest = TaskPushNotificationConfigRef;
/// `DeleteTaskPushNotificationConfig` params.
pub type DeleteTaskPushNotificationConfigRequest = TaskPushNotificationConfigRef;

/// `ListTaskPushNotificationConfigs` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(
        default,
        alias = "page_size",
        deserialize_with = "protojson::opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token", skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
}

/// `ListTaskPushNotificationConfigs` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default, alias = "next_page_token", skip_serializing_if = "String::is_empty")]
    pub next_page_token: String,
}

/// `GetExtendedAgentCard` params (may be omitted entirely).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_request_reads_snake_case_strings_and_enum_numbers() {
        let r: ListTasksRequest = serde_json::from_value(json!({
            "context_id": "c", "status": 2, "page_size": "10",
            "status_timestamp_after": "2026-01-01T00:00:00Z", "includeArtifacts": true
        }))
        .unwrap();
        assert_eq!(r.page_size, Some(10));
        assert_eq!(r.status, Some(TaskState::Working));
        assert_eq!(r.include_artifacts, Some(true));
        assert!(r.status_timestamp_after.is_some());
    }

    #[test]
    fn send_configuration_defaults_to_blocking() {
        let r: SendMessageRequest = serde_json::from_value(json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"historyLength": 3}
        }))
        .unwrap();
        let c = r.configuration.unwrap();
        assert!(!c.return_immediately);
        assert_eq!(c.history_length, Some(3));
    }
}
