//! The A2A 0.3 HTTP+JSON routes under `/v1/`, as the 0.3 SDKs call them.
//!
//! A route becomes a 0.3 method and its 0.3 params (from the path, query and a body in
//! the 0.3 ProtoJSON, `a2ad_protocol::dialect::v03_rest`), runs through
//! [`crate::rpc::v03::execute`] like a 0.3 JSON-RPC request, and the result goes back as
//! 0.3 ProtoJSON. Errors are `{"error": google.rpc.Status}` with the table's HTTP status
//! (the 0.3 clients read only the status; states in messages by their 0.3 proto names); streams are SSE with one `StreamResponse` per
//! event; `…:subscribe` resumes after a `Last-Event-ID` header as the 1.0 route does
//! (a bad one is 400 naming the header). Mounted before the 1.0 routes, so `/v1/…` is never read as a tenant.

use super::rest_shared::{admit, error_response, mount, read_json};
use super::{echo_extensions, observe, sse, AppState};
use crate::metrics::Binding;
use crate::rpc::v03::{execute, V03Reply};
use crate::rpc::{Envelope, RpcStream};
use a2ad_protocol::dialect::v03_rest;
use a2ad_protocol::{A2aError, Method};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// The 0.3 routes: `(HTTP method, path, method)`.
const ROUTES: &[(&str, &str, Method)] = &[
    ("POST", "/v1/message:send", Method::SendMessage),
    ("POST", "/v1/message:stream", Method::SendStreamingMessage),
    ("POST", "/v1/tasks/{id:[^/:]+}:cancel", Method::CancelTask),
    ("GET", "/v1/tasks/{id:[^/:]+}:subscribe", Method::SubscribeToTask),
    ("POST", "/v1/tasks/{id:[^/:]+}:subscribe", Method::SubscribeToTask),
    ("GET", "/v1/tasks/{id:[^/:]+}", Method::GetTask),
    ("POST", "/v1/tasks/{id:[^/:]+}/pushNotificationConfigs", Method::CreateTaskPushNotificationConfig),
    ("GET", "/v1/tasks/{id:[^/:]+}/pushNotificationConfigs", Method::ListTaskPushNotificationConfigs),
    ("GET", "/v1/tasks/{id:[^/:]+}/pushNotificationConfigs/{configId}", Method::GetTaskPushNotificationConfig),
    ("DELETE", "/v1/tasks/{id:[^/:]+}/pushNotificationConfigs/{configId}", Method::DeleteTaskPushNotificationConfig),
    ("GET", "/v1/card", Method::GetExtendedAgentCard),
];

/// Mounts the `/v1/` routes.
pub fn routes(cfg: &mut web::ServiceConfig) {
    mount(cfg, "", ROUTES, handle);
}

async fn handle(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>, route: Method) -> HttpResponse {
    observe::served(&req, Binding::Rest, route.info().v03.unwrap_or("unknown"));
    // Every `/v1/` route is a 0.3 one: its client may need the 0.3 card too.
    super::hint_old_client(&req, &state, Some(route.info().v03.unwrap_or("/v1/")));
    let (owner, activated) = match admit(&req, &state).await {
        Ok(admitted) => admitted,
        Err(refused) => return *refused,
    };
    let params = match params(&req, payload, &state, route).await {
        Ok(params) => params,
        Err(e) => return error_response(&v03_rest::error_to_proto(e)),
    };
    let mut response = match execute(&state.core, &owner, route, params).await {
        Ok(V03Reply::Result(result)) => json_response(result_to_proto(route, result)),
        Ok(V03Reply::Stream(subscription)) => {
            sse::sse_response(&req, RpcStream::new(subscription, Envelope::RestV03), &state)
        }
        Err(e) => error_response(&v03_rest::error_to_proto(e)),
    };
    echo_extensions(&activated, &mut response);
    response
}

/// The 0.3 JSON-RPC params a route means.
async fn params(req: &HttpRequest, payload: web::Payload, state: &AppState, route: Method) -> Result<Value, A2aError> {
    let id = req.match_info().get("id").unwrap_or_default().to_owned();
    Ok(match route {
        Method::SendMessage | Method::SendStreamingMessage => {
            v03_rest::send_params(read_body(req, payload, state).await?)?
        }
        Method::CreateTaskPushNotificationConfig => {
            v03_rest::push_config_set_params(&id, read_body(req, payload, state).await?)?
        }
        Method::GetTask => {
            let mut params = json!({"id": id});
            if let Some(n) = query_value(req, "historyLength") {
                let n: i64 = n.parse().map_err(|_| A2aError::invalid_field("historyLength", "must be an integer"))?;
                params["historyLength"] = json!(n);
            }
            params
        }
        Method::GetTaskPushNotificationConfig | Method::DeleteTaskPushNotificationConfig => {
            json!({"id": id, "pushNotificationConfigId": req.match_info().get("configId").unwrap_or_default()})
        }
        // Resumes after `Last-Event-ID` like the 1.0 route (as `params.lastEventId`).
        Method::SubscribeToTask => match sse::last_event_id(req)? {
            Some(last) => json!({"id": id, "lastEventId": last}),
            None => json!({"id": id}),
        },
        Method::CancelTask | Method::ListTaskPushNotificationConfigs => json!({"id": id}),
        Method::GetExtendedAgentCard | Method::ListTasks => json!({}),
    })
}

fn query_value(req: &HttpRequest, name: &str) -> Option<String> {
    let pairs = web::Query::<Vec<(String, String)>>::from_query(req.query_string()).ok()?.into_inner();
    pairs.into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// The body as JSON; an empty body is `{}`.
async fn read_body(req: &HttpRequest, payload: web::Payload, state: &AppState) -> Result<Value, A2aError> {
    Ok(read_json(req, payload, state).await?.unwrap_or_else(|| json!({})))
}

/// A 0.3 JSON-RPC result as the route's 0.3 ProtoJSON response.
fn result_to_proto(route: Method, result: Value) -> Value {
    match route {
        Method::SendMessage => v03_rest::send_response(result),
        Method::GetTask | Method::CancelTask => v03_rest::task_to_proto(&result),
        Method::CreateTaskPushNotificationConfig | Method::GetTaskPushNotificationConfig => {
            v03_rest::push_config_to_proto(&result)
        }
        Method::ListTaskPushNotificationConfigs => {
            let configs: Vec<Value> =
                result.as_array().map(|a| a.iter().map(v03_rest::push_config_to_proto).collect()).unwrap_or_default();
            json!({"configs": configs})
        }
        Method::DeleteTaskPushNotificationConfig => json!({}),
        Method::GetExtendedAgentCard | Method::SendStreamingMessage | Method::SubscribeToTask | Method::ListTasks => {
            result
        }
    }
}

fn json_response(body: Value) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(body.to_string())
}
