//! The 0.1 dialect, as the A2A JSON-RPC gateways in production still speak it.
//!
//! Requests: `tasks/send` and `tasks/sendSubscribe` take either `{capability_id,
//! message?}` (the capability is the skill that runs the task) or the 0.1 form `{id,
//! sessionId, message}`: `sessionId` is the context id, and `id` continues that task when
//! the caller has one of that id (a new task otherwise gets a node-minted id, which the
//! result reports). Messages have parts with a `type` discriminator (`text`, `file`,
//! `data`) and need no `messageId` (one is minted). Without a `message`, the agent gets
//! one data part holding the other params (minus the ones above), e.g. `{"input": …}`.
//! A `pushNotification` (`{url, token?, authentication?: {schemes, credentials?}}`) is
//! registered for the new task, as 0.3's `configuration.pushNotificationConfig` is.
//!
//! Results are flat: `tasks/send` answers `{id, status, created_at}`; `tasks/get` and
//! `tasks/cancel` answer `{id, status, metadata: {context_id, tenant, principal},
//! artifacts: [{name, parts: [{type, data}]}]}` with `status` a lowercase state (0.1 has
//! no rejected or auth-required: they read `failed` and `input-required`).
//!
//! Error codes: -32000 authentication, -32001 not found (-32004 inside a stream),
//! -32002 quota exceeded (rate and concurrency limits, a busy node), -32003 permission
//! denied (the operation is not allowed on this task or node); the JSON-RPC standard
//! codes stay, and anything else is -32603.

use super::object;
use crate::jsonrpc::parse_params;
use crate::{
    A2aError, Artifact, ErrorCode, Message, PartContent, SendMessageConfiguration, SendMessageRequest, Task, TaskState,
};
use serde_json::{json, Map, Value};

/// Marks the first message of a task started by a 0.1 `tasks/send` (in its metadata), so
/// that the shared methods answer such a task in 0.1 shape.
pub const ORIGIN_KEY: &str = "a2ad.dialect";
/// The value of [`ORIGIN_KEY`].
pub const ORIGIN: &str = "0.1";

/// The JSON-RPC code of a missing or refused credential.
pub const AUTHENTICATION_CODE: i32 = -32000;

/// A decoded `tasks/send`: the 1.0 request, and the task id the client named, if any.
#[derive(Debug)]
pub struct SendParams {
    /// The request as 1.0 runs it.
    pub request: SendMessageRequest,
    /// The `id` the client named. Whether it continues a task is for the node to say (it
    /// knows which tasks the caller owns); here it is only read.
    pub task_id: Option<String>,
}

/// An optional field that, when present and not null, must be a non-empty string; removed
/// from `params` so what is left can become the message (see [`input_message`]).
fn non_empty_string(params: &mut Map<String, Value>, key: &str) -> Result<Option<String>, A2aError> {
    match params.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        Some(_) => Err(A2aError::invalid_field(key, "must be a non-empty string")),
    }
}

/// Decodes `tasks/send` / `tasks/sendSubscribe` params. The call returns at once (0.1
/// clients poll or subscribe).
pub fn send_request(params: Value) -> Result<SendParams, A2aError> {
    let mut params = object(params, "params")?;
    let capability = non_empty_string(&mut params, "capability_id")?;
    let task_id = non_empty_string(&mut params, "id")?;
    let context_id = non_empty_string(&mut params, "sessionId")?;
    let history_length = params.remove("historyLength");
    let metadata = match params.remove("metadata") {
        None | Some(Value::Null) => None,
        Some(m) => Some(object(m, "metadata")?),
    };
    let push = match params.remove("pushNotification") {
        None | Some(Value::Null) => None,
        Some(p) => Some(super::v03::push_config_from_v03(p, None, "pushNotification")?),
    };
    let mut message = match params.remove("message") {
        None | Some(Value::Null) => input_message(params),
        Some(m) => message_from_v01(m)?,
    };
    message.context_id = context_id;
    let meta = message.metadata.get_or_insert_with(Map::new);
    meta.insert(ORIGIN_KEY.into(), json!(ORIGIN));
    if let Some(capability) = capability {
        meta.insert("skill".into(), json!(capability));
    }
    let mut configuration: SendMessageConfiguration = match history_length {
        Some(n) => parse_params(json!({"historyLength": n}))?,
        None => SendMessageConfiguration::default(),
    };
    configuration.return_immediately = true;
    configuration.task_push_notification_config = push;
    Ok(SendParams {
        request: SendMessageRequest { tenant: None, message, configuration: Some(configuration), metadata },
        task_id,
    })
}

/// The message a call without one sends: one data part with the remaining params.
fn input_message(rest: Map<String, Value>) -> Message {
    let mut message = Message::agent_text(crate::ids::new_id(), "", None, "");
    message.context_id = None;
    message.role = crate::Role::User;
    message.parts[0].content = PartContent::Data(Value::Object(rest));
    message
}

