//! JSON-RPC over WebSocket at `GET /ws` (config `websocket: true`).
//!
//! The upgrade request is authenticated like any HTTP request (a bad credential is 401 and
//! no upgrade); its `A2A-Version` / `A2A-Extensions` headers (or `?A2A-Version=`) apply to
//! every message on the socket. Then each text (or binary) message is one JSON-RPC
//! request, handled concurrently with the others: answers carry their request's id, and a
//! streaming method sends each frame as one text message, the JSON-RPC response with the
//! event's number as a top-level `eventId` (to resume with `params.lastEventId`).
//!
//! Outgoing messages go through one bounded queue (`websocket-queue`). An answer waits for
//! room at most `websocket-send-timeout`; a client that does not read for that long is
//! closed with 1008 and the reason `SUBSCRIBER_TOO_SLOW`, instead of the node buffering
//! without end (a burst of stream events is fine: it only waits). Requests in flight on
//! one socket are bounded by the queue's size: past it, the socket is not read until one
//! finishes (TCP backpressure). The node pings every `stream-keep-alive` and closes a
//! client silent for three periods; a client's ping is answered with a pong, its close is
//! echoed, and a stopping node closes every socket with 1001.

use crate::core::Core;
use crate::http::AppState;
use crate::metrics::Binding;
use crate::rpc::{self, RpcMeta, RpcOutcome};
use a2ad_protocol::ErrorCode;
use a2ad_storage::Owner;
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use actix_ws::{AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Session};
use futures_util::StreamExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The path the transport is served at.
pub const PATH: &str = "/ws";

/// The custom `protocolBinding` the card names this transport with (A2A 1.0: a custom
/// binding SHOULD be named by a URI; the standard ones are `JSONRPC`, `GRPC`, `HTTP+JSON`).
pub const BINDING_URI: &str = "urn:a2ad:binding:websocket:v1";

/// How long a closing socket waits for its close frame to be taken by the client.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(30);

/// How every socket of the node behaves.
#[derive(Clone)]
pub struct WsSettings {
    /// Outgoing messages a client may fall behind, and requests in flight per socket.
    pub queue: usize,
    /// How long an answer waits for room in a full queue before the client is closed.
    pub send_timeout: Duration,
    /// The largest incoming message (`body-limit`).
    pub max_message: usize,
    /// A ping goes out this often; a client silent for three periods is closed.
    pub ping_interval: Duration,
    /// Cancelled when the node stops: every socket is closed ("going away").
    pub shutdown: CancellationToken,
}

/// The card's URL of the transport: the public URL with `ws`/`wss` and [`PATH`].
pub fn public_url(public_url: &str) -> String {
    let base = match public_url.strip_prefix("https://") {
        Some(rest) => format!("wss://{rest}"),
        None => format!("ws://{}", public_url.strip_prefix("http://").unwrap_or(public_url)),
    };
    format!("{base}{PATH}")
}

/// Mounts `GET /ws`.
pub fn routes(cfg: &mut web::ServiceConfig, settings: WsSettings) {
    cfg.app_data(web::Data::new(settings)).route(PATH, web::get().to(upgrade));
}

/// What the writer sends.
enum Outgoing {
    Text(String),
    Pong(Bytes),
}

/// One socket's shared state: the outgoing queue, the close signal and its reason.
struct Conn {
    core: Arc<Core>,
    outbox: mpsc::Sender<Outgoing>,
    send_timeout: Duration,
    closing: CancellationToken,
    reason: Mutex<Option<CloseReason>>,
    last_heard: Mutex<Instant>,
}

/// Why a message could not be queued.
enum NotQueued {
    /// The client does not read: the socket is being closed.
    TooSlow,
    /// The socket is closed.
    Closed,
}

impl Conn {
    /// Closes the socket with `reason`, unless a reason was already given.
    fn close(&self, reason: CloseReason) {
        self.reason.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(reason);
        self.closing.cancel();
    }

