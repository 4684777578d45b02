//! A2A 0.3 HTTP+JSON (`/v1/…`): ProtoJSON of the 0.3 proto (`a2a.v1`), converted to and
//! from the 0.3 JSON-RPC shapes of [`super::v03`] (which convert to and from 1.0).
//!
//! The 0.3 proto differs from its JSON-RPC twin: messages hold `content` (not `parts`),
//! roles and states are enum names (`ROLE_USER`, `TASK_STATE_CANCELLED` with two Ls),
//! parts are `{text}`, `{file: {fileWithUri|fileWithBytes, mimeType, name}}` or
//! `{data: {data: {…}}}`, results are wrapped (`{"task": …}` / `{"message": …}`, stream
//! events as `{"statusUpdate": …}` …), and a push config is `{name:
//! "tasks/{t}/pushNotificationConfigs/{c}", pushNotificationConfig}`. As proto3 omits
//! false booleans, a `configuration` without `blocking` does not block (the 0.3 SDK
//! always sends it when it wants to block); no `configuration` at all blocks.

use super::object;
use crate::A2aError;
use serde_json::{json, Map, Value};

const STATES: &[(&str, &str)] = &[
    ("unknown", "TASK_STATE_UNSPECIFIED"),
    ("submitted", "TASK_STATE_SUBMITTED"),
    ("working", "TASK_STATE_WORKING"),
    ("completed", "TASK_STATE_COMPLETED"),
    ("failed", "TASK_STATE_FAILED"),
    ("canceled", "TASK_STATE_CANCELLED"),
    ("input-required", "TASK_STATE_INPUT_REQUIRED"),
    ("rejected", "TASK_STATE_REJECTED"),
    ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
];

/// The 0.3 proto name of a state (`TASK_STATE_CANCELLED`).
pub fn state_name(state: crate::TaskState) -> &'static str {
    let v03 = super::v03::state_name(state);
    STATES.iter().find(|(json_rpc, _)| *json_rpc == v03).map_or("TASK_STATE_UNSPECIFIED", |(_, proto)| proto)
}

/// `error` as a `/v1/` caller reads it: the states in its message by their 0.3 proto
/// names (the codes and HTTP statuses are the same as 1.0's).
pub fn error_to_proto(mut error: A2aError) -> A2aError {
    error.message = super::rename_states(&error.message, state_name);
    error
}

// ---- requests: 0.3 proto -> 0.3 JSON-RPC ----

/// A `SendMessageRequest` body as `MessageSendParams`.
pub fn send_params(body: Value) -> Result<Value, A2aError> {
    let mut body = object(body, "body")?;
    let message = body.remove("message").or_else(|| body.remove("request"));
    let message = message.ok_or_else(|| A2aError::invalid_field("message", "is required"))?;
    let mut params = Map::new();
    params.insert("message".into(), message_from_proto(message, "message")?);
    if let Some(config) = body.remove("configuration").filter(|c| !c.is_null()) {
        let mut config = object(config, "configuration")?;
        config.entry("blocking").or_insert(Value::Bool(false));
        if let Some(push) = config.remove("pushNotification") {
            config.insert(
                "pushNotificationConfig".into(),
                push_inner_from_proto(push, "configuration.pushNotification")?,
            );
        }
        params.insert("configuration".into(), Value::Object(config));
    }
    if let Some(metadata) = body.remove("metadata") {
        params.insert("metadata".into(), metadata);
    }
    Ok(Value::Object(params))
}