/// A 0.1 message (`{role, parts: [{type, …}], metadata?}`) as 1.0.
fn message_from_v01(message: Value) -> Result<Message, A2aError> {
    let mut message = object(message, "message")?;
    let parts = match message.remove("parts") {
        Some(Value::Array(parts)) => parts,
        _ => return Err(A2aError::invalid_field("message.parts", "must be an array")),
    };
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| part_from_v01(part, &format!("message.parts[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    message.insert("parts".into(), Value::Array(parts));
    message.entry("messageId").or_insert_with(|| json!(crate::ids::new_id()));
    message.insert("kind".into(), json!("message"));
    super::v03::message_from_v03(Value::Object(message), "message")
}

/// A 0.1 part (`type` text, file or data) as a 0.3 part. A text part may hold its text in
/// `text` or, as 0.1 results write it, in `data`.
fn part_from_v01(part: Value, path: &str) -> Result<Value, A2aError> {
    let mut part = object(part, path)?;
    let kind = match part.remove("type") {
        Some(Value::String(t)) => t,
        _ => return Err(A2aError::invalid_field(&format!("{path}.type"), "must be \"text\", \"file\" or \"data\"")),
    };
    if kind == "text" && !part.contains_key("text") {
        if let Some(text) = part.remove("data") {
            part.insert("text".into(), text);
        }
    }
    part.insert("kind".into(), json!(kind));
    Ok(Value::Object(part))
}

/// The 0.1 name of a state.
pub fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::InputRequired | TaskState::AuthRequired => "input-required",
        TaskState::Completed => "completed",
        TaskState::Canceled => "canceled",
        TaskState::Failed | TaskState::Rejected => "failed",
        TaskState::Unspecified => "unknown",
    }
}

/// `tasks/send`'s result: `{id, status, created_at}` (`created_at` is the time of the
/// status the task was created with).
pub fn send_result(task: &Task) -> Value {
    json!({"id": task.id, "status": state_name(task.status.state), "created_at": status_time(task)})
}

fn status_time(task: &Task) -> Value {
    serde_json::to_value(&task.status).ok().and_then(|v| v.get("timestamp").cloned()).unwrap_or(Value::Null)
}

/// A task as `tasks/get` answers it; `owner` holds the owner fields of `metadata`.
pub fn task_to_v01(task: &Task, owner: &Map<String, Value>) -> Value {
    let mut metadata = Map::new();
    metadata.insert("context_id".into(), json!(task.context_id));
    metadata.extend(owner.clone());
    json!({
        "id": task.id,
        "status": state_name(task.status.state),
        "updated_at": status_time(task),
        "metadata": metadata,
        "artifacts": task.artifacts.iter().map(artifact_to_v01).collect::<Vec<_>>(),
    })
}

fn artifact_to_v01(artifact: &Artifact) -> Value {
    let parts: Vec<Value> = artifact
        .parts
        .iter()
        .map(|part| match &part.content {
            PartContent::Text(t) => json!({"type": "text", "data": t}),
            PartContent::Data(d) => json!({"type": "data", "data": d}),
            PartContent::Url(_) | PartContent::Raw(_) => {
                let file = super::v03::part_to_v03(part)["file"].clone();
                json!({"type": "file", "data": file})
            }
        })
        .collect();
    json!({"name": artifact.name.clone().unwrap_or_else(|| artifact.artifact_id.clone()), "parts": parts})
}

/// The 0.1 code of an error; `in_stream` for the `event: error` of `tasks/sendSubscribe`,
/// where not found is -32004.
pub fn jsonrpc_code(code: ErrorCode, in_stream: bool) -> i32 {
    match code {
        ErrorCode::TaskNotFound if in_stream => -32004,
        ErrorCode::TaskNotFound => -32001,
        ErrorCode::Unauthenticated => AUTHENTICATION_CODE,
        ErrorCode::RateLimited | ErrorCode::LimitExceeded | ErrorCode::ServerBusy | ErrorCode::StoreUnavailable => {
            -32002
        }
        ErrorCode::TaskNotCancelable
        | ErrorCode::PermissionDenied
        | ErrorCode::UnsupportedOperation
        | ErrorCode::PushNotificationNotSupported
        | ErrorCode::ExtensionSupportRequired
        | ErrorCode::ExtendedAgentCardNotConfigured => -32003,
        ErrorCode::ParseError
        | ErrorCode::InvalidRequest
        | ErrorCode::MethodNotFound
        | ErrorCode::InvalidParams
        | ErrorCode::PayloadTooLarge => code.info().jsonrpc,
        _ => -32603,
    }
}

/// The HTTP status of a 0.1 REST error.
pub fn http_status(code: ErrorCode) -> u16 {
    match jsonrpc_code(code, false) {
        AUTHENTICATION_CODE => 401,
        -32001 => 404,
        -32002 => 429,
        -32003 => 403,
        -32603 => 500,
        _ if code == ErrorCode::PayloadTooLarge => 413,
        _ => 400,
    }
}

/// The `error` member for a 0.1 caller: `{code, message, data: {reason, …}}`, with the
/// states in the message by their 0.1 names.
pub fn error_object(error: &A2aError, in_stream: bool) -> Value {
    let mut data = Map::new();
    data.insert("reason".into(), json!(error.code.info().reason));
    for (k, v) in &error.metadata {
        data.insert(k.clone(), json!(v));
    }
    let message = super::rename_states(&error.message, state_name);
    json!({"code": jsonrpc_code(error.code, in_stream), "message": message, "data": data})
}

/// A complete 0.1 JSON-RPC error response.
pub fn error_response(id: &Value, error: &A2aError, in_stream: bool) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error_object(error, in_stream)})
}

/// The JSON-RPC error response for a request without a valid credential.
pub fn authentication_error(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": AUTHENTICATION_CODE, "message": "Authentication required"}})
}

#[cfg(test)]
#[path = "v01_tests.rs"]
mod tests;
