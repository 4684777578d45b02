//! Events per second through one long stream over WebSocket, against the same stream
//! over SSE (`streams::events_per_second`) on a fresh node of the same config: the
//! fire-hose agent emits two events per character as fast as it can.

use crate::node::Node;
use crate::report::say;
use futures_util::{SinkExt, StreamExt};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// The longest one stream may take (bounded runs).
const STREAM_TIMEOUT: Duration = Duration::from_secs(120);

/// Events received on one WebSocket stream of `characters` fire-hose characters, and
/// the time from the request to the final status.
pub async fn events_per_second(bin: &Path, characters: usize) -> (usize, Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = format!("{}websocket: true\n", crate::streams::CONFIG);
    let node = Node::start_in(bin, &dir.path().join("data"), &config, &["--body-limit", "16MiB"]);
    let (mut socket, _) =
        tokio_tungstenite::connect_async(format!("ws://{}/ws", node.addr)).await.expect("WebSocket upgrade");
    let text = "x".repeat(characters);
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","metadata":{{"skill":"firehose"}},"parts":[{{"text":"{text}"}}]}}}}}}"#
    );
    let started = Instant::now();
    socket.send(Message::text(request)).await.expect("send");
    let mut events = 0;
    let deadline = started + STREAM_TIMEOUT;
    while let Ok(Some(Ok(message))) = tokio::time::timeout_at(deadline.into(), socket.next()).await {
        let Message::Text(text) = message else { continue };
        events += 1;
        let text = text.as_str();
        if text.contains("\"error\"") || (text.contains("TASK_STATE_COMPLETED") && text.contains("statusUpdate")) {
            break;
        }
    }
    (events, started.elapsed())
}

/// The whole part: SSE then WebSocket, with the ratio.
pub async fn run_all(bin: &Path, characters: usize) {
    let (sse_events, sse_time) = crate::streams::events_per_second(bin, characters).await;
    let (ws_events, ws_time) = events_per_second(bin, characters).await;
    let sse_rate = sse_events as f64 / sse_time.as_secs_f64();
    let ws_rate = ws_events as f64 / ws_time.as_secs_f64();
    say!("one stream, SSE: {sse_events} events in {:.2} s = {sse_rate:.0} events/s", sse_time.as_secs_f64());
    say!(
        "one stream, WebSocket: {ws_events} events in {:.2} s = {ws_rate:.0} events/s  ratio {:.3}",
        ws_time.as_secs_f64(),
        ws_rate / sse_rate
    );
}
