//! A streaming answer as transport-neutral frames.
//!
//! Each task event becomes one [`Frame`] whose `data` is the binding's envelope around
//! the `StreamResponse`: JSON-RPC wraps it in a response with the request's id, HTTP+JSON
//! sends it bare. A stream whose subscriber fell behind ends with an error frame that
//! names the last event it delivered. SSE writes a frame as an event (`id:` = `seq`,
//! `event:` = `event`); message transports (WebSocket, stdio, Redis) send `data` alone.

use a2ad_actors::messages::Subscription;
use a2ad_protocol::jsonrpc::error_body;
use a2ad_protocol::A2aError;
use futures_util::stream::{BoxStream, StreamExt};
use serde_json::Value;

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

/// A subscription and how to frame it.
pub struct RpcStream {
    subscription: Subscription,
    envelope: Envelope,
}

impl RpcStream {
    pub fn new(subscription: Subscription, envelope: Envelope) -> RpcStream {
        RpcStream { subscription, envelope }
    }

    /// The frames, ending when the task reaches a final state, the subscriber falls
    /// behind (an error frame), or the node stops.
    pub fn frames(self) -> BoxStream<'static, Frame> {
        let envelope = self.envelope;
        self.subscription
            .into_items()
            .map(move |item| match item {
                Ok(event) => Frame { seq: Some(event.seq), event: None, data: envelope.data(&event.json) },
                Err(error) => Frame { seq: None, event: Some("error"), data: envelope.error(&error) },
            })
            .boxed()
    }
}