    /// Queues a message, waiting at most `send_timeout` for room; a client that stays that
    /// far behind is closed.
    async fn push(&self, message: Outgoing) -> Result<(), NotQueued> {
        let sent = tokio::select! {
            biased;
            _ = self.closing.cancelled() => return Err(NotQueued::Closed),
            sent = tokio::time::timeout(self.send_timeout, self.outbox.send(message)) => sent,
        };
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(NotQueued::Closed),
            Err(_) => {
                let description =
                    "SUBSCRIBER_TOO_SLOW: the client does not read its messages (websocket-queue is full)";
                self.close(CloseReason { code: CloseCode::Policy, description: Some(description.into()) });
                Err(NotQueued::TooSlow)
            }
        }
    }

    fn heard(&self) {
        *self.last_heard.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn silent_for(&self) -> Duration {
        self.last_heard.lock().unwrap_or_else(|p| p.into_inner()).elapsed()
    }
}

/// `GET /ws`: authenticates, upgrades and serves the socket.
async fn upgrade(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    settings: web::Data<WsSettings>,
) -> actix_web::Result<HttpResponse> {
    let owner = match crate::http::caller(&req, &state.core).await {
        Ok(owner) => owner,
        Err(refused) => return Ok(crate::http::refusal_response(refused)),
    };
    // Resuming is per stream; a header on the upgrade cannot say which one.
    let meta = RpcMeta { last_event_id: None, ..crate::http::request_meta(&req) };
    // A client that does not read holds at most this much of ours in the kernel.
    let socket = crate::connection::socket_of(&req);
    if let Some(socket) = &socket {
        socket.limit_send_buffer(state.stream_bounds.send_buffer);
    }
    let (response, session, messages) = actix_ws::handle(&req, body)?;
    let messages = messages
        .max_frame_size(settings.max_message)
        .aggregate_continuations()
        .max_continuation_size(settings.max_message);
    let (outbox, queued) = mpsc::channel(settings.queue);
    let conn = Arc::new(Conn {
        core: Arc::clone(&state.core),
        outbox,
        send_timeout: settings.send_timeout,
        closing: settings.shutdown.child_token(),
        reason: Mutex::new(None),
        last_heard: Mutex::new(Instant::now()),
    });
    let settings = settings.get_ref().clone();
    actix_web::rt::spawn(async move {
        let reader = read_loop(messages, Arc::clone(&conn), owner, meta, settings.queue);
        let writer = write_loop(session, queued, Arc::clone(&conn), &settings);
        tokio::join!(reader, writer);
        // The close frame, or the last answers, may still sit unread in the socket.
        if let Some(socket) = socket {
            crate::connection::drain_or_abort(&socket, settings.send_timeout).await;
        }
    });
    Ok(response)
}

/// Reads messages until the client closes, the socket fails or the node stops.
async fn read_loop(
    mut messages: AggregatedMessageStream,
    conn: Arc<Conn>,
    owner: Owner,
    meta: RpcMeta,
    max_in_flight: usize,
) {
    let in_flight = Arc::new(Semaphore::new(max_in_flight));
    loop {
        let message = tokio::select! {
            biased;
            _ = conn.closing.cancelled() => break,
            message = messages.recv() => message,
        };
        conn.heard();
        let request = match message {
            Some(Ok(AggregatedMessage::Text(text))) => text.into_bytes(),
            Some(Ok(AggregatedMessage::Binary(bytes))) => bytes,
            Some(Ok(AggregatedMessage::Ping(bytes))) => {
                // Dropped when the queue is full: the reader never waits on the writer.
                let _ = conn.outbox.try_send(Outgoing::Pong(bytes));
                continue;
            }
            Some(Ok(AggregatedMessage::Pong(_))) => continue,
            Some(Ok(AggregatedMessage::Close(reason))) => {
                let code = reason.map_or(CloseCode::Normal, |r| r.code);
                conn.close(CloseReason { code, description: None });
                break;
            }
            Some(Err(e)) => {
                tracing::info!(error = %e, "websocket closed: protocol error");
                conn.close(protocol_close(&e));
                break;
            }
            None => break,
        };
        let permit = tokio::select! {
            biased;
            _ = conn.closing.cancelled() => break,
            permit = Arc::clone(&in_flight).acquire_owned() => permit,
        };
        let Ok(permit) = permit else { break };
        actix_web::rt::spawn(answer(Arc::clone(&conn), owner.clone(), meta.clone(), request, permit));
    }
    conn.closing.cancel();
}

