//! The 0.1 dialect over loopback: `tasks/send`, `tasks/get`, `tasks/cancel` and
//! `tasks/sendSubscribe` on `POST /`, the `/api/v1/transactions` routes, their flat
//! shapes, and their error codes (authentication, not found, quota, permission).

use crate::support::JsonBody as _;
use crate::support::{echo_agent, eventually, slow_echo, spawn_app, SseReader, TestApp};
use a2ad::auth::AuthConfig;
use a2ad_protocol::TaskState;
use serde_json::{json, Value};
use std::time::Duration;

fn text_message(text: &str) -> Value {
    json!({"role": "user", "parts": [{"type": "text", "text": text}]})
}

/// Calls a method with extra headers; returns the HTTP status, `Retry-After` and body.
async fn call(app: &TestApp, headers: &[(&str, &str)], method: &str, params: Value) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let mut request = app.client.post(&app.url).json(&body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry, response.json().await.unwrap())
}

async fn subscribe(app: &TestApp, params: Value) -> SseReader {
    let body = json!({"jsonrpc": "2.0", "id": "sub", "method": "tasks/sendSubscribe", "params": params});
    SseReader::from_response(app.client.post(&app.url).json(&body).send().await.unwrap()).await.expect("a stream")
}

/// Polls `tasks/get` (every 25 ms, at most 400 times) until the task's status is
/// `status`; returns the task.
async fn wait_for(app: &TestApp, id: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        last = app.ok("tasks/get", json!({"id": id})).await;
        if last["status"] == status {
            return last;
        }
        actix_web::rt::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{id} never became {status}: {last}");
}

#[actix_web::test]
async fn tasks_send_with_a_capability_then_get_answers_flat() {
    let app = spawn_app(|c| c.agents.push(echo_agent("upper", TaskState::Completed, 0, Duration::ZERO))).await;
    let sent = app.ok("tasks/send", json!({"capability_id": "upper", "message": text_message("hi 0.1")})).await;
    let id = sent["id"].as_str().unwrap();
    assert!(["submitted", "working", "completed"].contains(&sent["status"].as_str().unwrap()), "{sent}");
    assert!(sent["created_at"].as_str().unwrap().ends_with('Z'), "{sent}");
    // No version header: the task was started by tasks/send, so tasks/get answers 0.1.
    let task = wait_for(&app, id, "completed").await;
    assert_eq!(task["artifacts"], json!([{"name": "echo", "parts": [{"type": "text", "data": "hi 0.1"}]}]));
    assert_eq!((task["metadata"]["tenant"].as_str(), task["metadata"]["principal"].as_str()), (Some(""), Some("")));
    let context_id = task["metadata"]["context_id"].as_str().unwrap();
    // The 1.0 view of the same task: routed to the `upper` skill's agent.
    let v10 = app.ok("GetTask", json!({"id": id})).await;
    assert_eq!(v10["contextId"], context_id);
    assert_eq!(v10["history"][0]["metadata"]["skill"], "upper");
}

#[actix_web::test]
async fn the_session_form_maps_session_to_context_and_id_continues_the_task() {
    let app = spawn_app(|c| c.agents = vec![echo_agent("chat", TaskState::InputRequired, 0, Duration::ZERO)]).await;
    let first =
        app.ok("tasks/send", json!({"id": "gw-1", "sessionId": "sess-1", "message": text_message("one")})).await;
    let id = first["id"].as_str().unwrap().to_owned();
    assert_ne!(id, "gw-1", "a new task gets a node-minted id, reported in the result");
    let task = wait_for(&app, &id, "input-required").await;
    assert_eq!(task["metadata"]["context_id"], "sess-1");
    let again = app.ok("tasks/send", json!({"id": id, "sessionId": "sess-1", "message": text_message("two")})).await;
    assert_eq!(again["id"], id.as_str(), "the id of an existing task continues it");
    let v10 = app.ok("GetTask", json!({"id": id})).await;
    assert!(
        eventually(200, || async {
            app.ok("GetTask", json!({"id": id})).await["history"].as_array().unwrap().len() == 4
        })
        .await,
        "{v10}"
    );
}

#[actix_web::test]
async fn the_input_alone_is_sent_as_a_data_part() {
    let app = spawn_app(|_| {}).await;
    let sent = app.ok("tasks/send", json!({"capability_id": "echo", "input": {"q": 42}})).await;
    let task = wait_for(&app, sent["id"].as_str().unwrap(), "completed").await;
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"type": "data", "data": {"input": {"q": 42}}}));
}

