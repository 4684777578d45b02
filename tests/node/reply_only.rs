//! Message-only replies (the command agent's jsonl `reply` event as its first event): a
//! blocking send answers with the message and no task is left behind; every streaming
//! binding sends exactly one `message` event and closes; the context's next turn sees
//! the reply in its history; a reply after other events ends a normal, kept task.

use crate::support::{self, reason, send_params, spawn_app, NodeProcess, SseReader, TestApp};
use a2a_pb::proto::{self, a2a_service_client::A2aServiceClient, part, stream_response};
use a2ad::agents::command::{InputMode, OutputMode};
use a2ad::config::{AgentConfig, AgentKind};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

/// Replies at once; the reply says whether the history (stdin, `input: json`) holds an
/// earlier reply of this agent, and names the task id the turn ran under.
pub(crate) const REPLY: &str = r#"input=$(cat)
case "$input" in *'history=none'*) h=seen;; *) h=none;; esac
echo "{\"type\":\"reply\",\"text\":\"answer history=$h task=$A2A_TASK_ID\"}""#;

/// Says something first, then replies: the reply is the final message of a normal task.
const MIXED: &str = r#"cat >/dev/null
echo '{"type":"text","text":"working on it"}'
echo '{"type":"reply","text":"late reply"}'"#;

/// A jsonl command agent that runs `script` with `sh -c` and gets its input as JSON.
pub(crate) fn command_agent(id: &str, script: &str) -> AgentConfig {
    let mut settings = support::command_settings(&["/bin/sh", "-c", script], OutputMode::Jsonl);
    settings.input = InputMode::Json;
    support::command_agent(id, settings)
}

async fn app() -> TestApp {
    spawn_app(|c| c.agents = vec![command_agent("reply", REPLY), command_agent("mixed", MIXED)]).await
}

/// The task id a REPLY answer names.
fn task_id_in(text: &str) -> String {
    text.rsplit("task=").next().unwrap().to_owned()
}

fn text_of(message: &Value) -> &str {
    message["parts"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {message}"))
}

fn sample(exposition: &str, line_start: &str) -> Option<f64> {
    exposition.lines().find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' ')?.trim().parse().ok())
}

async fn assert_gone(app: &TestApp, task_id: &str) {
    let error = app.err("GetTask", json!({"id": task_id})).await;
    assert_eq!(reason(&error), "TASK_NOT_FOUND", "{error}");
    let list = app.ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 0, "{list}");
    let metrics = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    for state in ["working", "completed"] {
        let line = format!(r#"a2ad_tasks{{state="{state}"}}"#);
        assert_eq!(sample(&metrics, &line), Some(0.0), "{line}: {metrics}");
    }
}

#[actix_web::test]
async fn a_blocking_reply_is_a_message_and_leaves_no_task() {
    let app = app().await;
    let result = app.ok("SendMessage", send_params("hi", json!({"contextId": "r-block"}))).await;
    assert!(result.get("task").is_none(), "{result}");
    let message = &result["message"];
    assert_eq!((message["role"].as_str(), message["contextId"].as_str()), (Some("ROLE_AGENT"), Some("r-block")));
    assert!(message.get("taskId").is_none(), "a Message-only reply belongs to no task: {message}");
    let text = text_of(message);
    assert!(text.starts_with("answer history=none task="), "{text}");
    assert_gone(&app, &task_id_in(text)).await;
}

#[actix_web::test]
async fn the_next_turn_of_the_context_sees_the_message_and_the_reply() {
    let app = app().await;
    let first = app.ok("SendMessage", send_params("first", json!({"contextId": "r-ctx"}))).await;
    assert!(text_of(&first["message"]).contains("history=none"));
    let second = app.ok("SendMessage", send_params("second", json!({"contextId": "r-ctx"}))).await;
    assert!(text_of(&second["message"]).contains("history=seen"), "{second}");
    let other = app.ok("SendMessage", send_params("elsewhere", json!({"contextId": "r-other"}))).await;
    assert!(text_of(&other["message"]).contains("history=none"), "another context's history is its own");
}

#[actix_web::test]
async fn a_json_rpc_stream_is_one_message_event_then_closes() {
    let app = app().await;
    let mut reader = app.stream("SendStreamingMessage", send_params("hi", json!({})), &[]).await.unwrap();
    let events = reader.rest().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let message = &events[0].result()["message"];
    assert_eq!(message["role"], "ROLE_AGENT");
    assert_gone(&app, &task_id_in(text_of(message))).await;
}

