//! The same scenarios over JSON-RPC and HTTP+JSON, compared; and tasks created over one
//! binding read, streamed and cancelled over the other.

use crate::support::{send_params, slow_echo, spawn_app, SseEvent, SseReader, TestApp};
use serde_json::{json, Map, Value};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Binding {
    JsonRpc,
    Rest,
}

const BOTH: [Binding; 2] = [Binding::JsonRpc, Binding::Rest];

/// An error as either binding reports it, reduced to what must agree.
#[derive(Debug, PartialEq)]
struct Failure {
    reason: String,
    /// The table's HTTP status: REST's response status; for JSON-RPC, implied by the code.
    http: u16,
}

fn http_for_jsonrpc(code: i64) -> u16 {
    match code {
        -32001 | -32601 => 404,
        -32603 | -32006 => 500,
        -32050 | -32051 => 503,
        _ => 400,
    }
}

/// The REST request for a 1.0 method and its params.
fn rest_request(app: &TestApp, method: &str, params: &Value) -> reqwest::RequestBuilder {
    let base = format!("{}/a2a", app.url);
    let id = params["id"].as_str().unwrap_or("").to_owned();
    let task_id = params["taskId"].as_str().unwrap_or("").to_owned();
    let query: Vec<(String, String)> = params
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| *k != "id")
                .map(|(k, v)| (k.clone(), v.as_str().map_or(v.to_string(), str::to_owned)))
                .collect()
        })
        .unwrap_or_default();
    let c = &app.client;
    match method {
        "SendMessage" => c.post(format!("{base}/message:send")).json(params),
        "SendStreamingMessage" => c.post(format!("{base}/message:stream")).json(params),
        "GetTask" => c.get(format!("{base}/tasks/{id}")).query(&query),
        "ListTasks" => c.get(format!("{base}/tasks")).query(&query),
        "CancelTask" => c.post(format!("{base}/tasks/{id}:cancel")).json(&json!({})),
        "SubscribeToTask" => c.post(format!("{base}/tasks/{id}:subscribe")),
        "CreateTaskPushNotificationConfig" => {
            c.post(format!("{base}/tasks/{task_id}/pushNotificationConfigs")).json(params)
        }
        "GetTaskPushNotificationConfig" => c.get(format!("{base}/tasks/{task_id}/pushNotificationConfigs/{id}")),
        "ListTaskPushNotificationConfigs" => c.get(format!("{base}/tasks/{task_id}/pushNotificationConfigs")),
        "DeleteTaskPushNotificationConfig" => c.delete(format!("{base}/tasks/{task_id}/pushNotificationConfigs/{id}")),
        "GetExtendedAgentCard" => c.get(format!("{base}/extendedAgentCard")),
        other => panic!("no REST route for {other}"),
    }
}

async fn call(app: &TestApp, binding: Binding, method: &str, params: Value) -> Result<Value, Failure> {
    match binding {
        Binding::JsonRpc => {
            let response = app.rpc(method, params).await;
            match response.get("error") {
                Some(e) => Err(Failure {
                    reason: e["data"][0]["reason"].as_str().unwrap_or("").to_owned(),
                    http: http_for_jsonrpc(e["code"].as_i64().unwrap()),
                }),
                None => Ok(response["result"].clone()),
            }
        }
        Binding::Rest => {
            let response = rest_request(app, method, &params).send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            if status == 200 {
                return Ok(body);
            }
            let error = &body["error"];
            assert_eq!(error["code"], status, "the body repeats the HTTP status: {body}");
            assert!(error["status"].is_string(), "{body}");
            Err(Failure { reason: error["details"][0]["reason"].as_str().unwrap_or("").to_owned(), http: status })
        }
    }
}

async fn stream(app: &TestApp, binding: Binding, method: &str, params: Value, headers: &[(&str, &str)]) -> SseReader {
    match binding {
        Binding::JsonRpc => app.stream(method, params, headers).await.unwrap(),
        Binding::Rest => {
            let mut request = rest_request(app, method, &params);
            for (k, v) in headers {
                request = request.header(*k, *v);
            }
            SseReader::from_response(request.send().await.unwrap()).await.unwrap()
        }
    }
}

