//! The A2A 0.3 JSON-RPC dialect: the slash-named methods, on every JSON-RPC transport.
//!
//! A 0.3 request is converted to a 1.0 [`Call`] (`a2ad_protocol::dialect::v03`), runs
//! through [`Core::execute`] like any other, and its result or error is converted back:
//! results unwrapped and in 0.3 shapes, 0.3 error codes (the 1.0-only ones as -32603),
//! streams as [`Envelope::JsonRpcV03`]. The `A2A-Version` header is not checked here:
//! 0.3 clients send none (or `0.3`), and the method name already says the dialect.

use super::{RpcAnswer, RpcMeta, RpcOutcome, RpcStream};
use crate::core::{Call, Core, Reply, ReplyBody};
use a2ad_actors::messages::Subscription;
use a2ad_protocol::dialect::v03;
use a2ad_protocol::jsonrpc::JsonRpcRequest;
use a2ad_protocol::{
    A2aError, ErrorCode, GetTaskRequest, ListTaskPushNotificationConfigsRequest, Method, SubscribeToTaskRequest,
};
use a2ad_storage::Owner;
use serde_json::{json, Value};

/// Whether `method` is a 0.3 method name.
pub fn is_method(method: &str) -> bool {
    Method::from_v03(method).is_some()
}

/// Answers one 0.3 request.
pub async fn handle(core: &Core, owner: &Owner, rpc: JsonRpcRequest, meta: &RpcMeta) -> RpcAnswer {
    let id = rpc.response_id();
    let method = rpc.method.clone();
    let activated = match core.activate_extensions(&meta.extensions) {
        Ok(activated) => activated,
        Err(e) => return error_answer(&id, method, e, vec![]),
    };
    let Some(known) = Method::from_v03(&method) else {
        let error = A2aError::new(ErrorCode::MethodNotFound, format!("Method not found: {method}"));
        return error_answer(&id, method, error, activated);
    };
    let params = match with_header_last_event_id(known, rpc.params, meta) {
        Ok(params) => params,
        Err(e) => return error_answer(&id, method, e, activated),
    };
    match execute(core, owner, known, params).await {
        Ok(V03Reply::Result(result)) => {
            let bytes = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
                .unwrap_or_else(|e| error_bytes(&id, &A2aError::internal(format!("encoding a 0.3 result: {e}"))));
            RpcAnswer { outcome: RpcOutcome::Single(bytes), method: Some(method), error: None, activated }
        }
        Ok(V03Reply::Stream(subscription)) => RpcAnswer {
            outcome: RpcOutcome::Stream(RpcStream::new(subscription, super::Envelope::JsonRpcV03(id))),
            method: Some(method),
            error: None,
            activated,
        },
        Err(e) => error_answer(&id, method, e, activated),
    }
}

/// `tasks/resubscribe` params with the transport's `Last-Event-ID` (an SSE client
/// reconnecting to `POST /`) as `lastEventId`, unless the params name one themselves.
fn with_header_last_event_id(method: Method, mut params: Value, meta: &RpcMeta) -> Result<Value, A2aError> {
    if method != Method::SubscribeToTask {
        return Ok(params);
    }
    let last = crate::core::parse_last_event_id("Last-Event-ID", meta.last_event_id.as_deref())?;
    if let (Some(last), Some(map)) = (last, params.as_object_mut()) {
        map.entry("lastEventId").or_insert(json!(last));
    }
    Ok(params)
}

/// What a 0.3 method answers: its 0.3 `result`, or a stream.
pub enum V03Reply {
    Result(Value),
    Stream(Subscription),
}

/// Runs a 0.3 method with its 0.3 params (shared by JSON-RPC and the `/v1/` routes).
pub async fn execute(core: &Core, owner: &Owner, method: Method, params: Value) -> Result<V03Reply, A2aError> {
    let call = decode(method, params)?;
    match core.execute(owner, call).await {
        Ok(Reply::Result(body)) => Ok(V03Reply::Result(result_to_v03(*body))),
        Ok(Reply::Stream(subscription)) => Ok(V03Reply::Stream(subscription)),
        // 0.3 has its own code for a node without an extended card.
        Err(e) if method == Method::GetExtendedAgentCard && e.code == ErrorCode::UnsupportedOperation => {
            Err(A2aError::new(ErrorCode::ExtendedAgentCardNotConfigured, e.message))
        }
        Err(e) => Err(e),
    }
}

