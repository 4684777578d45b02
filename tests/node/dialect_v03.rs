//! The A2A 0.3 dialect over loopback: the slash-named JSON-RPC methods on `POST /` and the
//! `/v1/` routes, their shapes both ways, their error codes, and the card's 0.3 fields.

use crate::support::JsonBody as _;
use crate::support::{slow_echo, spawn_app, SseReader, TestApp};
use serde_json::{json, Value};
use std::time::Duration;

fn v03_message(text: &str) -> Value {
    json!({"kind": "message", "messageId": a2ad_protocol::ids::new_id(), "role": "user",
           "parts": [{"kind": "text", "text": text}]})
}

async fn v03_stream(app: &TestApp, method: &str, params: Value) -> SseReader {
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": method, "params": params});
    let response = app.client.post(&app.url).json(&body).send().await.unwrap();
    SseReader::from_response(response).await.expect("an event stream")
}

#[actix_web::test]
async fn message_send_returns_the_task_itself_in_0_3_shape() {
    let app = spawn_app(|_| {}).await;
    let task = app.ok("message/send", json!({"message": v03_message("hi")})).await;
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"kind": "text", "text": "hi"}));
    assert_eq!(task["history"][0]["role"], "user");
    assert_eq!(task["history"][1]["role"], "agent");
    let got = app.ok("tasks/get", json!({"id": task["id"], "historyLength": 0})).await;
    assert_eq!(got["id"], task["id"]);
    assert!(got.get("history").is_none(), "{got}");
    // The same task, read through 1.0, is in 1.0 shape.
    let v10 = app.ok("GetTask", json!({"id": task["id"]})).await;
    assert_eq!(v10["status"]["state"], "TASK_STATE_COMPLETED");
}

#[actix_web::test]
async fn non_blocking_send_then_cancel_and_cancel_again() {
    let app = spawn_app(slow_echo(Duration::from_millis(100))).await;
    let params = json!({"message": v03_message(&"x".repeat(100)), "configuration": {"blocking": false}});
    let task = app.ok("message/send", params).await;
    assert!(["submitted", "working"].contains(&task["status"]["state"].as_str().unwrap()), "{task}");
    let canceled = app.ok("tasks/cancel", json!({"id": task["id"]})).await;
    assert_eq!(canceled["status"]["state"], "canceled");
    let error = app.err("tasks/cancel", json!({"id": task["id"]})).await;
    assert_eq!(error["code"], -32002, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.ends_with("already canceled"), "0.3 state names, not 1.0's: {error}");
}

#[actix_web::test]
async fn message_stream_sends_unwrapped_events_with_kind_and_a_final_update() {
    let app = spawn_app(slow_echo(Duration::from_millis(5))).await;
    let mut reader = v03_stream(&app, "message/stream", json!({"message": v03_message("abc")})).await;
    let events: Vec<Value> = reader.rest().await.iter().map(|e| e.json()).collect();
    assert!(events.iter().all(|e| e["jsonrpc"] == "2.0" && e["id"] == "s1"), "{events:?}");
    let kinds: Vec<&str> = events.iter().map(|e| e["result"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "task", "{kinds:?}");
    assert!(kinds.contains(&"artifact-update"), "{kinds:?}");
    let last = &events.last().unwrap()["result"];
    assert_eq!((last["kind"].as_str(), last["final"].as_bool()), (Some("status-update"), Some(true)), "{last}");
    assert_eq!(last["status"]["state"], "completed");
    let not_final = events.iter().filter(|e| e["result"]["kind"] == "status-update").rev().skip(1);
    assert!(not_final.into_iter().all(|e| e["result"]["final"] == false));
}

#[actix_web::test]
async fn errors_use_0_3_codes_and_name_the_field() {
    let app = spawn_app(|_| {}).await;
    let error = app.err("tasks/get", json!({"id": "missing"})).await;
    assert_eq!((error["code"].as_i64(), error["data"]["reason"].as_str()), (Some(-32001), Some("TASK_NOT_FOUND")));
    let error = app.err("tasks/resubscribe", json!({"id": "missing"})).await;
    assert_eq!(error["code"], -32001);
    let bad_role = json!({"message": {"kind": "message", "messageId": "m", "role": "ROLE_USER", "parts": []}});
    let error = app.err("message/send", bad_role).await;
    assert_eq!(error["code"], -32602);
    assert!(error["message"].as_str().unwrap().contains("message.role"), "{error}");
    let error = app.err("agent/getAuthenticatedExtendedCard", json!({})).await;
    assert_eq!(error["code"], -32007, "{error}");
    // Push is off on this node: 0.3's -32003.
    let set = json!({"taskId": "t", "pushNotificationConfig": {"url": "http://127.0.0.1:9/h"}});
    assert_eq!(app.err("tasks/pushNotificationConfig/set", set).await["code"], -32003);
    assert_eq!(app.err("tasks/nonsense", json!({})).await["code"], -32601);
}

#[actix_web::test]
async fn a_0_3_version_header_is_fine_on_0_3_methods_only() {
    let app = spawn_app(|_| {}).await;
    let body = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let send = |b: Value| app.client.post(&app.url).header("A2A-Version", "0.3").json(&b).send();
    let answer: Value =
        send(body("message/send", json!({"message": v03_message("v")}))).await.unwrap().json().await.unwrap();
    assert_eq!(answer["result"]["status"]["state"], "completed", "{answer}");
    let answer: Value = send(body("GetTask", json!({"id": "x"}))).await.unwrap().json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32009, "a 1.0 method still checks the version: {answer}");
}

