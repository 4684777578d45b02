//! JSON-RPC over WebSocket (`/ws`) with a real client (tokio-tungstenite) on loopback.

use crate::support::{echo_agent, send_params, slow_echo, spawn_app, TestApp};
use a2ad_protocol::TaskState;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long a test waits for the next message before it gives up (a hang guard only).
const PATIENCE: Duration = Duration::from_secs(30);

async fn connect(app: &TestApp, headers: &[(&str, &str)]) -> Result<Ws, WsError> {
    let mut request = format!("{}/ws", app.url.replacen("http://", "ws://", 1)).into_client_request().unwrap();
    for (name, value) in headers {
        let name = tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
        request.headers_mut().insert(name, value.parse().unwrap());
    }
    tokio_tungstenite::connect_async(request).await.map(|(ws, _)| ws)
}

async fn send(ws: &mut Ws, request: Value) {
    ws.send(Message::Text(request.to_string().into())).await.unwrap();
}

fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The next text message, as JSON (control frames are skipped).
async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let message = tokio::time::timeout(PATIENCE, ws.next()).await.expect("a message in time");
        match message.expect("the socket is open").expect("a message") {
            Message::Text(text) => return serde_json::from_str(text.as_str()).expect("a JSON message"),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected message {other:?}"),
        }
    }
}

