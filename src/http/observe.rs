//! What every HTTP request goes through: a span with a request id (echoed in
//! `X-Request-Id`), one log line when it is answered, and the request metrics.
//!
//! Handlers say what they served with [`served`] (binding and method) and how a request
//! failed with [`failed`] (the ErrorInfo reason); this middleware counts it once. Headers
//! and bodies are never logged: they may carry credentials.

use super::AppState;
use crate::metrics::Binding;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use std::time::Instant;
use tracing::Instrument;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The binding and A2A method a request was served as.
#[derive(Clone, Copy)]
struct Served(Binding, &'static str);

/// The ErrorInfo reason a request failed with.
#[derive(Clone, Copy)]
struct Failed(&'static str);

/// Marks `req` as an A2A request of `binding` for `method` (a name [`a2ad_protocol::Method`] knows, or
/// `unknown`).
pub fn served(req: &HttpRequest, binding: Binding, method: &'static str) {
    req.extensions_mut().insert(Served(binding, method));
}

/// Marks `response` as the failure `error`.
pub fn failed(response: &mut HttpResponse, error: &a2ad_protocol::A2aError) {
    response.extensions_mut().insert(Failed(error.code.info().reason));
}

/// An incoming request id we keep: a short token of safe characters.
fn safe_request_id(value: &HeaderValue) -> Option<String> {
    let value = value.to_str().ok()?;
    let safe = (1..=64).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    safe.then(|| value.to_owned())
}

pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(safe_request_id)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    // The route pattern, not the path: a path carries task ids.
    let route = req.match_pattern().unwrap_or_else(|| "unmatched".into());
    let span = tracing::info_span!("request", request_id = %id, http_method = %req.method(), route = %route);
    async move {
        let mut res = next.call(req).await?;
        let elapsed = started.elapsed();
        let status = res.status();
        let served = res.request().extensions().get::<Served>().copied();
        if let Some(Served(binding, method)) = served {
            let outcome = match res.response().extensions().get::<Failed>() {
                Some(Failed(reason)) => reason,
                None if status == actix_web::http::StatusCode::UNAUTHORIZED => "UNAUTHENTICATED",
                None if status.is_success() => "ok",
                None => "UNKNOWN",
            };
            if let Some(state) = res.request().app_data::<web::Data<AppState>>() {
                state.core.metrics().record(binding, method, outcome, elapsed);
            }
            tracing::info!(
                binding = binding.label(),
                method,
                outcome,
                status = status.as_u16(),
                elapsed_ms = elapsed.as_millis() as u64,
                "answered"
            );
        } else {
            tracing::debug!(status = status.as_u16(), elapsed_ms = elapsed.as_millis() as u64, "answered");
        }
        if let Ok(value) = HeaderValue::from_str(&id) {
            res.headers_mut().insert(REQUEST_ID, value);
        }
        Ok(res)
    }
    .instrument(span)
    .await
}

/// `GET /metrics`: the Prometheus exposition, behind `metrics-token` when set.
pub async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(token) = &state.metrics_token {
        let given = req.headers().get(actix_web::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        if !crate::metrics::token_matches(token.expose(), given) {
            return HttpResponse::Unauthorized()
                .insert_header((actix_web::http::header::WWW_AUTHENTICATE, "Bearer"))
                .finish();
        }
    }
    let core = &state.core;
    let gauges = a2ad_node::admin::status::gauges(core).await;
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(core.metrics().render(&gauges))
}
