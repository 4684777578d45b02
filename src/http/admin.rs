//! The admin API's HTTP edge (`/admin/v1/…`), thin over the node core's
//! [`a2ad_node::admin`]: each handler admits the operator, calls the core (blocking work
//! on the blocking pool) and writes JSON. Mounted only when `admin.tokens` is set, on
//! the listener `admin.listen` names. docs/admin.md describes every route.
//!
//! Credentials come only in `Authorization: Bearer`, never in a cookie, so a page of
//! another site cannot make a browser send them (no ambient authority: the first CSRF
//! defence). Every `POST` must also declare a JSON body (a form cannot) and, when the
//! browser says where it comes from (`Origin`, `Sec-Fetch-Site`), come from this
//! node's own pages.

use super::{body, console, sse, AppState};
use a2ad_actors::feed::FeedRead;
use a2ad_node::admin::dead::DeadSelection;
use a2ad_node::admin::tasks::TaskFilter;
use a2ad_node::admin::{self as core_admin, AdminError, Operator};
use a2ad_protocol::A2aError;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use actix_web_lab::sse::{Data, Event, Sse};
use futures_util::stream::{self, StreamExt};
use serde::Serialize;
use serde_json::Value;

/// What the admin edge shows that only the edge knows, and where it answers.
pub struct AdminSite {
    /// The card's interfaces: the status's bindings.
    pub bindings: Vec<Value>,
    /// The agents' settings as configured (environment values left out).
    pub agents: Value,
    /// Answer only on the Unix socket (`admin.listen: unix`).
    pub unix_only: bool,
    /// What the operator should know about how the node is exposed (the status's
    /// `warnings`, see [`a2ad_node::exposure`]).
    pub warnings: Vec<String>,
    /// Cancelled when the node stops: ends the live feeds, which never end by themselves.
    pub closing: tokio_util::sync::CancellationToken,
}

impl AdminSite {
    /// The site of a node with `config`, whose card is `card`, started with `warnings`.
    pub fn new(
        config: &crate::config::Config,
        card: &a2ad_protocol::AgentCard,
        warnings: Vec<String>,
        closing: tokio_util::sync::CancellationToken,
    ) -> AdminSite {
        let bindings = card.supported_interfaces.iter().filter_map(|i| serde_json::to_value(i).ok()).collect();
        let mut agents = serde_json::to_value(&config.agents).unwrap_or(Value::Null);
        for agent in agents.as_array_mut().into_iter().flatten() {
            if let Some(env) = agent.pointer_mut("/command/env").and_then(Value::as_object_mut) {
                env.values_mut().for_each(|v| *v = Value::String("<redacted>".into()));
            }
        }
        let unix_only = config.admin.listen == a2ad_node::admin::AdminListen::Unix;
        AdminSite { bindings, agents, unix_only, warnings, closing }
    }
}

/// Mounts the admin API and the console.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/admin/v1")
            .wrap(console::security_headers())
            .route("/me", web::get().to(me))
            .route("/status", web::get().to(status))
            .route("/series", web::get().to(series))
            .route("/tasks", web::get().to(list_tasks))
            .route("/tasks/facets", web::get().to(task_facets))
            .route("/tasks/{id}", web::get().to(get_task))
            .route("/tasks/{id}/cancel", web::post().to(cancel_task))
            .route("/tasks/{id}/artifacts/{artifact}/parts/{index}", web::get().to(artifact_part))
            .route("/push/dead", web::get().to(dead_letters))
            .route("/push/dead/retry", web::post().to(retry_dead))
            .route("/push/dead/purge", web::post().to(purge_dead))
            .route("/agents", web::get().to(agents))
            .route("/feed", web::get().to(feed)),
    );
    console::routes(cfg);
}

/// The operator of a request, or the response that refuses it: 404 off its listener
/// (as if the API were off), 403 from another site, 401 without a valid token.
async fn admit(req: &HttpRequest, state: &AppState) -> Result<Operator, HttpResponse> {
    let site = state.admin.as_ref().filter(|site| !(site.unix_only && req.peer_addr().is_some()));
    if site.is_none() {
        return Err(HttpResponse::NotFound().finish());
    }
    if req.method() != actix_web::http::Method::GET {
        if !same_origin(req) {
            return Err(error(AdminError::ForeignOrigin.into()));
        }
        body::require_json(req).map_err(error)?;
    }
    let authorization = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    state.core.operators().authenticate(authorization).map_err(|e| {
        tracing::info!(reason = %e, "admin request refused: not an operator");
        let mut response = error(AdminError::Unauthenticated.into());
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer realm=\"a2ad-admin\""));
        response
    })
}