#[actix_web::test]
async fn push_configs_round_trip_in_0_3_shape() {
    let app = spawn_app(|c| {
        c.push.enabled = true;
        c.push.allow = vec!["127.0.0.1/32".into()];
    })
    .await;
    let task = app.ok("message/send", json!({"message": v03_message("p")})).await;
    let config = json!({"url": "http://127.0.0.1:9/hook", "token": "t0k",
                        "authentication": {"schemes": ["Bearer"], "credentials": "c"}});
    let saved = app
        .ok("tasks/pushNotificationConfig/set", json!({"taskId": task["id"], "pushNotificationConfig": config}))
        .await;
    assert_eq!(saved["taskId"], task["id"]);
    assert_eq!(saved["pushNotificationConfig"]["id"], task["id"], "the id defaults to the task's");
    assert_eq!(saved["pushNotificationConfig"]["authentication"]["schemes"], json!(["Bearer"]));
    let got = app.ok("tasks/pushNotificationConfig/get", json!({"id": task["id"]})).await;
    assert_eq!(got, saved);
    let list = app.ok("tasks/pushNotificationConfig/list", json!({"id": task["id"]})).await;
    assert_eq!(list, json!([saved]));
    let params = json!({"id": task["id"], "pushNotificationConfigId": task["id"]});
    assert_eq!(app.ok("tasks/pushNotificationConfig/delete", params).await, Value::Null);
    assert_eq!(app.ok("tasks/pushNotificationConfig/list", json!({"id": task["id"]})).await, json!([]));
}

#[actix_web::test]
async fn with_card_compat_v03_the_card_carries_the_0_3_fields() {
    let app = spawn_app(|c| c.card.compat_v03 = true).await;
    let card = app.card().await;
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["url"], format!("{}/", app.url));
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["additionalInterfaces"][1], json!({"url": app.url, "transport": "HTTP+JSON"}));
    assert_eq!(card["supportsAuthenticatedExtendedCard"], false);
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0", "the 1.0 fields stay");
}