#[actix_web::test]
async fn cancel_and_the_error_codes() {
    let app = spawn_app(slow_echo(Duration::from_millis(100))).await;
    let sent = app.ok("tasks/send", json!({"capability_id": "slow", "message": text_message(&"x".repeat(100))})).await;
    let canceled = app.ok("tasks/cancel", json!({"id": sent["id"]})).await;
    assert_eq!(canceled["status"], "canceled");
    let error = app.err("tasks/cancel", json!({"id": sent["id"]})).await;
    assert_eq!(error["code"], -32003, "not cancelable is permission denied in 0.1: {error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("already canceled") && !message.contains("TASK_STATE"), "0.1 state names: {error}");
    let (_, _, missing) = call(&app, &[("A2A-Version", "0.1")], "tasks/get", json!({"id": "nope"})).await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    let error = app.err("tasks/send", json!({"capability_id": 7})).await;
    assert_eq!(error["code"], -32602);
    assert!(error["message"].as_str().unwrap().contains("capability_id"), "{error}");
}

#[actix_web::test]
async fn a_0_1_version_header_selects_the_0_1_shape_on_shared_methods() {
    let app = spawn_app(|_| {}).await;
    let message =
        json!({"kind": "message", "messageId": "m-03", "role": "user", "parts": [{"kind": "text", "text": "x"}]});
    let task = app.ok("message/send", json!({"message": message})).await;
    assert_eq!(app.ok("tasks/get", json!({"id": task["id"]})).await["kind"], "task", "0.3 by default");
    let (_, _, v01) = call(&app, &[("A2A-Version", "0.1")], "tasks/get", json!({"id": task["id"]})).await;
    assert_eq!(v01["result"]["status"], "completed", "{v01}");
    assert!(v01["result"].get("kind").is_none());
}

#[actix_web::test]
async fn send_subscribe_sends_the_whole_task_on_every_change_then_closes() {
    let app = spawn_app(slow_echo(Duration::from_millis(5))).await;
    let mut reader = subscribe(&app, json!({"capability_id": "slow", "message": text_message("abc")})).await;
    let events = reader.rest().await;
    assert!(events.len() >= 3, "{events:?}");
    assert!(events.iter().all(|e| e.event.as_deref() == Some("task")), "{events:?}");
    let bodies: Vec<Value> = events.iter().map(|e| e.json()).collect();
    assert!(bodies.iter().all(|b| b["jsonrpc"] == "2.0" && b["id"] == "sub" && b["result"]["id"].is_string()));
    let last = &bodies.last().unwrap()["result"];
    assert_eq!(last["status"], "completed");
    assert_eq!(
        last["artifacts"][0]["parts"],
        json!([{"type": "text", "data": "a"}, {"type": "text", "data": "b"}, {"type": "text", "data": "c"}])
    );
}

#[actix_web::test]
async fn send_subscribe_sends_a_heartbeat_and_closes_when_the_window_ends() {
    let app = spawn_app(|c| {
        slow_echo(Duration::from_millis(100))(c);
        c.dialect_01.heartbeat_window = Duration::from_millis(300);
    })
    .await;
    let mut reader = subscribe(&app, json!({"capability_id": "slow", "message": text_message(&"y".repeat(50))})).await;
    let events = reader.rest().await;
    let last = events.last().unwrap();
    assert_eq!((last.event.as_deref(), last.json()), (Some("heartbeat"), json!({"ok": true})), "{events:?}");
    assert!(events[..events.len() - 1].iter().all(|e| e.event.as_deref() == Some("task")));
    let id = events[0].json()["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(app.ok("tasks/get", json!({"id": id})).await["status"], "working", "the task goes on");
}

#[actix_web::test]
async fn send_subscribe_reports_errors_as_error_events() {
    let app = spawn_app(|_| {}).await;
    let mut message = text_message("x");
    message["taskId"] = json!("no-such-task");
    let events = subscribe(&app, json!({"message": message})).await.rest().await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event.as_deref(), Some("error"));
    assert_eq!(events[0].json()["error"]["code"], -32004, "{events:?}");
    let sent = app.ok("tasks/send", json!({"capability_id": "echo", "message": text_message("done")})).await;
    let id = sent["id"].as_str().unwrap();
    wait_for(&app, id, "completed").await;
    let events = subscribe(&app, json!({"id": id, "message": text_message("more")})).await.rest().await;
    assert_eq!((events[0].event.as_deref(), events[0].json()["error"]["code"].as_i64()), (Some("error"), Some(-32003)));
}

fn token_auth() -> AuthConfig {
    serde_yaml_ng::from_str("bearer-tokens:\n  - {token: tok-gw, tenant: acme, principal: gateway}\n").unwrap()
}

#[actix_web::test]
async fn authentication_errors_and_owner_fields() {
    let app = spawn_app(|c| c.auth = token_auth()).await;
    let (status, _, body) = call(&app, &[], "tasks/send", json!({"capability_id": "echo"})).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (401, Some(-32000)), "{body}");
    let (status, _, body) = call(&app, &[("Authorization", "Bearer wrong")], "tasks/sendSubscribe", json!({})).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (401, Some(-32000)), "{body}");
    let rest = app.client.get(format!("{}/api/v1/transactions/x", app.url)).send().await.unwrap();
    assert_eq!(rest.status(), 401);
    assert!(rest.headers().get("www-authenticate").is_some());
    assert_eq!(rest.json::<Value>().await.unwrap()["error"]["code"], -32000);
    let auth = [("Authorization", "Bearer tok-gw")];
    let params = json!({"capability_id": "echo", "message": text_message("a")});
    let (status, _, sent) = call(&app, &auth, "tasks/send", params).await;
    assert_eq!(status, 200, "{sent}");
    let (_, _, task) = call(&app, &auth, "tasks/get", json!({"id": sent["result"]["id"]})).await;
    let metadata = &task["result"]["metadata"];
    assert_eq!(
        (metadata["tenant"].as_str(), metadata["principal"].as_str()),
        (Some("acme"), Some("gateway")),
        "{task}"
    );
}

