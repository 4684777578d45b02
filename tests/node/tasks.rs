//! SendMessage, GetTask and CancelTask semantics.

use crate::support::{echo_agent, eventually, reason, send_params, slow_echo, spawn_app};
use a2ad_protocol::TaskState;
use serde_json::json;
use std::time::Duration;

#[actix_web::test]
async fn blocking_send_returns_the_finished_task_with_reply_and_artifact() {
    let app = spawn_app(|_| {}).await;
    let task = app.send_text("hello agent", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "hello agent");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello agent");
    let ts = task["status"]["timestamp"].as_str().unwrap();
    assert!(ts.ends_with('Z') && ts.len() == "2026-01-01T00:00:00.000Z".len(), "millisecond timestamps: {ts}");
    let id = task["id"].as_str().unwrap();
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "7", "task ids are UUID v7: {id}");
    assert!(!task["contextId"].as_str().unwrap().is_empty(), "an omitted contextId is generated");

    let fetched = app.ok("GetTask", json!({"id": id})).await;
    assert_eq!(fetched, task);
}

#[actix_web::test]
async fn snake_case_params_and_enum_numbers_are_accepted() {
    let app = spawn_app(|_| {}).await;
    let result = app
        .ok(
            "SendMessage",
            json!({"message": {"message_id": "m-1", "context_id": "ctx-snake", "role": 1, "parts": [{"text": "hi"}]},
                   "configuration": {"history_length": 1, "return_immediately": false}, "unknownField": 1}),
        )
        .await;
    assert_eq!(result["task"]["contextId"], "ctx-snake");
    assert_eq!(result["task"]["history"].as_array().unwrap().len(), 1);
    let listed = app.ok("ListTasks", json!({"context_id": "ctx-snake", "page_size": "5", "status": 3})).await;
    assert_eq!(listed["totalSize"], 1);
}

