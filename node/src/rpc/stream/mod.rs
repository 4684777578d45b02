//! A streaming answer as transport-neutral frames.
//!
//! Each task event becomes one [`Frame`] whose `data` is the binding's envelope around
//! the `StreamResponse`: JSON-RPC wraps it in a response with the request's id, HTTP+JSON
//! sends it bare. A stream whose subscriber fell behind ends with an error frame that
//! names the last event it delivered. SSE writes a frame as an event (`id:` = `seq`,
//! `event:` = `event`); message transports (WebSocket, stdio, Redis) send `data` alone.

mod v01_frames;

use a2ad_actors::messages::Subscription;
use a2ad_protocol::dialect::{v03, v03_rest};
use a2ad_protocol::jsonrpc::error_body;
use a2ad_protocol::{A2aError, StreamResponse};
use a2ad_storage::LoggedEvent;
use futures_util::stream::{BoxStream, StreamExt};
use serde_json::json;
use serde_json::Value;
use std::future::Future;

/// How one binding frames an event.
#[derive(Clone)]
pub enum Envelope {
    /// `{"jsonrpc":"2.0","id":<id>,"result":<StreamResponse>}`.
    JsonRpc(Value),
    /// The bare `StreamResponse` (HTTP+JSON); errors as `{"error": google.rpc.Status}`.
    Bare,
    /// A2A 0.3 JSON-RPC: `{"jsonrpc":"2.0","id":<id>,"result":<0.3 event>}`, the event
    /// unwrapped with its `kind`; errors with 0.3 codes.
    JsonRpcV03(Value),
    /// A2A 0.3 HTTP+JSON (`/v1/`): the 0.3 ProtoJSON `StreamResponse`.
    RestV03,
    /// The 0.1 `tasks/sendSubscribe`: `event: task` with the whole task in a JSON-RPC
    /// response, `event: error`, `event: heartbeat` when `window` ends (see
    /// [`v01_frames`]); `owner` fills the task's metadata.
    V01 { id: Value, window: std::time::Duration, owner: serde_json::Map<String, Value> },
}

impl Envelope {
    fn data(&self, event_json: &str) -> String {
        match self {
            Envelope::JsonRpc(id) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{event_json}}}"#),
            Envelope::Bare => event_json.to_owned(),
            Envelope::JsonRpcV03(id) => {
                let result = v03_event(event_json).map(|e| v03::stream_event_to_v03(&e));
                json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
            }
            Envelope::RestV03 => {
                let event = v03_event(event_json).map(|e| v03::stream_event_to_v03(&e));
                v03_rest::stream_event(event.unwrap_or(Value::Null)).to_string()
            }
            // Framed by `v01_frames::frames`, which follows the task.
            Envelope::V01 { .. } => event_json.to_owned(),
        }
    }

    fn error(&self, error: &A2aError) -> String {
        match self {
            Envelope::JsonRpc(id) => String::from_utf8(error_body(id, error)).unwrap_or_default(),
            Envelope::Bare => error.to_rest_body().to_string(),
            Envelope::RestV03 => v03_rest::error_to_proto(error.clone()).to_rest_body().to_string(),
            Envelope::JsonRpcV03(id) => v03::error_response(id, error).to_string(),
            Envelope::V01 { id, .. } => v01_frames::error_frame(id, error).data,
        }
    }
}

/// A stored 1.0 event, decoded for conversion (events are always valid: we wrote them).
fn v03_event(event_json: &str) -> Option<StreamResponse> {
    serde_json::from_str(event_json).ok()
}

/// One message of a streaming answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The task's event number, for resuming (`Last-Event-ID`); none on error frames.
    pub seq: Option<u64>,
    /// An SSE event name (`error`); none for plain events.
    pub event: Option<&'static str>,
    /// The serialised JSON document.
    pub data: String,
}

/// A subscription (or an error to send as a stream) and how to frame it.
pub struct RpcStream {
    source: Result<Subscription, A2aError>,
    envelope: Envelope,
}

impl RpcStream {
    /// The frames of `subscription`, each wrapped as `envelope` says (JSON-RPC, bare,
    /// 0.3 or 0.1), so every transport streams through the same code.
    pub fn new(subscription: Subscription, envelope: Envelope) -> RpcStream {
        RpcStream { source: Ok(subscription), envelope }
    }

    /// A stream of one error frame, for dialects that report a refused subscription
    /// inside the stream (0.1).
    pub fn failed(error: A2aError, envelope: Envelope) -> RpcStream {
        RpcStream { source: Err(error), envelope }
    }

    /// The frames until `stop` resolves: then the stream ends as one whose subscriber fell
    /// behind, with a SubscriberTooSlow error frame naming the last event it delivered (to
    /// resume with `Last-Event-ID`); see [`Subscription::into_items_until`]. The transport
    /// resolves `stop` when its client stops taking events (`a2ad::connection`).
    pub fn frames_until(self, stop: impl Future<Output = ()> + Send + 'static) -> BoxStream<'static, Frame> {
        let items = match self.source {
            Ok(subscription) => subscription.into_items_until(stop),
            Err(error) => futures_util::stream::once(async move { Err(error) }).boxed(),
        };
        frames_of(items, self.envelope)
    }

    /// The frames, ending when the task reaches a final state, the subscriber falls
    /// behind (an error frame), or the node stops.
    pub fn frames(self) -> BoxStream<'static, Frame> {
        self.frames_until(futures_util::future::pending())
    }
}

/// Each item of a subscription as a frame in `envelope`.
fn frames_of(
    items: BoxStream<'static, Result<LoggedEvent, A2aError>>,
    envelope: Envelope,
) -> BoxStream<'static, Frame> {
    if let Envelope::V01 { id, window, owner } = envelope {
        return v01_frames::frames(items, id, window, owner);
    }
    items
        .map(move |item| match item {
            Ok(event) => Frame { seq: Some(event.seq), event: None, data: envelope.data(&event.json) },
            Err(error) => Frame { seq: None, event: Some("error"), data: envelope.error(&error) },
        })
        .boxed()
}
