//! The HTTP surface: routes, shared state, and helpers every handler uses.

mod body;
mod card;
mod jsonrpc;
mod rest;
mod sse;
mod version;

use crate::card::CardDocument;
use crate::core::Core;
use actix_web::{web, HttpResponse};
use std::sync::Arc;

/// What every HTTP handler can reach.
pub struct AppState {
    pub core: Arc<Core>,
    pub card: Arc<CardDocument>,
    pub body_limit: usize,
    /// A comment goes out on a stream idle for this long.
    pub stream_keep_alive: std::time::Duration,
}

/// Where the HTTP+JSON binding is mounted unless configured otherwise.
pub const DEFAULT_REST_PREFIX: &str = "/a2a";

/// Mounts every route: JSON-RPC on `POST /`, HTTP+JSON under `rest_prefix`.
pub fn routes(cfg: &mut web::ServiceConfig, rest_prefix: &str) {
    cfg.route("/", web::post().to(jsonrpc::handle))
        .route("/.well-known/agent-card.json", web::get().to(card::public_card))
        .route("/health", web::get().to(health));
    rest::routes(cfg, rest_prefix);
}

/// Liveness: answers as long as the HTTP server runs.
async fn health() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(r#"{"status":"healthy"}"#)
}
