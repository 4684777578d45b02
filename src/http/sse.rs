//! Task events as Server-Sent Events, shared by every HTTP binding.
//!
//! Each [`crate::rpc::Frame`] becomes an event: `id: <sequence>` (the task's own event
//! number, so a client resumes with `Last-Event-ID`), `event:` when the frame names one
//! (`error`), and the frame's data. An idle stream gets a `: keep-alive` comment every keep-alive period,
//! so that proxies keep it open. Responses carry `Cache-Control: no-cache` and
//! `X-Accel-Buffering: no` (nginx would otherwise buffer the stream).

use crate::rpc::RpcStream;
use a2ad_protocol::A2aError;
use actix_web::{HttpRequest, HttpResponse, Responder};
use actix_web_lab::sse::{Data, Event, Sse};
use futures_util::stream::{self, BoxStream, StreamExt};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The SSE response for a subscription, bounded in bytes and time for a client that does
/// not read it (see [`crate::connection`]).
pub fn sse_response(req: &HttpRequest, stream: RpcStream, state: &super::AppState) -> HttpResponse {
    // Counted as open until the body stream is dropped (client gone or stream ended).
    let open = state.core.metrics().open_stream();
    let stalled = CancellationToken::new();
    let frames = stream.frames_until(stalled.clone().cancelled_owned());
    let events = frames.map(move |frame| {
        let _open = &open;
        let mut data = Data::new(frame.data);
        if let Some(seq) = frame.seq {
            data.set_id(seq.to_string());
        }
        if let Some(name) = frame.event {
            data.set_event(name);
        }
        Event::Data(data)
    });
    let body = with_keep_alive(events.boxed(), state.stream_keep_alive).boxed();
    let body = crate::connection::watch(body, crate::connection::socket_of(req), state.stream_bounds, stalled);
    Sse::from_infallible_stream(body)
        .customize()
        .insert_header(("X-Accel-Buffering", "no"))
        .respond_to(req)
        .map_into_boxed_body()
}

/// Interleaves a comment after every `period` without an event.
pub(super) fn with_keep_alive(
    events: BoxStream<'static, Event>,
    period: Duration,
) -> impl futures_util::Stream<Item = Event> {
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
