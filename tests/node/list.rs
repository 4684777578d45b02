//! ListTasks: filters, ordering, pagination, and the shape of the result.

use crate::support::{echo_agent, spawn_app, TestApp};
use a2ad_protocol::TaskState;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

async fn seeded() -> (TestApp, Vec<Value>) {
    let app = spawn_app(|c| {
        c.agents = vec![
            echo_agent("done", TaskState::Completed, 0, Duration::ZERO),
            echo_agent("ask", TaskState::InputRequired, 0, Duration::ZERO),
        ]
    })
    .await;
    let mut tasks = Vec::new();
    for i in 0..5 {
        tasks.push(app.send_text(&format!("a{i}"), json!({"contextId": "ctx-a"})).await);
        // Distinct status timestamps make the expected order unambiguous.
        actix_web::rt::time::sleep(Duration::from_millis(3)).await;
    }
    for i in 0..2 {
        let extra = json!({"contextId": format!("ctx-b{i}"), "metadata": {"skill": "ask"}});
        tasks.push(app.send_text("b", extra).await);
        actix_web::rt::time::sleep(Duration::from_millis(3)).await;
    }
    (app, tasks)
}

fn ids(result: &Value) -> Vec<String> {
    result["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect()
}

#[actix_web::test]
async fn newest_first_with_all_four_fields() {
    let (app, tasks) = seeded().await;
    let result = app.ok("ListTasks", json!({})).await;
    assert_eq!(result["totalSize"], 7);
    assert_eq!(result["pageSize"], 50);
    assert_eq!(result["nextPageToken"], "");
    let expected: Vec<String> = tasks.iter().rev().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids(&result), expected);
    let first = &result["tasks"][0];
    assert!(first.get("artifacts").is_none(), "artifacts are omitted by default");
    let with = app.ok("ListTasks", json!({"includeArtifacts": true, "historyLength": 0})).await;
    assert!(with["tasks"][0]["artifacts"].is_array());
    assert!(with["tasks"][0].get("history").is_none());
}

#[actix_web::test]
async fn filters_by_context_status_and_time() {
    let (app, tasks) = seeded().await;
    let ctx = app.ok("ListTasks", json!({"contextId": "ctx-a"})).await;
    assert_eq!(ctx["totalSize"], 5);
    let waiting = app.ok("ListTasks", json!({"status": "TASK_STATE_INPUT_REQUIRED"})).await;
    assert_eq!(waiting["totalSize"], 2);
    let unspecified = app.ok("ListTasks", json!({"status": "TASK_STATE_UNSPECIFIED"})).await;
    assert_eq!(unspecified["totalSize"], 7, "UNSPECIFIED means no filter");
    let cutoff = tasks[4]["status"]["timestamp"].as_str().unwrap();
    let recent = app.ok("ListTasks", json!({"statusTimestampAfter": cutoff})).await;
    assert_eq!(recent["totalSize"], 3, "tasks at or after {cutoff}");
    let none = app.ok("ListTasks", json!({"contextId": "ctx-none"})).await;
    assert_eq!((none["totalSize"].as_i64(), none["tasks"].as_array().unwrap().len()), (Some(0), 0));
}

#[actix_web::test]
async fn pages_cover_everything_once_in_order() {
    let (app, _) = seeded().await;
    let everything = ids(&app.ok("ListTasks", json!({})).await);
    let mut seen = Vec::new();
    let mut token = String::new();
    for _ in 0..10 {
        let page = app.ok("ListTasks", json!({"pageSize": 2, "pageToken": token})).await;
        assert_eq!(page["pageSize"], 2);
        assert_eq!(page["totalSize"], 7);
        seen.extend(ids(&page));
        token = page["nextPageToken"].as_str().unwrap().to_owned();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(seen, everything);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 7);
}

#[actix_web::test]
async fn bad_page_sizes_and_tokens_are_invalid_params() {
    let (app, _) = seeded().await;
    for size in [json!(0), json!(101), json!(-5)] {
        let error = app.err("ListTasks", json!({"pageSize": size})).await;
        assert_eq!(error["code"], -32602);
        assert!(error["message"].as_str().unwrap().contains("pageSize"));
    }
    let error = app.err("ListTasks", json!({"pageToken": "garbage!"})).await;
    assert!(error["message"].as_str().unwrap().contains("pageToken"));
    let error = app.err("ListTasks", json!({"historyLength": -1})).await;
    assert_eq!(error["code"], -32602);
    let error = app.err("ListTasks", json!({"statusTimestampAfter": "yesterday"})).await;
    assert!(error["message"].as_str().unwrap().contains("statusTimestampAfter"));
}