#[actix_web::test]
async fn a_rate_limited_caller_gets_429_with_retry_after() {
    let app = spawn_app(|c| {
        c.auth = token_auth();
        c.limits.rate_per_second = 0.5;
        c.limits.rate_burst = 1;
    })
    .await;
    let auth = [("Authorization", "Bearer tok-gw")];
    let params = json!({"capability_id": "echo", "message": text_message("a")});
    assert_eq!(call(&app, &auth, "tasks/send", params.clone()).await.0, 200);
    let (status, retry, limited) = call(&app, &auth, "tasks/send", params.clone()).await;
    assert_eq!((status, limited["error"]["code"].as_i64()), (429, Some(-32002)), "{limited}");
    assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    let (status, _, limited) = call(&app, &auth, "tasks/sendSubscribe", params).await;
    assert_eq!((status, limited["error"]["code"].as_i64()), (429, Some(-32002)), "a plain 429, not a stream");
    let rest = app
        .client
        .post(format!("{}/api/v1/transactions", app.url))
        .header("Authorization", "Bearer tok-gw")
        .json(&json!({"capability_id": "echo"}))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 429);
    assert!(rest.headers().get("retry-after").is_some());
    assert_eq!(rest.json::<Value>().await.unwrap()["error"]["code"], -32002);
}

#[actix_web::test]
async fn the_transactions_routes() {
    let app = spawn_app(|_| {}).await;
    let url = format!("{}/api/v1/transactions", app.url);
    let created = app
        .client
        .post(&url)
        .json(&json!({"capability_id": "echo", "message": text_message("rest")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let created: Value = created.json().await.unwrap();
    let id = created["id"].as_str().unwrap();
    let task = wait_for(&app, id, "completed").await;
    let got: Value = app.client.get(format!("{url}/{id}")).json_body().await;
    assert_eq!(got, task);
    let cancel = app.client.post(format!("{url}/{id}/cancel")).send().await.unwrap();
    assert_eq!(cancel.status(), 403, "a completed task: permission denied");
    let error = cancel.json::<Value>().await.unwrap()["error"].clone();
    assert_eq!(error["code"], -32003);
    assert!(error["message"].as_str().unwrap().ends_with("already completed"), "0.1 state names: {error}");
    let missing = app.client.get(format!("{url}/nope")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.json::<Value>().await.unwrap()["error"]["code"], -32001);
    let bad = app.client.post(&url).header("content-type", "application/json").body("{not json").send().await.unwrap();
    assert_eq!(bad.status(), 400);
    let bad = app
        .client
        .post(&url)
        .json(&json!({"message": {"role": "user", "parts": [{"text": "no type"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.unwrap()["error"]["code"], -32602);
}

#[actix_web::test]
async fn older_methods_are_counted_under_their_own_names() {
    let app = spawn_app(|_| {}).await;
    app.ok("tasks/send", json!({"capability_id": "echo", "message": text_message("m")})).await;
    let message =
        json!({"kind": "message", "messageId": "m-metrics", "role": "user", "parts": [{"kind": "text", "text": "x"}]});
    app.ok("message/send", json!({"message": message})).await;
    app.err("tasks/get", json!({"id": "nope"})).await;
    app.client.get(format!("{}/api/v1/transactions/nope", app.url)).send().await.unwrap();
    let text = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    for series in [
        r#"a2ad_requests_total{method="tasks/send",binding="jsonrpc",status="ok"} 1"#,
        r#"a2ad_requests_total{method="message/send",binding="jsonrpc",status="ok"} 1"#,
        r#"a2ad_requests_total{method="tasks/get",binding="jsonrpc",status="TASK_NOT_FOUND"} 1"#,
        r#"a2ad_requests_total{method="tasks/get",binding="rest",status="TASK_NOT_FOUND"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == series), "no {series}:\n{text}");
    }
}