/// Whether a state-changing request may come from where the browser says it does: no
/// `Origin` (not a browser, or a same-origin GET), or one whose host is this request's
/// `Host`; and no `Sec-Fetch-Site` other than `same-origin` or `none`.
fn same_origin(req: &HttpRequest) -> bool {
    let text = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    if text("sec-fetch-site").is_some_and(|site| site != "same-origin" && site != "none") {
        return false;
    }
    match (text("origin"), text("host")) {
        (None, _) => true,
        (Some(origin), Some(host)) => origin.split_once("://").is_some_and(|(_, rest)| rest == host),
        (Some(_), None) => false,
    }
}

/// An error in the HTTP+JSON binding's shape, with the table's status.
fn error(error: A2aError) -> HttpResponse {
    super::rest_shared::error_response(&error)
}

fn json(value: &impl Serialize) -> HttpResponse {
    match serde_json::to_vec(value) {
        Ok(body) => HttpResponse::Ok().content_type("application/json").body(body),
        Err(e) => error(A2aError::internal(format!("admin: encode: {e}"))),
    }
}

/// Runs blocking admin work (store and queue reads) on the blocking pool.
async fn blocking<T: Serialize + Send + 'static>(
    work: impl FnOnce() -> Result<T, AdminError> + Send + 'static,
) -> HttpResponse {
    match web::block(work).await {
        Ok(Ok(value)) => json(&value),
        Ok(Err(e)) => error(e.into()),
        Err(e) => error(A2aError::internal(format!("admin: blocking pool: {e}"))),
    }
}

/// `GET /admin/v1/me`: who the token is (`{"name": "alice", "role": "operator"}`).
async fn me(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match admit(&req, &state).await {
        Ok(operator) => json(&serde_json::json!({ "name": operator.name, "role": operator.role })),
        Err(refused) => refused,
    }
}

/// `GET /admin/v1/status`.
async fn status(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let bindings = state.admin.as_ref().map(|s| s.bindings.clone()).unwrap_or_default();
    let warnings = state.admin.as_ref().map(|s| s.warnings.clone()).unwrap_or_default();
    match core_admin::status::status(&state.core, bindings, warnings).await {
        Ok(status) => json(&status),
        Err(e) => error(e.into()),
    }
}

/// `GET /admin/v1/series?since=`: the samples of the last hour.
async fn series(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let Some(pairs) = query_pairs(&req) else { return bad_query() };
    match core_admin::series::series(&state.core, &pairs) {
        Ok(doc) => json(&doc),
        Err(e) => error(e.into()),
    }
}

/// The query's pairs; `None` for a malformed query string (see [`bad_query`]).
fn query_pairs(req: &HttpRequest) -> Option<Vec<(String, String)>> {
    web::Query::<Vec<(String, String)>>::from_query(req.query_string()).ok().map(web::Query::into_inner)
}

fn bad_query() -> HttpResponse {
    error(A2aError::invalid_field("query", "is not a valid query string"))
}

/// `GET /admin/v1/tasks?tenant=&state=&contextId=&agent=&since=&until=&pageSize=&pageToken=`.
async fn list_tasks(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let Some(pairs) = query_pairs(&req) else { return bad_query() };
    let filter = match TaskFilter::from_query(&pairs) {
        Ok(filter) => filter,
        Err(e) => return error(e.into()),
    };
    let core = std::sync::Arc::clone(&state.core);
    blocking(move || core_admin::tasks::list(&core, &filter)).await
}

/// `GET /admin/v1/tasks/facets`: the known tenants, agents and states (registered before
/// `/tasks/{id}`, which would otherwise take `facets` for a task id).
async fn task_facets(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let core = std::sync::Arc::clone(&state.core);
    blocking(move || core_admin::facets::facets(&core)).await
}

/// `GET /admin/v1/tasks/{id}`.
async fn get_task(req: HttpRequest, state: web::Data<AppState>, id: web::Path<String>) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let core = std::sync::Arc::clone(&state.core);
    blocking(move || core_admin::tasks::detail(&core, &id)).await
}

