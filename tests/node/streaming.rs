//! SendStreamingMessage, SubscribeToTask, resume, fan-out and keep-alive over real SSE.

use crate::support::{send_params, slow_echo, spawn_app, SseEvent, TestApp};
use serde_json::{json, Value};
use std::time::Duration;

fn state(event: &SseEvent) -> String {
    event.result()["statusUpdate"]["status"]["state"].as_str().unwrap_or("").to_owned()
}

fn kind(event: &SseEvent) -> &'static str {
    let result = event.result();
    ["task", "message", "statusUpdate", "artifactUpdate"].into_iter().find(|k| result.get(*k).is_some()).unwrap_or("?")
}

/// Starts a slow task without waiting and returns its id.
async fn start_slow(app: &TestApp, text: &str) -> String {
    let task = app.send_text(text, json!({"configuration": {"returnImmediately": true}})).await;
    task["id"].as_str().unwrap().to_owned()
}

#[actix_web::test]
async fn a_streamed_turn_sends_the_task_then_updates_in_order_then_closes() {
    let app = spawn_app(slow_echo(Duration::from_millis(5))).await;
    let mut reader = app.stream("SendStreamingMessage", send_params("abc", json!({})), &[]).await.unwrap();
    let headers = &reader.response_headers;
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["cache-control"], "no-cache");
    assert_eq!(headers["x-accel-buffering"], "no");
    let events = reader.rest().await;

    let first = &events[0];
    assert_eq!(kind(first), "task");
    assert_eq!(first.json()["id"], 7, "each event is a JSON-RPC response to the request");
    assert_eq!(first.json()["jsonrpc"], "2.0");
    assert_eq!(first.result()["task"]["status"]["state"], "TASK_STATE_WORKING");
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "statusUpdate",
            "artifactUpdate",
            "statusUpdate",
            "artifactUpdate",
            "statusUpdate"
        ]
    );
    let seqs: Vec<u64> = events.iter().map(SseEvent::seq).collect();
    assert_eq!(seqs, (1..=8).collect::<Vec<_>>(), "ids are the task's own event sequence");
    let texts: String = events
        .iter()
        .filter(|e| kind(e) == "statusUpdate" && state(e) == "TASK_STATE_WORKING")
        .map(|e| e.result()["statusUpdate"]["status"]["message"]["parts"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, "abc", "agent text arrives as status messages");
    assert_eq!(state(events.last().unwrap()), "TASK_STATE_COMPLETED", "the stream ends with the final state");
    assert_eq!(events[2].result()["artifactUpdate"]["append"], Value::Null, "the first chunk starts the artifact");
    assert_eq!(events[4].result()["artifactUpdate"]["append"], true);
    assert_eq!(events[6].result()["artifactUpdate"]["lastChunk"], true);
}

#[actix_web::test]
async fn a_stream_closes_on_an_interrupted_state() {
    let app = spawn_app(|c| {
        c.agents = vec![crate::support::echo_agent("chat", a2ad_protocol::TaskState::InputRequired, 0, Duration::ZERO)]
    })
    .await;
    let mut reader = app.stream("SendStreamingMessage", send_params("hi", json!({})), &[]).await.unwrap();
    let events = reader.rest().await;
    assert_eq!(state(events.last().unwrap()), "TASK_STATE_INPUT_REQUIRED");
}

#[actix_web::test]
async fn streaming_errors_before_the_stream_are_plain_json_rpc_errors() {
    let app = spawn_app(|_| {}).await;
    let error = app.stream("SendStreamingMessage", json!({}), &[]).await.err().unwrap();
    assert_eq!(error["error"]["code"], -32602);
    let error = app.stream("SubscribeToTask", json!({"id": "nope"}), &[]).await.err().unwrap();
    assert_eq!(error["error"]["code"], -32001);
    let done = app.send_text("x", json!({})).await;
    let error = app.stream("SubscribeToTask", json!({"id": done["id"]}), &[]).await.err().unwrap();
    assert_eq!(error["error"]["code"], -32004, "a terminal task has nothing to subscribe to");
    let error =
        app.stream("SubscribeToTask", json!({"id": done["id"]}), &[("Last-Event-ID", "x")]).await.err().unwrap();
    assert_eq!(error["error"]["code"], -32602);
}

#[actix_web::test]
async fn two_subscribers_see_the_same_events_in_the_same_order() {
    let app = spawn_app(slow_echo(Duration::from_millis(20))).await;
    let id = start_slow(&app, "abcdefghij").await;
    let mut first = app.stream("SubscribeToTask", json!({"id": id}), &[]).await.unwrap();
    let mut second = app.stream("SubscribeToTask", json!({"id": id}), &[]).await.unwrap();
    let (a, b) = (first.rest().await, second.rest().await);
    assert_eq!(kind(&a[0]), "task", "a subscription starts with the task");
    let tail = |events: &[SseEvent]| -> Vec<(u64, String)> {
        events.iter().skip(1).map(|e| (e.seq(), e.result().to_string())).collect()
    };
    let (ta, tb) = (tail(&a), tail(&b));
    let common_start = ta.first().unwrap().0.max(tb.first().unwrap().0);
    let from = |t: &[(u64, String)]| t.iter().filter(|(s, _)| *s >= common_start).cloned().collect::<Vec<_>>();
    assert_eq!(from(&ta), from(&tb));
    assert_eq!(state(a.last().unwrap()), "TASK_STATE_COMPLETED");
    for events in [&a, &b] {
        let seqs: Vec<u64> = events.iter().skip(1).map(SseEvent::seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "no gap, no duplicate: {seqs:?}");
        assert_eq!(events[1].seq(), events[0].seq() + 1, "live events follow the snapshot's id");
    }
}

