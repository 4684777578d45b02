//! `GET /.well-known/agent-card.json`, cacheable: `Cache-Control: public, max-age=60`, a
//! strong `ETag`, `Last-Modified`, and 304 for a matching `If-None-Match` or a fresh
//! `If-Modified-Since` (`If-None-Match` wins when both are sent, per RFC 9110 §13.2.2).
//!
//! On a wildcard `listen` (`0.0.0.0`, `[::]`) with no `public-url`, the card names the
//! address the request came to (the connection's local address, never a header the client
//! chose), one card per address ([`CardsByAddress`]): a client is never told to call
//! `http://0.0.0.0:…`, which no client can use.

use super::AppState;
use crate::card::CardDocument;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The most addresses whose cards are kept; a node has few. Past it a card is built per
/// request (and not kept), so no stream of requests can grow the map.
const MAX_ADDRESSES: usize = 64;

/// Builds the card for a base URL (`http://<address>`); `None` if it cannot be signed.
pub type CardBuilder = Box<dyn Fn(&str) -> Option<CardDocument> + Send + Sync>;

/// The cards of a node on a wildcard address: one per local address requests came to.
pub struct CardsByAddress {
    build: CardBuilder,
    cards: Mutex<HashMap<SocketAddr, Arc<CardDocument>>>,
}

impl CardsByAddress {
    pub fn new(build: CardBuilder) -> Self {
        CardsByAddress { build, cards: Mutex::new(HashMap::new()) }
    }

    /// The card for requests that came to `local`.
    pub fn for_address(&self, local: SocketAddr) -> Option<Arc<CardDocument>> {
        // As `crate::connection::base_url_of` names it: the extended cards follow suit.
        let local = SocketAddr::new(local.ip().to_canonical(), local.port());
        if let Some(card) = self.cards.lock().ok()?.get(&local) {
            return Some(Arc::clone(card));
        }
        let card = Arc::new((self.build)(&format!("http://{local}"))?);
        let mut cards = self.cards.lock().ok()?;
        if cards.len() < MAX_ADDRESSES {
            cards.insert(local, Arc::clone(&card));
        }
        Some(card)
    }
}

/// The card `req` gets: its address's on a wildcard listener, else the node's one card.
fn card_for(req: &HttpRequest, state: &AppState) -> Arc<CardDocument> {
    let by_address = state.cards_by_address.as_ref().zip(crate::connection::local_addr_of(req));
    by_address.and_then(|(cards, local)| cards.for_address(local)).unwrap_or_else(|| Arc::clone(&state.card))
}

pub async fn public_card(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    super::hint_old_client(&req, &state, None);
    let doc = &card_for(&req, &state);
    let not_modified = match req.headers().get(header::IF_NONE_MATCH) {
        Some(v) => etag_matches(v.to_str().unwrap_or(""), &doc.etag),
        None => req
            .headers()
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .is_some_and(|since: SystemTime| doc.last_modified <= since),
    };
    let mut response = if not_modified { HttpResponse::NotModified() } else { HttpResponse::Ok() };
    response
        .insert_header((header::CACHE_CONTROL, "public, max-age=60"))
        .insert_header((header::ETAG, doc.etag.clone()))
        .insert_header((header::LAST_MODIFIED, httpdate::fmt_http_date(doc.last_modified)));
    if not_modified {
        response.finish()
    } else {
        response.content_type("application/json").body(doc.body.clone())
    }
}

/// `If-None-Match` uses the weak comparison: `W/"x"` matches `"x"`; `*` matches anything.
fn etag_matches(header_value: &str, etag: &str) -> bool {
    header_value
        .split(',')
        .map(str::trim)
        .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
}

#[cfg(test)]
mod tests {
    use super::etag_matches;

    #[test]
    fn weak_comparison() {
        assert!(etag_matches("\"a\", W/\"b\"", "\"b\""));
        assert!(etag_matches("*", "\"b\""));
        assert!(!etag_matches("\"c\"", "\"b\""));
    }
}
