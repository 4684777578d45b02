//! `GET /.well-known/agent-card.json`, cacheable: `Cache-Control: public, max-age=60`, a
//! strong `ETag`, `Last-Modified`, and 304 for a matching `If-None-Match` or a fresh
//! `If-Modified-Since` (`If-None-Match` wins when both are sent, per RFC 9110 §13.2.2).

use super::AppState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use std::time::SystemTime;

pub async fn public_card(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let doc = &state.card;
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
