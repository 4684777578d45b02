//! JSON-RPC 2.0 over any transport: one request value in, one answer out.
//!
//! Every transport that carries JSON-RPC (HTTP `POST /`, and the extra transports: a
//! WebSocket frame, a stdio line, a Redis Streams entry) reads its bytes, authenticates
//! the caller its own way, and calls [`handle`] with what it carried besides the body
//! ([`RpcMeta`]: the version and extension headers, a `Last-Event-ID`). The answer is one
//! JSON-RPC response object, or a stream of [`Frame`]s that the transport writes its own
//! way (SSE events, WebSocket frames, lines). No transport decides anything else.
//!
//! The method name picks the dialect, so every transport serves all of them: the 0.1
//! names (and `tasks/get` / `tasks/cancel` for 0.1 callers) go to [`v01`], the other
//! slash-named 0.3 methods to [`v03`], and the 1.0 names through [`Call::from_method`].

pub mod stream;
pub mod v01;
pub mod v03;

use crate::core::{Call, Core, Reply};
use a2ad_protocol::jsonrpc::{error_body, parse_request, success_body, JsonRpcRequest};
use a2ad_protocol::strict_json::decode_request_body;
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::Owner;
use serde_json::Value;
pub use stream::{Envelope, Frame, RpcStream};

/// What a transport carried besides the JSON-RPC body.
#[derive(Debug, Clone, Default)]
pub struct RpcMeta {
    /// The `A2A-Version` the client asked for, if it said.
    pub version: Option<String>,
    /// The extension URIs the client activated (`A2A-Extensions`).
    pub extensions: Vec<String>,
    /// The event to resume after (`Last-Event-ID`, as sent), for streaming methods.
    pub last_event_id: Option<String>,
    /// The base URL the request came to (`http://<local address>`), set by a binding on a
    /// wildcard listener: the extended card names it ([`crate::core::Call::came_to`]).
    pub came_to: Option<String>,
}

/// How a request was answered.
pub enum RpcOutcome {
    /// A complete JSON-RPC response object (success or error), serialised.
    Single(Vec<u8>),
    /// A stream of responses, one per task event.
    Stream(RpcStream),
    /// Nothing: the request was a notification (no `id`), which JSON-RPC 2.0 says is
    /// never answered, not even with an error. HTTP answers 204; the message transports
    /// write nothing.
    Silent,
}

/// A request's answer, with what the transport may report or echo.
pub struct RpcAnswer {
    /// What goes back to the caller: one response, or a stream.
    pub outcome: RpcOutcome,
    /// The method, when the envelope named one (for metrics and logs).
    pub method: Option<String>,
    /// The error, when the answer is one (for the transport's status and metrics).
    pub error: Option<A2aError>,
    /// The extensions that were activated, to echo.
    pub activated: Vec<String>,
}

impl RpcAnswer {
    fn error(id: &Value, method: Option<String>, error: A2aError) -> RpcAnswer {
        crate::core::report(&error);
        RpcAnswer { outcome: RpcOutcome::Single(error_body(id, &error)), method, error: Some(error), activated: vec![] }
    }
}

/// Parses raw bytes as one JSON-RPC request and answers it. A body that is not JSON is
/// -32700 (Parse error); one that names a key twice is -32600, naming it
/// ([`decode_request_body`]).
pub async fn handle_bytes(core: &Core, owner: &Owner, bytes: &[u8], meta: &RpcMeta) -> RpcAnswer {
    match decode_request_body(bytes) {
        Ok(decoded) => handle(core, owner, decoded, meta).await,
        Err(e) => RpcAnswer::error(&Value::Null, None, e),
    }
}

/// The answer to a request whose in-band credential was refused (the message transports;
/// HTTP refuses before reading the body). It speaks the request's dialect: -32000 for a
/// 0.1 method, the 0.3 error shape for a 0.3 method, else the 1.0 UNAUTHENTICATED error,
/// and carries the request's id when the bytes are a JSON object that has one.
pub fn unauthenticated(bytes: &[u8], version: Option<&str>) -> RpcAnswer {
    let decoded: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let id = decoded.get("id").cloned().unwrap_or(Value::Null);
    let method = decoded.get("method").and_then(Value::as_str).map(str::to_owned);
    let error = A2aError::new(ErrorCode::Unauthenticated, "Unauthenticated: the request's credentials were refused");
    let body = match method.as_deref() {
        Some(m) if v01::says_v01(m, version) => a2ad_protocol::dialect::v01::error_response(&id, &error, false),
        Some(m) if v03::is_method(m) => a2ad_protocol::dialect::v03::error_response(&id, &error),
        _ => return RpcAnswer::error(&id, method, error),
    };
    crate::core::report(&error);
    let outcome = RpcOutcome::Single(body.to_string().into_bytes());
    RpcAnswer { outcome, method, error: Some(error), activated: vec![] }
}

/// Answers one decoded JSON-RPC request. Checks, in order: the envelope (-32600, answered
/// with `id: null` when the id could not be read, notification or not), the dialect (0.1
/// and 0.3 requests are answered by [`v01`] and [`v03`]), then for 1.0 the `A2A-Version`
/// (-32009), the extensions (-32008), the method (-32601) and its params (-32602, naming
/// the field). A notification (a valid envelope without `id`) is run like any request,
/// but its answer, result or error, is [`RpcOutcome::Silent`]: a stream it opened is
/// dropped (the turn goes on).
pub async fn handle(core: &Core, owner: &Owner, decoded: Value, meta: &RpcMeta) -> RpcAnswer {
    let rpc = match parse_request(decoded) {
        Ok(rpc) => rpc,
        Err((id, e)) => return RpcAnswer::error(&id, None, e),
    };
    let notification = rpc.id.is_none();
    let answer = answer(core, owner, rpc, meta).await;
    match notification {
        true => RpcAnswer { outcome: RpcOutcome::Silent, ..answer },
        false => answer,
    }
}

/// Answers a request whose envelope is valid, in its dialect.
async fn answer(core: &Core, owner: &Owner, rpc: JsonRpcRequest, meta: &RpcMeta) -> RpcAnswer {
    if v01::owns(core, owner, &rpc.method, &rpc.params, meta.version.as_deref()).await {
        return v01::handle(core, owner, rpc, meta).await;
    }
    if v03::is_method(&rpc.method) {
        return v03::handle(core, owner, rpc, meta).await;
    }
    let id = rpc.response_id();
    let method = Some(rpc.method.clone());
    if let Err(e) = crate::core::version::check(meta.version.as_deref()) {
        return RpcAnswer::error(&id, method, e);
    }
    let activated = match core.activate_extensions(&meta.extensions) {
        Ok(activated) => activated,
        Err(e) => return RpcAnswer::error(&id, method, e),
    };
    let last_event_id = crate::core::parse_last_event_id("Last-Event-ID", meta.last_event_id.as_deref());
    let reply = match last_event_id.and_then(|last| Call::from_method(&rpc.method, rpc.params, last)) {
        Ok(call) => core.execute(owner, call.came_to(meta.came_to.clone())).await,
        Err(e) => Err(e),
    };
    let outcome = match reply {
        Ok(Reply::Result(body)) => RpcOutcome::Single(success_body(&id, body)),
        Ok(Reply::Stream(subscription)) => RpcOutcome::Stream(RpcStream::new(subscription, Envelope::JsonRpc(id))),
        Err(e) => return RpcAnswer { activated, ..RpcAnswer::error(&id, method, e) },
    };
    RpcAnswer { outcome, method, error: None, activated }
}
