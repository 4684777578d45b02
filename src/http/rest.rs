//! The HTTP+JSON (REST) binding: every 1.0 route, under the configured prefix and again
//! under `/{tenant}/`, which fills the request's `tenant`.
//!
//! A route becomes a [`Call`]: the path supplies ids, the query string (camelCase) or the
//! body (a request message as ProtoJSON) the rest. Results are the response messages as
//! `application/a2a+json`; errors are `{"error": google.rpc.Status}` (AIP-193) with the
//! table's HTTP status; streams are SSE with the bare `StreamResponse` and the same event
//! ids as JSON-RPC. Task ids are minted by the node and never contain `:`, which is how
//! `/tasks/{id}:cancel` is told from `/tasks/{id}`. A tenant cannot be named like a
//! top-level route (`tasks`, `message:send`, ...): those routes win.

use super::rest_shared::{admit, error_response, mount, read_json};
use super::sse;
use super::{check_version, echo_extensions, observe, AppState};
use crate::core::{Call, Reply, ReplyBody};
use crate::metrics::Binding;
use crate::rpc::{Envelope, RpcStream};
use a2ad_protocol::jsonrpc::parse_params;
use a2ad_protocol::{A2aError, ErrorCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{Map, Value};

/// Which method a route serves, and where its ids come from.
#[derive(Clone, Copy)]
enum Route {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
    GetExtendedAgentCard,
}

impl Route {
    /// The A2A method the route serves.
    fn method(self) -> &'static str {
        match self {
            Route::SendMessage => "SendMessage",
            Route::SendStreamingMessage => "SendStreamingMessage",
            Route::GetTask => "GetTask",
            Route::ListTasks => "ListTasks",
            Route::CancelTask => "CancelTask",
            Route::SubscribeToTask => "SubscribeToTask",
            Route::CreatePushConfig => "CreateTaskPushNotificationConfig",
            Route::GetPushConfig => "GetTaskPushNotificationConfig",
            Route::ListPushConfigs => "ListTaskPushNotificationConfigs",
            Route::DeletePushConfig => "DeleteTaskPushNotificationConfig",
            Route::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }
}

/// `(method, path, route)`, in match order. `{id}` never holds `/` or `:`.
const ROUTES: &[(&str, &str, Route)] = &[
    ("POST", "/message:send", Route::SendMessage),
    ("POST", "/message:stream", Route::SendStreamingMessage),
    ("GET", "/tasks", Route::ListTasks),
    ("POST", "/tasks/{id:[^/:]+}:cancel", Route::CancelTask),
    ("GET", "/tasks/{id:[^/:]+}:subscribe", Route::SubscribeToTask),
    ("POST", "/tasks/{id:[^/:]+}:subscribe", Route::SubscribeToTask),
    ("GET", "/tasks/{id:[^/:]+}", Route::GetTask),
    ("POST", "/tasks/{taskId:[^/:]+}/pushNotificationConfigs", Route::CreatePushConfig),
    ("GET", "/tasks/{taskId:[^/:]+}/pushNotificationConfigs", Route::ListPushConfigs),
    ("GET", "/tasks/{taskId:[^/:]+}/pushNotificationConfigs/{id}", Route::GetPushConfig),
    ("DELETE", "/tasks/{taskId:[^/:]+}/pushNotificationConfigs/{id}", Route::DeletePushConfig),
    ("GET", "/extendedAgentCard", Route::GetExtendedAgentCard),
];

/// Mounts every route under `prefix`, then under `prefix/{tenant}`.
pub fn routes(cfg: &mut web::ServiceConfig, prefix: &str) {
    for tenant in ["", "/{tenant}"] {
        mount(cfg, &format!("{prefix}{tenant}"), ROUTES, handle);
    }
}

async fn handle(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>, route: Route) -> HttpResponse {
    observe::served(&req, Binding::Rest, route.method());
    let (owner, activated) = match admit(&req, &state) {
        Ok(admitted) => admitted,
        Err(refused) => return *refused,
    };
    let call = match decode(&req, payload, &state, route).await {
        Ok(call) => call,
        Err(e) => return error_response(&e),
    };
    let mut response = answer(&req, &state, &owner, call).await;
    echo_extensions(&activated, &mut response);
    response
}

/// Runs the call and encodes its answer.
async fn answer(req: &HttpRequest, state: &AppState, owner: &a2ad_storage::Owner, call: Call) -> HttpResponse {
    match state.core.execute(owner, call).await {
        Ok(Reply::Result(body)) if matches!(*body, ReplyBody::Empty) => {
            HttpResponse::Ok().content_type("application/a2a+json").body("{}")
        }
        Ok(Reply::Result(body)) => match serde_json::to_vec(&body) {
            Ok(bytes) => HttpResponse::Ok().content_type("application/a2a+json").body(bytes),
            Err(e) => error_response(&A2aError::internal(format!("could not encode the result: {e}"))),
        },
        Ok(Reply::Stream(subscription)) => {
            sse::sse_response(req, RpcStream::new(subscription, Envelope::Bare), state.stream_keep_alive)
        }
        Err(e) => error_response(&e),
    }
}

/// Builds the request message from the path, the query and the body, then the call.
async fn decode(req: &HttpRequest, payload: web::Payload, state: &AppState, route: Route) -> Result<Call, A2aError> {
    check_version(req)?;
    let mut fields = match route {
        Route::SendMessage
        | Route::SendStreamingMessage
        | Route::CancelTask
        | Route::SubscribeToTask
        | Route::CreatePushConfig => read_json_object(req, payload, state.rest_body_limit).await?,
        _ => Map::new(),
    };
    query_fields(req.query_string(), &mut fields)?;
    for name in ["id", "taskId", "tenant"] {
        if let Some(value) = req.match_info().get(name) {
            fields.insert(name.to_owned(), Value::String(value.to_owned()));
        }
    }
    let params = Value::Object(fields);
    let last_event_id = sse::last_event_id(req)?;
    Ok(match route {
        Route::SendMessage => Call::SendMessage(parse_params(params)?),
        Route::SendStreamingMessage => Call::SendStreamingMessage(parse_params(params)?),
        Route::GetTask => Call::GetTask(parse_params(params)?),
        Route::ListTasks => Call::ListTasks(parse_params(params)?),
        Route::CancelTask => Call::CancelTask(parse_params(params)?),
        Route::SubscribeToTask => Call::SubscribeToTask(parse_params(params)?, last_event_id),
        Route::CreatePushConfig => Call::CreatePushConfig(parse_params(params)?),
        Route::GetPushConfig => Call::GetPushConfig(parse_params(params)?),
        Route::ListPushConfigs => Call::ListPushConfigs(parse_params(params)?),
        Route::DeletePushConfig => Call::DeletePushConfig(parse_params(params)?),
        Route::GetExtendedAgentCard => Call::GetExtendedAgentCard,
    })
}

/// The body as a JSON object; an empty body is an empty object.
async fn read_json_object(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
) -> Result<Map<String, Value>, A2aError> {
    match read_json(req, payload, limit).await? {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(A2aError::new(ErrorCode::InvalidRequest, "Invalid request: the body must be a JSON object")),
    }
}

/// Query parameters (camelCase, enums by name) as request fields. Booleans are `true` or
/// `false`; numbers stay strings, which ProtoJSON reads as numbers.
fn query_fields(query: &str, fields: &mut Map<String, Value>) -> Result<(), A2aError> {
    for (key, value) in form_urlencoded_pairs(query) {
        let value = match key.as_str() {
            "includeArtifacts" | "include_artifacts" => match value.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return Err(A2aError::invalid_field(&key, "must be true or false")),
            },
            _ => Value::String(value),
        };
        fields.insert(key, value);
    }
    Ok(())
}

/// Decodes `a=1&b=x%20y` (no repeated fields exist in the 1.0 query parameters).
fn form_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    web::Query::<Vec<(String, String)>>::from_query(query).map(|q| q.into_inner()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_become_fields() {
        let mut fields = Map::new();
        query_fields("pageSize=2&includeArtifacts=true&contextId=a%3Ab&status=TASK_STATE_WORKING", &mut fields)
            .unwrap();
        assert_eq!(fields["pageSize"], "2");
        assert_eq!(fields["includeArtifacts"], true);
        assert_eq!(fields["contextId"], "a:b");
        assert!(query_fields("includeArtifacts=yes", &mut Map::new()).is_err());
    }
}