#[actix_web::test]
async fn a_rest_stream_is_one_message_event_then_closes() {
    let app = app().await;
    let body = send_params("hi", json!({}));
    let response = app.client.post(format!("{}/a2a/message:stream", app.url)).json(&body).send().await.unwrap();
    let events = SseReader::from_response(response).await.unwrap().rest().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let message = &events[0].json()["message"];
    assert_gone(&app, &task_id_in(text_of(message))).await;
}

#[actix_web::test]
async fn a_grpc_stream_is_one_message_event_then_closes() {
    let app = app().await;
    let mut grpc = A2aServiceClient::connect(app.grpc_url.clone()).await.unwrap();
    let request = proto::SendMessageRequest {
        message: Some(proto::Message {
            message_id: a2ad_protocol::ids::new_id(),
            role: proto::Role::User as i32,
            parts: vec![proto::Part { content: Some(part::Content::Text("hi".into())), ..Default::default() }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let stream = grpc.send_streaming_message(request).await.unwrap().into_inner();
    let events: Vec<_> = stream.collect().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let Some(stream_response::Payload::Message(message)) = events[0].as_ref().unwrap().payload.clone() else {
        panic!("not a message: {events:?}");
    };
    let Some(part::Content::Text(text)) = &message.parts[0].content else { panic!("no text: {message:?}") };
    assert_gone(&app, &task_id_in(text)).await;
}

#[actix_web::test]
async fn a_reply_after_other_events_ends_a_normal_task_that_is_kept() {
    let app = app().await;
    let skill = json!({"metadata": {"skill": "mixed"}});
    let task = app.send_text("go", skill.clone()).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(text_of(&task["status"]["message"]), "late reply");
    let got = app.ok("GetTask", json!({"id": task["id"]})).await;
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");

    let events = app.stream("SendStreamingMessage", send_params("go", skill), &[]).await.unwrap().rest().await;
    let kinds: Vec<String> =
        events.iter().map(|e| e.result().as_object().unwrap().keys().next().unwrap().clone()).collect();
    assert_eq!(kinds, ["task", "statusUpdate", "statusUpdate"], "{events:?}");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq()).collect();
    assert_eq!(seqs, [1, 2, 3], "event ids are the task's sequence numbers, as before");
    let last = events.last().unwrap().result();
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(text_of(&last["statusUpdate"]["status"]["message"]), "late reply");
    assert_eq!(app.ok("ListTasks", json!({})).await["totalSize"], 2);
}

#[actix_web::test]
async fn a_reply_to_a_task_returned_immediately_completes_that_task() {
    let app = app().await;
    let params = send_params("hi", json!({"configuration": {"returnImmediately": true}}));
    let task = app.ok("SendMessage", params).await["task"].clone();
    let id = task["id"].as_str().unwrap().to_owned();
    let done = crate::support::eventually(400, || async {
        app.ok("GetTask", json!({"id": id})).await["status"]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
    assert!(done, "the client holds the task, so it is kept");
    let got = app.ok("GetTask", json!({"id": id})).await;
    assert!(text_of(&got["status"]["message"]).starts_with("answer"), "{got}");
}

#[actix_web::test]
async fn the_0_3_dialect_answers_a_reply_with_a_message() {
    let app = app().await;
    let message = || {
        json!({"kind": "message", "messageId": a2ad_protocol::ids::new_id(), "role": "user",
               "parts": [{"kind": "text", "text": "hi"}]})
    };
    let result = app.ok("message/send", json!({"message": message()})).await;
    assert_eq!((result["kind"].as_str(), result["role"].as_str()), (Some("message"), Some("agent")), "{result}");
    assert_gone(&app, &task_id_in(result["parts"][0]["text"].as_str().unwrap())).await;

    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "message/stream", "params": {"message": message()}});
    let response = app.client.post(&app.url).json(&body).send().await.unwrap();
    let events = SseReader::from_response(response).await.unwrap().rest().await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].result()["kind"], "message", "{events:?}");
}

#[actix_web::test]
async fn a2ad_call_prints_a_message_answer() {
    let app = app().await;
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["call", &app.url, "hello"])
        .env_remove("A2AD_TOKEN")
        .env_remove("A2AD_API_KEY")
        .env_remove("A2AD_BASIC")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), run).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.contains("answer history=none task="), "{stdout}");
}

