//! The extra transports of JSON-RPC, each on the [`crate::rpc`] seam: they read a request
//! their own way, say who the caller is, call [`crate::rpc::handle_bytes`] and write the
//! answer (one response, or one message per stream frame) their own way.
//!
//! * [`websocket`]: `/ws` on the HTTP server, one JSON-RPC message per text frame.
//! * [`unix`]: every HTTP route also on a Unix domain socket (`listen-unix`).
//! * [`stdio`]: `a2ad stdio`, newline-delimited JSON-RPC on stdin and stdout.
//! * [`redis_streams`]: requests read from a Redis stream by a consumer group.
//!
//! Each is off unless configured; docs/bindings.md, "Transports", is the user's view.

pub mod redis_streams;
pub mod stdio;
pub mod unix;
pub mod websocket;

use crate::core::Core;
use crate::metrics::Binding;
use crate::rpc::{Frame, RpcAnswer};
use std::time::Instant;

/// The status a request is counted under: `ok` or its error's ErrorInfo reason.
fn status_of(answer: &RpcAnswer) -> &'static str {
    answer.error.as_ref().map_or("ok", |e| e.code.info().reason)
}

/// Counts one answered request in the metrics, as the HTTP middleware does for HTTP.
fn record(core: &Core, binding: Binding, method: Option<&str>, status: &'static str, started: Instant) {
    let method = method.map_or("unknown", crate::metrics::method_label);
    core.metrics().record(binding, method, status, started.elapsed());
}

/// Counts an answer that went out as it is.
fn record_answer(core: &Core, binding: Binding, answer: &RpcAnswer, started: Instant) {
    record(core, binding, answer.method.as_deref(), status_of(answer), started);
}

/// A stream frame as one message of a message transport (WebSocket, stdio). These have no
/// SSE `id:` line, so a frame with an event number carries it as a top-level `eventId`
/// member of its JSON-RPC response: the value to send back as `params.lastEventId` of
/// `SubscribeToTask` to resume with no gap and no duplicate. Frames without one (errors)
/// go out unchanged.
fn message_text(frame: Frame) -> String {
    match (frame.seq, frame.data.strip_prefix('{')) {
        (Some(seq), Some(rest)) if rest.trim_start().starts_with('"') => format!(r#"{{"eventId":{seq},{rest}"#),
        _ => frame.data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_with_an_event_number_carries_it_as_event_id() {
        let frame = |seq, data: &str| Frame { seq, event: None, data: data.to_owned() };
        let text = message_text(frame(Some(7), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        let decoded: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((decoded["eventId"].clone(), decoded["id"].clone()), (7.into(), 1.into()));
        assert_eq!(message_text(frame(None, r#"{"error":1}"#)), r#"{"error":1}"#);
        assert_eq!(message_text(frame(Some(1), "{}")), "{}", "nothing to insert into");
    }
}
