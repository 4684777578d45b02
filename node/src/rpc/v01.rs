//! The 0.1 dialect (`tasks/send`, `tasks/sendSubscribe`, and `tasks/get` / `tasks/cancel`
//! for 0.1 callers), on every JSON-RPC transport; the `/api/v1/transactions` routes use
//! [`execute`] too. Shapes and codes: `a2ad_protocol::dialect::v01`.
//!
//! `tasks/get` and `tasks/cancel` are also 0.3 methods, with the same params. They are
//! answered as 0.1 when the caller says `A2A-Version: 0.1` (header or query), or when the
//! task was started by a 0.1 `tasks/send` (its first message carries
//! `metadata["a2ad.dialect"] = "0.1"`); otherwise as 0.3. The 0.3 SDK never sends 0.1 and
//! never reads a task it did not start, so it always gets 0.3.
//!
//! A `tasks/sendSubscribe` stream sends `event: task` (a full JSON-RPC success response
//! with the whole task) on every change, closes after the turn ends (terminal or
//! interrupted), and, when `dialect-01.heartbeat-window` passes first, sends `event:
//! heartbeat` with `{"ok": true}` and closes. Its errors (other than a rate limit, which
//! is a plain 429) are `event: error` with a 0.1 JSON-RPC error response.

use super::{RpcAnswer, RpcMeta, RpcOutcome, RpcStream};
use crate::core::{Call, Core, Reply, ReplyBody};
use a2ad_actors::messages::Subscription;
use a2ad_protocol::dialect::v01;
use a2ad_protocol::jsonrpc::JsonRpcRequest;
use a2ad_protocol::{A2aError, CancelTaskRequest, ErrorCode, GetTaskRequest, Method, SendMessageResponse, Task};
use a2ad_storage::Owner;
use serde_json::{json, Map, Value};

/// Whether a request is 0.1 by its method and version alone (before the caller is
/// known): a 0.1-only method, or a shared one with `A2A-Version: 0.1`.
pub fn says_v01(method: &str, version: Option<&str>) -> bool {
    let asks_v01 = version.map(str::trim).is_some_and(|v| v == "0.1" || v.starts_with("0.1."));
    Method::is_v01_only(method) || (asks_v01 && is_shared(method))
}

/// Whether a request is answered in the 0.1 dialect (see the module docs).
pub async fn owns(core: &Core, owner: &Owner, method: &str, params: &Value, version: Option<&str>) -> bool {
    if says_v01(method, version) {
        return true;
    }
    if !is_shared(method) {
        return false;
    }
    let task_id = params.get("id").and_then(Value::as_str);
    let Some(task_id) = task_id else { return false };
    core.owned_task(owner, task_id).await.is_ok_and(|record| started_by_v01(&record.task))
}

/// A 0.1 name that 0.3 uses too (`tasks/get`, `tasks/cancel`), answered in 0.1 shape
/// for 0.1 callers and tasks only.
fn is_shared(method: &str) -> bool {
    Method::from_v01(method).is_some() && !Method::is_v01_only(method)
}

fn started_by_v01(task: &Task) -> bool {
    let origin = task.history.first().and_then(|m| m.metadata.as_ref()).and_then(|m| m.get(v01::ORIGIN_KEY));
    origin.and_then(Value::as_str) == Some(v01::ORIGIN)
}

/// The owner fields of a 0.1 task's `metadata`.
pub fn owner_fields(owner: &Owner) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("tenant".into(), json!(owner.tenant));
    fields.insert("principal".into(), json!(owner.principal));
    fields
}

/// What a 0.1 method answers: its `result`, or a stream.
pub enum V01Reply {
    Result(Value),
    Stream(Subscription),
}

/// Runs a 0.1 method with its 0.1 params (shared by JSON-RPC and the REST routes).
pub async fn execute(core: &Core, owner: &Owner, method: &str, params: Value) -> Result<V01Reply, A2aError> {
    let call = match method {
        "tasks/send" | "tasks/sendSubscribe" => {
            let v01::SendParams { mut request, task_id } = v01::send_request(params)?;
            // `id` continues the caller's task of that id; any other id starts a new task.
            if let Some(id) = task_id {
                if core.owned_task(owner, &id).await.is_ok() {
                    request.message.task_id = Some(id);
                }
            }
            if method == "tasks/send" {
                Call::SendMessage(request)
            } else {
                Call::SendStreamingMessage(request)
            }
        }
        "tasks/get" => {
            let GetTaskRequest { id, history_length, .. } = a2ad_protocol::jsonrpc::parse_params(params)?;
            Call::GetTask(GetTaskRequest { tenant: None, id, history_length })
        }
        "tasks/cancel" => {
            let id = a2ad_protocol::dialect::v03::task_id(&params)?;
            Call::CancelTask(CancelTaskRequest { tenant: None, id, metadata: None })
        }
        other => return Err(A2aError::new(ErrorCode::MethodNotFound, format!("Method not found: {other}"))),
    };
    match core.execute(owner, call).await? {
        Reply::Stream(subscription) => Ok(V01Reply::Stream(subscription)),
        Reply::Result(body) => match *body {
            ReplyBody::SendMessage(SendMessageResponse::Task(task)) => Ok(V01Reply::Result(v01::send_result(&task))),
            ReplyBody::Task(task) => Ok(V01Reply::Result(v01::task_to_v01(&task, &owner_fields(owner)))),
            _ => Err(A2aError::internal(format!("{method}: the agent answered with something other than a task"))),
        },
    }
}

/// Answers one 0.1 JSON-RPC request.
pub async fn handle(core: &Core, owner: &Owner, rpc: JsonRpcRequest, _meta: &RpcMeta) -> RpcAnswer {
    let id = rpc.response_id();
    let method = rpc.method.clone();
    let envelope = || super::Envelope::V01 {
        id: id.clone(),
        window: core.dialect_01().heartbeat_window,
        owner: owner_fields(owner),
    };
    let outcome = match execute(core, owner, &method, rpc.params).await {
        Ok(V01Reply::Result(result)) => {
            RpcOutcome::Single(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string().into_bytes())
        }
        Ok(V01Reply::Stream(subscription)) => RpcOutcome::Stream(RpcStream::new(subscription, envelope())),
        Err(e) if method == "tasks/sendSubscribe" && e.code != ErrorCode::RateLimited => {
            crate::core::report(&e);
            RpcOutcome::Stream(RpcStream::failed(e, envelope()))
        }
        Err(e) => {
            crate::core::report(&e);
            let body = v01::error_response(&id, &e, false).to_string().into_bytes();
            return RpcAnswer {
                outcome: RpcOutcome::Single(body),
                method: Some(method),
                error: Some(e),
                activated: vec![],
            };
        }
    };
    RpcAnswer { outcome, method: Some(method), error: None, activated: vec![] }
}
