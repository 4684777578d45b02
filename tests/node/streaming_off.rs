//! `streaming: false`: the card says `capabilities.streaming: false`, and every way to ask
//! for a stream (1.0 over JSON-RPC, HTTP+JSON and gRPC, 0.3 over JSON-RPC and `/v1/`, 0.1's
//! `tasks/sendSubscribe`) answers UnsupportedOperation; SendMessage still works, and
//! `a2ad call` falls back to it.

use crate::client::{a2ad, stderr, stdout};
use crate::support::{echo_agent, reason, send_params, spawn_app, SseReader, TestApp};
use a2a_pb::proto::{self, a2a_service_client::A2aServiceClient};
use a2ad_protocol::TaskState;
use serde_json::{json, Value};
use std::time::Duration;
use tonic::Code;
use tonic_types::StatusExt;

/// A node with streaming off whose agent stops at input-required, so a task stays open to
/// subscribe to (a terminal one would be refused for being terminal).
async fn streaming_off() -> TestApp {
    spawn_app(|c| {
        c.streaming = false;
        c.agents = vec![echo_agent("ask", TaskState::InputRequired, 0, Duration::ZERO)];
    })
    .await
}

/// An interrupted task on `app`, made with SendMessage; its id.
async fn open_task(app: &TestApp) -> String {
    let task = app.send_text("hello", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{task}");
    task["id"].as_str().unwrap().to_owned()
}

/// The JSON-RPC error `body` is UnsupportedOperation (-32004) saying streaming is off.
fn assert_streaming_refused(error: &Value) {
    assert_eq!(error["code"], -32004, "{error}");
    assert!(error["message"].as_str().unwrap_or("").contains("Streaming is off"), "{error}");
}

#[actix_web::test]
async fn the_card_says_streaming_false_and_send_message_still_works() {
    let app = streaming_off().await;
    let card = app.card().await;
    assert_eq!(card["capabilities"]["streaming"], false, "{card}");
    crate::card::assert_pure_1_0(&card);
    let id = open_task(&app).await;
    let task = app.ok("GetTask", json!({"id": id})).await;
    assert_eq!(task["id"], id);
}

#[actix_web::test]
async fn json_rpc_streaming_methods_are_unsupported() {
    let app = streaming_off().await;
    let id = open_task(&app).await;
    for (method, params) in [
        ("SendStreamingMessage", send_params("stream?", json!({}))),
        ("SubscribeToTask", json!({"id": id})),
        (
            "message/stream",
            json!({"message": {"kind": "message", "messageId": "m1", "role": "user",
                                             "parts": [{"kind": "text", "text": "0.3"}]}}),
        ),
        ("tasks/resubscribe", json!({"id": id})),
    ] {
        let error = app.stream(method, params, &[]).await.err().unwrap_or_else(|| panic!("{method} streamed"));
        assert_streaming_refused(&error["error"]);
        if !method.contains('/') {
            assert_eq!(reason(&error["error"]), "UNSUPPORTED_OPERATION", "{method}: {error}");
        }
    }
    // 0.1 reports errors of `tasks/sendSubscribe` as the stream's error frame.
    let params = json!({"capability_id": "ask", "message": {"role": "user", "parts": [{"type": "text", "text": "a"}]}});
    let body = json!({"jsonrpc": "2.0", "id": "s", "method": "tasks/sendSubscribe", "params": params});
    let response = app.client.post(&app.url).json(&body).send().await.unwrap();
    let mut events = match SseReader::from_response(response).await {
        Ok(mut reader) => reader.rest().await.into_iter().map(|e| e.json()).collect::<Vec<_>>(),
        Err(body) => vec![body],
    };
    let last = events.pop().expect("an answer");
    assert!(last["error"]["message"].as_str().unwrap_or("").contains("Streaming is off"), "{last}");
    assert!(events.iter().all(|e| e.get("result").is_none()), "no task was streamed: {events:?}");
}

#[actix_web::test]
async fn rest_streaming_routes_are_unsupported() {
    let app = streaming_off().await;
    let id = open_task(&app).await;
    let message = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "a"}]}});
    let v03_message = json!({"message": {"messageId": "m2", "role": "ROLE_USER", "content": [{"text": "b"}]}});
    for request in [
        app.client.post(format!("{}/a2a/message:stream", app.url)).json(&message),
        app.client.get(format!("{}/a2a/tasks/{id}:subscribe", app.url)),
        app.client.post(format!("{}/v1/message:stream", app.url)).json(&v03_message),
        app.client.get(format!("{}/v1/tasks/{id}:subscribe", app.url)),
    ] {
        let response = request.send().await.unwrap();
        let url = response.url().to_string();
        assert_eq!(response.status(), 400, "{url}");
        let body: Value = response.json().await.unwrap();
        assert!(body["error"]["message"].as_str().unwrap_or("").contains("Streaming is off"), "{url}: {body}");
    }
}

#[actix_web::test]
async fn grpc_streaming_rpcs_are_unsupported() {
    let app = streaming_off().await;
    let id = open_task(&app).await;
    let mut grpc = A2aServiceClient::connect(app.grpc_url.clone()).await.unwrap();
    let message = proto::Message {
        message_id: "m1".into(),
        role: proto::Role::User as i32,
        parts: vec![proto::Part { content: Some(proto::part::Content::Text("a".into())), ..Default::default() }],
        ..Default::default()
    };
    let send = proto::SendMessageRequest { message: Some(message), ..Default::default() };
    let refused = grpc.send_streaming_message(send).await.expect_err("no stream");
    let subscribe = proto::SubscribeToTaskRequest { id, ..Default::default() };
    let refused_too = grpc.subscribe_to_task(subscribe).await.expect_err("no stream");
    for status in [refused, refused_too] {
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        let reason = status.get_error_details().error_info().map(|i| i.reason.clone()).unwrap_or_default();
        assert_eq!(reason, "UNSUPPORTED_OPERATION", "{status:?}");
        assert!(status.message().contains("Streaming is off"), "{status:?}");
    }
}

#[actix_web::test]
async fn a2ad_call_sends_send_message_to_a_node_without_streaming() {
    let app = spawn_app(|c| c.streaming = false).await;
    let output = a2ad(&["call", &app.url, "plain answer"], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "plain answer\n");
    assert!(stderr(&output).contains("completed"), "{}", stderr(&output));
}