#[actix_web::test]
async fn the_v1_routes_speak_0_3_protojson() {
    let app = spawn_app(|_| {}).await;
    let body = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "content": [{"text": "rest"}]},
                      "configuration": {"blocking": true}});
    let response = app.client.post(format!("{}/v1/message:send", app.url)).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let sent: Value = response.json().await.unwrap();
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"text": "rest"}));
    let id = task["id"].as_str().unwrap();
    let got: Value = app.client.get(format!("{}/v1/tasks/{id}?historyLength=1", app.url)).json_body().await;
    assert_eq!(got["history"].as_array().unwrap().len(), 1, "{got}");
    assert_eq!(got["history"][0]["role"], "ROLE_AGENT");
    let missing = app.client.get(format!("{}/v1/tasks/nope", app.url)).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let cancel = app.client.post(format!("{}/v1/tasks/{id}:cancel", app.url)).json(&json!({})).send().await.unwrap();
    assert_eq!(cancel.status(), 400, "a completed task is not cancelable");
    let error: Value = cancel.json().await.unwrap();
    assert!(error["error"]["message"].as_str().unwrap().ends_with("already TASK_STATE_COMPLETED"), "{error}");
    let bad = app
        .client
        .post(format!("{}/v1/message:send", app.url))
        .json(&json!({"message": {"role": "ROLE_USER"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let error: Value = bad.json().await.unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("message.content"), "{error}");
    let card = app.client.get(format!("{}/v1/card", app.url)).send().await.unwrap();
    assert_eq!(card.status(), 400, "no extended card configured");
}

#[actix_web::test]
async fn the_v1_stream_sends_protojson_stream_responses() {
    let app = spawn_app(slow_echo(Duration::from_millis(5))).await;
    let body = json!({"message": {"messageId": "m2", "role": "ROLE_USER", "content": [{"text": "ab"}]}});
    let response = app.client.post(format!("{}/v1/message:stream", app.url)).json(&body).send().await.unwrap();
    let events: Vec<Value> =
        SseReader::from_response(response).await.unwrap().rest().await.iter().map(|e| e.json()).collect();
    assert!(events[0].get("task").is_some(), "{:?}", events[0]);
    let last = &events.last().unwrap()["statusUpdate"];
    assert_eq!((last["status"]["state"].as_str(), last["final"].as_bool()), (Some("TASK_STATE_COMPLETED"), Some(true)));
    assert!(events.iter().any(|e| e.get("artifactUpdate").is_some()));
}

/// Reads `n` events of a `/v1/message:stream`, drops the connection, and returns them.
async fn first_v1_events(app: &TestApp, text: &str, n: usize) -> Vec<crate::support::SseEvent> {
    let body = json!({"message": {"messageId": a2ad_protocol::ids::new_id(), "role": "ROLE_USER",
                                  "content": [{"text": text}]}});
    let response = app.client.post(format!("{}/v1/message:stream", app.url)).json(&body).send().await.unwrap();
    let mut reader = SseReader::from_response(response).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..n {
        seen.push(reader.next_data().await.unwrap());
    }
    seen
}

fn assert_resumed_without_gap(mut seen: Vec<crate::support::SseEvent>, resumed: Vec<crate::support::SseEvent>) {
    seen.extend(resumed);
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "contiguous from 1: {seqs:?}");
}

#[actix_web::test]
async fn the_v1_subscribe_resumes_after_last_event_id() {
    let (gated, gates) = crate::support::gated_agent();
    let app = spawn_app(gated).await;
    for post in [false, true] {
        let seen = first_v1_events(&app, "go", 4).await;
        let id = seen[0].json()["task"]["id"].as_str().unwrap().to_owned();
        let last = seen.last().unwrap().seq().to_string();
        let url = format!("{}/v1/tasks/{id}:subscribe", app.url);
        let request = if post { app.client.post(&url).json(&json!({})) } else { app.client.get(&url) };
        let response = request.header("Last-Event-ID", last.as_str()).send().await.unwrap();
        let mut reader = SseReader::from_response(response).await.unwrap();
        crate::support::open_gate(&gates, &id);
        let resumed = reader.rest().await;
        let state = resumed.last().unwrap().json()["statusUpdate"]["status"]["state"].clone();
        assert_eq!(state, "TASK_STATE_COMPLETED", "post: {post}");
        assert!(resumed[0].json().get("task").is_none(), "the resumed stream replays events, not a snapshot");
        assert_resumed_without_gap(seen, resumed);
    }
    let bad = app.client.get(format!("{}/v1/tasks/x:subscribe", app.url)).header("Last-Event-ID", "soon");
    let bad = bad.send().await.unwrap();
    assert_eq!(bad.status(), 400);
    let error: Value = bad.json().await.unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("Last-Event-ID"), "{error}");
}

#[actix_web::test]
async fn json_rpc_resubscribe_resumes_after_the_last_event_id_header() {
    let (gated, gates) = crate::support::gated_agent();
    let app = spawn_app(gated).await;
    let seen = first_v1_events(&app, "go", 4).await;
    let id = seen[0].json()["task"]["id"].as_str().unwrap().to_owned();
    let last = seen.last().unwrap().seq().to_string();
    let reader = app.stream("tasks/resubscribe", json!({"id": id}), &[("Last-Event-ID", last.as_str())]).await;
    let mut reader = reader.unwrap();
    crate::support::open_gate(&gates, &id);
    let resumed = reader.rest().await;
    assert_eq!(resumed.last().unwrap().json()["result"]["status"]["state"], "completed");
    assert_ne!(resumed[0].json()["result"]["kind"], "task", "the resumed stream replays events, not a snapshot");
    assert_resumed_without_gap(seen, resumed);
}

#[actix_web::test]
async fn resubscribe_to_an_interrupted_task_follows_its_next_turn_in_0_3_shape() {
    let app = spawn_app(crate::support::asking_agent()).await;
    let task = app.send_text("hi", json!({})).await;
    let id = task["id"].as_str().unwrap();
    let mut reader = v03_stream(&app, "tasks/resubscribe", json!({"id": id})).await;
    let snapshot = reader.next_data().await.unwrap().json();
    assert_eq!(
        (snapshot["result"]["kind"].clone(), snapshot["result"]["status"]["state"].clone()),
        (json!("task"), json!("input-required"))
    );
    app.send_text("done", json!({"taskId": id})).await;
    let events: Vec<Value> = reader.rest().await.iter().map(|e| e.json()["result"].clone()).collect();
    let states: Vec<(&str, bool)> = events
        .iter()
        .map(|e| (e["status"]["state"].as_str().unwrap(), e["final"].as_bool().unwrap_or(false)))
        .collect();
    assert_eq!(states, [("working", false), ("working", false), ("completed", true)]);
}
