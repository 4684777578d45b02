//! What the 1.0 HTTP+JSON routes ([`super::rest`]) and the 0.3 `/v1/` routes
//! ([`super::rest_v03`]) do alike: mounting a route table on one handler, admitting the
//! caller, reading the JSON body and answering an error as `{"error": google.rpc.Status}`.
//!
//! Kept in one place so the two dialects cannot drift apart on authentication, extension
//! activation, body limits or error statuses; only what a route means differs.

use super::caller::{caller, Refused};
use super::{activate_extensions, body, observe, AppState};
use a2ad_protocol::A2aError;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;
use std::future::Future;

/// Mounts every `(HTTP method, path, route)` of `table` under `prefix` on `handle`, which
/// gets the route as its last argument.
pub(super) fn mount<R, H, Fut>(cfg: &mut web::ServiceConfig, prefix: &str, table: &[(&str, &str, R)], handle: H)
where
    R: Copy + 'static,
    H: Fn(HttpRequest, web::Payload, web::Data<AppState>, R) -> Fut + Clone + 'static,
    Fut: Future<Output = HttpResponse> + 'static,
{
    for (method, path, route) in table {
        let route = *route;
        let handle = handle.clone();
        let handler = move |req: HttpRequest, payload: web::Payload, state: web::Data<AppState>| {
            handle(req, payload, state, route)
        };
        let method = actix_web::http::Method::from_bytes(method.as_bytes()).expect("a valid method");
        cfg.route(&format!("{prefix}{path}"), web::method(method).to(handler));
    }
}

/// The response to a refused caller for a binding without an error shape of its own
/// (HTTP+JSON, the WebSocket upgrade): the 401, or the HTTP+JSON error (429,
/// `Retry-After`).
pub fn refusal_response(refused: Refused) -> HttpResponse {
    match refused {
        Refused::Unauthorized(response) => *response,
        Refused::Limited(error) => error_response(&error),
    }
}

/// The caller and the extensions it activated, or the response that refuses it (401 with
/// the challenge, or the error of an unsupported required extension), boxed as
/// [`caller`] boxes it.
pub(super) async fn admit(
    req: &HttpRequest,
    state: &AppState,
) -> Result<(a2ad_storage::Owner, Vec<String>), Box<HttpResponse>> {
    let owner = caller(req, &state.core).await.map_err(|refused| Box::new(refusal_response(refused)))?;
    if req.method() == actix_web::http::Method::POST {
        body::require_json(req).map_err(|e| Box::new(error_response(&e)))?;
    }
    let activated = activate_extensions(req, &state.core).map_err(|e| Box::new(error_response(&e)))?;
    Ok((owner, activated))
}

/// The body as JSON under `rest-body-limit`, `None` when it is empty or only white space
/// (see [`body::read_json`]).
pub(super) async fn read_json(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<Option<Value>, A2aError> {
    body::read_json(req, payload, state.rest_body_limit, state.body_pace).await
}

/// An error as `{"error": google.rpc.Status}` (AIP-193) with the table's HTTP status,
/// `Retry-After` when the error has one, reported and counted.
pub(super) fn error_response(error: &A2aError) -> HttpResponse {
    crate::core::report(error);
    let status = StatusCode::from_u16(error.code.info().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response =
        HttpResponse::build(status).content_type("application/json").body(error.to_rest_body().to_string());
    super::finish_error(error, &mut response);
    observe::failed(&mut response, error);
    response
}