#[actix_web::test]
async fn resume_from_last_event_id_loses_and_repeats_nothing() {
    let app = spawn_app(slow_echo(Duration::from_millis(15))).await;
    let mut reader = app.stream("SendStreamingMessage", send_params("abcdefghijklmnop", json!({})), &[]).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(reader.next_data().await.unwrap());
    }
    let task_id = seen[0].result()["task"]["id"].as_str().unwrap().to_owned();
    drop(reader); // the connection drops mid-stream
    let last = seen.last().unwrap().seq().to_string();
    let mut resumed =
        app.stream("SubscribeToTask", json!({"id": task_id}), &[("Last-Event-ID", last.as_str())]).await.unwrap();
    seen.extend(resumed.rest().await);
    let seqs: Vec<u64> = seen.iter().map(SseEvent::seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "contiguous from 1: {seqs:?}");
    assert_eq!(state(seen.last().unwrap()), "TASK_STATE_COMPLETED");
    assert_eq!(kind(&seen[5]), "statusUpdate", "the resumed stream replays events, not a snapshot");
}

#[actix_web::test]
async fn resume_from_the_param_and_from_an_expired_point() {
    let app = spawn_app(|c| {
        slow_echo(Duration::from_millis(15))(c);
        c.event_retention = 4;
    })
    .await;
    let id = start_slow(&app, &"abcdefghij".repeat(4)).await;
    // Wait on the task, not the clock: six parts in, event 1 is past the retention of 4,
    // and 34 parts are still to come, so the stream has live events after its snapshot.
    let past_retention = crate::support::eventually(400, || async {
        let task = app.ok("GetTask", json!({"id": id})).await;
        task["artifacts"][0]["parts"].as_array().map_or(0, Vec::len) >= 6
    })
    .await;
    assert!(past_retention, "the turn produced six parts");
    // Event 1 was dropped by the retention of 4: the stream starts from the task and says so.
    let mut expired = app.stream("SubscribeToTask", json!({"id": id, "lastEventId": "1"}), &[]).await.unwrap();
    let first = expired.next_data().await.unwrap();
    assert_eq!(kind(&first), "task");
    let note = &first.result()["task"]["metadata"]["a2ad.resume"];
    assert_eq!(note["replayed"], false, "{first:?}");
    assert_eq!(note["lastEventId"], 1);
    let rest = expired.rest().await;
    assert_eq!(rest[0].seq(), first.seq() + 1, "live events continue after the snapshot");
    assert_eq!(state(rest.last().unwrap()), "TASK_STATE_COMPLETED");
}

