//! The 0.1 REST routes of the JSON-RPC gateways: `POST /api/v1/transactions` (the
//! `tasks/send` params as the body), `GET /api/v1/transactions/{id}` (`tasks/get`) and
//! `POST /api/v1/transactions/{id}/cancel` (`tasks/cancel`), answered with the 0.1
//! results of [`crate::rpc::v01::execute`]. Errors carry the 0.1 code in `{"error":
//! {"code", "message"}}` with a matching status: 401 (-32000), 404 (-32001), 429 with
//! `Retry-After` (-32002), 403 (-32003), 400 for bad params.

use super::caller::caller;
use super::{body, observe, AppState};
use crate::metrics::Binding;
use crate::rpc::v01::{execute, V01Reply};
use a2ad_protocol::dialect::v01;
use a2ad_protocol::A2aError;
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// Mounts the `/api/v1/transactions` routes.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/api/v1/transactions", web::post().to(send))
        .route("/api/v1/transactions/{id}", web::get().to(get))
        .route("/api/v1/transactions/{id}/cancel", web::post().to(cancel));
}

async fn send(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    let params = match read_body(&req, payload, &state).await {
        Ok(params) => params,
        Err(e) => return error_response(&e),
    };
    run(&req, &state, "tasks/send", params).await
}

async fn get(req: HttpRequest, state: web::Data<AppState>, id: web::Path<String>) -> HttpResponse {
    run(&req, &state, "tasks/get", json!({"id": id.into_inner()})).await
}

async fn cancel(req: HttpRequest, state: web::Data<AppState>, id: web::Path<String>) -> HttpResponse {
    if let Err(e) = body::require_json(&req) {
        return error_response(&e);
    }
    run(&req, &state, "tasks/cancel", json!({"id": id.into_inner()})).await
}

async fn run(req: &HttpRequest, state: &AppState, method: &'static str, params: Value) -> HttpResponse {
    observe::served(req, Binding::Rest, crate::metrics::method_label(method));
    let owner = match caller(req, &state.core).await {
        Ok(owner) => owner,
        Err(super::Refused::Unauthorized(plain)) => return unauthenticated(&plain),
        Err(super::Refused::Limited(error)) => return error_response(&error),
    };
    match execute(&state.core, &owner, method, params).await {
        Ok(V01Reply::Result(result)) => HttpResponse::Ok().content_type("application/json").body(result.to_string()),
        Ok(V01Reply::Stream(_)) => error_response(&A2aError::internal(format!("{method} opened a stream"))),
        Err(e) => error_response(&e),
    }
}

/// The body as JSON; an empty body is `{}`.
async fn read_body(req: &HttpRequest, payload: web::Payload, state: &AppState) -> Result<Value, A2aError> {
    let body = body::read_json(req, payload, state.rest_body_limit, state.body_pace).await?;
    Ok(body.unwrap_or_else(|| json!({})))
}

/// 401 with the challenge, and the 0.1 authentication code in the body.
fn unauthenticated(plain: &HttpResponse) -> HttpResponse {
    let body = json!({"error": {"code": v01::AUTHENTICATION_CODE, "message": "Authentication required"}});
    let mut response = HttpResponse::Unauthorized().content_type("application/json").body(body.to_string());
    if let Some(challenge) = plain.headers().get(header::WWW_AUTHENTICATE) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge.clone());
    }
    response
}

fn error_response(error: &A2aError) -> HttpResponse {
    crate::core::report(error);
    let status = StatusCode::from_u16(v01::http_status(error.code)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"error": v01::error_object(error, false)});
    let mut response = HttpResponse::build(status).content_type("application/json").body(body.to_string());
    super::finish_error(error, &mut response);
    observe::failed(&mut response, error);
    response
}
