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
use a2ad_protocol::{A2aError, ErrorCode, Method};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{Map, Value};

/// Mounts every route under `prefix`, then under `prefix/{tenant}`.
/// The routes are [`Method::info`]'s `rest` paths.
pub fn routes(cfg: &mut web::ServiceConfig, prefix: &str) {
    let table: Vec<(&str, &str, Method)> =
        Method::ALL.iter().flat_map(|m| m.info().rest.iter().map(move |(verb, path)| (*verb, *path, *m))).collect();
    for tenant in ["", "/{tenant}"] {
        mount(cfg, &format!("{prefix}{tenant}"), &table, handle);
    }
}

async fn handle(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>, route: Method) -> HttpResponse {
    observe::served(&req, Binding::Rest, route.name());
    let (owner, activated) = match admit(&req, &state).await {
        Ok(admitted) => admitted,
        Err(refused) => return *refused,
    };
    let call = match decode(&req, payload, &state, route).await {
        Ok(call) => call.came_to(crate::connection::base_url_of(&req)),
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
        Ok(Reply::Stream(subscription)) => sse::sse_response(req, RpcStream::new(subscription, Envelope::Bare), state),
        Err(e) => error_response(&e),
    }
}

/// Builds the request message from the path, the query and the body, then the call.
async fn decode(req: &HttpRequest, payload: web::Payload, state: &AppState, route: Method) -> Result<Call, A2aError> {
    check_version(req)?;
    let mut fields = match route {
        Method::SendMessage
        | Method::SendStreamingMessage
        | Method::CancelTask
        | Method::SubscribeToTask
        | Method::CreateTaskPushNotificationConfig => read_json_object(req, payload, state).await?,
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
    Call::decode(route, params, last_event_id)
}

/// The body as a JSON object; an empty body is an empty object.
async fn read_json_object(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<Map<String, Value>, A2aError> {
    match read_json(req, payload, state).await? {
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
