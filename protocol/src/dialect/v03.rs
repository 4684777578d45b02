//! A2A 0.3 JSON-RPC shapes, both ways.
//!
//! 0.3 differs from 1.0 in naming, not in meaning: slash method names, `kind` on every
//! object (`task`, `message`, `status-update`, `artifact-update`; parts `text`, `file`,
//! `data`), roles `user`/`agent`, lowercase states (`input-required`, `unknown` for
//! unspecified), `final` on status updates, `blocking` instead of `returnImmediately`,
//! push configs nested as `{taskId, pushNotificationConfig}`, and results unwrapped
//! (`message/send` returns the Task or Message itself). A 1.0 `data` part whose value is
//! not an object travels as `{"value": …}` with `metadata.data_part_compat = true` (as
//! a2a-python does), and comes back unwrapped.

use super::object;
use crate::jsonrpc::parse_params;
use crate::{
    A2aError, AgentCard, Artifact, ErrorCode, GetTaskRequest, Message, Part, PartContent, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig,
    TaskPushNotificationConfigRef, TaskState,
};
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// The protocol version 0.3 cards announce.
pub const PROTOCOL_VERSION: &str = "0.3.0";

/// Marks a data part whose 1.0 value was wrapped as `{"value": …}`.
const DATA_PART_COMPAT: &str = "data_part_compat";

/// The 0.3 name of a state.
pub fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Unspecified => "unknown",
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "input-required",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth-required",
    }
}

/// The JSON-RPC code a 0.3 caller gets: 0.3 has -32001..-32007 with the same meaning as
/// 1.0; the codes only 1.0 has (-32008 extension required, -32009 version) become
/// -32603, as a2a-python's compat layer does. a2ad's own server-range codes stay, and so
/// does UNAUTHENTICATED (-31401, which a2a-go's 0.3 releases use too: 0.3 itself has none).
pub fn jsonrpc_code(code: ErrorCode) -> i32 {
    match code {
        ErrorCode::ExtensionSupportRequired | ErrorCode::VersionNotSupported => -32603,
        other => other.info().jsonrpc,
    }
}

/// The JSON-RPC `error` member for a 0.3 caller: `{code, message, data}` with `data` the
/// ErrorInfo metadata (0.3's `data` is a free object); the states in the message by their
/// 0.3 names.
pub fn error_object(error: &A2aError) -> Value {
    let mut data = Map::new();
    data.insert("reason".into(), json!(error.code.info().reason));
    for (k, v) in &error.metadata {
        data.insert(k.clone(), json!(v));
    }
    let message = super::rename_states(&error.message, state_name);
    json!({"code": jsonrpc_code(error.code), "message": message, "data": data})
}

/// A complete 0.3 JSON-RPC error response.
pub fn error_response(id: &Value, error: &A2aError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error_object(error)})
}

// ---- requests: 0.3 -> 1.0 ----

/// `MessageSendParams` as a 1.0 `SendMessageRequest`. `blocking: false` becomes
/// `returnImmediately: true`; an absent `blocking` blocks.
pub fn send_request(params: Value) -> Result<SendMessageRequest, A2aError> {
    let mut params = object(params, "params")?;
    let message = params.remove("message").ok_or_else(|| A2aError::invalid_field("message", "is required"))?;
    let message = message_from_v03(message, "message")?;
    let configuration = match params.remove("configuration") {
        None | Some(Value::Null) => None,
        Some(config) => Some(configuration_from_v03(object(config, "configuration")?)?),
    };
    let metadata = match params.remove("metadata") {
        None | Some(Value::Null) => None,
        Some(m) => Some(object(m, "metadata")?),
    };
    Ok(SendMessageRequest { tenant: None, message, configuration, metadata })
}

fn configuration_from_v03(mut config: Map<String, Value>) -> Result<SendMessageConfiguration, A2aError> {
    let blocking = match config.remove("blocking") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(A2aError::invalid_field("configuration.blocking", "must be a boolean")),
    };
    let push = match config.remove("pushNotificationConfig") {
        None | Some(Value::Null) => None,
        Some(p) => Some(push_config_from_v03(p, None, "configuration.pushNotificationConfig")?),
    };
    let mut rest: SendMessageConfiguration =
        parse_params(Value::Object(config)).map_err(|e| prefixed(e, "configuration"))?;
    rest.task_push_notification_config = push;
    rest.return_immediately = !blocking;
    Ok(rest)
}