/// The StreamResponse of an event, whatever the binding's envelope.
fn payload(binding: Binding, event: &SseEvent) -> Value {
    match binding {
        Binding::JsonRpc => event.result(),
        Binding::Rest => event.json(),
    }
}

/// Replaces ids and timestamps, which differ between runs, with their key names.
fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let volatile = matches!(k.as_str(), "id" | "taskId" | "contextId" | "messageId" | "timestamp");
                    (k.clone(), if volatile && v.is_string() { json!(k) } else { normalize(v) })
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// Requires equal (normalised) outcomes of one scenario over both bindings.
fn agree(jsonrpc: Value, rest: Value) -> Value {
    let (jsonrpc, rest) = (normalize(&jsonrpc), normalize(&rest));
    assert_eq!(jsonrpc, rest, "the bindings disagree");
    jsonrpc
}

async fn send_get_cancel(app: &TestApp, b: Binding) -> Value {
    let sent = call(app, b, "SendMessage", send_params("hello", json!({"messageId": "m1"}))).await.unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let got = call(app, b, "GetTask", json!({"id": id, "historyLength": 1})).await.unwrap();
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    let cancel = call(app, b, "CancelTask", json!({"id": id})).await.unwrap_err();
    json!({"sent": sent, "got": got, "cancel": format!("{cancel:?}")})
}

async fn list_pages(app: &TestApp, b: Binding) -> Value {
    let first = call(app, b, "ListTasks", json!({"pageSize": 1, "includeArtifacts": true})).await.unwrap();
    let token = first["nextPageToken"].as_str().unwrap().to_owned();
    let second = call(app, b, "ListTasks", json!({"pageSize": 1, "pageToken": token})).await.unwrap();
    json!([first["totalSize"], first["tasks"].as_array().unwrap().len(), second["nextPageToken"]])
}

#[actix_web::test]
async fn send_get_list_cancel_agree() {
    let app = spawn_app(|_| {}).await;
    agree(send_get_cancel(&app, Binding::JsonRpc).await, send_get_cancel(&app, Binding::Rest).await);
    let lists = agree(list_pages(&app, Binding::JsonRpc).await, list_pages(&app, Binding::Rest).await);
    assert_eq!(lists, json!([2, 1, ""]));
}

async fn streamed(app: &TestApp, b: Binding) -> Value {
    let mut reader = stream(app, b, "SendStreamingMessage", send_params("abc", json!({"messageId": "m"})), &[]).await;
    let events = reader.rest().await;
    Value::Array(events.iter().map(|e| json!({"id": e.seq(), "data": payload(b, e)})).collect())
}

#[actix_web::test]
async fn streams_agree_event_for_event() {
    let app = spawn_app(slow_echo(Duration::from_millis(5))).await;
    let events = agree(streamed(&app, Binding::JsonRpc).await, streamed(&app, Binding::Rest).await);
    assert_eq!(events.as_array().unwrap().len(), 8);
}

async fn subscribed(app: &TestApp, gates: &tempfile::TempDir, b: Binding) -> Value {
    let params = send_params("go", json!({"configuration": {"returnImmediately": true}}));
    let started = call(app, b, "SendMessage", params).await.unwrap();
    let id = started["task"]["id"].as_str().unwrap().to_owned();
    let mut live = stream(app, b, "SubscribeToTask", json!({"id": id}), &[]).await;
    let first = live.next_data().await.unwrap();
    assert!(payload(b, &first).get("task").is_some(), "a subscription starts with the task");
    drop(live);
    // The agent may have said all it says before the gate already, so the snapshot may be
    // all there is until the gate opens: resume from it.
    let mut seen = vec![first];
    let from = seen.last().unwrap().seq().to_string();
    let mut resumed = stream(app, b, "SubscribeToTask", json!({"id": id}), &[("Last-Event-ID", from.as_str())]).await;
    // The task runs until the stream is back (`gated_agent`): a resumption, not a race.
    crate::support::open_gate(gates, &id);
    seen.extend(resumed.rest().await);
    let seqs: Vec<u64> = seen.iter().map(SseEvent::seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "no gap, no duplicate over {b:?}: {seqs:?}");
    json!({"last": payload(b, seen.last().unwrap())["statusUpdate"]["status"]["state"]})
}