#[actix_web::test]
async fn a_disconnected_client_does_not_cancel_the_task() {
    let app = spawn_app(slow_echo(Duration::from_millis(10))).await;
    let mut reader = app.stream("SendStreamingMessage", send_params("abcdefghijkl", json!({})), &[]).await.unwrap();
    let first = reader.next_data().await.unwrap();
    let id = first.result()["task"]["id"].as_str().unwrap().to_owned();
    drop(reader);
    let done = crate::support::eventually(200, || async {
        app.ok("GetTask", json!({"id": id})).await["status"]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
    assert!(done, "the task ran to the end without its client");
    let task = app.ok("GetTask", json!({"id": id})).await;
    assert_eq!(task["artifacts"][0]["parts"].as_array().unwrap().len(), 12);
}

#[actix_web::test]
async fn cancelling_during_a_stream_ends_it_with_canceled() {
    let app = spawn_app(slow_echo(Duration::from_millis(20))).await;
    let mut reader = app.stream("SendStreamingMessage", send_params(&"x".repeat(200), json!({})), &[]).await.unwrap();
    let first = reader.next_data().await.unwrap();
    reader.next_data().await.unwrap();
    app.ok("CancelTask", json!({"id": first.result()["task"]["id"]})).await;
    let rest = reader.rest().await;
    assert_eq!(state(rest.last().unwrap()), "TASK_STATE_CANCELED");
}

/// Subscribes over a raw socket with a tiny receive buffer and reads nothing yet: a
/// client that cannot keep up, without megabytes of kernel buffering to hide it.
async fn stalled_subscriber(app: &TestApp, task_id: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let addr: std::net::SocketAddr = app.url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(2048).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": task_id}}).to_string();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: a2ad\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

#[actix_web::test]
async fn a_slow_subscriber_is_dropped_with_an_error_while_others_continue() {
    use tokio::io::AsyncReadExt as _;
    // 2,048 events (1,024 chunks of 4 KB, each a status message and an artifact append,
    // 500 a second), ~9 MB: 1.6 times what the node can hold for a stalled reader (the
    // subscription's 384, the durable forwarder's 384, the client channel's 256, and
    // ~1 MiB of socket send buffer, ~240 events of this size), so it is dropped with a
    // margin. (With 8 KB chunks and an 8 MiB send buffer the node could hold nearly
    // every event, and the test passed or failed on timing.) The reading
    // subscriber must first take a 4 MB snapshot; 384 events give it room to catch up
    // while the node writes the growing task (several MB a step) beside it on 2 cores.
    let app = spawn_app(|c| {
        c.agents = vec![crate::support::echo_agent(
            "big",
            a2ad_protocol::TaskState::Completed,
            4096,
            Duration::from_millis(4),
        )];
        c.stream_buffer = 384;
        c.body_limit = 32 << 20;
        // This is the node's subscriber buffer at work, not the write deadline, which
        // would reset the stalled stream while the other reads. 512 KiB (the kernel
        // doubles it) keeps the reader's 4 MB snapshot quick on loopback.
        c.stream_write_timeout = Duration::from_secs(600);
        c.stream_send_buffer = 512 << 10;
    })
    .await;
    let id = start_slow(&app, &"y".repeat(4 << 20)).await;
    let mut slow = stalled_subscriber(&app, &id).await;
    let mut fast = app.stream("SubscribeToTask", json!({"id": id}), &[]).await.unwrap();
    let (mut fast_count, mut fast_last) = (0, None);
    while let Some(event) = fast.next_data().await {
        fast_count += 1;
        fast_last = Some(event);
    }
    let fast_last = fast_last.unwrap();
    assert_eq!(fast_last.event, None, "the reading subscriber was not dropped");
    assert_eq!(state(&fast_last), "TASK_STATE_COMPLETED", "the others are not held back");

    // Now read what the stalled subscriber was sent: some events, then the error.
    let mut raw = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let ended = |raw: &[u8]| {
        let text = String::from_utf8_lossy(raw);
        text.find("event: error").is_some_and(|at| text[at..].contains("\n\n"))
    };
    while !ended(&raw) {
        let read = actix_web::rt::time::timeout(Duration::from_secs(20), slow.read(&mut chunk)).await.unwrap().unwrap();
        assert!(read > 0, "the stalled stream closed without an error event");
        raw.extend_from_slice(&chunk[..read]);
    }
    let text = String::from_utf8_lossy(&raw);
    let ids: Vec<u64> = text.lines().filter_map(|l| l.strip_prefix("id: ")).map(|v| v.parse().unwrap()).collect();
    assert!(!ids.is_empty() && ids.len() < fast_count, "{} events before the drop, {fast_count} in all", ids.len());
    let error_line = text
        .split("\n\n")
        .find(|block| block.contains("event: error"))
        .and_then(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .expect("the stalled stream ends with an error event");
    let error: Value = serde_json::from_str(error_line).unwrap();
    assert_eq!(error["error"]["code"], -32051);
    assert_eq!(error["error"]["data"][0]["reason"], "SUBSCRIBER_TOO_SLOW");
    assert_eq!(error["error"]["data"][0]["metadata"]["lastEventId"], ids.last().unwrap().to_string());
}

#[actix_web::test]
async fn an_idle_stream_gets_keep_alive_comments() {
    let app = spawn_app(|c| {
        slow_echo(Duration::from_millis(400))(c);
        c.stream_keep_alive = Duration::from_millis(50);
    })
    .await;
    let mut reader = app.stream("SendStreamingMessage", send_params("ab", json!({})), &[]).await.unwrap();
    let mut comments = 0;
    while let Some(event) = reader.next().await {
        if event.comment.as_deref() == Some("keep-alive") {
            comments += 1;
        }
    }
    assert!(comments >= 3, "keep-alives on the idle stream: {comments}");
}

#[actix_web::test]
async fn subscribing_to_an_interrupted_task_shows_it_and_waits_for_its_next_turn() {
    let app = spawn_app(|c| {
        c.agents = vec![crate::support::echo_agent("chat", a2ad_protocol::TaskState::InputRequired, 0, Duration::ZERO)]
    })
    .await;
    let task = app.send_text("hi", json!({})).await;
    let mut reader = app.stream("SubscribeToTask", json!({"id": task["id"]}), &[]).await.unwrap();
    let first = reader.next_data().await.unwrap();
    assert_eq!(first.result()["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(first.seq(), 3, "the snapshot carries the id of the latest event");
    // The stream stays open (follow.rs has the rest); a cancel ends it.
    app.ok("CancelTask", json!({"id": task["id"]})).await;
    let events = reader.rest().await;
    assert_eq!(events.len(), 1);
    assert_eq!(state(&events[0]), "TASK_STATE_CANCELED");
}
