//! `tenancy.visibility` over the real binary: with `principal` (the default) a second
//! principal of the same tenant reaches nothing of the first one's; with `tenant` it
//! reaches and manages everything, on every owner-scoped JSON-RPC method, and on
//! HTTP+JSON and gRPC; another tenant reaches nothing in either mode; and a restart in
//! the other mode moves no stored task.

use crate::support::{send_params, NodeProcess, SseReader};
use a2a_pb::proto::{self, a2a_service_client::A2aServiceClient};
use serde_json::{json, Value};
use tonic::{Code, Request};

/// alice and bob share tenant `acme`; eve is tenant `evil`.
const ALICE: &str = "tok-alice";
const BOB: &str = "tok-bob";
const EVE: &str = "tok-eve";

/// A node from `a2ad serve --config`, with three credentials, push configs on, and an
/// echo agent that leaves every task INPUT_REQUIRED, so tasks stay open for follow-ups,
/// subscriptions and cancels.
struct Node {
    process: NodeProcess,
    client: reqwest::Client,
    dir: tempfile::TempDir,
}

fn start(visibility: Option<&str>) -> Node {
    run_in(tempfile::tempdir().unwrap(), visibility)
}

/// The node on the config and data dir in `dir`, the config written for `visibility`.
fn run_in(dir: tempfile::TempDir, visibility: Option<&str>) -> Node {
    let tenancy = visibility.map(|v| format!("tenancy:\n  visibility: {v}\n")).unwrap_or_default();
    let config = format!(
        "auth:\n  bearer-tokens:\n    - {{token: {ALICE}, tenant: acme, principal: alice}}\n    \
         - {{token: {BOB}, tenant: acme, principal: bob}}\n    - {{token: {EVE}, tenant: evil, principal: eve}}\n\
         {tenancy}push-notifications: true\npush-allow: [127.0.0.1/32]\nextended-card: true\n\
         agents:\n  - {{id: chat, kind: echo, echo: {{end-state: input-required}}}}\n"
    );
    let path = dir.path().join("a2ad.yaml");
    std::fs::write(&path, config).unwrap();
    let data = dir.path().join("data");
    let process =
        NodeProcess::start(dir.path(), &["--config", path.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    Node { process, client: reqwest::Client::new(), dir }
}

impl Node {
    /// Stops the node cleanly and starts it again on the same data, with `visibility`.
    fn restart(self, visibility: Option<&str>) -> Node {
        let Node { process, dir, .. } = self;
        assert!(process.terminate().success(), "a clean stop");
        run_in(dir, visibility)
    }

    fn post(&self, token: &str, method: &str, params: Value) -> reqwest::RequestBuilder {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.client.post(&self.process.url).bearer_auth(token).json(&body)
    }

    /// A JSON-RPC call as `token`: the whole response.
    async fn rpc(&self, token: &str, method: &str, params: Value) -> Value {
        self.post(token, method, params).send().await.unwrap().json().await.unwrap()
    }

    async fn ok(&self, token: &str, method: &str, params: Value) -> Value {
        let response = self.rpc(token, method, params).await;
        assert!(response.get("error").is_none(), "{method} as {token}: {response}");
        response["result"].clone()
    }

    /// A streaming call as `token`: its events, or its JSON-RPC error body.
    async fn stream(&self, token: &str, method: &str, params: Value) -> Result<SseReader, Value> {
        SseReader::from_response(self.post(token, method, params).send().await.unwrap()).await
    }

    /// An HTTP+JSON GET as `token`: (status, body).
    async fn rest_get(&self, token: &str, path: &str) -> (u16, Value) {
        let response = self.client.get(format!("{}/a2a{path}", self.process.url)).bearer_auth(token).send().await;
        let response = response.unwrap();
        (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
    }
}

/// What alice made: a task with a push config in context `ctx-a`, and one to cancel.
struct Made {
    task: String,
    config: String,
    to_cancel: String,
}

async fn alice_makes(node: &Node) -> Made {
    let first = node.ok(ALICE, "SendMessage", send_params("one", json!({"contextId": "ctx-a"}))).await;
    let task = first["task"]["id"].as_str().unwrap().to_owned();
    let hook = json!({"taskId": task, "url": "http://127.0.0.1:9/alice"});
    let config = node.ok(ALICE, "CreateTaskPushNotificationConfig", hook).await["id"].as_str().unwrap().to_owned();
    let other = node.ok(ALICE, "SendMessage", send_params("two", json!({"contextId": "ctx-c"}))).await;
    Made { task, config, to_cancel: other["task"]["id"].as_str().unwrap().to_owned() }
}

/// The answer of every owner-scoped method that names alice's task, as `token`.
async fn by_task_id(node: &Node, token: &str, made: &Made) -> Vec<(&'static str, Value)> {
    let (task, config) = (&made.task, &made.config);
    let mut answers = Vec::new();
    for (method, params) in [
        ("GetTask", json!({"id": task})),
        ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
        ("GetTaskPushNotificationConfig", json!({"taskId": task, "id": config})),
        ("CreateTaskPushNotificationConfig", json!({"taskId": task, "url": "http://127.0.0.1:9/other"})),
        ("SendMessage", send_params("follow-up", json!({"taskId": task}))),
        ("CancelTask", json!({"id": made.to_cancel})),
    ] {
        answers.push((method, node.rpc(token, method, params).await));
    }
    answers
}

/// Asserts `token` reaches nothing of alice's, on every method, and changes nothing.
async fn reaches_nothing(node: &Node, token: &str, made: &Made) {
    assert_eq!(node.ok(token, "ListTasks", json!({})).await["totalSize"], 0, "{token} lists none of alice's");
    let mut answers = by_task_id(node, token, made).await;
    let delete = json!({"taskId": made.task, "id": made.config});
    answers
        .push(("DeleteTaskPushNotificationConfig", node.rpc(token, "DeleteTaskPushNotificationConfig", delete).await));
    for method in ["SubscribeToTask", "SendStreamingMessage"] {
        let params = match method {
            "SubscribeToTask" => json!({"id": made.task}),
            _ => send_params("stream follow-up", json!({"taskId": made.task})),
        };
        let refused = node.stream(token, method, params).await.err().expect("refused before any event");
        answers.push((method, refused));
    }
    for (method, answer) in answers {
        assert_eq!(answer["error"]["code"], -32001, "{token} {method}: {answer}");
        assert_eq!(answer["error"]["message"], "Task not found", "{token} {method}: no detail");
    }
    // Its own message into the same context id starts a context of its own.
    let own = node.ok(token, "SendMessage", send_params("mine", json!({"contextId": "ctx-a"}))).await;
    assert_eq!(own["task"]["status"]["message"]["metadata"]["echo"]["sessionMessages"], 0, "none of alice's history");
    // And alice's things are as she left them.
    let configs = node.ok(ALICE, "ListTaskPushNotificationConfigs", json!({"taskId": made.task})).await;
    assert_eq!(configs["configs"].as_array().map(Vec::len), Some(1), "{configs}");
    let kept = node.ok(ALICE, "GetTask", json!({"id": made.to_cancel})).await;
    assert_eq!(kept["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let listed = node.ok(ALICE, "ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 2, "nothing was added to alice's: {listed}");
}

#[actix_web::test]
async fn by_default_a_teammate_and_another_tenant_reach_nothing_on_any_method() {
    let node = start(None);
    let made = alice_makes(&node).await;
    for token in [BOB, EVE] {
        reaches_nothing(&node, token, &made).await;
    }
    let explicit = start(Some("principal"));
    let made = alice_makes(&explicit).await;
    reaches_nothing(&explicit, BOB, &made).await;
}

#[actix_web::test]
async fn with_tenant_visibility_a_teammate_manages_the_tenants_tasks_on_every_method() {
    let node = start(Some("tenant"));
    let made = alice_makes(&node).await;
    // Another tenant first: it reaches nothing, and changes nothing bob then checks.
    reaches_nothing(&node, EVE, &made).await;

    assert_eq!(node.ok(BOB, "ListTasks", json!({})).await["totalSize"], 2, "bob lists alice's two tasks");
    let answers = by_task_id(&node, BOB, &made).await;
    for (method, answer) in &answers {
        assert!(answer.get("error").is_none(), "bob {method}: {answer}");
    }
    let result = |name: &str| answers.iter().find(|(m, _)| *m == name).map(|(_, a)| a["result"].clone()).unwrap();
    assert_eq!(result("GetTask")["contextId"], "ctx-a");
    assert_eq!(result("GetTaskPushNotificationConfig")["id"], made.config.as_str());
    assert_eq!(result("ListTaskPushNotificationConfigs")["configs"][0]["id"], made.config.as_str());
    let follow_up = &result("SendMessage")["task"];
    assert_eq!(follow_up["id"], made.task.as_str(), "bob's message continues alice's task");
    assert_eq!(follow_up["status"]["message"]["metadata"]["echo"]["sessionMessages"], 2, "with alice's turn");
    assert_eq!(result("CancelTask")["status"]["state"], "TASK_STATE_CANCELED");
    let bobs_config = result("CreateTaskPushNotificationConfig")["id"].as_str().unwrap().to_owned();
    let delete = json!({"taskId": made.task, "id": bobs_config});
    node.ok(BOB, "DeleteTaskPushNotificationConfig", delete).await;

    let mut subscribed = node.stream(BOB, "SubscribeToTask", json!({"id": made.task})).await.unwrap();
    let snapshot = subscribed.next_data().await.unwrap();
    assert_eq!(snapshot.result()["task"]["id"], made.task.as_str());
    drop(subscribed);
    // A new task in alice's context, by a stream: the context, and its session, are shared.
    let streamed = node.stream(BOB, "SendStreamingMessage", send_params("in ctx-a", json!({"contextId": "ctx-a"})));
    let first = streamed.await.unwrap().next_data().await.unwrap();
    let new_task = first.result()["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(first.result()["task"]["contextId"], "ctx-a");

    // alice sees all of it: bob's turn in her task, his task in her context, her cancel.
    let mine = node.ok(ALICE, "GetTask", json!({"id": made.task})).await;
    let texts: Vec<&str> =
        mine["history"].as_array().unwrap().iter().filter_map(|m| m["parts"][0]["text"].as_str()).collect();
    assert!(texts.contains(&"follow-up"), "bob's message is in alice's task: {texts:?}");
    let in_context = node.ok(ALICE, "ListTasks", json!({"contextId": "ctx-a"})).await;
    assert_eq!(in_context["totalSize"], 2, "{in_context}");
    let bobs = node.ok(ALICE, "GetTask", json!({"id": new_task})).await;
    assert_eq!(bobs["status"]["message"]["metadata"]["echo"]["sessionMessages"], 4, "the shared session: {bobs}");
    let canceled = node.ok(ALICE, "GetTask", json!({"id": made.to_cancel})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    node.ok(BOB, "DeleteTaskPushNotificationConfig", json!({"taskId": made.task, "id": made.config})).await;
    let configs = node.ok(ALICE, "ListTaskPushNotificationConfigs", json!({"taskId": made.task})).await;
    assert!(configs["configs"].as_array().is_none_or(Vec::is_empty), "bob deleted alice's config: {configs}");
    // The extended card is anyone's who authenticates, in any mode.
    assert!(node.ok(EVE, "GetExtendedAgentCard", json!({})).await["name"].is_string());
}

#[actix_web::test]
async fn http_json_follows_the_mode() {
    for (visibility, bob_reaches) in [("principal", false), ("tenant", true)] {
        let node = start(Some(visibility));
        let made = alice_makes(&node).await;
        let task = &made.task;
        for (token, reaches) in [(BOB, bob_reaches), (EVE, false)] {
            let (status, got) = node.rest_get(token, &format!("/tasks/{task}")).await;
            assert_eq!(status, if reaches { 200 } else { 404 }, "{visibility} {token}: {got}");
            let (_, listed) = node.rest_get(token, "/tasks").await;
            assert_eq!(listed["totalSize"], if reaches { 2 } else { 0 }, "{visibility} {token}: {listed}");
            let (status, configs) = node.rest_get(token, &format!("/tasks/{task}/pushNotificationConfigs")).await;
            assert_eq!(status, if reaches { 200 } else { 404 }, "{visibility} {token}: {configs}");
        }
        let cancel = format!("{}/a2a/tasks/{}:cancel", node.process.url, made.to_cancel);
        let eve = node.client.post(&cancel).bearer_auth(EVE).json(&json!({})).send().await.unwrap();
        assert_eq!(eve.status(), 404, "{visibility}");
        let bob = node.client.post(&cancel).bearer_auth(BOB).json(&json!({})).send().await.unwrap();
        assert_eq!(bob.status(), if bob_reaches { 200 } else { 404 }, "{visibility}");
    }
}

fn as_caller<T>(token: &str, message: T) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

#[actix_web::test]
async fn grpc_follows_the_mode() {
    for (visibility, bob_reaches) in [("principal", false), ("tenant", true)] {
        let node = start(Some(visibility));
        let made = alice_makes(&node).await;
        let mut grpc = A2aServiceClient::connect(node.process.grpc_url.clone()).await.unwrap();
        for (token, reaches) in [(BOB, bob_reaches), (EVE, false)] {
            let get = proto::GetTaskRequest { id: made.task.clone(), ..Default::default() };
            match grpc.get_task(as_caller(token, get)).await {
                Ok(task) => assert!(reaches && task.into_inner().id == made.task, "{visibility} {token}"),
                Err(status) => assert!(!reaches && status.code() == Code::NotFound, "{visibility} {token}: {status}"),
            }
            let listed = grpc.list_tasks(as_caller(token, proto::ListTasksRequest::default())).await.unwrap();
            assert_eq!(listed.into_inner().total_size, if reaches { 2 } else { 0 }, "{visibility} {token}");
            let configs =
                proto::ListTaskPushNotificationConfigsRequest { task_id: made.task.clone(), ..Default::default() };
            let configs = grpc.list_task_push_notification_configs(as_caller(token, configs)).await;
            assert_eq!(configs.is_ok(), reaches, "{visibility} {token}: {configs:?}");
        }
        let cancel = proto::CancelTaskRequest { id: made.to_cancel.clone(), ..Default::default() };
        let canceled = grpc.cancel_task(as_caller(BOB, cancel)).await;
        assert_eq!(canceled.is_ok(), bob_reaches, "{visibility}: {canceled:?}");
    }
}

#[actix_web::test]
async fn switching_the_mode_moves_no_task() {
    let node = start(Some("principal"));
    let alices = node.ok(ALICE, "SendMessage", send_params("mine", json!({}))).await["task"]["id"].clone();
    let node = node.restart(Some("tenant"));
    for token in [ALICE, BOB] {
        let got = node.rpc(token, "GetTask", json!({"id": alices})).await;
        assert_eq!(got["error"]["code"], -32001, "{token}: alice's own task is not the tenant's: {got}");
        assert_eq!(node.ok(token, "ListTasks", json!({})).await["totalSize"], 0, "{token}");
    }
    let shared = node.ok(BOB, "SendMessage", send_params("ours", json!({}))).await["task"]["id"].clone();
    assert_eq!(node.ok(ALICE, "GetTask", json!({"id": shared})).await["id"], shared);

    let node = node.restart(None);
    assert_eq!(node.ok(ALICE, "GetTask", json!({"id": alices})).await["id"], alices, "back with its owner");
    assert_eq!(node.ok(ALICE, "ListTasks", json!({})).await["totalSize"], 1, "alice's one task, not the tenant's");
    for token in [ALICE, BOB] {
        let got = node.rpc(token, "GetTask", json!({"id": shared})).await;
        assert_eq!(got["error"]["code"], -32001, "{token}: the tenant's task is no principal's: {got}");
    }
}