#[actix_web::test]
async fn a_restarted_node_keeps_nothing_of_the_task_but_the_session() {
    let cwd = tempfile::tempdir().unwrap();
    let script = cwd.path().join("reply.sh");
    std::fs::write(&script, REPLY).unwrap();
    let config = cwd.path().join("a2ad.yaml");
    let yaml = format!(
        "agents:\n  - id: reply\n    kind: command\n    command:\n      argv: [/bin/sh, {}]\n      input: json\n      output: jsonl\n",
        script.display()
    );
    std::fs::write(&config, yaml).unwrap();
    let data = cwd.path().join("data");
    let args = ["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];

    let node = NodeProcess::start(cwd.path(), &args);
    let first = node.app_view().ok("SendMessage", send_params("first", json!({"contextId": "kept"}))).await;
    let task_id = task_id_in(text_of(&first["message"]));
    assert!(node.terminate().success());
    let stats = std::process::Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["admin", "stats", "--json", "--data-dir", data.to_str().unwrap()])
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!((stats["totalTasks"].as_u64(), stats["events"].as_u64()), (Some(0), Some(0)), "{stats}");
    assert_eq!((stats["sessions"].as_u64(), stats["sessionMessages"].as_u64()), (Some(1), Some(2)), "{stats}");

    let node = NodeProcess::start(cwd.path(), &args);
    let view = node.app_view();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}});
    let got: Value = view.client.post(&view.url).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(reason(&got["error"]), "TASK_NOT_FOUND", "{got}");
    assert_eq!(view.ok("ListTasks", json!({})).await["totalSize"], 0);
    let metrics = view.client.get(format!("{}/metrics", view.url)).send().await.unwrap().text().await.unwrap();
    assert_eq!(sample(&metrics, r#"a2ad_tasks{state="failed"}"#), Some(0.0), "not found as a crashed turn");
    assert_eq!(sample(&metrics, r#"a2ad_tasks{state="working"}"#), Some(0.0));
    let second = view.ok("SendMessage", send_params("second", json!({"contextId": "kept"}))).await;
    assert!(text_of(&second["message"]).contains("history=seen"), "the session outlives the restart: {second}");
    assert!(!data.join("artifacts").join(&task_id).exists());
}

#[actix_web::test]
async fn a_0_1_stream_follows_a_kept_task_since_that_dialect_has_no_messages() {
    let app = app().await;
    let params = json!({"message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}});
    let body = json!({"jsonrpc": "2.0", "id": "sub", "method": "tasks/sendSubscribe", "params": params});
    let response = app.client.post(&app.url).json(&body).send().await.unwrap();
    let events = SseReader::from_response(response).await.unwrap().rest().await;
    let last = events.last().unwrap_or_else(|| panic!("no event")).result();
    assert_eq!(last["status"], "completed", "{events:?}");
    let id = last["id"].as_str().unwrap();
    assert_eq!(app.ok("tasks/get", json!({"id": id})).await["status"], "completed", "the task is kept");
}

#[actix_web::test]
async fn an_agent_that_cannot_reply_streams_the_task_before_its_first_event() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    // Says nothing until the test has seen the task (bounded: at most 20 s).
    let script = format!(
        "cat >/dev/null; i=0; while [ ! -f '{}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo done",
        go.display()
    );
    let mut agent = command_agent("text", &script);
    if let AgentKind::Command(settings) = &mut agent.kind {
        settings.output = OutputMode::Text;
    }
    let app = spawn_app(move |c| c.agents = vec![agent]).await;
    let mut reader = app.stream("SendStreamingMessage", send_params("hi", json!({})), &[]).await.unwrap();
    let first = reader.next_data().await.expect("the task");
    assert!(first.result().get("task").is_some(), "{first:?}");
    std::fs::write(&go, "").unwrap();
    let rest = reader.rest().await;
    let last = rest.last().unwrap().result();
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{rest:?}");
}

#[actix_web::test]
async fn a_websocket_stream_is_one_message_frame_then_the_socket_answers_the_next_request() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message as WsMessage;
    let app = spawn_app(|c| {
        c.websocket = true;
        c.agents = vec![command_agent("reply", REPLY)];
    })
    .await;
    let (mut ws, _) =
        tokio_tungstenite::connect_async(format!("{}/ws", app.url.replacen("http://", "ws://", 1))).await.unwrap();
    let stream =
        json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": send_params("hi", json!({}))});
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "ListTasks", "params": {}});
    ws.send(WsMessage::Text(stream.to_string().into())).await.unwrap();
    let first = read_json(&mut ws).await;
    assert_eq!(first["id"], 7);
    assert!(first["result"]["message"].is_object(), "{first}");
    ws.send(WsMessage::Text(list.to_string().into())).await.unwrap();
    let second = read_json(&mut ws).await;
    assert_eq!((second["id"].as_i64(), second["result"]["totalSize"].as_i64()), (Some(8), Some(0)), "{second}");
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The next text message, as JSON (control frames are skipped; 30 s hang guard).
async fn read_json(ws: &mut Ws) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(30), ws.next()).await.unwrap().unwrap().unwrap();
        if let tokio_tungstenite::tungstenite::Message::Text(text) = frame {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

#[actix_web::test]
async fn a_send_that_asks_for_push_notifications_keeps_its_task() {
    let receiver = crate::receiver::Receiver::start();
    let app = spawn_app(|c| {
        c.push.enabled = true;
        c.push.allow = vec!["127.0.0.1/32".into()];
        c.agents = vec![command_agent("reply", REPLY)];
    })
    .await;
    let config = json!({"url": format!("{}/ok", receiver.base)});
    let result = app
        .ok("SendMessage", send_params("hi", json!({"configuration": {"taskPushNotificationConfig": config}})))
        .await;
    let task = &result["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{result}");
    assert!(text_of(&task["status"]["message"]).starts_with("answer"), "{result}");
    assert_eq!(app.ok("GetTask", json!({"id": task["id"]})).await["id"], task["id"]);
}

/// Replies once the test has created the file `go` (bounded: at most 20 s).
fn reply_when(go: &std::path::Path) -> String {
    format!(
        "cat >/dev/null; i=0; while [ ! -f '{}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
         echo '{{\"type\":\"reply\",\"text\":\"held reply\"}}'",
        go.display()
    )
}

#[actix_web::test]
async fn subscribing_while_the_snapshot_is_held_keeps_the_task_and_both_streams_follow_it() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let app = spawn_app({
        let agent = command_agent("held", &reply_when(&go));
        move |c| c.agents = vec![agent]
    })
    .await;
    let (client, url) = (app.client.clone(), app.url.clone());
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": send_params("hi", json!({}))});
    let sender = actix_web::rt::spawn(async move {
        let response = client.post(url).json(&body).send().await.unwrap();
        SseReader::from_response(response).await.unwrap().rest().await
    });
    // The task exists (WORKING) while the sender's stream waits for the agent.
    let listed =
        crate::support::eventually(400, || async { app.ok("ListTasks", json!({})).await["totalSize"] == 1 }).await;
    assert!(listed, "the running task is listed");
    let task_id = app.ok("ListTasks", json!({})).await["tasks"][0]["id"].as_str().unwrap().to_owned();
    let mut watcher = app.stream("SubscribeToTask", json!({"id": task_id}), &[]).await.unwrap();
    let first = watcher.next_data().await.expect("the task");
    assert_eq!(first.result()["task"]["status"]["state"], "TASK_STATE_WORKING", "{first:?}");
    std::fs::write(&go, "").unwrap();

    let watched = watcher.rest().await;
    let sent = tokio::time::timeout(Duration::from_secs(30), sender).await.unwrap().unwrap();
    for (who, events) in [("the subscriber", [vec![first], watched].concat()), ("the sender", sent)] {
        let kinds: Vec<String> =
            events.iter().map(|e| e.result().as_object().unwrap().keys().next().unwrap().clone()).collect();
        assert_eq!(kinds, ["task", "statusUpdate"], "{who} follows a task: {events:?}");
        assert_eq!(events.iter().map(|e| e.seq()).collect::<Vec<_>>(), [1, 2], "{who}");
        let status = &events[1].result()["statusUpdate"]["status"];
        assert_eq!(
            (status["state"].as_str(), text_of(&status["message"])),
            (Some("TASK_STATE_COMPLETED"), "held reply")
        );
    }
    let kept = app.ok("GetTask", json!({"id": task_id})).await;
    assert_eq!(kept["status"]["state"], "TASK_STATE_COMPLETED", "a watched task is kept: {kept}");
}
