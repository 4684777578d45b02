//! `store: memory`: a node that keeps its tasks in memory says so, serves every method
//! as on disk, is bounded by retention, writes no store to its data dir, and forgets
//! everything when it stops.

use crate::support::{eventually, send_params, spawn_app, NodeProcess};
use a2ad::config::StoreKind;
use serde_json::json;

#[actix_web::test]
async fn a_memory_node_serves_tasks_keeps_no_store_on_disk_and_retention_bounds_it() {
    let app = spawn_app(|c| {
        c.store = StoreKind::Memory;
        c.retention = serde_yaml_ng::from_str("max-age: never\nmax-tasks: 3\nsweep-interval: 100ms\n").unwrap();
    })
    .await;
    let mut ids = Vec::new();
    for i in 0..6 {
        let task = app.ok("SendMessage", send_params(&format!("m{i}"), json!({"contextId": "ctx-m"}))).await;
        assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        ids.push(task["task"]["id"].as_str().unwrap().to_owned());
    }
    let last = app.ok("GetTask", json!({"id": ids[5]})).await;
    assert_eq!(last["history"][0]["parts"][0]["text"], "m5");
    let bounded = eventually(3000, || async {
        app.ok("ListTasks", json!({})).await["tasks"].as_array().is_some_and(|tasks| tasks.len() == 3)
    })
    .await;
    assert!(bounded, "retention keeps the last 3 finished tasks in memory too");
    let next = app.ok("SendMessage", send_params("again", json!({"contextId": "ctx-m"}))).await;
    let seen = &next["task"]["status"]["message"]["metadata"]["echo"]["sessionMessages"];
    assert_eq!(*seen, 12, "the session (two messages a turn) is kept in memory across turns");
    let data = app._dir.path().join("data");
    for file in ["conf", "db", "wal"] {
        assert!(!data.join(file).exists(), "no {file} in the data dir of a memory node");
    }
}

#[actix_web::test]
async fn a_memory_node_says_so_at_start_up_and_forgets_everything_when_it_stops() {
    let cwd = tempfile::tempdir().unwrap();
    let log = cwd.path().join("node.log");
    let node = NodeProcess::start_logging_with_env(cwd.path(), &[], &log, &[("A2AD_STORE", "memory")]);
    let task = node.app_view().ok("SendMessage", send_params("hello", json!({}))).await;
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    assert!(node.terminate().success());
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("store: memory") && logged.contains("lost when it stops"), "{logged}");

    let node = NodeProcess::start_logging_with_env(cwd.path(), &[], &log, &[("A2AD_STORE", "memory")]);
    let remote = node.app_view();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}});
    let gone: serde_json::Value =
        remote.client.post(&remote.url).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(gone["error"]["code"], -32001, "a restarted memory node knows no task: {gone}");
    assert!(node.terminate().success());
}