#[actix_web::test]
async fn return_immediately_answers_once_the_task_exists() {
    let app = spawn_app(slow_echo(Duration::from_millis(40))).await;
    let task = app.send_text("abcdefghij", json!({"configuration": {"returnImmediately": true}})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "the turn starts at once");
    let id = task["id"].as_str().unwrap().to_owned();
    let done = eventually(200, || async {
        app.ok("GetTask", json!({"id": id})).await["status"]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
    assert!(done, "the detached turn completes");
    let finished = app.ok("GetTask", json!({"id": id})).await;
    assert_eq!(finished["artifacts"][0]["parts"].as_array().unwrap().len(), 10, "one appended chunk per character");
}

#[actix_web::test]
async fn history_length_is_honoured_everywhere() {
    let app = spawn_app(|_| {}).await;
    let task = app.send_text("hi", json!({"configuration": {"historyLength": 0}})).await;
    assert!(task.get("history").is_none(), "0 means no history: {task}");
    let id = task["id"].as_str().unwrap();
    let all = app.ok("GetTask", json!({"id": id})).await;
    assert_eq!(all["history"].as_array().unwrap().len(), 2, "unset means all");
    let last = app.ok("GetTask", json!({"id": id, "historyLength": 1})).await;
    assert_eq!(last["history"].as_array().unwrap().len(), 1);
    assert_eq!(last["history"][0]["role"], "ROLE_AGENT", "the last message is kept");
    let none = app.ok("GetTask", json!({"id": id, "historyLength": 0})).await;
    assert!(none.get("history").is_none());
    let error = app.err("GetTask", json!({"id": id, "historyLength": -1})).await;
    assert_eq!(error["code"], -32602);
}

#[actix_web::test]
async fn follow_ups_continue_interrupted_tasks_only() {
    let app = spawn_app(|c| {
        c.agents = vec![
            echo_agent("chat", TaskState::InputRequired, 0, Duration::ZERO),
            echo_agent("once", TaskState::Completed, 0, Duration::ZERO),
        ]
    })
    .await;
    let first = app.send_text("first", json!({})).await;
    assert_eq!(first["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let (task_id, context_id) = (first["id"].clone(), first["contextId"].clone());

    let second = app.send_text("second", json!({"taskId": task_id, "contextId": context_id})).await;
    assert_eq!(second["id"], task_id, "the same task continues");
    assert_eq!(second["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(second["history"].as_array().unwrap().len(), 4);
    assert_eq!(second["status"]["message"]["metadata"]["echo"]["sessionMessages"], 2);

    let only_task = app.send_text("third", json!({"taskId": task_id})).await;
    assert_eq!(only_task["contextId"], context_id, "the context is inferred from the task");

    let mismatch = app.err("SendMessage", send_params("x", json!({"taskId": task_id, "contextId": "other"}))).await;
    assert_eq!(mismatch["code"], -32602);
    assert!(mismatch["message"].as_str().unwrap().contains("contextId"));

    let unknown = app.err("SendMessage", send_params("x", json!({"taskId": "no-such-task"}))).await;
    assert_eq!(unknown["code"], -32001);

    let done = app.send_text("done", json!({"metadata": {"skill": "once"}})).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    let terminal = app.err("SendMessage", send_params("again", json!({"taskId": done["id"]}))).await;
    assert_eq!((terminal["code"].as_i64(), reason(&terminal)), (Some(-32004), "UNSUPPORTED_OPERATION"));
}

#[actix_web::test]
async fn skills_route_new_contexts_and_contexts_stay_bound() {
    let app = spawn_app(|c| {
        c.agents = vec![
            echo_agent("a", TaskState::Completed, 0, Duration::ZERO),
            echo_agent("b", TaskState::InputRequired, 0, Duration::ZERO),
        ]
    })
    .await;
    let default = app.send_text("x", json!({})).await;
    assert_eq!(default["status"]["state"], "TASK_STATE_COMPLETED", "the first agent is the default");
    let routed = app.send_text("x", json!({"contextId": "ctx-b", "metadata": {"skill": "b"}})).await;
    assert_eq!(routed["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let bound = app.send_text("y", json!({"contextId": "ctx-b"})).await;
    assert_eq!(bound["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "no skill: the bound agent");
    let other =
        app.err("SendMessage", send_params("z", json!({"contextId": "ctx-b", "metadata": {"skill": "a"}}))).await;
    assert_eq!(other["code"], -32602);
    let unknown = app.err("SendMessage", send_params("z", json!({"metadata": {"skill": "nope"}}))).await;
    assert_eq!(unknown["code"], -32602);
    assert!(unknown["message"].as_str().unwrap().contains("nope"));
}

#[actix_web::test]
async fn cancel_stops_a_running_turn() {
    let app = spawn_app(slow_echo(Duration::from_millis(50))).await;
    let text = "abcdefghijklmnopqrstuvwxyz".repeat(4);
    let started = app.send_text(&text, json!({"configuration": {"returnImmediately": true}})).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let working =
        eventually(200, || async { app.ok("GetTask", json!({"id": id})).await.get("artifacts").is_some() }).await;
    assert!(working, "the turn produced output");

    let canceled = app.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let chunks_at_cancel = canceled["artifacts"][0]["parts"].as_array().unwrap().len();
    assert!(chunks_at_cancel < text.len());

    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    let later = app.ok("GetTask", json!({"id": id})).await;
    assert_eq!(later["status"]["state"], "TASK_STATE_CANCELED");
    assert_eq!(later["artifacts"][0]["parts"].as_array().unwrap().len(), chunks_at_cancel, "the turn really stopped");

    let again = app.err("CancelTask", json!({"id": id})).await;
    assert_eq!((again["code"].as_i64(), reason(&again)), (Some(-32002), "TASK_NOT_CANCELABLE"));
    let next = app.send_text("ok", json!({"contextId": later["contextId"]})).await;
    assert_eq!(next["status"]["state"], "TASK_STATE_COMPLETED", "the context is free again");
}

#[actix_web::test]
async fn a_blocking_caller_sees_the_cancel() {
    let app = spawn_app(slow_echo(Duration::from_millis(50))).await;
    let params = send_params(&"x".repeat(100), json!({"contextId": "ctx-cancel"}));
    let blocked = {
        let app_url = app.url.clone();
        let client = app.client.clone();
        actix_web::rt::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
            client.post(app_url).json(&body).send().await.unwrap().json::<serde_json::Value>().await.unwrap()
        })
    };
    let listed =
        eventually(200, || async { app.ok("ListTasks", json!({"contextId": "ctx-cancel"})).await["totalSize"] == 1 })
            .await;
    assert!(listed);
    let task = app.ok("ListTasks", json!({"contextId": "ctx-cancel"})).await["tasks"][0].clone();
    app.ok("CancelTask", json!({"id": task["id"]})).await;
    let response = blocked.await.unwrap();
    assert_eq!(response["result"]["task"]["status"]["state"], "TASK_STATE_CANCELED");
}

#[actix_web::test]
async fn cancel_interrupted_unknown_and_terminal_tasks() {
    let app = spawn_app(|c| c.agents = vec![echo_agent("chat", TaskState::InputRequired, 0, Duration::ZERO)]).await;
    let waiting = app.send_text("hi", json!({})).await;
    let canceled = app.ok("CancelTask", json!({"id": waiting["id"]})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let follow_up = app.err("SendMessage", send_params("more", json!({"taskId": waiting["id"]}))).await;
    assert_eq!(follow_up["code"], -32004, "a canceled task takes no more messages");
    let unknown = app.err("CancelTask", json!({"id": "nope"})).await;
    assert_eq!(unknown["code"], -32001);
}
