//! `GET /metrics`: the request counters, the gauges, the rejections, the token; and the
//! request id every HTTP answer carries.

use crate::support::{send_params, spawn_app};
use serde_json::json;

/// The value of the sample `line_start` (metric name and labels, exactly).
fn sample(exposition: &str, line_start: &str) -> Option<f64> {
    exposition.lines().find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' ')?.trim().parse().ok())
}

#[actix_web::test]
async fn metrics_count_requests_by_method_binding_and_status() {
    let app = spawn_app(|c| c.limits.rest_body_limit = Some(2048)).await;
    app.send_text("hello", json!({})).await;
    app.send_text("again", json!({})).await;
    app.err("GetTask", json!({"id": "no-such-task"})).await;
    let rest = app.client.get(format!("{}/a2a/tasks", app.url)).send().await.unwrap();
    assert_eq!(rest.status(), 200);
    let big = send_params(&"y".repeat(4096), json!({}));
    let refused = app.client.post(format!("{}/a2a/message:send", app.url)).json(&big).send().await.unwrap();
    assert_eq!(refused.status(), 413);

    let response = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = response.text().await.unwrap();
    let requests = |labels: &str| sample(&text, &format!("a2ad_requests_total{{{labels}}}"));
    assert_eq!(requests(r#"method="SendMessage",binding="jsonrpc",status="ok""#), Some(2.0), "{text}");
    assert_eq!(requests(r#"method="GetTask",binding="jsonrpc",status="TASK_NOT_FOUND""#), Some(1.0), "{text}");
    assert_eq!(requests(r#"method="ListTasks",binding="rest",status="ok""#), Some(1.0), "{text}");
    assert_eq!(requests(r#"method="SendMessage",binding="rest",status="PAYLOAD_TOO_LARGE""#), Some(1.0), "{text}");
    assert_eq!(sample(&text, r#"a2ad_rejections_total{limit="body"}"#), Some(1.0), "{text}");
    assert_eq!(sample(&text, r#"a2ad_rejections_total{limit="rate"}"#), Some(0.0), "{text}");
    assert_eq!(sample(&text, r#"a2ad_request_duration_seconds_count{binding="jsonrpc"}"#), Some(3.0), "{text}");
    assert_eq!(sample(&text, r#"a2ad_request_duration_seconds_bucket{binding="rest",le="+Inf"}"#), Some(2.0));
    assert_eq!(sample(&text, r#"a2ad_tasks{state="completed"}"#), Some(2.0), "{text}");
    assert_eq!(sample(&text, r#"a2ad_tasks{state="working"}"#), Some(0.0), "{text}");
    assert!(sample(&text, "a2ad_live_contexts").is_some_and(|n| n >= 1.0), "{text}");
    assert_eq!(sample(&text, "a2ad_running_turns"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "a2ad_open_streams"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "a2ad_push_queue_depth"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "a2ad_push_dead_letters"), Some(0.0), "{text}");
    // On the shared store nothing of the store is on this node's disk.
    let on_disk = sample(&text, "a2ad_store_size_bytes");
    assert!(on_disk.is_some_and(|n| n > 0.0 || crate::support::on_shared_store()), "{text}");
    assert!(!text.contains("no-such-task"), "no ids in labels");
}

#[actix_web::test]
async fn metrics_token_protects_the_endpoint() {
    let app = spawn_app(|c| c.metrics_token = Some("scrape-secret".to_owned().into())).await;
    let url = format!("{}/metrics", app.url);
    assert_eq!(app.client.get(&url).send().await.unwrap().status(), 401);
    let wrong = app.client.get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let right = app.client.get(&url).bearer_auth("scrape-secret").send().await.unwrap();
    assert_eq!(right.status(), 200);
    assert!(right.text().await.unwrap().contains("a2ad_requests_total"));
}

#[actix_web::test]
async fn request_ids_are_echoed_or_minted() {
    let app = spawn_app(|_| {}).await;
    let health = format!("{}/health", app.url);
    let echoed = app.client.get(&health).header("X-Request-Id", "trace-42.a_b").send().await.unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "trace-42.a_b");
    let unsafe_id = app.client.get(&health).header("X-Request-Id", "no spaces/allowed").send().await.unwrap();
    let minted = unsafe_id.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(minted != "no spaces/allowed" && minted.len() == 32, "{minted}");
    let rpc = app.client.post(&app.url).json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}));
    let rpc = rpc.header("X-Request-Id", "rpc-1").send().await.unwrap();
    assert_eq!(rpc.headers()["x-request-id"], "rpc-1");
}

/// gRPC calls are counted with `binding="grpc"`, in the histogram too, and an open gRPC
/// stream counts as an open stream until it ends.
#[actix_web::test]
async fn metrics_count_grpc_calls_and_streams() {
    use a2a_pb::proto::{self, a2a_service_client::A2aServiceClient, part};
    let app = spawn_app(crate::support::slow_echo(std::time::Duration::from_millis(30))).await;
    let mut grpc = A2aServiceClient::connect(app.grpc_url.clone()).await.unwrap();
    let message = |text: &str| proto::SendMessageRequest {
        message: Some(proto::Message {
            message_id: a2ad_protocol::ids::new_id(),
            role: proto::Role::User as i32,
            parts: vec![proto::Part { content: Some(part::Content::Text(text.into())), ..Default::default() }],
            ..Default::default()
        }),
        ..Default::default()
    };
    grpc.send_message(message("ab")).await.unwrap();
    grpc.list_tasks(proto::ListTasksRequest::default()).await.unwrap();
    let missing = proto::GetTaskRequest { id: "no-such-task".into(), ..Default::default() };
    grpc.get_task(missing).await.unwrap_err();
    let mut stream = grpc.send_streaming_message(message(&"s".repeat(100))).await.unwrap().into_inner();
    stream.message().await.unwrap().expect("a first event");

    let text = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    let requests = |labels: &str| sample(&text, &format!("a2ad_requests_total{{{labels}}}"));
    assert_eq!(requests(r#"method="SendMessage",binding="grpc",status="ok""#), Some(1.0), "{text}");
    assert_eq!(requests(r#"method="ListTasks",binding="grpc",status="ok""#), Some(1.0), "{text}");
    assert_eq!(requests(r#"method="GetTask",binding="grpc",status="TASK_NOT_FOUND""#), Some(1.0), "{text}");
    assert_eq!(requests(r#"method="SendStreamingMessage",binding="grpc",status="ok""#), Some(1.0), "{text}");
    assert_eq!(sample(&text, r#"a2ad_request_duration_seconds_count{binding="grpc"}"#), Some(4.0), "{text}");
    assert_eq!(sample(&text, r#"a2ad_request_duration_seconds_bucket{binding="grpc",le="+Inf"}"#), Some(4.0));
    assert_eq!(sample(&text, r#"a2ad_request_duration_seconds_count{binding="jsonrpc"}"#), Some(0.0), "{text}");
    assert_eq!(sample(&text, "a2ad_open_streams"), Some(1.0), "the gRPC stream is open: {text}");
    assert_eq!(sample(&text, "a2ad_running_turns"), Some(1.0), "{text}");

    drop(stream);
    let closed = || async {
        let text = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
        sample(&text, "a2ad_open_streams") == Some(0.0)
    };
    assert!(crate::support::eventually(200, closed).await, "a dropped gRPC stream is no longer open");
}

/// After a restart the task gauges are seeded from the store's index, finished tasks
/// included.
#[actix_web::test]
async fn task_gauges_count_stored_tasks_after_a_restart() {
    use crate::support::NodeProcess;
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    let args = ["--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    for text in ["a", "b"] {
        node.app_view().ok("SendMessage", send_params(text, json!({}))).await;
    }
    assert!(node.terminate().success());
    let node = NodeProcess::start(cwd.path(), &args);
    let text = reqwest::get(format!("{}/metrics", node.url)).await.unwrap().text().await.unwrap();
    assert_eq!(sample(&text, r#"a2ad_tasks{state="completed"}"#), Some(2.0), "{text}");
}
