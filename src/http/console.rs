//! The web console at `/console`: one page (`console/index.html`), its scripts and its
//! style sheet, built into the binary (`include_str!`), with no external resource, so it
//! works offline. It is a client of the admin API ([`super::admin`]) and holds the
//! operator's token in memory (a reload signs out, unless the operator ticked "stay signed
//! in": then in the tab's sessionStorage, never a cookie), sending it as
//! `Authorization: Bearer`: no cookie, so no request of another site carries it.
//!
//! Every admin and console response forbids framing (`X-Frame-Options: DENY`,
//! `frame-ancestors 'none'`) and runs under a strict Content-Security-Policy: scripts and
//! styles from this node only, no inline script, no `eval`, connections to this node
//! only. The script builds every node from data with `textContent` (never `innerHTML`),
//! so a tenant's text, however it looks, is shown as text.

use super::AppState;
use actix_web::middleware::DefaultHeaders;
use actix_web::{web, HttpRequest, HttpResponse};

const INDEX: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/app.js");
/// The Overview's SVG charts, a file of its own (loaded before `app.js`, whose helpers it uses).
const CHARTS: &str = include_str!("console/charts.js");
/// The Task page's parts (timeline, durations, artifact sizes), a file of its own for the
/// same reason.
const TASK: &str = include_str!("console/task.js");
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

/// Mounts the console's files.
pub fn routes(cfg: &mut web::ServiceConfig) {
    const HTML: &str = "text/html; charset=utf-8";
    const JS: &str = "text/javascript; charset=utf-8";
    const CSS: &str = "text/css; charset=utf-8";
    cfg.service(
        web::scope("/console")
            .wrap(security_headers())
            .route("", web::get().to(|req: HttpRequest, state: web::Data<AppState>| asset(req, state, INDEX, HTML)))
            .route("/", web::get().to(|req: HttpRequest, state: web::Data<AppState>| asset(req, state, INDEX, HTML)))
            .route(
                "/app.js",
                web::get().to(|req: HttpRequest, state: web::Data<AppState>| asset(req, state, SCRIPT, JS)),
            )
            .route(
                "/charts.js",
                web::get().to(|req: HttpRequest, state: web::Data<AppState>| asset(req, state, CHARTS, JS)),
            )
            .route(
                "/task.js",
                web::get().to(|req: HttpRequest, state: web::Data<AppState>| asset(req, state, TASK, JS)),
            )
            .route(
                "/app.css",
                web::get().to(|req: HttpRequest, state: web::Data<AppState>| asset(req, state, STYLE, CSS)),
            ),
    );
}

/// A file of the console; 404 where the admin API does not answer (`admin.listen: unix`
/// and a TCP request), so the page is only where it can work.
async fn asset(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: &'static str,
    content_type: &'static str,
) -> HttpResponse {
    if state.admin.as_ref().is_none_or(|site| site.unix_only && req.peer_addr().is_some()) {
        return HttpResponse::NotFound().finish();
    }
    HttpResponse::Ok().content_type(content_type).body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_inline_script_or_style_and_loads_nothing_from_elsewhere() {
        assert!(INDEX.contains(r#"<script src="/console/charts.js" defer></script>"#));
        assert!(INDEX.contains(r#"<script src="/console/task.js" defer></script>"#));
        assert!(INDEX.contains(r#"<script src="/console/app.js" defer></script>"#));
        assert_eq!(INDEX.matches("<script").count(), 3, "three scripts, from files");
        assert!(!INDEX.contains("style=") && !INDEX.contains("<style"), "no inline style");
        for handler in ["onclick=", "onload=", "onsubmit=", "onerror=", "javascript:"] {
            for text in [INDEX, SCRIPT, CHARTS, TASK] {
                assert!(!text.contains(handler), "no inline handler: {handler}");
            }
        }
        // The SVG namespace is a name, never fetched.
        let charts = CHARTS.replace("'http://www.w3.org/2000/svg'", "");
        for text in [INDEX, SCRIPT, STYLE, TASK, charts.as_str()] {
            assert!(!text.contains("http://") && !text.contains("https://"), "nothing from elsewhere");
        }
        for script in [SCRIPT, CHARTS, TASK] {
            assert!(!script.contains("innerHTML") && !script.contains("eval("), "data is never parsed as HTML");
            assert!(!script.contains(".style"), "no inline style (the policy refuses it)");
        }
    }
}
