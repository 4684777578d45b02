//! Bad input: each case gets a clear, specific error, and the node stays healthy.

use crate::support::JsonBody as _;
use crate::support::{reason, send_params, spawn_app};
use serde_json::{json, Value};

#[actix_web::test]
async fn malformed_json_is_a_parse_error_with_null_id() {
    let app = spawn_app(|_| {}).await;
    let response = app.post_raw(r#"{"jsonrpc": "2.0", "id": 5, "method": "#, "application/json").await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["jsonrpc"], "2.0");
}

#[actix_web::test]
async fn bad_envelopes_are_invalid_requests() {
    let app = spawn_app(|_| {}).await;
    for (body, id) in [
        (json!([{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]), Value::Null),
        (json!(42), Value::Null),
        (json!("text"), Value::Null),
        (json!({"jsonrpc": "1.0", "id": 3, "method": "GetTask", "params": {"id": "x"}}), json!(3)),
        (json!({"id": 4, "method": "GetTask"}), json!(4)),
        (json!({"jsonrpc": "2.0", "id": 5}), json!(5)),
        (json!({"jsonrpc": "2.0", "id": true, "method": "GetTask"}), Value::Null),
    ] {
        let response: Value = app.post_raw(body.to_string(), "application/json").await.json().await.unwrap();
        assert_eq!(response["error"]["code"], -32600, "{body} -> {response}");
        assert_eq!(response["id"], id, "{body}");
    }
}

#[actix_web::test]
async fn unknown_methods_are_not_found() {
    let app = spawn_app(|_| {}).await;
    let error = app.err("tasks/doSomething", json!({})).await;
    assert_eq!(error["code"], -32601);
    assert!(error["message"].as_str().unwrap().contains("tasks/doSomething"));
}

#[actix_web::test]
async fn missing_or_invalid_params_name_the_field() {
    let app = spawn_app(|_| {}).await;
    let error = app.err("SendMessage", json!({})).await;
    assert_eq!(error["code"], -32602);
    assert!(error["message"].as_str().unwrap().contains("message"), "{error}");

    let error = app.err("GetTask", json!({"id": "x", "historyLength": "lots"})).await;
    assert_eq!(error["code"], -32602);
    assert!(error["message"].as_str().unwrap().contains("historyLength"), "{error}");

    let error = app.err("SendMessage", json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}})).await;
    assert_eq!(error["code"], -32602);
    assert!(error["message"].as_str().unwrap().contains("message.parts"), "{error}");

    let error = app
        .err(
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "url": "b"}]}}),
        )
        .await;
    assert!(error["message"].as_str().unwrap().contains("message.parts[0]"), "{error}");

    let error = app
        .err("SendMessage", json!({"message": {"messageId": "m", "role": "ROLE_BOSS", "parts": [{"text": "a"}]}}))
        .await;
    assert!(error["message"].as_str().unwrap().contains("message.role"), "{error}");

    let error = app.err("ListTasks", json!({"pageSize": true})).await;
    assert!(error["message"].as_str().unwrap().contains("pageSize"), "{error}");

    let error = app.err("GetTask", json!([1, 2])).await;
    assert_eq!(error["code"], -32602);
}

#[actix_web::test]
async fn an_oversized_body_is_refused_and_the_node_stays_healthy() {
    let app = spawn_app(|c| c.body_limit = 64 * 1024).await;
    let huge = "x".repeat(512 * 1024);
    let body = send_params(&huge, json!({}));
    let envelope = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": body});
    let response = app.post_raw(envelope.to_string(), "application/json").await;
    assert_eq!(response.status(), 413);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], -32600);
    assert_eq!(reason(&error["error"]), "PAYLOAD_TOO_LARGE");
    assert!(error["error"]["message"].as_str().unwrap().contains("65536"));

    let health = app.client.get(format!("{}/health", app.url)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let task = app.send_text("still here", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let listed = app.ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 1, "the refused message stored nothing");
}