/// Reads until the node closes the socket: its close frame, and how many text messages
/// came before it (control frames are skipped).
async fn close_frame(ws: &mut Ws) -> (Option<CloseFrame>, usize) {
    let mut texts = 0;
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.expect("the socket ends in time") {
            Some(Ok(Message::Close(frame))) => return (frame, texts),
            Some(Ok(Message::Text(_))) => texts += 1,
            Some(Ok(_)) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

fn websocket_on(tweak: impl FnOnce(&mut a2ad::config::Config)) -> impl FnOnce(&mut a2ad::config::Config) {
    move |c| {
        c.websocket = true;
        tweak(c);
    }
}

#[actix_web::test]
async fn requests_on_one_socket_are_answered_concurrently_each_with_its_id() {
    let app = spawn_app(websocket_on(slow_echo(Duration::from_millis(40)))).await;
    let mut ws = connect(&app, &[]).await.unwrap();
    send(&mut ws, request(json!("slow"), "SendMessage", send_params("abcdefghij", json!({})))).await;
    send(&mut ws, request(json!(2), "ListTasks", json!({}))).await;
    let first = next_json(&mut ws).await;
    assert_eq!(first["id"], 2, "the quick request is not held up by the slow one: {first}");
    assert!(first["result"]["tasks"].is_array(), "{first}");
    let second = next_json(&mut ws).await;
    assert_eq!(second["id"], "slow");
    assert_eq!(second["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let task_id = second["result"]["task"]["id"].as_str().unwrap();
    let over_http = app.ok("GetTask", json!({"id": task_id})).await;
    assert_eq!(over_http["status"]["state"], "TASK_STATE_COMPLETED", "the same node and store as HTTP");
    let metrics = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    for line in [
        r#"a2ad_requests_total{method="SendMessage",binding="websocket",status="ok"} 1"#,
        r#"a2ad_requests_total{method="ListTasks",binding="websocket",status="ok"} 1"#,
        r#"a2ad_request_duration_seconds_count{binding="websocket"} 2"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} missing from {metrics}");
    }
}

#[actix_web::test]
async fn a_streaming_method_sends_each_frame_as_one_message() {
    let app = spawn_app(websocket_on(slow_echo(Duration::from_millis(5)))).await;
    let mut ws = connect(&app, &[]).await.unwrap();
    send(&mut ws, request(json!(7), "SendStreamingMessage", send_params("abc", json!({})))).await;
    let mut kinds = Vec::new();
    loop {
        let frame = next_json(&mut ws).await;
        assert_eq!(frame["jsonrpc"], "2.0", "each message is a whole JSON-RPC response: {frame}");
        assert_eq!(frame["id"], 7);
        let result = &frame["result"];
        let kind = ["task", "statusUpdate", "artifactUpdate"].into_iter().find(|k| result.get(*k).is_some());
        kinds.push(kind.expect("a StreamResponse"));
        if result["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
    }
    assert_eq!(kinds.first(), Some(&"task"));
    assert_eq!(kinds.iter().filter(|k| **k == "artifactUpdate").count(), 3, "{kinds:?}");
    // The socket stays usable after a stream ends.
    send(&mut ws, request(json!(8), "ListTasks", json!({}))).await;
    assert_eq!(next_json(&mut ws).await["id"], 8);
}

#[actix_web::test]
async fn with_streaming_off_a_streaming_method_is_one_unsupported_operation_error() {
    let app = spawn_app(websocket_on(|c| c.streaming = false)).await;
    let mut ws = connect(&app, &[]).await.unwrap();
    send(&mut ws, request(json!(7), "SendStreamingMessage", send_params("abc", json!({})))).await;
    let frame = next_json(&mut ws).await;
    assert_eq!((frame["id"].as_i64(), frame["error"]["code"].as_i64()), (Some(7), Some(-32004)), "{frame}");
    send(&mut ws, request(json!(8), "SendMessage", send_params("abc", json!({})))).await;
    assert_eq!(next_json(&mut ws).await["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[actix_web::test]
async fn bad_messages_get_json_rpc_errors_and_the_socket_stays_open() {
    let app = spawn_app(websocket_on(|_| {})).await;
    let mut ws = connect(&app, &[]).await.unwrap();
    ws.send(Message::Text("{not json".into())).await.unwrap();
    let parse = next_json(&mut ws).await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    send(&mut ws, request(json!(3), "NoSuchMethod", json!({}))).await;
    let unknown = next_json(&mut ws).await;
    assert_eq!((unknown["id"].clone(), unknown["error"]["code"].clone()), (json!(3), json!(-32601)));
    send(&mut ws, json!({"id": 4, "method": "ListTasks"})).await;
    assert_eq!(next_json(&mut ws).await["error"]["code"], -32600, "no jsonrpc member");
    send(&mut ws, request(json!(5), "GetTask", json!({"id": "no-such-task"}))).await;
    let missing = next_json(&mut ws).await;
    assert_eq!((missing["id"].clone(), missing["error"]["code"].clone()), (json!(5), json!(-32001)));
    send(&mut ws, request(json!(6), "SendMessage", send_params("still here", json!({})))).await;
    assert_eq!(next_json(&mut ws).await["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[actix_web::test]
async fn a_message_over_the_body_limit_closes_the_socket_with_1009() {
    let app = spawn_app(websocket_on(|c| c.body_limit = 1024)).await;
    let mut ws = connect(&app, &[]).await.unwrap();
    send(&mut ws, request(json!(1), "SendMessage", send_params(&"z".repeat(4000), json!({})))).await;
    let (close, texts) = close_frame(&mut ws).await;
    assert_eq!(texts, 0, "closed without an answer");
    let close = close.expect("a reason");
    assert_eq!(close.code, CloseCode::Size);
    assert!(close.reason.as_str().contains("body-limit"), "{}", close.reason);
}

#[actix_web::test]
async fn the_upgrade_is_authenticated_before_it_happens() {
    let app = spawn_app(websocket_on(|c| {
        c.auth =
            serde_yaml_ng::from_str("bearer-tokens:\n  - {token: tok-ws, tenant: acme, principal: alice}\n").unwrap();
    }))
    .await;
    match connect(&app, &[]).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 401),
        Err(other) => panic!("expected 401, got {other}"),
        Ok(_) => panic!("upgraded without credentials"),
    }
    match connect(&app, &[("Authorization", "Bearer wrong")]).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 401),
        _ => panic!("upgraded with a bad token"),
    }
    let mut ws = connect(&app, &[("Authorization", "Bearer tok-ws")]).await.unwrap();
    send(&mut ws, request(json!(1), "SendMessage", send_params("hi", json!({})))).await;
    let task = next_json(&mut ws).await["result"]["task"].clone();
    let id = task["id"].as_str().unwrap();
    let seen = app
        .client
        .post(&app.url)
        .bearer_auth("tok-ws")
        .json(&request(json!(1), "GetTask", json!({"id": id})))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(seen["result"]["id"], id, "the socket's caller owns the task: {seen}");
}

#[actix_web::test]
async fn pings_are_answered_the_node_pings_and_a_close_is_echoed() {
    let app = spawn_app(websocket_on(|c| c.stream_keep_alive = Duration::from_millis(100))).await;
    let mut ws = connect(&app, &[]).await.unwrap();
    ws.send(Message::Ping(b"hello".to_vec().into())).await.unwrap();
    let (mut pong, mut ping) = (false, false);
    while !(pong && ping) {
        match tokio::time::timeout(PATIENCE, ws.next()).await.unwrap().unwrap().unwrap() {
            Message::Pong(payload) => {
                assert_eq!(payload.as_ref(), b"hello");
                pong = true;
            }
            Message::Ping(_) => ping = true,
            other => panic!("unexpected {other:?}"),
        }
    }
    ws.close(None).await.unwrap();
    let (echoed, _) = close_frame(&mut ws).await;
    assert_eq!(echoed.map(|f| f.code), Some(CloseCode::Normal), "the close is echoed");
}

/// A client that sends requests and never reads fills the outgoing queue: the node closes
/// the socket with a reason instead of buffering without end.
#[actix_web::test]
async fn a_client_that_does_not_read_is_closed_with_a_reason() {
    let app = spawn_app(websocket_on(|c| {
        c.websocket_queue = 4;
        c.websocket_send_timeout = Duration::from_millis(200);
        c.agents = vec![echo_agent("big", TaskState::Completed, 1 << 20, Duration::ZERO)];
    }))
    .await;
    let big = "x".repeat(400 * 1024);
    let task = app.send_text(&big, json!({})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let mut ws = connect(&app, &[]).await.unwrap();
    // About 60 MB of answers: more than the socket buffers and the queue hold.
    let requests = 80;
    for n in 0..requests {
        send(&mut ws, request(json!(n), "GetTask", json!({"id": id}))).await;
    }
    let metrics_url = format!("{}/metrics", app.url);
    let refused = crate::support::eventually(1200, || async {
        let text = app.client.get(&metrics_url).send().await.unwrap().text().await.unwrap();
        text.contains(r#"binding="websocket",status="SUBSCRIBER_TOO_SLOW""#)
    })
    .await;
    assert!(refused, "the node saw its queue fill");
    let (close, answers) = close_frame(&mut ws).await;
    let close = close.expect("a close frame with a reason");
    assert_eq!(close.code, CloseCode::Policy);
    assert!(close.reason.as_str().contains("SUBSCRIBER_TOO_SLOW"), "{}", close.reason);
    assert!(answers < requests, "the node stopped answering a client that does not read ({answers})");
}

/// A client that reads is never closed for a burst larger than the queue: answers wait.
#[actix_web::test]
async fn a_burst_of_stream_events_waits_for_a_reading_client() {
    let app = spawn_app(websocket_on(|c| {
        c.websocket_queue = 4;
        c.stream_buffer = 10_000;
        c.agents = vec![echo_agent("fast", TaskState::Completed, 1, Duration::ZERO)];
    }))
    .await;
    let mut ws = connect(&app, &[]).await.unwrap();
    let text = "y".repeat(300);
    send(&mut ws, request(json!(1), "SendStreamingMessage", send_params(&text, json!({})))).await;
    let mut frames = 0;
    loop {
        let frame = next_json(&mut ws).await;
        assert!(frame.get("error").is_none(), "{frame}");
        frames += 1;
        if frame["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
    }
    assert!(frames > 300, "every event arrived ({frames})");
}

#[actix_web::test]
async fn the_card_advertises_the_websocket_transport_only_when_it_runs() {
    let on = spawn_app(websocket_on(|_| {})).await;
    let card = on.card().await;
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let ws = interfaces.iter().find(|i| i["protocolBinding"] == "urn:a2ad:binding:websocket:v1").expect("advertised");
    assert_eq!(ws["url"], format!("{}/ws", on.url.replacen("http://", "ws://", 1)));
    assert_eq!(ws["protocolVersion"], "1.0");

    let off = spawn_app(|_| {}).await;
    let card = off.card().await;
    assert!(!card.to_string().contains("websocket"), "not advertised when off");
    let upgrade = off.client.get(format!("{}/ws", off.url)).send().await.unwrap();
    assert_eq!(upgrade.status(), 404, "no /ws route when off");
}

#[actix_web::test]
async fn a_stopping_node_closes_its_sockets_as_going_away() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ws.yml");
    std::fs::write(&config, "websocket: true\nshutdown-grace: 1s\n").unwrap();
    let data = dir.path().join("data");
    let node = crate::support::NodeProcess::start(
        dir.path(),
        &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()],
    );
    let url = format!("{}/ws", node.url.replacen("http://", "ws://", 1));
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    send(&mut ws, request(json!(1), "ListTasks", json!({}))).await;
    assert_eq!(next_json(&mut ws).await["id"], 1);
    let exited = actix_web::rt::task::spawn_blocking(move || node.terminate());
    let (close, _) = close_frame(&mut ws).await;
    assert_eq!(close.map(|f| f.code), Some(CloseCode::Away));
    assert!(exited.await.unwrap().success(), "a clean exit");
}

/// The `eventId`s and artifact texts of a stream's messages, up to `count` messages or
/// the end of the task.
async fn read_events(ws: &mut Ws, id: Value, count: usize) -> (Vec<u64>, Vec<String>) {
    let (mut ids, mut texts) = (Vec::new(), Vec::new());
    while ids.len() < count {
        let frame = next_json(ws).await;
        assert_eq!(frame["id"], id, "{frame}");
        ids.push(frame["eventId"].as_u64().unwrap_or_else(|| panic!("an eventId: {frame}")));
        if let Some(text) = frame["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str() {
            texts.push(text.to_owned());
        }
        if frame["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
    }
    (ids, texts)
}

#[actix_web::test]
async fn a_client_that_lost_its_socket_resumes_with_the_last_event_id() {
    let app = spawn_app(websocket_on(slow_echo(Duration::from_millis(30)))).await;
    let mut first = connect(&app, &[]).await.unwrap();
    send(&mut first, request(json!(1), "SendStreamingMessage", send_params("abcdefghij", json!({})))).await;
    let task = next_json(&mut first).await;
    let task_id = task["result"]["task"]["id"].as_str().expect("the stream starts with the task").to_owned();
    let (mut ids, mut texts) = read_events(&mut first, json!(1), 3).await;
    ids.insert(0, task["eventId"].as_u64().expect("the task frame has an eventId"));
    drop(first);

    let mut second = connect(&app, &[]).await.unwrap();
    let last = *ids.last().unwrap();
    send(&mut second, request(json!(2), "SubscribeToTask", json!({"id": task_id, "lastEventId": last}))).await;
    let (resumed_ids, resumed_texts) = read_events(&mut second, json!(2), usize::MAX).await;
    assert_eq!(resumed_ids.first(), Some(&(last + 1)), "resumes right after the last event: {resumed_ids:?}");
    ids.extend(resumed_ids);
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "no gap and no duplicate: {ids:?}");
    texts.extend(resumed_texts);
    assert_eq!(texts.concat(), "abcdefghij", "every artifact chunk exactly once");
}

#[actix_web::test]
async fn a_rate_limited_request_gets_its_error_with_the_wait_and_the_socket_stays_open() {
    let app = spawn_app(websocket_on(|c| {
        c.limits.rate_per_second = 0.5;
        c.limits.rate_burst = 1;
    }))
    .await;
    let mut ws = connect(&app, &[]).await.unwrap();
    send(&mut ws, request(json!(1), "ListTasks", json!({}))).await;
    assert!(next_json(&mut ws).await.get("result").is_some());
    send(&mut ws, request(json!(2), "ListTasks", json!({}))).await;
    let limited = next_json(&mut ws).await;
    assert_eq!((limited["id"].clone(), limited["error"]["code"].clone()), (json!(2), json!(-32052)), "{limited}");
    let wait = limited["error"]["data"][0]["metadata"]["retryAfterSeconds"].as_str().expect("the wait");
    assert!(wait.parse::<u64>().unwrap() >= 1, "{limited}");
    send(&mut ws, request(json!(3), "tasks/get", json!({"id": "t"}))).await;
    let v03 = next_json(&mut ws).await;
    assert_eq!((v03["id"].clone(), v03["error"]["code"].clone()), (json!(3), json!(-32052)), "0.3 too: {v03}");
}

#[actix_web::test]
async fn a_0_3_client_resumes_with_tasks_resubscribe_and_the_last_event_id() {
    let app = spawn_app(websocket_on(slow_echo(Duration::from_millis(30)))).await;
    let mut first = connect(&app, &[]).await.unwrap();
    send(&mut first, request(json!(1), "SendStreamingMessage", send_params("abcdefghij", json!({})))).await;
    let task = next_json(&mut first).await;
    let task_id = task["result"]["task"]["id"].as_str().unwrap().to_owned();
    let (ids, mut texts) = read_events(&mut first, json!(1), 2).await;
    drop(first);

    let mut second = connect(&app, &[]).await.unwrap();
    let last = *ids.last().unwrap();
    send(&mut second, request(json!(2), "tasks/resubscribe", json!({"id": "", "lastEventId": last}))).await;
    assert_eq!(next_json(&mut second).await["error"]["code"], -32602, "the id is still required");
    send(&mut second, request(json!(3), "tasks/resubscribe", json!({"id": task_id, "lastEventId": "x"}))).await;
    let bad = next_json(&mut second).await;
    assert_eq!(bad["error"]["data"]["field"], "lastEventId", "{bad}");
    send(&mut second, request(json!(4), "tasks/resubscribe", json!({"id": task_id, "lastEventId": last}))).await;
    let mut expected = last + 1;
    loop {
        let frame = next_json(&mut second).await;
        assert_eq!(frame["eventId"], expected, "no gap and no duplicate: {frame}");
        expected += 1;
        let result = &frame["result"];
        if result["kind"] == "artifact-update" {
            texts.push(result["artifact"]["parts"][0]["text"].as_str().unwrap().to_owned());
        }
        if result["final"] == true {
            assert_eq!(result["status"]["state"], "completed", "{frame}");
            break;
        }
    }
    assert_eq!(texts.concat(), "abcdefghij", "every artifact chunk exactly once, in 0.3 shape after the resume");
}

#[actix_web::test]
async fn a_websocket_subscription_to_an_interrupted_task_follows_its_next_turn() {
    let app =
        spawn_app(websocket_on(|c| c.agents = vec![echo_agent("chat", TaskState::InputRequired, 0, Duration::ZERO)]))
            .await;
    let task = app.send_text("hi", json!({})).await;
    let mut ws = connect(&app, &[]).await.unwrap();
    send(&mut ws, request(json!("watch"), "SubscribeToTask", json!({"id": task["id"]}))).await;
    let snapshot = next_json(&mut ws).await;
    assert_eq!(snapshot["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{snapshot}");
    app.send_text("more", json!({"taskId": task["id"]})).await;
    app.ok("CancelTask", json!({"id": task["id"]})).await;
    let mut states = Vec::new();
    while states.last().map(String::as_str) != Some("TASK_STATE_CANCELED") {
        let frame = next_json(&mut ws).await;
        assert_eq!(frame["id"], "watch");
        if let Some(state) = frame["result"]["statusUpdate"]["status"]["state"].as_str() {
            states.push(state.to_owned());
        }
    }
    assert_eq!(states, ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"]);
}
