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
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::LoggedEvent;
use actix_web::{HttpRequest, HttpResponse, Responder};
use actix_web_lab::sse::{Data, Event, Sse};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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
    let last_sent = Arc::new(AtomicU64::new(0));
    let live: BoxStream<'static, LoggedEvent> = match sub.live {
        Some(rx) => stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) }).boxed(),
        None => stream::empty().boxed(),
    };
    let data_envelope = envelope.clone();
    let sent = Arc::clone(&last_sent);
    let events = stream::iter(sub.initial).chain(live).map(move |event| {
        sent.store(event.seq, Ordering::Relaxed);
        Event::Data(Data::new(data_envelope.data(&event.json)).id(event.seq.to_string()))
    });
    let overflowed = sub.overflowed;
    // Counted as open until the body stream is dropped (client gone or stream ended).
    let guard = req.app_data::<actix_web::web::Data<super::AppState>>().map(|s| s.core.metrics.open_stream());
    let tail = stream::once(async move {
        let _open = guard;
        overflowed.load(Ordering::Acquire).then(|| {
            let last = last_sent.load(Ordering::Relaxed);
            let error = A2aError::of(ErrorCode::SubscriberTooSlow).with_meta("lastEventId", last.to_string());
            Event::Data(Data::new(envelope.error(&error)).event("error"))
        })
    })
    .filter_map(|e| async move { e });
    let body = with_keep_alive(events.chain(tail).boxed(), keep_alive);
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
    match req.headers().get("Last-Event-ID") {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| A2aError::invalid_field("Last-Event-ID", "must be a non-negative integer (an event id)")),
    }
}