#[actix_web::test]
async fn a_body_not_declared_as_json_is_refused_with_415() {
    // Over the real binary, on both bindings: HTTP 415, and the ContentTypeNotSupported row
    // in each binding's error shape.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let node = crate::support::NodeProcess::start(dir.path(), &["--data-dir", data.to_str().unwrap()]);
    let client = reqwest::Client::new();
    let post = |url: String, body: String| client.post(url).header("content-type", "text/plain").body(body).send();
    let response = post(node.url.clone(), "hello agent".into()).await.unwrap();
    assert_eq!(response.status(), 415);
    let body: Value = response.json().await.unwrap();
    assert_eq!((body["error"]["code"].clone(), body["id"].clone()), (json!(-32005), Value::Null));
    // A valid JSON-RPC body as `text/plain` (a CORS simple request) is refused too.
    let ok = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let response = post(node.url.clone(), ok.to_string()).await.unwrap();
    assert_eq!(response.status(), 415);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["data"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED");
    let rest = post(format!("{}/a2a/message:send", node.url), "hi".into()).await.unwrap();
    assert_eq!(rest.status(), 415);
    let body: Value = rest.json().await.unwrap();
    assert_eq!(
        (body["error"]["code"].clone(), body["error"]["details"][0]["reason"].clone()),
        (json!(415), json!("CONTENT_TYPE_NOT_SUPPORTED")),
        "{body}"
    );
}

#[actix_web::test]
async fn unsupported_versions_are_refused_and_1_x_is_served() {
    let app = spawn_app(|_| {}).await;
    let envelope = json!({"jsonrpc": "2.0", "id": 9, "method": "ListTasks", "params": {}});
    for (version, code) in
        [("99.0", Some(-32009)), ("2.0", Some(-32009)), ("INVALID", Some(-32009)), ("1.0", None), ("1.2", None)]
    {
        let response: Value =
            app.client.post(&app.url).header("A2A-Version", version).json(&envelope).json_body().await;
        match code {
            Some(code) => {
                assert_eq!(response["error"]["code"], code, "{version}");
                assert_eq!(reason(&response["error"]), "VERSION_NOT_SUPPORTED");
                assert_eq!(response["id"], 9);
            }
            None => assert!(response.get("result").is_some(), "{version}: {response}"),
        }
    }
}

#[actix_web::test]
async fn undeclared_capabilities_get_the_spec_errors_not_method_not_found() {
    let app = spawn_app(|_| {}).await;
    for method in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        let error = app.err(method, json!({"taskId": "t", "id": "c", "url": "https://example.com"})).await;
        assert_eq!((error["code"].as_i64(), reason(&error)), (Some(-32003), "PUSH_NOTIFICATION_NOT_SUPPORTED"));
    }
    let card = app.err("GetExtendedAgentCard", json!({})).await;
    assert_eq!(card["code"], -32004);
}

#[actix_web::test]
async fn client_ids_are_validated_and_errors_name_the_field() {
    let app = spawn_app(|_| {}).await;
    for (extra, field) in [
        (json!({"contextId": "bad/id"}), "message.contextId"),
        (json!({"contextId": "c".repeat(129)}), "message.contextId"),
        (json!({"contextId": ""}), "message.contextId"),
        (json!({"taskId": "t t"}), "message.taskId"),
        (json!({"referenceTaskIds": ["ok", "no!"]}), "message.referenceTaskIds"),
    ] {
        let error = app.err("SendMessage", send_params("hi", extra.clone())).await;
        assert_eq!(error["code"], -32602, "{extra}");
        assert!(error["message"].as_str().unwrap().contains(field), "{extra}: {error}");
        assert_eq!(error["data"][0]["metadata"]["field"], field);
    }
    let mut params = send_params("hi", json!({}));
    params["message"]["messageId"] = json!("");
    let error = app.err("SendMessage", params).await;
    assert!(error["message"].as_str().unwrap().contains("message.messageId"));
    let listed = app.ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 0, "nothing was stored for refused messages");
}

#[actix_web::test]
async fn errors_carry_error_info_and_leak_nothing() {
    let app = spawn_app(|_| {}).await;
    let error = app.err("GetTask", json!({"id": "no-such-task"})).await;
    assert_eq!(error["code"], -32001);
    let info = &error["data"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert_eq!(info["reason"], "TASK_NOT_FOUND");
    let text = error.to_string();
    assert!(!text.contains(&app._dir.path().display().to_string()), "no paths in errors");
    assert!(!text.contains("panicked") && !text.contains(".rs:"), "no backtraces in errors");
}
