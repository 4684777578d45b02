//! Who is calling: credentials from the HTTP headers, checked by the core's
//! authenticator. A missing or bad credential is HTTP 401 `{"error":"Unauthorized"}` with
//! `WWW-Authenticate`, on every binding; the card and `/health` stay public.

use crate::auth::{RequestCredentials, API_KEY_HEADER, PLATFORM_USER_HEADER};
use crate::core::Core;
use a2ad_storage::Owner;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

/// The caller's owner identity, or the 401 response to send (boxed: it is large).
pub fn caller(req: &HttpRequest, core: &Core) -> Result<Owner, Box<HttpResponse>> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let credentials = RequestCredentials {
        authorization: header(header::AUTHORIZATION.as_str()),
        api_key: header(API_KEY_HEADER),
        platform_user_id: header(PLATFORM_USER_HEADER),
    };
    core.authenticate(&credentials).map_err(|e| {
        tracing::info!(reason = %e, "request refused: not authenticated");
        Box::new(
            HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, core.auth().www_authenticate()))
                .content_type("application/json")
                .body(r#"{"error":"Unauthorized"}"#),
        )
    })
}