fn message_from_proto(message: Value, path: &str) -> Result<Value, A2aError> {
    let mut message = object(message, path)?;
    let role = match message.remove("role") {
        Some(Value::String(r)) if r == "ROLE_USER" || r == "user" => "user",
        Some(Value::String(r)) if r == "ROLE_AGENT" || r == "agent" => "agent",
        Some(Value::Number(n)) if n.as_i64() == Some(1) => "user",
        Some(Value::Number(n)) if n.as_i64() == Some(2) => "agent",
        _ => return Err(A2aError::invalid_field(&format!("{path}.role"), "must be ROLE_USER or ROLE_AGENT")),
    };
    message.insert("role".into(), json!(role));
    let parts = match message.remove("content").or_else(|| message.remove("parts")) {
        Some(Value::Array(parts)) => parts,
        _ => return Err(A2aError::invalid_field(&format!("{path}.content"), "must be an array of parts")),
    };
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| part_from_proto(p, &format!("{path}.content[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    message.insert("parts".into(), Value::Array(parts));
    message.insert("kind".into(), json!("message"));
    Ok(Value::Object(message))
}

fn part_from_proto(part: Value, path: &str) -> Result<Value, A2aError> {
    let mut part = object(part, path)?;
    let mut out = Map::new();
    if let Some(meta) = part.remove("metadata") {
        out.insert("metadata".into(), meta);
    }
    if let Some(text) = part.remove("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text);
    } else if let Some(file) = part.remove("file") {
        let mut file = object(file, &format!("{path}.file"))?;
        let mut converted = Map::new();
        if let Some(uri) = file.remove("fileWithUri") {
            converted.insert("uri".into(), uri);
        }
        if let Some(bytes) = file.remove("fileWithBytes") {
            converted.insert("bytes".into(), bytes);
        }
        for key in ["mimeType", "name"] {
            if let Some(v) = file.remove(key) {
                converted.insert(key.into(), v);
            }
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(converted));
    } else if let Some(data) = part.remove("data") {
        let data = object(data, &format!("{path}.data"))?.remove("data").unwrap_or_else(|| json!({}));
        out.insert("kind".into(), json!("data"));
        out.insert("data".into(), data);
    } else {
        return Err(A2aError::invalid_field(path, "must have one of `text`, `file` or `data`"));
    }
    Ok(Value::Object(out))
}

/// A `PushNotificationConfig` (the same fields in both 0.3 forms).
fn push_inner_from_proto(config: Value, path: &str) -> Result<Value, A2aError> {
    object(config, path).map(Value::Object)
}

/// A create-config body (`CreateTaskPushNotificationConfigRequest` with `configId` and
/// `config: {name, pushNotificationConfig}`, or the bare `TaskPushNotificationConfig`)
/// as the params of `tasks/pushNotificationConfig/set`.
pub fn push_config_set_params(task_id: &str, body: Value) -> Result<Value, A2aError> {
    let mut body = object(body, "body")?;
    let config_id = body.remove("configId").filter(|v| v.as_str().is_some_and(|s| !s.is_empty()));
    let mut config = match body.remove("config") {
        Some(config) => object(config, "config")?,
        None => body,
    };
    let inner = config
        .remove("pushNotificationConfig")
        .ok_or_else(|| A2aError::invalid_field("config.pushNotificationConfig", "is required"))?;
    let mut inner = object(inner, "config.pushNotificationConfig")?;
    if let Some(id) = config_id {
        inner.entry("id").or_insert(id);
    }
    Ok(json!({"taskId": task_id, "pushNotificationConfig": inner}))
}

// ---- results: 0.3 JSON-RPC -> 0.3 proto ----

/// `message/send`'s result as `SendMessageResponse` (`{"task"}` or `{"message"}`).
pub fn send_response(result: Value) -> Value {
    match result.get("kind").and_then(Value::as_str) {
        Some("message") => json!({"message": message_to_proto(&result)}),
        _ => json!({"task": task_to_proto(&result)}),
    }
}

/// A 0.3 stream event as `StreamResponse`.
pub fn stream_event(event: Value) -> Value {
    match event.get("kind").and_then(Value::as_str) {
        Some("message") => json!({"message": message_to_proto(&event)}),
        Some("status-update") => {
            let mut out = without(&event, &["kind"]);
            out["status"] = status_to_proto(&event["status"]);
            json!({"statusUpdate": out})
        }
        Some("artifact-update") => {
            let mut out = without(&event, &["kind"]);
            out["artifact"] = artifact_to_proto(&event["artifact"]);
            json!({"artifactUpdate": out})
        }
        _ => json!({"task": task_to_proto(&event)}),
    }
}

/// A 0.3 task as the proto `Task`.
pub fn task_to_proto(task: &Value) -> Value {
    let mut out = without(task, &["kind"]);
    out["status"] = status_to_proto(&task["status"]);
    if let Some(Value::Array(artifacts)) = task.get("artifacts") {
        out["artifacts"] = artifacts.iter().map(artifact_to_proto).collect();
    }
    if let Some(Value::Array(history)) = task.get("history") {
        out["history"] = history.iter().map(message_to_proto).collect();
    }
    out
}

fn status_to_proto(status: &Value) -> Value {
    let mut out = without(status, &[]);
    let state = status.get("state").and_then(Value::as_str).unwrap_or("unknown");
    let name = STATES.iter().find(|(s, _)| *s == state).map_or("TASK_STATE_UNSPECIFIED", |(_, n)| *n);
    out["state"] = json!(name);
    if let Some(message) = status.get("message") {
        out["message"] = message_to_proto(message);
    }
    out
}

fn message_to_proto(message: &Value) -> Value {
    let mut out = without(message, &["kind", "parts", "referenceTaskIds"]);
    let role = if message.get("role").and_then(Value::as_str) == Some("agent") { "ROLE_AGENT" } else { "ROLE_USER" };
    out["role"] = json!(role);
    out["content"] = parts_to_proto(message.get("parts"));
    out
}

fn artifact_to_proto(artifact: &Value) -> Value {
    let mut out = without(artifact, &[]);
    out["parts"] = parts_to_proto(artifact.get("parts"));
    out
}

fn parts_to_proto(parts: Option<&Value>) -> Value {
    let parts = parts.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    parts.iter().map(part_to_proto).collect()
}

fn part_to_proto(part: &Value) -> Value {
    let mut out = match part.get("kind").and_then(Value::as_str) {
        Some("file") => {
            let file = &part["file"];
            let mut converted = without(file, &["uri", "bytes"]);
            if let Some(uri) = file.get("uri") {
                converted["fileWithUri"] = uri.clone();
            }
            if let Some(bytes) = file.get("bytes") {
                converted["fileWithBytes"] = bytes.clone();
            }
            json!({"file": converted})
        }
        Some("data") => json!({"data": {"data": part["data"]}}),
        _ => json!({"text": part["text"]}),
    };
    if let Some(meta) = part.get("metadata") {
        out["metadata"] = meta.clone();
    }
    out
}

/// A 0.3 `TaskPushNotificationConfig` as the proto one (`{name, pushNotificationConfig}`).
pub fn push_config_to_proto(config: &Value) -> Value {
    let inner = config.get("pushNotificationConfig").cloned().unwrap_or_else(|| json!({}));
    let task_id = config.get("taskId").and_then(Value::as_str).unwrap_or_default();
    let config_id = inner.get("id").and_then(Value::as_str).unwrap_or_default();
    json!({"name": format!("tasks/{task_id}/pushNotificationConfigs/{config_id}"), "pushNotificationConfig": inner})
}

/// A copy of an object without the named members.
fn without(value: &Value, drop: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(k, _)| !drop.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proto_send_request_becomes_message_send_params() {
        let params = send_params(json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "content": [
                {"text": "hi"}, {"file": {"fileWithUri": "https://e.x/a", "mimeType": "text/plain"}},
                {"data": {"data": {"k": 1}}}
            ]},
            "configuration": {"historyLength": 1}
        }))
        .unwrap();
        let req = crate::dialect::v03::send_request(params).unwrap();
        assert!(req.configuration.unwrap().return_immediately, "proto3: no blocking means false");
        let parts = serde_json::to_value(&req.message.parts).unwrap();
        assert_eq!(
            parts,
            json!([{"text": "hi"}, {"url": "https://e.x/a", "mediaType": "text/plain"}, {"data": {"k": 1}}])
        );
        let e = send_params(json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{}]}})).unwrap_err();
        assert_eq!(e.metadata["field"], "message.content[0]");
    }

    #[test]
    fn results_are_wrapped_with_enum_names() {
        let task = json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "canceled"},
            "history": [{"kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "text", "text": "x"}]}]});
        let v = send_response(task.clone());
        assert_eq!(v["task"]["status"]["state"], "TASK_STATE_CANCELLED");
        assert_eq!(
            v["task"]["history"][0],
            json!({"messageId": "m", "role": "ROLE_AGENT", "content": [{"text": "x"}]})
        );
        let ev = stream_event(json!({"kind": "status-update", "taskId": "t", "contextId": "c",
            "status": {"state": "working"}, "final": false}));
        assert_eq!(ev["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
        let cfg = push_config_to_proto(&json!({"taskId": "t", "pushNotificationConfig": {"id": "p", "url": "u"}}));
        assert_eq!(cfg["name"], "tasks/t/pushNotificationConfigs/p");
    }

    #[test]
    fn error_messages_name_states_as_the_0_3_proto_does() {
        let e = A2aError::new(
            crate::ErrorCode::TaskNotCancelable,
            "Task t cannot be canceled: it is already TASK_STATE_CANCELED",
        );
        assert_eq!(error_to_proto(e).message, "Task t cannot be canceled: it is already TASK_STATE_CANCELLED");
        let v01 = crate::dialect::rename_states(
            "in TASK_STATE_REJECTED, not TASK_STATE_INPUT_REQUIRED",
            super::super::v01::state_name,
        );
        assert_eq!(v01, "in failed, not input-required");
    }
}
