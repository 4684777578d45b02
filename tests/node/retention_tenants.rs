//! Per-tenant retention on a node with authentication: each tenant's terminal tasks go by
//! its own `retention.tenants.<t>` rule, the other tenant's stay, and `ListTasks`
//! `totalSize` (read from the store's counters) follows the removals.

use crate::support::{eventually, send_params, spawn_app, TestApp};
use a2ad::auth::AuthConfig;
use a2ad::config::RetentionConfig;
use serde_json::{json, Value};
use std::time::Duration;

/// Tenant `counted` keeps its 2 newest finished tasks whatever their age; tenant `aged`
/// keeps finished tasks 1.5 s whatever their number. Nothing else expires.
const RETENTION: &str = "max-age: never\nmax-tasks: never\nsweep-interval: 100ms\n\
    tenants:\n  counted: {max-tasks: 2}\n  aged: {max-age: 1500ms}\n";

async fn two_tenant_node() -> TestApp {
    let auth = "bearer-tokens:\n  - {token: tok-counted, tenant: counted, principal: cy}\n  \
                - {token: tok-aged, tenant: aged, principal: ay}\n";
    spawn_app(|c| {
        c.auth = serde_yaml_ng::from_str::<AuthConfig>(auth).unwrap();
        c.retention = serde_yaml_ng::from_str::<RetentionConfig>(RETENTION).unwrap();
    })
    .await
}

/// A JSON-RPC call with `token`; returns its `result`.
async fn call(app: &TestApp, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let request = app.client.post(&app.url).bearer_auth(token).json(&body);
    let response: Value = request.send().await.unwrap().json().await.unwrap();
    assert!(response.get("error").is_none(), "{method}: {response}");
    response["result"].clone()
}

async fn send(app: &TestApp, token: &str, context: &str, text: &str) -> String {
    let result = call(app, token, "SendMessage", send_params(text, json!({"contextId": context}))).await;
    assert_eq!(result["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{result}");
    result["task"]["id"].as_str().unwrap().to_owned()
}

/// (totalSize, the ids listed) of the tenant's tasks matching `filter`.
async fn listed(app: &TestApp, token: &str, filter: Value) -> (u64, Vec<String>) {
    let page = call(app, token, "ListTasks", filter).await;
    let ids = page["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
    (page["totalSize"].as_u64().unwrap(), ids)
}

#[actix_web::test]
async fn each_tenant_is_pruned_by_its_own_rule_and_totals_follow() {
    let app = two_tenant_node().await;
    let mut counted = Vec::new();
    for i in 0..5 {
        counted.push(send(&app, "tok-counted", "ctx-c", &format!("c{i}")).await);
        actix_web::rt::time::sleep(Duration::from_millis(3)).await; // Distinct status times.
    }
    let mut aged = Vec::new();
    for i in 0..3 {
        aged.push(send(&app, "tok-aged", "ctx-a", &format!("a{i}")).await);
    }
    // `counted` down to 2 shows a sweep ran after `aged`'s 3 tasks were written; they are
    // younger than 1.5 s then (sweeps run every 100 ms), so only a count rule could remove one.
    let counted_pruned = || async { listed(&app, "tok-counted", json!({})).await.0 == 2 };
    assert!(eventually(400, counted_pruned).await, "max-tasks 2 applied to tenant counted");
    let newest: Vec<String> = counted[3..].iter().rev().cloned().collect();
    assert_eq!(listed(&app, "tok-counted", json!({})).await, (2, newest.clone()));
    let (aged_total, _) = listed(&app, "tok-aged", json!({})).await;
    assert_eq!(aged_total, 3, "tenant aged has no count limit: its 3 tasks stay until they age");

    let aged_gone = || async { listed(&app, "tok-aged", json!({})).await.0 == 0 };
    assert!(eventually(400, aged_gone).await, "max-age applied to tenant aged");
    for (filter, what) in [
        (json!({}), "all"),
        (json!({"contextId": "ctx-a"}), "by context"),
        (json!({"status": "TASK_STATE_COMPLETED"}), "by state"),
    ] {
        assert_eq!(listed(&app, "tok-aged", filter).await, (0, vec![]), "{what}");
    }
    // Older than `aged`'s max-age by now, yet kept: tenant counted has no age limit.
    for (filter, what) in [
        (json!({}), "all"),
        (json!({"contextId": "ctx-c"}), "by context"),
        (json!({"status": "TASK_STATE_COMPLETED"}), "by state"),
        (json!({"contextId": "ctx-c", "status": "TASK_STATE_COMPLETED"}), "by context and state"),
    ] {
        assert_eq!(listed(&app, "tok-counted", filter).await, (2, newest.clone()), "{what}");
    }
    assert_eq!(listed(&app, "tok-counted", json!({"status": "TASK_STATE_FAILED"})).await, (0, vec![]));
    let paged = call(&app, "tok-counted", "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!((paged["totalSize"].as_u64(), paged["tasks"][0]["id"].as_str()), (Some(2), Some(newest[0].as_str())));
    let next =
        call(&app, "tok-counted", "ListTasks", json!({"pageSize": 1, "pageToken": paged["nextPageToken"]})).await;
    assert_eq!((next["totalSize"].as_u64(), next["tasks"][0]["id"].as_str()), (Some(2), Some(newest[1].as_str())));
    assert_eq!(next["nextPageToken"], "");
}
