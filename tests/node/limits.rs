//! Rate and concurrency limits, and per-binding body limits.

use crate::support::{send_params, slow_echo, spawn_app, TestApp};
use a2ad::auth::AuthConfig;
use serde_json::{json, Value};
use std::time::Duration;

fn two_tenants() -> AuthConfig {
    serde_yaml_ng::from_str(
        "bearer-tokens:\n  - {token: tok-a, tenant: ta, principal: a}\n  - {token: tok-a2, tenant: ta, principal: a2}\n  - {token: tok-b, tenant: tb, principal: b}\n",
    )
    .unwrap()
}

async fn rpc_as(app: &TestApp, token: &str, method: &str, params: Value) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response =
        app.client.post(&app.url).header("Authorization", format!("Bearer {token}")).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry, response.json().await.unwrap())
}

#[actix_web::test]
async fn the_request_rate_is_limited_per_principal() {
    let app = spawn_app(|c| {
        c.auth = two_tenants();
        c.limits.rate_per_second = 0.5;
        c.limits.rate_burst = 3;
    })
    .await;
    for _ in 0..3 {
        let (status, _, _) = rpc_as(&app, "tok-a", "ListTasks", json!({})).await;
        assert_eq!(status, 200);
    }
    let (status, retry, body) = rpc_as(&app, "tok-a", "ListTasks", json!({})).await;
    assert_eq!(status, 429);
    assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(body["error"]["code"], -32052);
    assert_eq!(body["error"]["data"][0]["reason"], "RATE_LIMITED");
    let rest =
        app.client.get(format!("{}/a2a/tasks", app.url)).header("Authorization", "Bearer tok-a").send().await.unwrap();
    assert_eq!(rest.status(), 429);
    assert!(rest.headers().contains_key("retry-after"));
    let (status, _, _) = rpc_as(&app, "tok-a2", "ListTasks", json!({})).await;
    assert_eq!(status, 200, "another principal has its own bucket");
}

#[actix_web::test]
async fn running_turns_are_limited_per_tenant_and_per_node() {
    let app = spawn_app(|c| {
        slow_echo(Duration::from_millis(30))(c);
        c.auth = two_tenants();
        c.limits.max_running_turns_per_tenant = 1;
        c.limits.max_running_turns = 2;
    })
    .await;
    let slow = |ctx: &str| {
        send_params(&"x".repeat(40), json!({"contextId": ctx, "configuration": {"returnImmediately": true}}))
    };
    let (_, _, first) = rpc_as(&app, "tok-a", "SendMessage", slow("a-1")).await;
    assert!(first.get("result").is_some(), "{first}");
    let (_, _, second) = rpc_as(&app, "tok-a2", "SendMessage", slow("a-2")).await;
    assert_eq!(second["error"]["code"], -32053, "{second}");
    assert!(second["error"]["message"].as_str().unwrap().contains("tenant"), "{second}");
    let (_, _, other) = rpc_as(&app, "tok-b", "SendMessage", slow("b-1")).await;
    assert!(other.get("result").is_some(), "another tenant still runs: {other}");
    let (_, _, full) = rpc_as(&app, "tok-b", "SendMessage", slow("b-2")).await;
    assert_eq!(full["error"]["code"], -32053);
    assert!(
        full["error"]["message"].as_str().unwrap().contains("node")
            || full["error"]["message"].as_str().unwrap().contains("tenant")
    );
    // Cancelling frees the place.
    let task_id = first["result"]["task"]["id"].clone();
    rpc_as(&app, "tok-a", "CancelTask", json!({"id": task_id})).await;
    let (_, _, again) = rpc_as(&app, "tok-a2", "SendMessage", slow("a-3")).await;
    assert!(again.get("result").is_some(), "the cancelled turn released its place: {again}");
}

#[actix_web::test]
async fn each_binding_has_its_own_body_limit() {
    let app = spawn_app(|c| c.limits.rest_body_limit = Some(2048)).await;
    let big = send_params(&"y".repeat(4096), json!({}));
    let rest = app.client.post(format!("{}/a2a/message:send", app.url)).json(&big).send().await.unwrap();
    assert_eq!(rest.status(), 413);
    let body: Value = rest.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "PAYLOAD_TOO_LARGE");
    let rpc = app.ok("SendMessage", big).await;
    assert_eq!(rpc["task"]["status"]["state"], "TASK_STATE_COMPLETED", "JSON-RPC keeps its 1 MiB limit");
}
