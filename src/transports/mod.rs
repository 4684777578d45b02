//! The extra transports of JSON-RPC, each on the [`crate::rpc`] seam: they read a request
//! their own way, say who the caller is, call [`crate::rpc::handle_bytes`] and write the
//! answer (one response, or one message per stream frame) their own way.
//!
//! * [`websocket`]: `/ws` on the HTTP server, one JSON-RPC message per text frame.
//! * [`unix`]: every HTTP route also on a Unix domain socket (`listen-unix`).
//! * [`stdio`]: `a2ad stdio`, newline-delimited JSON-RPC on stdin and stdout.
//! * [`redis_streams`]: requests read from a Redis stream by a consumer group.
//!
//! Each is off unless configured; README's "Transports" section is the user's view.

pub mod redis_streams;
pub mod stdio;
pub mod unix;
pub mod websocket;

use crate::core::Core;
use crate::metrics::Binding;
use crate::rpc::RpcAnswer;
use std::time::Instant;

/// The status a request is counted under: `ok` or its error's ErrorInfo reason.
fn status_of(answer: &RpcAnswer) -> &'static str {
    answer.error.as_ref().map_or("ok", |e| e.code.info().reason)
}

/// Counts one answered request in the metrics, as the HTTP middleware does for HTTP.
fn record(core: &Core, binding: Binding, method: Option<&str>, status: &'static str, started: Instant) {
    let method = method.map_or("unknown", crate::metrics::method_label);
    core.metrics.record(binding, method, status, started.elapsed());
}

/// Counts an answer that went out as it is.
fn record_answer(core: &Core, binding: Binding, answer: &RpcAnswer, started: Instant) {
    record(core, binding, answer.method.as_deref(), status_of(answer), started);
}
