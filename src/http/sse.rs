//! Task events as Server-Sent Events, shared by every HTTP binding.
//!
//! Each event carries `id: <sequence>` (the task's own event number, so a client resumes
//! with `Last-Event-ID`). The binding decides the `data:` ([`Envelope`]): JSON-RPC wraps
//! the `StreamResponse` in a response with the request's id; HTTP+JSON sends it bare.
//! A stream whose subscriber fell behind ends with an `event: error` that names the last
//! id it delivered. An idle stream gets a `: keep-alive` comment every keep-alive period,
//! so that proxies keep it open. Responses carry `Cache-Control: no-cache` and
//! `X-Accel-Buffering: no` (nginx would otherwise buffer the stream).

use a2ad_actors::messages::Subscription;
use a2ad_protocol::jsonrpc::error_body;
use a2ad_protocol::A2aError;
use actix_web::{HttpRequest, HttpResponse, Responder};
use actix_web_lab::sse::{Data, Event, Sse};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use std::time::Duration;

/// How one binding frames an event.
#[derive(Clone)]
pub enum Envelope {
    /// `{"jsonrpc":"2.0","id":<id>,"result":<StreamResponse>}`.
    JsonRpc(Value),
    /// The bare `StreamResponse` (HTTP+JSON); errors as `{"error": google.rpc.Status}`.
    Bare,
}

impl Envelope {
    fn data(&self, event_json: &str) -> String {
        match self {
            Envelope::JsonRpc(id) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{event_json}}}"#),
            Envelope::Bare => event_json.to_owned(),
        }
    }

    fn error(&self, error: &A2aError) -> String {
        match self {
            Envelope::JsonRpc(id) => String::from_utf8(error_body(id, error)).unwrap_or_default(),
            Envelope::Bare => error.to_rest_body().to_string(),
        }
    }
}

/// The SSE response for a subscription.
pub fn sse_response(req: &HttpRequest, sub: Subscription, envelope: Envelope, keep_alive: Duration) -> HttpResponse {
    // Counted as open until the body stream is dropped (client gone or stream ended).
    let open = req.app_data::<actix_web::web::Data<super::AppState>>().map(|s| s.core.metrics.open_stream());
    let events = sub.into_items().map(move |item| {
        let _open = &open;
        match item {
            Ok(event) => Event::Data(Data::new(envelope.data(&event.json)).id(event.seq.to_string())),
            Err(error) => Event::Data(Data::new(envelope.error(&error)).event("error")),
        }
    });
    let body = with_keep_alive(events.boxed(), keep_alive);
    Sse::from_infallible_stream(body)
        .customize()
        .insert_header(("X-Accel-Buffering", "no"))
        .respond_to(req)
        .map_into_boxed_body()
}

/// Interleaves a comment after every `period` without an event.
fn with_keep_alive(events: BoxStream<'static, Event>, period: Duration) -> impl futures_util::Stream<Item = Event> {
    stream::unfold(events, move |mut events| async move {
        match tokio::time::timeout(period, events.next()).await {
            Ok(Some(event)) => Some((event, events)),
            Ok(None) => None,
            Err(_) => Some((Event::Comment("keep-alive".into()), events)),
        }
    })
}

/// The `Last-Event-ID` header, if the client sent one.
pub fn last_event_id(req: &HttpRequest) -> Result<Option<u64>, A2aError> {
    let value = req.headers().get("Last-Event-ID").map(|v| v.to_str().unwrap_or("?"));
    crate::core::parse_last_event_id("Last-Event-ID", value)
}
