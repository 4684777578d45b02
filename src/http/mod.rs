//! The HTTP surface: routes, shared state, and helpers every handler uses.

pub mod admin;
mod artifacts;
pub mod body;
mod caller;
mod card;
pub mod console;
mod jsonrpc;
pub mod observe;
mod rest;
mod rest_shared;
mod rest_v01;
mod rest_v03;
mod sse;

/// For the WebSocket upgrade (`crate::transports::websocket`), which is HTTP until it is not.
pub use caller::{caller, Refused};
pub use card::{CardBuilder, CardsByAddress};
pub(crate) use jsonrpc::request_meta;
pub use rest_shared::refusal_response;

use crate::card::CardDocument;
use crate::core::Core;
use actix_web::{web, HttpResponse};
use std::sync::Arc;

/// What every HTTP handler can reach.
pub struct AppState {
    pub core: Arc<Core>,
    pub card: Arc<CardDocument>,
    /// On a wildcard `listen` with no `public-url`: the card per address a request came to.
    pub cards_by_address: Option<Arc<card::CardsByAddress>>,
    /// With `card.compat-v03` off: the clients told that 0.3 needs it (see
    /// [`a2ad_node::old_clients`]).
    pub old_clients: Option<Arc<a2ad_node::old_clients::OldClientHints>>,
    /// The largest JSON-RPC body.
    pub body_limit: usize,
    /// The largest HTTP+JSON body.
    pub rest_body_limit: usize,
    /// How fast a request body must arrive.
    pub body_pace: body::BodyPace,
    /// How streams that their client does not read are dropped.
    pub stream_bounds: crate::connection::StreamBounds,
    /// A comment goes out on a stream idle for this long.
    pub stream_keep_alive: std::time::Duration,
    /// The bearer token `GET /metrics` asks for, if any.
    pub metrics_token: Option<crate::auth::Redacted<String>>,
    /// The admin API's site, when `admin.tokens` is set (see [`admin`]).
    pub admin: Option<Arc<admin::AdminSite>>,
}

/// Where the HTTP+JSON binding is mounted unless configured otherwise (`rest-prefix`).
pub use crate::config::DEFAULT_REST_PREFIX;

/// Mounts every route: JSON-RPC on `POST /`, HTTP+JSON and the artifact files under
/// `rest_prefix`, and the admin API and the console when `with_admin` (they are on, on
/// this listener).
pub fn routes(cfg: &mut web::ServiceConfig, rest_prefix: &str, with_admin: bool) {
    if with_admin {
        // First: with an empty prefix, `/{tenant}/…` would match `/admin/…`.
        admin::routes(cfg);
    }
    cfg.route("/", web::post().to(jsonrpc::handle))
        .route("/.well-known/agent-card.json", web::get().to(card::public_card))
        .route("/health", web::get().to(health))
        .route("/ready", web::get().to(ready))
        .route("/metrics", web::get().to(observe::metrics));
    // Before the 1.0 routes: with an empty prefix, `/v1/tasks/…` would match `/{tenant}/…`.
    rest_v03::routes(cfg);
    rest_v01::routes(cfg);
    artifacts::routes(cfg, rest_prefix);
    rest::routes(cfg, rest_prefix);
}

/// The `A2A-Version` of an HTTP request: the header, else the query parameter.
fn requested_version(req: &actix_web::HttpRequest) -> Option<String> {
    let header = req.headers().get("A2A-Version").map(|v| v.to_str().unwrap_or("?").to_owned());
    header.or_else(|| crate::core::version::query_version(req.query_string()))
}

/// Tells the operator, once per client address, that a request which looks like 0.3
/// (`v03_method`: the JSON-RPC method was a 0.3 one; or no `A2A-Version`) needs
/// `card.compat-v03` (only while it is off).
pub(crate) fn hint_old_client(req: &actix_web::HttpRequest, state: &AppState, v03_method: Option<&str>) {
    let Some(hints) = &state.old_clients else { return };
    let Some(client) = req.peer_addr().map(|a| a.ip()) else { return };
    let why = match v03_method {
        Some(method) => format!("the 0.3 method `{}`", crate::client::render::for_terminal(method, false)),
        None if req.headers().get("A2A-Version").is_none() => "no A2A-Version header".to_owned(),
        None => return,
    };
    hints.saw(client, &why);
}

/// Checks the `A2A-Version` of an HTTP request.
fn check_version(req: &actix_web::HttpRequest) -> Result<(), a2ad_protocol::A2aError> {
    crate::core::version::check(requested_version(req).as_deref())
}

/// The extensions a request asks for (`A2A-Extensions`, or 0.3's `X-A2A-Extensions`).
fn requested_extensions(req: &actix_web::HttpRequest) -> Vec<String> {
    let values = ["A2A-Extensions", "X-A2A-Extensions"]
        .iter()
        .flat_map(|name| req.headers().get_all(*name))
        .filter_map(|v| v.to_str().ok());
    crate::core::extensions::parse(values)
}

/// The extensions a request activates, checked against the node's; the value to echo, or
/// the error.
fn activate_extensions(
    req: &actix_web::HttpRequest,
    core: &crate::core::Core,
) -> Result<Vec<String>, a2ad_protocol::A2aError> {
    core.activate_extensions(&requested_extensions(req))
}

/// Echoes the activated extensions on a response.
fn echo_extensions(activated: &[String], response: &mut HttpResponse) {
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&activated.join(", ")) {
        if !activated.is_empty() {
            response.headers_mut().insert(actix_web::http::header::HeaderName::from_static("a2a-extensions"), value);
        }
    }
}

/// What every HTTP error response gets besides its body: `Retry-After` on a 429 (rate
/// and concurrency limits) or 503 (busy, store unavailable), and `Connection: close`
/// after a body that did not arrive in time (408): the rest of it is not waited for.
fn finish_error(error: &a2ad_protocol::A2aError, response: &mut HttpResponse) {
    use actix_web::http::StatusCode;
    let status = response.status();
    if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
        if let Some(value) = error.retry_after().and_then(|s| actix_web::http::header::HeaderValue::from_str(s).ok()) {
            response.headers_mut().insert(actix_web::http::header::RETRY_AFTER, value);
        }
    }
    if status == StatusCode::REQUEST_TIMEOUT {
        response.head_mut().set_connection_type(actix_web::http::ConnectionType::Close);
    }
}

/// Readiness: 200 while the node takes work; 503 with the reason (and `Retry-After`)
/// while it drains or its store refuses writes. `/health` stays liveness.
async fn ready(state: web::Data<AppState>) -> HttpResponse {
    match state.core.ready() {
        Ok(()) => HttpResponse::Ok().content_type("application/json").body(r#"{"status":"ready"}"#),
        Err(reason) => HttpResponse::ServiceUnavailable()
            .insert_header((actix_web::http::header::RETRY_AFTER, "1"))
            .content_type("application/json")
            .body(format!(r#"{{"status":"unready","reason":"{reason}"}}"#)),
    }
}

/// Liveness: answers as long as the HTTP server runs.
async fn health() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(r#"{"status":"healthy"}"#)
}
