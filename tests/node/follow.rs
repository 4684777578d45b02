//! SubscribeToTask on an interrupted task follows it through its next turns until it is
//! terminal (spec digest §5, decision of 2026-12-01), over JSON-RPC and HTTP+JSON SSE.
//! The other transports have a test each in their own file; the client's `tasks watch`
//! in `client.rs`.

use crate::support::{asking_agent, echo_agent, eventually, send_params, spawn_app, NodeProcess, SseEvent, TestApp};
use a2ad_protocol::TaskState;
use serde_json::{json, Value};
use std::time::Duration;

/// `seq kind state` of a JSON-RPC event (`task`, `status`, `artifact`), for comparing
/// streams at a glance.
fn line(event: &SseEvent) -> String {
    let result = event.result();
    let (kind, state) = if let Some(task) = result.get("task") {
        ("task", task["status"]["state"].clone())
    } else if let Some(update) = result.get("statusUpdate") {
        ("status", update["status"]["state"].clone())
    } else {
        ("artifact", Value::Null)
    };
    let state = state.as_str().unwrap_or("").trim_start_matches("TASK_STATE_").to_owned();
    format!("{} {kind} {state}", event.seq())
}

/// Sends `text` to the task and waits for its turn to end.
async fn answer(app: &TestApp, task_id: &str, text: &str) -> Value {
    app.send_text(text, json!({"taskId": task_id})).await
}

