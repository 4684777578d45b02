//! The web console at `/console`: one page (`console/index.html`), its script and its
//! style sheet, built into the binary (`include_str!`), with no external resource, so it
//! works offline. It is a client of the admin API ([`super::admin`]) and holds the
//! operator's token in memory only (a reload signs out), sending it as
//! `Authorization: Bearer`: no cookie, so no request of another site carries it.
//!
//! Every admin and console response forbids framing (`X-Frame-Options: DENY`,
//! `frame-ancestors 'none'`) and runs under a strict Content-Security-Policy: scripts and
//! styles from this node only, no inline script, no `eval`, connections to this node
//! only. The script builds every node from data with `textContent` (never `innerHTML`),
//! so a tenant's text, however it looks, is shown as text.

use actix_web::middleware::DefaultHeaders;
use actix_web::{web, HttpResponse};

const INDEX: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/app.js");
const STYLE: &str = include_str!("console/app.css");

/// The policy of every admin and console response.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers every admin and console response carries.
pub fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .add(("X-Frame-Options", "DENY"))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Referrer-Policy", "no-referrer"))
        .add(("Cache-Control", "no-store"))
        .add(("Cross-Origin-Opener-Policy", "same-origin"))
        .add(("Cross-Origin-Resource-Policy", "same-origin"))
}

/// Mounts the console's three files.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/console")
            .wrap(security_headers())
            .route("", web::get().to(|| asset(INDEX, "text/html; charset=utf-8")))
            .route("/", web::get().to(|| asset(INDEX, "text/html; charset=utf-8")))
            .route("/app.js", web::get().to(|| asset(SCRIPT, "text/javascript; charset=utf-8")))
            .route("/app.css", web::get().to(|| asset(STYLE, "text/css; charset=utf-8"))),
    );
}

async fn asset(body: &'static str, content_type: &'static str) -> HttpResponse {
    HttpResponse::Ok().content_type(content_type).body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_inline_script_or_style_and_loads_nothing_from_elsewhere() {
        assert!(INDEX.contains(r#"<script src="/console/app.js" defer></script>"#));
        assert_eq!(INDEX.matches("<script").count(), 1, "one script, from a file");
        assert!(!INDEX.contains("style=") && !INDEX.contains("<style"), "no inline style");
        for handler in ["onclick=", "onload=", "onsubmit=", "onerror=", "javascript:"] {
            assert!(!INDEX.contains(handler) && !SCRIPT.contains(handler), "no inline handler: {handler}");
        }
        for text in [INDEX, SCRIPT, STYLE] {
            assert!(!text.contains("http://") && !text.contains("https://"), "nothing from elsewhere");
        }
        assert!(!SCRIPT.contains("innerHTML") && !SCRIPT.contains("eval("), "data is never parsed as HTML");
    }
}