/// `GET /admin/v1/tasks/{id}/artifacts/{artifactId}/parts/{n}`: the part's content as
/// an attachment (never rendered by the browser: `nosniff`, the admin CSP).
async fn artifact_part(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String, usize)>,
) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let (task_id, artifact_id, index) = path.into_inner();
    let core = std::sync::Arc::clone(&state.core);
    let read = move || core_admin::download::artifact_part(&core, &task_id, &artifact_id, index);
    match web::block(read).await {
        // Always bytes to save, whatever media type the agent claimed (`text/html` would
        // otherwise be a page of this origin).
        Ok(Ok(download)) => HttpResponse::Ok()
            .content_type("application/octet-stream")
            .insert_header(("X-A2ad-Media-Type", media_type_header(&download.media_type)))
            .insert_header(("Content-Disposition", a2ad_node::artifacts::content_disposition(&download.filename)))
            .body(download.bytes),
        Ok(Err(e)) => error(e.into()),
        Err(e) => error(A2aError::internal(format!("admin: blocking pool: {e}"))),
    }
}

/// The part's media type as a header value (printable ASCII only).
fn media_type_header(media_type: &str) -> String {
    media_type.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').take(200).collect()
}

/// `POST /admin/v1/tasks/{id}/cancel` (operator role).
async fn cancel_task(req: HttpRequest, state: web::Data<AppState>, id: web::Path<String>) -> HttpResponse {
    let operator = match admit(&req, &state).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    match core_admin::tasks::cancel(&state.core, &operator, &id).await {
        Ok(task) => json(&task),
        Err(e) => error(e.into()),
    }
}

/// `GET /admin/v1/push/dead`.
async fn dead_letters(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let core = std::sync::Arc::clone(&state.core);
    blocking(move || core_admin::dead::list(&core).map(|dead| serde_json::json!({ "dead": dead }))).await
}

/// The body of retry and purge: `{"id": "..."}` or `{"all": true}`.
async fn selection(req: &HttpRequest, payload: web::Payload, state: &AppState) -> Result<DeadSelection, A2aError> {
    let value = super::rest_shared::read_json(req, payload, state).await?.unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| A2aError::invalid_params(format!("Invalid params: {e}")))
}

/// `POST /admin/v1/push/dead/retry` (operator role).
async fn retry_dead(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    act_on_dead(req, payload, state, core_admin::dead::retry).await
}

/// `POST /admin/v1/push/dead/purge` (operator role).
async fn purge_dead(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    act_on_dead(req, payload, state, core_admin::dead::purge).await
}

/// Retry or purge: the operator, the selection, then `action` on the blocking pool.
async fn act_on_dead(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    action: fn(&crate::core::Core, &Operator, &DeadSelection) -> Result<core_admin::dead::Moved, AdminError>,
) -> HttpResponse {
    let operator = match admit(&req, &state).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    let chosen = match selection(&req, payload, &state).await {
        Ok(chosen) => chosen,
        Err(e) => return error(e),
    };
    let core = std::sync::Arc::clone(&state.core);
    blocking(move || action(&core, &operator, &chosen)).await
}

/// `GET /admin/v1/agents`: the skills as the card shows them, their settings, and the
/// tasks each is running.
async fn agents(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(refused) = admit(&req, &state).await {
        return refused;
    }
    let settings = state.admin.as_ref().map(|s| s.agents.clone()).unwrap_or_default();
    let skills = serde_json::to_value(&state.card.card.skills).unwrap_or_default();
    let core = std::sync::Arc::clone(&state.core);
    blocking(move || {
        let running = core_admin::status::running_by_agent(&core)?;
        Ok(serde_json::json!({ "skills": skills, "settings": settings, "running": running }))
    })
    .await
}

/// `GET /admin/v1/feed`: every task change on the node as SSE (`event: task`, the data
/// [`core_admin::feed::item_json`]); `event: lagged` with `{"missed": n}` when the
/// watcher fell behind and should reload. Comments keep it open when idle.
async fn feed(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let operator = match admit(&req, &state).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    tracing::debug!(operator = %operator.name, "admin feed opened");
    let watch = state.core.runtime().feed.watch();
    let events = stream::unfold(watch, |mut watch| async move {
        let event = match watch.next().await {
            FeedRead::Item(item) => Data::new(core_admin::feed::item_json(&item)).event("task"),
            FeedRead::Lagged(missed) => Data::new(format!("{{\"missed\":{missed}}}")).event("lagged"),
            FeedRead::Closed => return None,
        };
        Some((Event::Data(event), watch))
    });
    let closing = state.admin.as_ref().map(|s| s.closing.clone()).unwrap_or_default();
    let events = events.take_until(closing.cancelled_owned());
    let body = sse::with_keep_alive(events.boxed(), state.stream_keep_alive);
    use actix_web::Responder;
    Sse::from_infallible_stream(body)
        .customize()
        .insert_header(("X-Accel-Buffering", "no"))
        .respond_to(&req)
        .map_into_boxed_body()
}