#[actix_web::test]
async fn subscribe_agrees() {
    let (gated, gates) = crate::support::gated_agent();
    let app = spawn_app(gated).await;
    let outcome =
        agree(subscribed(&app, &gates, Binding::JsonRpc).await, subscribed(&app, &gates, Binding::Rest).await);
    assert_eq!(outcome["last"], "TASK_STATE_COMPLETED");
}

async fn push_crud(app: &TestApp, b: Binding) -> Value {
    let task = call(app, b, "SendMessage", send_params("x", json!({}))).await.unwrap();
    let task_id = task["task"]["id"].as_str().unwrap().to_owned();
    let config = json!({"taskId": task_id, "id": "hook-1", "url": "http://127.0.0.1:9/h", "token": "t"});
    let created = call(app, b, "CreateTaskPushNotificationConfig", config).await;
    let got = call(app, b, "GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": "hook-1"})).await.unwrap();
    let listed = call(app, b, "ListTaskPushNotificationConfigs", json!({"taskId": task_id})).await.unwrap();
    let deleted =
        call(app, b, "DeleteTaskPushNotificationConfig", json!({"taskId": task_id, "id": "hook-1"})).await.unwrap();
    let again =
        call(app, b, "DeleteTaskPushNotificationConfig", json!({"taskId": task_id, "id": "hook-1"})).await.unwrap();
    let gone =
        call(app, b, "GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": "hook-1"})).await.unwrap_err();
    let refused =
        call(app, b, "CreateTaskPushNotificationConfig", json!({"taskId": task_id, "url": "http://10.1.2.3/"}))
            .await
            .unwrap_err();
    // Delete answers google.protobuf.Empty: `null` over JSON-RPC, `{}` over HTTP+JSON.
    let empty = match b {
        Binding::JsonRpc => Value::Null,
        Binding::Rest => json!({}),
    };
    assert_eq!((&deleted, &again), (&empty, &empty));
    json!({"created": created.unwrap(), "got": got, "listed": listed, "gone": format!("{gone:?}"), "refused": format!("{refused:?}")})
}

#[actix_web::test]
async fn push_config_crud_agrees() {
    let app = spawn_app(|c| {
        c.push.enabled = true;
        c.push.allow = vec!["127.0.0.1/32".into()];
    })
    .await;
    let outcome = agree(push_crud(&app, Binding::JsonRpc).await, push_crud(&app, Binding::Rest).await);
    assert_eq!(outcome["listed"]["configs"].as_array().unwrap().len(), 1);
    assert_eq!(outcome["got"]["url"], "http://127.0.0.1:9/h");
}

