//! The HTTP surface: routes, shared state, and helpers every handler uses.

mod body;
mod card;
mod jsonrpc;
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

/// Mounts every route.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::post().to(jsonrpc::handle))
        .route("/.well-known/agent-card.json", web::get().to(card::public_card))
        .route("/health", web::get().to(health));
}

/// Liveness: answers as long as the HTTP server runs.
async fn health() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(r#"{"status":"healthy"}"#)
}