/// The close frame for a message the codec refused.
fn protocol_close(error: &actix_ws::ProtocolError) -> CloseReason {
    match error {
        actix_ws::ProtocolError::Overflow => {
            CloseReason { code: CloseCode::Size, description: Some("message larger than body-limit".into()) }
        }
        _ => CloseReason { code: CloseCode::Protocol, description: Some("websocket protocol error".into()) },
    }
}

/// Answers one request: one message, or one per stream frame.
async fn answer(conn: Arc<Conn>, owner: Owner, meta: RpcMeta, request: Bytes, _permit: OwnedSemaphorePermit) {
    let started = Instant::now();
    let answer = rpc::handle_bytes(&conn.core, &owner, &request, &meta).await;
    let method = answer.method.clone();
    let mut status = super::status_of(&answer);
    match answer.outcome {
        RpcOutcome::Single(body) => {
            let text = String::from_utf8_lossy(&body).into_owned();
            if let Err(NotQueued::TooSlow) = conn.push(Outgoing::Text(text)).await {
                status = ErrorCode::SubscriberTooSlow.info().reason;
            }
            super::record(&conn.core, Binding::WebSocket, method.as_deref(), status, started);
        }
        // A notification: JSON-RPC sends no message for it.
        RpcOutcome::Silent => super::record(&conn.core, Binding::WebSocket, method.as_deref(), status, started),
        RpcOutcome::Stream(stream) => {
            super::record(&conn.core, Binding::WebSocket, method.as_deref(), status, started);
            let _open = conn.core.metrics().open_stream();
            let mut frames = stream.frames();
            loop {
                let frame = tokio::select! {
                    biased;
                    _ = conn.closing.cancelled() => None,
                    frame = frames.next() => frame,
                };
                let Some(frame) = frame else { break };
                if conn.push(Outgoing::Text(super::message_text(frame))).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes queued messages and pings, then the close frame.
async fn write_loop(
    mut session: Session,
    mut queued: mpsc::Receiver<Outgoing>,
    conn: Arc<Conn>,
    settings: &WsSettings,
) {
    let mut ping = tokio::time::interval(settings.ping_interval);
    ping.tick().await;
    loop {
        let sent = tokio::select! {
            biased;
            _ = conn.closing.cancelled() => break,
            message = queued.recv() => match message {
                Some(Outgoing::Text(text)) => unless_closing(&conn, session.text(text)).await,
                Some(Outgoing::Pong(bytes)) => unless_closing(&conn, session.pong(&bytes)).await,
                None => break,
            },
            _ = ping.tick() => {
                if conn.silent_for() > settings.ping_interval.saturating_mul(3) {
                    let description = "no answer to pings".to_owned();
                    conn.close(CloseReason { code: CloseCode::Policy, description: Some(description) });
                    break;
                }
                unless_closing(&conn, session.ping(b"a2ad")).await
            }
        };
        let Some(sent) = sent else { break };
        if sent.is_err() {
            // The client is gone: nothing more can be written.
            conn.closing.cancel();
            return;
        }
    }
    drop(queued);
    let reason = conn.reason.lock().unwrap_or_else(|p| p.into_inner()).take();
    let reason = reason.or_else(|| {
        settings
            .shutdown
            .is_cancelled()
            .then(|| CloseReason { code: CloseCode::Away, description: Some("the node is shutting down".into()) })
    });
    let _ = tokio::time::timeout(CLOSE_TIMEOUT.min(settings.send_timeout), session.close(reason)).await;
}

/// Waits for a write to the session unless the socket is closed meanwhile (`None`): a
/// client that does not read fills the session's buffer, and no write (text, ping or pong)
/// may then keep the writer from sending the close frame.
async fn unless_closing<T>(conn: &Conn, write: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        biased;
        _ = conn.closing.cancelled() => None,
        sent = write => Some(sent),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_card_url_follows_the_public_url() {
        assert_eq!(super::public_url("http://127.0.0.1:8080"), "ws://127.0.0.1:8080/ws");
        assert_eq!(super::public_url("https://a2a.example.com/base"), "wss://a2a.example.com/base/ws");
    }
}