/// A 0.3 `Message` as 1.0.
pub fn message_from_v03(message: Value, path: &str) -> Result<Message, A2aError> {
    let mut message = object(message, path)?;
    message.remove("kind");
    let role = match message.remove("role") {
        Some(Value::String(r)) if r == "user" => "ROLE_USER",
        Some(Value::String(r)) if r == "agent" => "ROLE_AGENT",
        _ => return Err(A2aError::invalid_field(&format!("{path}.role"), "must be \"user\" or \"agent\"")),
    };
    message.insert("role".into(), json!(role));
    let parts = match message.remove("parts") {
        Some(Value::Array(parts)) => parts,
        _ => return Err(A2aError::invalid_field(&format!("{path}.parts"), "must be an array")),
    };
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| part_from_v03(p, &format!("{path}.parts[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    message.insert("parts".into(), Value::Array(parts));
    parse_params(Value::Object(message)).map_err(|e| prefixed(e, path))
}

/// A 0.3 part (`kind` text, file or data) as the flat 1.0 part JSON.
fn part_from_v03(part: Value, path: &str) -> Result<Value, A2aError> {
    let mut part = object(part, path)?;
    let kind = match part.remove("kind") {
        Some(Value::String(k)) => k,
        // Lenient: infer the kind from the member that is there.
        _ => ["text", "file", "data"].iter().find(|k| part.contains_key(**k)).copied().unwrap_or("?").to_owned(),
    };
    let mut out = Map::new();
    if let Some(meta) = part.remove("metadata").filter(|m| !m.is_null()) {
        out.insert("metadata".into(), meta);
    }
    match kind.as_str() {
        "text" => match part.remove("text") {
            Some(t @ Value::String(_)) => {
                out.insert("text".into(), t);
            }
            _ => return Err(A2aError::invalid_field(&format!("{path}.text"), "must be a string")),
        },
        "data" => {
            let data =
                part.remove("data").ok_or_else(|| A2aError::invalid_field(&format!("{path}.data"), "is required"))?;
            let data = unwrap_compat_data(data, &mut out);
            out.insert("data".into(), data);
        }
        "file" => file_from_v03(part.remove("file"), &format!("{path}.file"), &mut out)?,
        _ => return Err(A2aError::invalid_field(&format!("{path}.kind"), "must be \"text\", \"file\" or \"data\"")),
    }
    Ok(Value::Object(out))
}

fn unwrap_compat_data(data: Value, out: &mut Map<String, Value>) -> Value {
    let marked = out.get("metadata").and_then(|m| m.get(DATA_PART_COMPAT)) == Some(&Value::Bool(true));
    match data {
        Value::Object(mut map) if marked && map.len() == 1 && map.contains_key("value") => {
            if let Some(Value::Object(meta)) = out.get_mut("metadata") {
                meta.remove(DATA_PART_COMPAT);
                if meta.is_empty() {
                    out.remove("metadata");
                }
            }
            map.remove("value").unwrap_or(Value::Null)
        }
        other => other,
    }
}

fn file_from_v03(file: Option<Value>, path: &str, out: &mut Map<String, Value>) -> Result<(), A2aError> {
    let mut file = object(file.unwrap_or(Value::Null), path)?;
    if let Some(name) = file.remove("name").filter(|v| !v.is_null()) {
        out.insert("filename".into(), name);
    }
    if let Some(mime) = file.remove("mimeType").filter(|v| !v.is_null()) {
        out.insert("mediaType".into(), mime);
    }
    match (file.remove("bytes"), file.remove("uri")) {
        (Some(bytes @ Value::String(_)), None) => out.insert("raw".into(), bytes),
        (None, Some(uri @ Value::String(_))) => out.insert("url".into(), uri),
        _ => return Err(A2aError::invalid_field(path, "must have exactly one of `bytes` or `uri` (a string)")),
    };
    Ok(())
}

/// `TaskQueryParams` (`{id, historyLength?}`).
pub fn get_task_request(params: Value) -> Result<GetTaskRequest, A2aError> {
    let mut params = object(params, "params")?;
    params.remove("metadata");
    parse_params(Value::Object(params))
}

/// The `id` of `TaskIdParams` (cancel, resubscribe, list push configs).
pub fn task_id(params: &Value) -> Result<String, A2aError> {
    match params.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(A2aError::invalid_field("id", "must be a non-empty string")),
    }
}

/// `TaskPushNotificationConfig` (`{taskId, pushNotificationConfig}`) as 1.0. A config
/// without an id gets the task's id, as 0.3 servers do (so `get` without an id finds it).
pub fn push_config_set(params: Value) -> Result<TaskPushNotificationConfig, A2aError> {
    let mut params = object(params, "params")?;
    let task_id = match params.remove("taskId") {
        Some(Value::String(id)) if !id.is_empty() => id,
        _ => return Err(A2aError::invalid_field("taskId", "must be a non-empty string")),
    };
    let config = params
        .remove("pushNotificationConfig")
        .ok_or_else(|| A2aError::invalid_field("pushNotificationConfig", "is required"))?;
    let mut config = push_config_from_v03(config, Some(task_id.clone()), "pushNotificationConfig")?;
    if config.id.as_deref().is_none_or(str::is_empty) {
        config.id = Some(task_id);
    }
    Ok(config)
}

/// A 0.3 `PushNotificationConfig` (`{id?, url, token?, authentication?: {schemes,
/// credentials?}}`) as 1.0 (the first scheme is the one used).
pub fn push_config_from_v03(
    config: Value,
    task_id: Option<String>,
    path: &str,
) -> Result<TaskPushNotificationConfig, A2aError> {
    let mut config = object(config, path)?;
    let authentication = match config.remove("authentication") {
        None | Some(Value::Null) => None,
        Some(auth) => {
            let mut auth = object(auth, &format!("{path}.authentication"))?;
            let scheme = match auth.remove("schemes") {
                Some(Value::Array(schemes)) => schemes.into_iter().find_map(|s| s.as_str().map(str::to_owned)),
                _ => None,
            }
            .ok_or_else(|| A2aError::invalid_field(&format!("{path}.authentication.schemes"), "must name a scheme"))?;
            let credentials = auth.remove("credentials").and_then(|c| c.as_str().map(str::to_owned));
            Some(json!({"scheme": scheme, "credentials": credentials}))
        }
    };
    if let Some(auth) = authentication {
        config.insert("authentication".into(), auth);
    }
    let mut parsed: TaskPushNotificationConfig = parse_params(Value::Object(config)).map_err(|e| prefixed(e, path))?;
    parsed.task_id = task_id;
    Ok(parsed)
}

/// `GetTaskPushNotificationConfigParams` / `DeleteTaskPushNotificationConfigParams`
/// (`{id: <task id>, pushNotificationConfigId?}`); without a config id, the task's id.
pub fn push_config_ref(params: Value) -> Result<TaskPushNotificationConfigRef, A2aError> {
    let task_id = task_id(&params)?;
    let id = match params.get("pushNotificationConfigId") {
        None | Some(Value::Null) => task_id.clone(),
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        Some(_) => return Err(A2aError::invalid_field("pushNotificationConfigId", "must be a non-empty string")),
    };
    Ok(TaskPushNotificationConfigRef { tenant: None, task_id, id })
}

/// Names the enclosing object in an InvalidParams message from a nested parse.
fn prefixed(mut error: A2aError, path: &str) -> A2aError {
    match error.metadata.get("field").cloned() {
        Some(field) => {
            let full = format!("{path}.{field}");
            error.message = error.message.replacen(&format!("`{field}`"), &format!("`{full}`"), 1);
            error.metadata.insert("field".into(), full);
        }
        None => {
            let problem = error.message.trim_start_matches("Invalid params: ").to_owned();
            error.message = format!("Invalid params: `{path}`: {problem}");
            error.metadata.insert("field".into(), path.to_owned());
        }
    }
    error
}

// ---- results: 1.0 -> 0.3 ----

/// A 1.0 message in 0.3 shape.
pub fn message_to_v03(message: &Message) -> Value {
    let mut out = json!({
        "kind": "message",
        "messageId": message.message_id,
        "role": if message.role == crate::Role::Agent { "agent" } else { "user" },
        "parts": message.parts.iter().map(part_to_v03).collect::<Vec<_>>(),
    });
    let map = out.as_object_mut().expect("an object");
    if let Some(c) = &message.context_id {
        map.insert("contextId".into(), json!(c));
    }
    if let Some(t) = &message.task_id {
        map.insert("taskId".into(), json!(t));
    }
    if let Some(m) = &message.metadata {
        map.insert("metadata".into(), json!(m));
    }
    if !message.extensions.is_empty() {
        map.insert("extensions".into(), json!(message.extensions));
    }
    if !message.reference_task_ids.is_empty() {
        map.insert("referenceTaskIds".into(), json!(message.reference_task_ids));
    }
    out
}

/// A 1.0 part as a 0.3 text, file or data part.
pub fn part_to_v03(part: &Part) -> Value {
    let mut metadata = part.metadata.clone();
    let mut out = match &part.content {
        PartContent::Text(t) => json!({"kind": "text", "text": t}),
        PartContent::Data(d @ Value::Object(_)) => json!({"kind": "data", "data": d}),
        PartContent::Data(d) => {
            metadata.get_or_insert_with(Map::new).insert(DATA_PART_COMPAT.into(), Value::Bool(true));
            json!({"kind": "data", "data": {"value": d}})
        }
        PartContent::Raw(bytes) => {
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
            json!({"kind": "file", "file": file_object("bytes", encoded, part)})
        }
        PartContent::Url(url) => json!({"kind": "file", "file": file_object("uri", url.clone(), part)}),
    };
    if let Some(m) = metadata {
        out["metadata"] = Value::Object(m);
    }
    out
}

fn file_object(key: &str, value: String, part: &Part) -> Value {
    let mut file = Map::new();
    file.insert(key.into(), json!(value));
    if let Some(name) = &part.filename {
        file.insert("name".into(), json!(name));
    }
    if let Some(mime) = &part.media_type {
        file.insert("mimeType".into(), json!(mime));
    }
    Value::Object(file)
}

/// A 1.0 task in 0.3 shape.
pub fn task_to_v03(task: &Task) -> Value {
    let mut out = json!({
        "kind": "task",
        "id": task.id,
        "contextId": task.context_id,
        "status": status_to_v03(&task.status),
    });
    let map = out.as_object_mut().expect("an object");
    if !task.artifacts.is_empty() {
        map.insert("artifacts".into(), task.artifacts.iter().map(artifact_to_v03).collect());
    }
    if !task.history.is_empty() {
        map.insert("history".into(), task.history.iter().map(message_to_v03).collect());
    }
    if let Some(m) = &task.metadata {
        map.insert("metadata".into(), json!(m));
    }
    out
}

fn status_to_v03(status: &crate::TaskStatus) -> Value {
    let mut out = json!({"state": state_name(status.state)});
    if let Some(m) = &status.message {
        out["message"] = message_to_v03(m);
    }
    if let Some(Value::String(ts)) = serde_json::to_value(status).ok().and_then(|v| v.get("timestamp").cloned()) {
        out["timestamp"] = json!(ts);
    }
    out
}

/// A 1.0 artifact in 0.3 shape (the same, with 0.3 parts).
pub fn artifact_to_v03(artifact: &Artifact) -> Value {
    let mut out = serde_json::to_value(artifact).unwrap_or(Value::Null);
    out["parts"] = artifact.parts.iter().map(part_to_v03).collect();
    out
}

/// A stream event as the 0.3 `result` of one SSE event. A status update is `final` when
/// the turn ends there (terminal or interrupted): the stream closes after it.
pub fn stream_event_to_v03(event: &StreamResponse) -> Value {
    match event {
        StreamResponse::Task(task) => task_to_v03(task),
        StreamResponse::Message(message) => message_to_v03(message),
        StreamResponse::StatusUpdate(update) => {
            let mut out = json!({
                "kind": "status-update",
                "taskId": update.task_id,
                "contextId": update.context_id,
                "status": status_to_v03(&update.status),
                "final": update.status.state.ends_turn(),
            });
            if let Some(m) = &update.metadata {
                out["metadata"] = json!(m);
            }
            out
        }
        StreamResponse::ArtifactUpdate(update) => {
            let mut out = json!({
                "kind": "artifact-update",
                "taskId": update.task_id,
                "contextId": update.context_id,
                "artifact": artifact_to_v03(&update.artifact),
                "append": update.append,
                "lastChunk": update.last_chunk,
            });
            if let Some(m) = &update.metadata {
                out["metadata"] = json!(m);
            }
            out
        }
    }
}

/// `message/send`'s result: the Task or the Message itself.
pub fn send_response_to_v03(response: &SendMessageResponse) -> Value {
    match response {
        SendMessageResponse::Task(task) => task_to_v03(task),
        SendMessageResponse::Message(message) => message_to_v03(message),
    }
}

/// A 1.0 push config as 0.3 `TaskPushNotificationConfig` (`{taskId,
/// pushNotificationConfig}`).
pub fn push_config_to_v03(config: &TaskPushNotificationConfig) -> Value {
    let mut inner = json!({"url": config.url});
    if let Some(id) = &config.id {
        inner["id"] = json!(id);
    }
    if let Some(token) = &config.token {
        inner["token"] = json!(token);
    }
    if let Some(auth) = &config.authentication {
        inner["authentication"] = json!({"schemes": [auth.scheme]});
        if let Some(c) = &auth.credentials {
            inner["authentication"]["credentials"] = json!(c);
        }
    }
    json!({"taskId": config.task_id.clone().unwrap_or_default(), "pushNotificationConfig": inner})
}

// ---- the agent card ----

/// The `protocolVersion` of a 0.3 entry in `supportedInterfaces` (a major.minor, as the
/// 1.0 spec's examples and a2a-python write it; the top-level 0.3 field is the full
/// [`PROTOCOL_VERSION`]).
pub const INTERFACE_VERSION: &str = "0.3";

/// Makes `card` a card 0.3 clients read too (`card.compat-v03`), as a2a-python does: the
/// 0.3 top-level fields (`url`, `protocolVersion`, …), each security scheme also in its 0.3 shape, and
/// the 0.3 bindings listed in `supportedInterfaces` with `protocolVersion: "0.3"` after the
/// 1.0 ones (a client takes the first it runs, so a 1.0 client keeps picking 1.0).
pub fn add_compat_fields(card: &mut AgentCard, jsonrpc_url: &str, base_url: &str) {
    card.v03 = card_fields(card, jsonrpc_url, base_url);
    card.security_schemes.v03_shapes = true;
    for (url, binding) in [(jsonrpc_url, "JSONRPC"), (base_url, "HTTP+JSON")] {
        card.supported_interfaces.push(crate::AgentInterface {
            url: url.to_owned(),
            protocol_binding: binding.into(),
            tenant: None,
            protocol_version: INTERFACE_VERSION.into(),
        });
    }
}

/// The 0.3 fields of an agent card, derived from its 1.0 fields: `url` and
/// `preferredTransport` name the JSON-RPC interface, `additionalInterfaces` the 0.3
/// bindings (JSON-RPC at `jsonrpc_url`, HTTP+JSON with its `/v1/` routes at `base_url`),
/// `security` the requirements as 0.3 lists of scopes. 1.0 clients ignore them.
fn card_fields(card: &AgentCard, jsonrpc_url: &str, base_url: &str) -> crate::CardV03Fields {
    let security = card
        .security_requirements
        .iter()
        .map(|req| req.schemes.iter().map(|(name, scopes)| (name.clone(), scopes.list.clone())).collect())
        .collect::<Vec<_>>();
    crate::CardV03Fields {
        url: Some(jsonrpc_url.to_owned()),
        preferred_transport: Some("JSONRPC".into()),
        protocol_version: Some(PROTOCOL_VERSION.into()),
        additional_interfaces: Some(vec![
            crate::CardV03Interface { url: jsonrpc_url.to_owned(), transport: "JSONRPC".into() },
            crate::CardV03Interface { url: base_url.to_owned(), transport: "HTTP+JSON".into() },
        ]),
        supports_authenticated_extended_card: Some(card.capabilities.extended_agent_card == Some(true)),
        security: (!security.is_empty()).then_some(security),
    }
}

#[cfg(test)]
#[path = "v03_tests.rs"]
mod tests;