/// `params.lastEventId` of `tasks/resubscribe`: not in 0.3, but a2ad's 1.0 extension, so
/// that a 0.3 client on a message transport (no `Last-Event-ID` header) resumes from the
/// last `eventId` it got. A number or a string of digits.
fn last_event_id(params: &Value) -> Result<Option<u64>, A2aError> {
    let refused = || A2aError::invalid_field("lastEventId", "must be a non-negative integer");
    match params.get("lastEventId") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(refused),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| refused()),
        Some(_) => Err(refused()),
    }
}

/// The 1.0 call a 0.3 request means.
fn decode(method: Method, params: Value) -> Result<Call, A2aError> {
    Ok(match method {
        Method::SendMessage => Call::SendMessage(v03::send_request(params)?),
        Method::SendStreamingMessage => Call::SendStreamingMessage(v03::send_request(params)?),
        Method::GetTask => {
            let GetTaskRequest { id, history_length, .. } = v03::get_task_request(params)?;
            Call::GetTask(GetTaskRequest { tenant: None, id, history_length })
        }
        Method::CancelTask => Call::CancelTask(a2ad_protocol::CancelTaskRequest {
            tenant: None,
            id: v03::task_id(&params)?,
            metadata: params.get("metadata").and_then(Value::as_object).cloned(),
        }),
        Method::SubscribeToTask => Call::SubscribeToTask(
            SubscribeToTaskRequest { tenant: None, id: v03::task_id(&params)?, last_event_id: last_event_id(&params)? },
            None,
        ),
        Method::CreateTaskPushNotificationConfig => Call::CreatePushConfig(v03::push_config_set(params)?),
        Method::GetTaskPushNotificationConfig => Call::GetPushConfig(v03::push_config_ref(params)?),
        Method::ListTaskPushNotificationConfigs => Call::ListPushConfigs(ListTaskPushNotificationConfigsRequest {
            tenant: None,
            task_id: v03::task_id(&params)?,
            page_size: None,
            page_token: None,
        }),
        Method::DeleteTaskPushNotificationConfig => Call::DeletePushConfig(v03::push_config_ref(params)?),
        Method::GetExtendedAgentCard => Call::GetExtendedAgentCard(None),
        // 0.3 has no ListTasks (`Method::from_v03` never names it).
        Method::ListTasks => return Err(A2aError::new(ErrorCode::MethodNotFound, "Method not found: ListTasks")),
    })
}

/// A 1.0 result as the 0.3 `result`: unwrapped, in 0.3 shapes.
fn result_to_v03(body: ReplyBody) -> Value {
    match body {
        ReplyBody::SendMessage(response) => v03::send_response_to_v03(&response),
        ReplyBody::Task(task) => v03::task_to_v03(&task),
        ReplyBody::PushConfig(config) => v03::push_config_to_v03(&config),
        ReplyBody::PushConfigs(list) => list.configs.iter().map(v03::push_config_to_v03).collect(),
        ReplyBody::Empty => Value::Null,
        ReplyBody::ListTasks(list) => json!(list),
        ReplyBody::Card(card) => json!(card),
    }
}

fn error_bytes(id: &Value, error: &A2aError) -> Vec<u8> {
    serde_json::to_vec(&v03::error_response(id, error)).expect("an error object always encodes")
}

/// A 0.3 error answer (logged like every error).
pub fn error_answer(id: &Value, method: String, error: A2aError, activated: Vec<String>) -> RpcAnswer {
    crate::core::report(&error);
    RpcAnswer {
        outcome: RpcOutcome::Single(error_bytes(id, &error)),
        method: Some(method),
        error: Some(error),
        activated,
    }
}
