//! Context actors over the wire: parallel contexts, capacity, the session cache. The
//! busy refusal and eviction with rebuild are tested without sockets, in
//! `actors/tests/actors/` (with the rest of the actor core).

use crate::support::{eventually, send_params, slow_echo, spawn_app, TestApp};
use serde_json::{json, Value};
use std::time::Duration;

fn send_in_background(app: &TestApp, params: Value) -> actix_web::rt::task::JoinHandle<Value> {
    let (url, client) = (app.url.clone(), app.client.clone());
    actix_web::rt::spawn(async move {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
        client.post(url).json(&body).send().await.unwrap().json::<Value>().await.unwrap()
    })
}

#[actix_web::test]
async fn fifty_contexts_run_in_parallel() {
    let app = spawn_app(slow_echo(Duration::from_millis(20))).await;
    let calls: Vec<_> = (0..50)
        .map(|i| send_in_background(&app, send_params("abcde", json!({"contextId": format!("par-{i}")}))))
        .collect();
    for call in calls {
        let response = call.await.unwrap();
        assert_eq!(response["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{response}");
    }
    let listed = app.ok("ListTasks", json!({"status": "TASK_STATE_COMPLETED"})).await;
    assert_eq!(listed["totalSize"], 50);
    let stats = app.probe.stats().await.unwrap();
    assert_eq!(stats.live_contexts, 50);
}

#[actix_web::test]
async fn a_full_node_says_so() {
    let app = spawn_app(|c| {
        slow_echo(Duration::from_millis(30))(c);
        c.max_contexts = 2;
    })
    .await;
    let running: Vec<_> = (0..2)
        .map(|i| send_in_background(&app, send_params("0123456789", json!({"contextId": format!("cap-{i}")}))))
        .collect();
    let filled = eventually(200, || async { app.probe.stats().await.unwrap().live_contexts == 2 }).await;
    assert!(filled);
    let error = app.err("SendMessage", send_params("x", json!({"contextId": "cap-extra"}))).await;
    assert_eq!(error["code"], -32050);
    assert_eq!(error["data"][0]["reason"], "SERVER_BUSY");
    assert!(error["message"].as_str().unwrap().contains("capacity"));
    for call in running {
        assert!(call.await.unwrap().get("result").is_some());
    }
}

#[actix_web::test]
async fn an_idle_context_reloads_its_session_from_the_store() {
    let app = spawn_app(|_| {}).await;
    app.send_text("one", json!({"contextId": "sleepy"})).await;
    // Past the session cache TTL (1 s), the actor lives on but has let go of its session.
    actix_web::rt::time::sleep(Duration::from_millis(1300)).await;
    let second = app.send_text("two", json!({"contextId": "sleepy"})).await;
    assert_eq!(second["status"]["message"]["metadata"]["echo"]["sessionMessages"], 2);
    assert_eq!(app.probe.stats().await.unwrap().started_total, 1, "same actor, no eviction");
}
