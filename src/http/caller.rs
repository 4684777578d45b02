//! Who is calling: credentials from the HTTP headers, checked by the core's
//! authenticator. A missing or bad credential is HTTP 401 `{"error":"Unauthorized"}` with
//! `WWW-Authenticate` (a refused bearer token's challenge says `error="invalid_token"`),
//! on every binding; the card and `/health` stay public. A client
//! whose failed attempts are used up (`auth.throttle`) gets RATE_LIMITED instead, which
//! each binding writes as its own error (429 and `Retry-After`).

use crate::auth::{ClientAddr, RequestCredentials, API_KEY_HEADER, PLATFORM_USER_HEADER};
use crate::core::Core;
use a2ad_protocol::A2aError;
use a2ad_storage::Owner;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

/// Why a caller was not let in.
pub enum Refused {
    /// The 401 response to send (boxed: it is large).
    Unauthorized(Box<HttpResponse>),
    /// Too many failed attempts, or password checks busy: RATE_LIMITED.
    Limited(A2aError),
}

/// The caller's owner identity, or why it was refused. Failed attempts are counted
/// against the connection's peer address (none on the Unix socket: one shared bucket).
pub async fn caller(req: &HttpRequest, core: &Core) -> Result<Owner, Refused> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let credentials = RequestCredentials {
        authorization: header(header::AUTHORIZATION.as_str()),
        api_key: header(API_KEY_HEADER),
        platform_user_id: header(PLATFORM_USER_HEADER),
    };
    let client = ClientAddr::peer(req.peer_addr());
    core.authenticate(&credentials, client).await.map_err(|e| {
        tracing::info!(reason = %e, "request refused: not authenticated");
        if let Some(limited) = e.rate_limited() {
            return Refused::Limited(limited);
        }
        Refused::Unauthorized(Box::new(
            HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, core.auth().www_authenticate_refusing(&credentials, &e)))
                .content_type("application/json")
                .body(r#"{"error":"Unauthorized"}"#),
        ))
    })
}