#[actix_web::test]
async fn every_error_case_agrees() {
    let app = spawn_app(slow_echo(Duration::from_millis(1))).await;
    let done = app.send_text("x", json!({})).await;
    let done_id = done["id"].as_str().unwrap().to_owned();
    let cases: Vec<(&str, Value, &str, u16)> = vec![
        ("GetTask", json!({"id": "missing"}), "TASK_NOT_FOUND", 404),
        ("CancelTask", json!({"id": done_id}), "TASK_NOT_CANCELABLE", 400),
        ("SendMessage", send_params("again", json!({"taskId": done_id})), "UNSUPPORTED_OPERATION", 400),
        ("SendMessage", send_params("x", json!({"contextId": "bad/ctx"})), "INVALID_PARAMS", 400),
        ("ListTasks", json!({"pageSize": 0}), "INVALID_PARAMS", 400),
        ("SubscribeToTask", json!({"id": done_id}), "UNSUPPORTED_OPERATION", 400),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": done_id, "url": "https://example.com"}),
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            400,
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": done_id, "id": "c"}),
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            400,
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": done_id}), "PUSH_NOTIFICATION_NOT_SUPPORTED", 400),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": done_id, "id": "c"}),
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            400,
        ),
        ("GetExtendedAgentCard", json!({}), "UNSUPPORTED_OPERATION", 400),
    ];
    for (method, params, reason, http) in cases {
        for b in BOTH {
            let failure = call(&app, b, method, params.clone()).await.unwrap_err();
            assert_eq!(failure, Failure { reason: reason.into(), http }, "{method} over {b:?}");
        }
    }
    // Version and body errors, which never reach a method.
    let rest = app.client.get(format!("{}/a2a/tasks", app.url)).header("A2A-Version", "99.0").send().await.unwrap();
    assert_eq!(rest.status(), 400);
    assert_eq!(rest.json::<Value>().await.unwrap()["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED");
    let rest = app
        .client
        .post(format!("{}/a2a/message:send", app.url))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 400);
    let rest = app
        .client
        .post(format!("{}/a2a/message:send", app.url))
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 415);
    assert_eq!(rest.json::<Value>().await.unwrap()["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED");
    let rest = app.client.get(format!("{}/a2a/tasks?includeArtifacts=maybe", app.url)).send().await.unwrap();
    assert_eq!(rest.status(), 400);
}

#[actix_web::test]
async fn a_task_made_over_one_binding_is_served_by_the_other() {
    let app = spawn_app(slow_echo(Duration::from_millis(20))).await;
    let made = call(&app, Binding::Rest, "SendMessage", send_params("hi", json!({}))).await.unwrap();
    let id = made["task"]["id"].clone();
    let read = call(&app, Binding::JsonRpc, "GetTask", json!({"id": id})).await.unwrap();
    assert_eq!(read, made["task"]);

    let slow = call(
        &app,
        Binding::JsonRpc,
        "SendMessage",
        send_params(&"z".repeat(100), json!({"configuration": {"returnImmediately": true}})),
    )
    .await
    .unwrap();
    let slow_id = slow["task"]["id"].as_str().unwrap().to_owned();
    let mut watching = stream(&app, Binding::Rest, "SubscribeToTask", json!({"id": slow_id}), &[]).await;
    assert!(watching.next_data().await.unwrap().json().get("task").is_some());
    let canceled = call(&app, Binding::Rest, "CancelTask", json!({"id": slow_id})).await.unwrap();
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let rest = watching.rest().await;
    assert_eq!(rest.last().unwrap().json()["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED");
    let listed = call(&app, Binding::Rest, "ListTasks", json!({"status": "TASK_STATE_CANCELED"})).await.unwrap();
    assert_eq!(listed["totalSize"], 1);
}

#[actix_web::test]
async fn tenant_prefixed_routes_and_the_card() {
    let app = spawn_app(|_| {}).await;
    let response = app
        .client
        .post(format!("{}/a2a/acme/message:send", app.url))
        .json(&send_params("t", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/a2a+json");
    let task: Value = response.json().await.unwrap();
    let id = task["task"]["id"].as_str().unwrap();
    let got = app.client.get(format!("{}/a2a/acme/tasks/{id}", app.url)).send().await.unwrap();
    assert_eq!(got.status(), 200);
    let card = app.card().await;
    let bindings: Vec<&str> = crate::card::interfaces(&card).into_iter().map(|(binding, ..)| binding).collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    assert_eq!(card["supportedInterfaces"][1]["url"], format!("{}/a2a", app.url));
    let subscribe_get = app.client.get(format!("{}/a2a/tasks/{id}:subscribe", app.url)).send().await.unwrap();
    assert_eq!(subscribe_get.status(), 400, "GET :subscribe is routed (and the task is terminal)");
}