#[actix_web::test]
async fn every_subscriber_follows_an_interrupted_task_through_its_turns_to_the_end() {
    let app = spawn_app(asking_agent()).await;
    let task = app.send_text("hi", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = task["id"].as_str().unwrap();
    let mut first = app.stream("SubscribeToTask", json!({"id": id}), &[]).await.unwrap();
    let mut second = app.stream("SubscribeToTask", json!({"id": id}), &[]).await.unwrap();
    for reader in [&mut first, &mut second] {
        let snapshot = reader.next_data().await.unwrap();
        assert_eq!(line(&snapshot), "2 task INPUT_REQUIRED", "the snapshot first");
    }

    // The caller's own stream of the next turn ends with that turn, interrupted again.
    let mut turn = app.stream("SendStreamingMessage", send_params("again", json!({"taskId": id})), &[]).await.unwrap();
    let turn_lines: Vec<String> = turn.rest().await.iter().map(line).collect();
    assert_eq!(turn_lines.last().unwrap(), "4 status INPUT_REQUIRED", "{turn_lines:?}");

    let done = answer(&app, id, "done").await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    let expected =
        ["3 status WORKING", "4 status INPUT_REQUIRED", "5 status WORKING", "6 status WORKING", "7 status COMPLETED"];
    for reader in [&mut first, &mut second] {
        let lines: Vec<String> = reader.rest().await.iter().map(line).collect();
        assert_eq!(lines, expected, "both turns, then the stream ends on the terminal state");
    }
}

#[actix_web::test]
async fn the_rest_subscription_follows_too_and_a_cancel_ends_it() {
    let app = spawn_app(|c| c.agents = vec![echo_agent("chat", TaskState::InputRequired, 0, Duration::ZERO)]).await;
    let task = app.send_text("hi", json!({})).await;
    let id = task["id"].as_str().unwrap();
    let url = format!("{}/a2a/tasks/{id}:subscribe", app.url.trim_end_matches('/'));
    let response = app.client.get(&url).header("A2A-Version", "1.0").send().await.unwrap();
    let mut reader = crate::support::SseReader::from_response(response).await.unwrap();
    let snapshot = reader.next_data().await.unwrap().json();
    assert_eq!(snapshot["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

    answer(&app, id, "more").await;
    let canceled = app.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let states: Vec<String> = reader
        .rest()
        .await
        .iter()
        .map(|e| e.json()["statusUpdate"]["status"]["state"].as_str().unwrap_or("artifact").to_owned())
        .collect();
    assert_eq!(
        states,
        ["TASK_STATE_WORKING", "artifact", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"],
        "the next turn, then the cancel, then the end of the stream"
    );
}

#[actix_web::test]
async fn a_waiting_subscription_gets_keep_alives_and_keeps_its_context_from_eviction() {
    let app = spawn_app(|c| {
        asking_agent()(c);
        c.idle_timeout = Duration::from_millis(100);
        c.stream_keep_alive = Duration::from_millis(50);
    })
    .await;
    let task = app.send_text("hi", json!({"contextId": "watched"})).await;
    let id = task["id"].as_str().unwrap();
    // Subscribed first: the watched context may be evicted (and rebuilt) before that.
    let mut reader = app.stream("SubscribeToTask", json!({"id": id}), &[]).await.unwrap();
    reader.next_data().await.unwrap();
    let other = app.send_text("hi", json!({"contextId": "unwatched"})).await;
    assert_eq!(other["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

    // The unwatched context goes; the watched one stays while its stream waits. On the
    // shared store the stream follows the task in Redis, not in the actor: both go, and
    // the stream stays open without them.
    let watched_alive = usize::from(!crate::support::on_shared_store());
    let evicted = eventually(400, || async {
        let stats = app.probe.stats().await.unwrap();
        stats.live_contexts == watched_alive && stats.evicted_total >= 1
    })
    .await;
    assert!(evicted, "the idle, unwatched context was evicted: {:?}", app.probe.stats().await);
    let evictions = app.probe.stats().await.unwrap().evicted_total;
    let mut comments = 0;
    while comments < 5 {
        let event = reader.next().await.expect("the stream stays open");
        assert!(event.comment.is_some(), "nothing but keep-alives while the task waits: {event:?}");
        comments += 1;
    }
    let stats = app.probe.stats().await.unwrap();
    assert_eq!((stats.live_contexts, stats.evicted_total), (watched_alive, evictions), "as it was: {stats:?}");

    answer(&app, id, "done").await;
    let last = reader.rest().await.pop().unwrap();
    assert_eq!(line(&last), "5 status COMPLETED");
}

#[actix_web::test]
async fn resuming_a_waiting_subscription_replays_then_follows() {
    let app = spawn_app(asking_agent()).await;
    let task = app.send_text("hi", json!({})).await;
    let id = task["id"].as_str().unwrap();
    answer(&app, id, "again").await;
    let mut reader = app.stream("SubscribeToTask", json!({"id": id}), &[("Last-Event-ID", "2")]).await.unwrap();
    let replayed: Vec<String> =
        vec![line(&reader.next_data().await.unwrap()), line(&reader.next_data().await.unwrap())];
    assert_eq!(replayed, ["3 status WORKING", "4 status INPUT_REQUIRED"], "no gap, no duplicate");
    answer(&app, id, "done").await;
    let lines: Vec<String> = reader.rest().await.iter().map(line).collect();
    assert_eq!(lines, ["5 status WORKING", "6 status WORKING", "7 status COMPLETED"]);
}

#[actix_web::test]
async fn a_stopping_node_ends_a_waiting_subscription_with_an_error_that_says_so() {
    let cwd = tempfile::tempdir().unwrap();
    let config = cwd.path().join("a2ad.yml");
    std::fs::write(&config, "agents:\n  - id: chat\n    kind: echo\n    echo: {end-state: input-required}\n").unwrap();
    let node = NodeProcess::start(cwd.path(), &["--config", config.to_str().unwrap()]);
    let remote = node.app_view();
    let task = remote.ok("SendMessage", send_params("hi", json!({}))).await;
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": id}});
    let response = remote.client.post(&remote.url).json(&body).send().await.unwrap();
    let mut reader = crate::support::SseReader::from_response(response).await.unwrap();
    reader.next_data().await.unwrap();

    let stopped = actix_web::rt::task::spawn_blocking(move || node.terminate());
    let events = reader.rest().await;
    assert!(stopped.await.unwrap().success(), "a clean exit");
    let last = events.last().expect("a final event");
    assert_eq!(last.event.as_deref(), Some("error"));
    let error = &last.json()["error"];
    assert_eq!(error["code"], -32050, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("shutting down") && message.contains(&id), "{message}");
}
