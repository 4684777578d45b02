//! The admin API (`/admin/v1`): operators apart from tenants, tasks across tenants, the
//! event log, cancel by role, dead letters delivered to a real receiver, the live feed,
//! and where the API answers (off, main listener, its own listener).

use crate::receiver::Receiver;
use crate::support::{command_agent, command_settings, eventually, send_params, spawn_app, SseReader, TestApp};
use a2ad::admin::{AdminConfig, AdminListen, AdminTokenConfig, Role};
use a2ad::auth::{BearerTokenConfig, HashedSecret};
use a2ad::config::Config;
use serde_json::{json, Value};
use std::time::Duration;

pub const OPERATOR: &str = "operator-token-0123456789";
pub const VIEWER: &str = "viewer-token-0123456789";

fn token(token: &str, name: &str, role: Role) -> AdminTokenConfig {
    AdminTokenConfig { token_sha256: None, token: Some(HashedSecret::from_plaintext(token)), name: name.into(), role }
}

/// Two operators: `alice` (operator role) and `bob` (viewer).
pub fn operators(c: &mut Config) {
    c.admin = AdminConfig {
        tokens: vec![token(OPERATOR, "alice", Role::Operator), token(VIEWER, "bob", Role::Viewer)],
        listen: AdminListen::Main,
    };
}

/// Tenant bearer tokens `acme-token` and `globex-token`.
pub fn tenants(c: &mut Config) {
    let tenant = |name: &str| BearerTokenConfig {
        token_sha256: None,
        token: Some(HashedSecret::from_plaintext(&format!("{name}-token"))),
        tenant: name.into(),
        principal: "ci".into(),
    };
    c.auth.bearer_tokens = vec![tenant("acme"), tenant("globex")];
}

/// Push notifications to loopback, quick retries, 2 attempts before the dead letters.
pub fn push_to_loopback(c: &mut Config) {
    c.push.enabled = true;
    c.push.allow = vec!["127.0.0.1/32".into()];
    c.push.retry_base = Duration::from_millis(20);
    c.push.retry_max = Duration::from_millis(50);
    c.push.max_attempts = 2;
    c.push.circuit_open = Duration::from_millis(50);
}

/// An admin GET with `token`: (status, body).
pub async fn admin_get(app: &TestApp, token: &str, path: &str) -> (u16, Value) {
    let response = app.client.get(format!("{}/admin/v1{path}", app.url)).bearer_auth(token).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// An admin POST of `body` with `token`: (status, body).
pub async fn admin_post(app: &TestApp, token: &str, path: &str, body: Value) -> (u16, Value) {
    let url = format!("{}/admin/v1{path}", app.url);
    let response = app.client.post(url).bearer_auth(token).json(&body).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// SendMessage as a tenant (`acme-token` ...), returning the task.
/// A node with the operators and the two tenants, and three tasks: acme's `a1` and `a2`,
/// globex's `g1` (the listing, search and console tests start from it).
pub async fn two_tenants_with_three_tasks() -> TestApp {
    let app = spawn_app(|c| {
        operators(c);
        tenants(c);
    })
    .await;
    for (bearer, text) in [("acme-token", "a1"), ("acme-token", "a2"), ("globex-token", "g1")] {
        assert!(send_as(&app, bearer, text).await["id"].is_string());
    }
    app
}

pub async fn send_as(app: &TestApp, bearer: &str, text: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params(text, json!({}))});
    let response: Value =
        app.client.post(&app.url).bearer_auth(bearer).json(&body).send().await.unwrap().json().await.unwrap();
    response["result"]["task"].clone()
}

fn reason(body: &Value) -> &str {
    body["error"]["details"][0]["reason"].as_str().unwrap_or("")
}

#[actix_web::test]
async fn operator_tokens_and_tenant_credentials_never_cross() {
    let app = spawn_app(|c| {
        operators(c);
        tenants(c);
    })
    .await;
    let (status, body) = admin_get(&app, "acme-token", "/status").await;
    assert_eq!((status, reason(&body)), (401, "UNAUTHENTICATED"), "a tenant token is no operator token: {body}");
    let a2a = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let refused = app.client.post(&app.url).bearer_auth(OPERATOR).json(&a2a).send().await.unwrap();
    assert_eq!(refused.status(), 401, "an operator token is no tenant credential");
    let (status, me) = admin_get(&app, VIEWER, "/me").await;
    assert_eq!((status, me), (200, json!({"name": "bob", "role": "viewer"})));

    // With tenant authentication off anyone may call A2A methods, but not with an operator token.
    let open = spawn_app(operators).await;
    let refused = open.client.post(&open.url).bearer_auth(OPERATOR).json(&a2a).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    assert!(open.client.post(&open.url).json(&a2a).send().await.unwrap().status().is_success());
}

#[actix_web::test]
async fn an_operator_token_equal_to_a_tenant_token_stops_start_up() {
    let mut config = Config::default_node();
    let dir = tempfile::tempdir().unwrap();
    config.data_dir = dir.path().join("data");
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.grpc_listen = None;
    tenants(&mut config);
    config.admin.tokens = vec![token("acme-token", "alice", Role::Operator)];
    let Err(error) = a2ad::startup::Application::build(config).await else { panic!("the node must not start") };
    let message = error.to_string();
    assert!(message.contains("admin.tokens[0]") && message.contains("tenant credential"), "{message}");
    assert!(!message.contains("acme-token"), "the secret is never shown: {message}");
}

#[actix_web::test]
async fn tasks_of_every_tenant_list_filtered_and_paginated() {
    let app = two_tenants_with_three_tasks().await;
    let (_, all) = admin_get(&app, VIEWER, "/tasks").await;
    let tenants: Vec<&str> = all["tasks"].as_array().unwrap().iter().map(|t| t["tenant"].as_str().unwrap()).collect();
    assert_eq!(tenants.len(), 3, "{all}");
    assert!(tenants.contains(&"acme") && tenants.contains(&"globex"));
    let (_, acme) = admin_get(&app, VIEWER, "/tasks?tenant=acme&state=completed").await;
    assert_eq!(acme["tasks"].as_array().unwrap().len(), 2, "{acme}");
    assert_eq!(acme["tasks"][0]["preview"], "a2", "newest first, with its text");

    let (_, first) = admin_get(&app, VIEWER, "/tasks?pageSize=2").await;
    let token = first["nextPageToken"].as_str().expect("a second page");
    let (_, second) = admin_get(&app, VIEWER, &format!("/tasks?pageSize=2&pageToken={token}")).await;
    let mut ids: Vec<&str> = first["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    ids.extend(second["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()));
    ids.dedup();
    assert_eq!((ids.len(), second["nextPageToken"].clone()), (3, Value::Null), "every task once");

    for (query, field) in [("state=sleeping", "state"), ("pageSize=0", "pageSize"), ("owner=x", "query")] {
        let (status, body) = admin_get(&app, VIEWER, &format!("/tasks?{query}")).await;
        assert_eq!((status, reason(&body)), (400, "INVALID_PARAMS"), "{query}: {body}");
        assert_eq!(body["error"]["details"][0]["metadata"]["field"], field, "{body}");
    }
}

#[actix_web::test]
async fn a_task_shows_its_event_log_and_push_configs_without_their_secrets() {
    let receiver = Receiver::start();
    let app = spawn_app(|c| {
        operators(c);
        push_to_loopback(c);
    })
    .await;
    let hook = json!({"url": format!("{}/ok", receiver.base), "token": "hook-secret-value",
        "authentication": {"scheme": "Bearer", "credentials": "hook-credential-value"}});
    let task = app.send_text("log me", json!({"configuration": {"taskPushNotificationConfig": hook}})).await;
    let id = task["id"].as_str().unwrap();
    let (status, detail) = admin_get(&app, VIEWER, &format!("/tasks/{id}")).await;
    assert_eq!(status, 200, "{detail}");
    let seqs: Vec<u64> = detail["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.len() >= 2 && seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    assert!(detail["events"][0]["event"]["task"].is_object(), "the raw StreamResponse: {detail}");
    assert_eq!(detail["pushConfigs"][0]["hasToken"], true);
    assert_eq!(detail["pushConfigs"][0]["authScheme"], "Bearer");
    let text = detail.to_string();
    assert!(!text.contains("hook-secret-value") && !text.contains("hook-credential-value"), "{text}");
    // Each event's delivery, with its outcome, once the receiver took it.
    let events = seqs.len();
    let delivered = eventually(400, || async {
        let (_, detail) = admin_get(&app, VIEWER, &format!("/tasks/{id}")).await;
        let attempts = detail["deliveries"].as_array().cloned().unwrap_or_default();
        attempts.iter().filter(|a| a["outcome"] == "delivered" && a["attempt"] == 1).count() == events
    });
    assert!(delivered.await, "one delivered attempt per event: {:?}", receiver.received());
    let (_, detail) = admin_get(&app, VIEWER, &format!("/tasks/{id}")).await;
    assert_eq!(detail["deliveries"][0]["configId"], detail["pushConfigs"][0]["id"], "{detail}");
    let (status, body) = admin_get(&app, VIEWER, "/tasks/no-such-task").await;
    assert_eq!((status, reason(&body)), (404, "TASK_NOT_FOUND"));

    // The echo artifact's part, as a download.
    let part = app.client.get(format!("{}/admin/v1/tasks/{id}/artifacts/echo/parts/0", app.url)).bearer_auth(VIEWER);
    let part = part.send().await.unwrap();
    assert_eq!(part.status(), 200);
    assert_eq!(part.headers()["content-type"], "application/octet-stream");
    assert!(part.headers()["content-disposition"].to_str().unwrap().starts_with("attachment"));
    assert_eq!(part.text().await.unwrap(), "log me");
    assert_eq!(detail["artifactSizes"], json!({"echo": [6]}), "the bytes of the inline part: {detail}");
    let (status, body) = admin_get(&app, VIEWER, &format!("/tasks/{id}/artifacts/echo/parts/9")).await;
    assert_eq!((status, reason(&body)), (400, "INVALID_PARAMS"), "{body}");
}

#[actix_web::test]
async fn a_viewer_cannot_cancel_an_operator_can_and_a_foreign_page_cannot() {
    let app = spawn_app(|c| {
        operators(c);
        crate::support::slow_echo(Duration::from_millis(200))(c);
    })
    .await;
    let task = app
        .ok("SendMessage", send_params("a long running task", json!({"configuration": {"returnImmediately": true}})))
        .await;
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    let path = format!("/tasks/{id}/cancel");
    let (status, body) = admin_post(&app, VIEWER, &path, json!({})).await;
    assert_eq!((status, reason(&body)), (403, "PERMISSION_DENIED"), "{body}");
    let foreign = app
        .client
        .post(format!("{}/admin/v1{path}", app.url))
        .bearer_auth(OPERATOR)
        .header("origin", "http://evil.example")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403, "another site's page may not act");
    let form = app
        .client
        .post(format!("{}/admin/v1{path}", app.url))
        .bearer_auth(OPERATOR)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a=b")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 415, "a form post is refused");
    let (_, still) = admin_get(&app, VIEWER, &format!("/tasks/{id}")).await;
    assert_eq!(still["task"]["status"]["state"], "TASK_STATE_WORKING");
    let (status, canceled) = admin_post(&app, OPERATOR, &path, json!({})).await;
    assert_eq!((status, canceled["status"]["state"].clone()), (200, json!("TASK_STATE_CANCELED")), "{canceled}");
}

/// Runs the real binary without blocking the test's thread (the in-process node's
/// supervisor runs on it).
async fn cli(args: &[&str]) -> std::process::Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2ad"));
    command.args(args).env_remove("A2AD_OPERATOR_TOKEN").kill_on_drop(true);
    actix_web::rt::time::timeout(Duration::from_secs(60), command.output()).await.expect("the CLI ends").unwrap()
}

#[actix_web::test]
async fn dead_letters_are_listed_retried_to_a_real_receiver_and_purged_online() {
    let receiver = Receiver::start();
    let app = spawn_app(|c| {
        operators(c);
        push_to_loopback(c);
    })
    .await;
    let hook = json!({"url": format!("{}/gone", receiver.base)});
    let task = app.send_text("undeliverable", json!({"configuration": {"taskPushNotificationConfig": hook}})).await;
    let died = eventually(400, || async {
        admin_get(&app, VIEWER, "/push/dead").await.1["dead"].as_array().is_some_and(|d| d.len() >= 2)
    });
    assert!(died.await, "{:?}", receiver.received());
    let (_, dead) = admin_get(&app, VIEWER, "/push/dead").await;
    let jobs = dead["dead"].as_array().unwrap().len();
    assert!(dead["dead"][0]["reason"].as_str().unwrap().contains("404"), "{dead}");
    // Each says where it was going (the host and port, never the path) and what came back.
    let host = receiver.base.trim_start_matches("http://");
    for letter in dead["dead"].as_array().unwrap() {
        assert_eq!((&letter["host"], &letter["lastStatus"]), (&json!(host), &json!(404)), "{letter}");
        assert_eq!(letter["lastStatusText"], "Not Found", "{letter}");
    }
    assert!(!dead.to_string().contains("/gone"), "no URL path: {dead}");
    // The task's own view has each attempt: a 404 is permanent, so each job died at once.
    let (_, detail) = admin_get(&app, VIEWER, &format!("/tasks/{}", task["id"].as_str().unwrap())).await;
    let attempts = detail["deliveries"].as_array().unwrap();
    assert_eq!(attempts.len(), jobs, "{detail}");
    assert!(
        attempts.iter().all(|a| a["outcome"] == "dead" && a["detail"] == "HTTP 404" && a["attempt"] == 1),
        "{detail}"
    );

    let listed = cli(&["push", "dead", "list", "--url", &app.url, "--token", VIEWER]).await;
    let text = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(text.lines().count(), jobs, "the CLI asks the running node: {text}");
    let shown = format!("host={host}\tstatus=404\t");
    assert!(text.lines().all(|line| line.contains(&shown) && !line.contains("/gone")), "{text}");
    let refused = cli(&["push", "dead", "retry", "--all", "--url", &app.url, "--token", VIEWER]).await;
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("viewer"));
    let stats = cli(&["admin", "stats", "--json", "--url", &app.url, "--token", VIEWER]).await;
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["totalTasks"], 1, "{stats}");

    receiver.set_gone_ok(true);
    let retried = cli(&["push", "dead", "retry", "--all", "--url", &app.url, "--token", OPERATOR]).await;
    assert!(String::from_utf8_lossy(&retried.stdout).contains(&format!("{jobs} job(s)")), "{retried:?}");
    let delivered = eventually(400, || async {
        receiver.received().iter().filter(|r| r.path == "/gone" && r.status == 200).count() >= jobs
    });
    assert!(delivered.await, "{:?}", receiver.received());

    receiver.set_gone_ok(false);
    app.send_text("again", json!({"configuration": {"taskPushNotificationConfig": hook}})).await;
    assert!(
        eventually(400, || async {
            !admin_get(&app, VIEWER, "/push/dead").await.1["dead"].as_array().unwrap().is_empty()
        })
        .await
    );
    let (status, body) = admin_post(&app, OPERATOR, "/push/dead/purge", json!({"id": "no:such:job"})).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = admin_post(&app, OPERATOR, "/push/dead/purge", json!({})).await;
    assert_eq!((status, reason(&body)), (400, "INVALID_PARAMS"), "name one or all: {body}");
    let (status, purged) = admin_post(&app, OPERATOR, "/push/dead/purge", json!({"all": true})).await;
    assert!(status == 200 && purged["count"].as_u64().unwrap() >= 1, "{purged}");
    assert_eq!(admin_get(&app, VIEWER, "/push/dead").await.1["dead"], json!([]));
}

#[actix_web::test]
async fn the_live_feed_carries_every_tenants_task_changes() {
    let app = spawn_app(|c| {
        operators(c);
        tenants(c);
        // A reader that went away is noticed at the next write: the keep-alive.
        c.stream_keep_alive = Duration::from_millis(50);
    })
    .await;
    let response = app.client.get(format!("{}/admin/v1/feed", app.url)).bearer_auth(VIEWER).send().await.unwrap();
    let mut feed = SseReader::from_response(response).await.expect("an event stream");
    assert!(eventually(200, || async { admin_get(&app, VIEWER, "/status").await.1["feedWatchers"] == 1 }).await);
    let task = send_as(&app, "globex-token", "watch me").await;
    let mut seen = Vec::new();
    while seen.last().is_none_or(|e: &Value| e["state"] != "completed") {
        let event = feed.next_data().await.expect("the feed stays open");
        assert_eq!(event.event.as_deref(), Some("task"));
        seen.push(event.json());
    }
    assert!(seen.iter().all(|e| e["taskId"] == task["id"] && e["tenant"] == "globex"), "{seen:?}");
    assert!(seen[0]["event"]["task"]["history"][0]["parts"][0]["text"] == "watch me", "{:?}", seen[0]);
    drop(feed);
    assert!(eventually(200, || async { admin_get(&app, VIEWER, "/status").await.1["feedWatchers"] == 0 }).await);
}

#[actix_web::test]
async fn the_admin_api_is_off_without_tokens_and_can_have_a_listener_of_its_own() {
    let off = spawn_app(|_| {}).await;
    for path in ["/admin/v1/status", "/console"] {
        let response = off.client.get(format!("{}{path}", off.url)).bearer_auth(OPERATOR).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }

    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default_node();
    config.data_dir = dir.path().join("data");
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.grpc_listen = None;
    operators(&mut config);
    config.admin.listen = AdminListen::Address("127.0.0.1:0".parse().unwrap());
    let app = a2ad::startup::Application::build(config).await.unwrap();
    let (main, admin) = (app.local_url(), format!("http://{}", app.admin_addr().expect("its own listener")));
    actix_web::rt::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();
    let get = |url: String| client.get(url).bearer_auth(OPERATOR).send();
    assert_eq!(get(format!("{main}/admin/v1/status")).await.unwrap().status(), 404, "not on the main listener");
    assert_eq!(get(format!("{admin}/admin/v1/status")).await.unwrap().status(), 200);
    assert_eq!(get(format!("{admin}/console")).await.unwrap().status(), 200);
    let card = get(format!("{admin}/.well-known/agent-card.json")).await.unwrap();
    assert_eq!(card.status(), 404, "only the admin API and the console answer there");
}

/// The status line's code of `GET path` with the operator token over the Unix socket.
async fn unix_get(socket: &std::path::Path, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::UnixStream::connect(socket).await.expect("the socket accepts");
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {OPERATOR}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    actix_web::rt::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw)).await.unwrap().unwrap();
    String::from_utf8_lossy(&raw).split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[actix_web::test]
async fn admin_listen_unix_answers_on_the_socket_only() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("a2ad.sock");
    let app = spawn_app(|c| {
        operators(c);
        c.admin.listen = AdminListen::Unix;
        c.listen_unix = Some(socket.clone());
    })
    .await;
    let (status, _) = admin_get(&app, OPERATOR, "/me").await;
    assert_eq!(status, 404, "not over TCP");
    let console = app.client.get(format!("{}/console", app.url)).send().await.unwrap();
    assert_eq!(console.status(), 404, "nor the console");
    assert_eq!(unix_get(&socket, "/admin/v1/me").await, 200);
    assert_eq!(unix_get(&socket, "/console").await, 200);
}

/// The sums over every sample of `/series` of `field` (a number, or an object of numbers).
fn summed(series: &Value, field: &str) -> u64 {
    let samples = series["samples"].as_array().cloned().unwrap_or_default();
    let value = |v: &Value| {
        v.as_u64().unwrap_or_else(|| v.as_object().map_or(0, |o| o.values().filter_map(Value::as_u64).sum()))
    };
    samples.iter().map(|s| value(&s[field])).sum()
}

#[actix_web::test]
async fn the_series_counts_requests_and_turns_per_ten_seconds() {
    let app = spawn_app(operators).await;
    let (status, empty) = admin_get(&app, VIEWER, "/series").await;
    assert_eq!((status, &empty["intervalSeconds"]), (200, &json!(10)), "{empty}");
    for n in 0..12 {
        assert!(app.send_text(&format!("load {n}"), json!({})).await["id"].is_string());
    }
    // The sampler counts every 10 s: wait (bounded, 40 s) for the samples that hold the load.
    let mut series = Value::Null;
    for _ in 0..400 {
        series = admin_get(&app, VIEWER, "/series").await.1;
        if summed(&series, "turnsCompleted") >= 12 {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(summed(&series, "turnsCompleted") >= 12, "{series}");
    assert!(summed(&series, "requests") >= 12 && summed(&series, "turnsStarted") >= 12, "{series}");
    let busy = series["samples"].as_array().unwrap().iter().find(|s| s["turnsCompleted"].as_u64() > Some(0)).unwrap();
    assert!(busy["requests"]["SendMessage"].as_u64() > Some(0), "{busy}");
    assert!(
        busy["turnP50Ms"].as_f64().is_some_and(|p| p > 0.0) && busy["turnP99Ms"].as_f64() >= busy["turnP50Ms"].as_f64()
    );
    assert_eq!(busy["queueDepth"], Value::Null, "push is off");
    assert_eq!((busy["turnsFailed"].clone(), busy["openStreams"].clone()), (json!(0), json!(0)));

    let last = series["samples"].as_array().unwrap().last().unwrap()["atMs"].as_i64().unwrap();
    let (_, newer) = admin_get(&app, VIEWER, &format!("/series?since={last}")).await;
    assert!(newer["samples"].as_array().unwrap().iter().all(|s| s["atMs"].as_i64() > Some(last)), "{newer}");
    for (query, field) in [("since=soon", "since"), ("from=1", "query")] {
        let (status, body) = admin_get(&app, VIEWER, &format!("/series?{query}")).await;
        assert_eq!((status, reason(&body)), (400, "INVALID_PARAMS"), "{query}: {body}");
        assert_eq!(body["error"]["details"][0]["metadata"]["field"], field, "{body}");
    }
    let (status, _) = admin_get(&app, "not-a-token", "/series").await;
    assert_eq!(status, 401);
}

#[actix_web::test]
async fn a_search_finds_tasks_by_part_of_their_tenant_ids_agent_or_first_message() {
    let app = spawn_app(|c| {
        operators(c);
        tenants(c);
    })
    .await;
    let a1 = send_as(&app, "acme-token", "invoice for march").await;
    send_as(&app, "acme-token", "a2").await;
    send_as(&app, "globex-token", "g1").await;
    let found = |body: &Value| -> Vec<(String, String)> {
        let rows = body["tasks"].as_array().cloned().unwrap_or_default();
        rows.iter().map(|t| (t["tenant"].as_str().unwrap().to_owned(), t["id"].as_str().unwrap().to_owned())).collect()
    };
    let (_, acm) = admin_get(&app, VIEWER, "/tasks?q=acm").await;
    assert_eq!(found(&acm).iter().filter(|(t, _)| t == "acme").count(), 2, "{acm}");
    assert_eq!(found(&acm).len(), 2, "a substring of the tenant: {acm}");
    let (_, lob) = admin_get(&app, VIEWER, "/tasks?q=LOB").await;
    assert_eq!(found(&lob).len(), 1, "any case, inside the name: {lob}");
    let (_, march) = admin_get(&app, VIEWER, "/tasks?q=March").await;
    assert_eq!(found(&march), vec![("acme".to_owned(), a1["id"].as_str().unwrap().to_owned())], "{march}");
    let id = a1["id"].as_str().unwrap();
    let (_, by_id) = admin_get(&app, VIEWER, &format!("/tasks?q={}", &id[..12])).await;
    assert!(found(&by_id).iter().any(|(_, t)| t == id), "a prefix of the id: {by_id}");
    let context = a1["contextId"].as_str().unwrap();
    let (_, by_context) = admin_get(&app, VIEWER, &format!("/tasks?q={}", &context[context.len() - 10..])).await;
    assert!(found(&by_context).iter().any(|(_, t)| t == id), "a part of the context id: {by_context}");
    let (_, agent) = admin_get(&app, VIEWER, "/tasks?q=ech&tenant=globex").await;
    assert_eq!(found(&agent).len(), 1, "the agent, with the other filters: {agent}");
    let (_, none) = admin_get(&app, VIEWER, "/tasks?q=no-such-text").await;
    assert_eq!(found(&none).len(), 0, "{none}");
    // Pagination is unchanged: pages of a search hold every match once.
    let (_, first) = admin_get(&app, VIEWER, "/tasks?q=acm&pageSize=1").await;
    let token = first["nextPageToken"].as_str().expect("a second page");
    let (_, second) = admin_get(&app, VIEWER, &format!("/tasks?q=acm&pageSize=1&pageToken={token}")).await;
    let mut ids: Vec<String> = found(&first).into_iter().chain(found(&second)).map(|(_, id)| id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 2, "{first} {second}");
}

/// An agent with a small inline artifact and one large enough to be stored as a file.
fn maker() -> a2ad::config::AgentConfig {
    let script = r#"big=$(head -c 5000 /dev/zero | tr '\0' y)
echo '{"type":"artifact","artifactId":"small","name":"note","text":"short"}'
echo "{\"type\":\"artifact\",\"artifactId\":\"report\",\"text\":\"$big\",\"filename\":\"report.md\"}"
echo '{"type":"final","state":"completed"}'"#;
    let settings = command_settings(&["/bin/sh", "-c", script], a2ad::agents::command::OutputMode::Jsonl);
    command_agent("maker", settings)
}

#[actix_web::test]
async fn facets_name_the_known_tenants_agents_and_states_and_a_task_its_artifact_sizes() {
    let app = spawn_app(|c| {
        operators(c);
        tenants(c);
        c.agents = vec![a2ad::config::AgentConfig::default_echo(), maker()];
    })
    .await;
    // Before any task: the tenants of the configured credentials.
    let (status, facets) = admin_get(&app, VIEWER, "/tasks/facets").await;
    assert_eq!(status, 200, "{facets}");
    assert_eq!(facets["tenants"], json!(["acme", "globex"]), "{facets}");
    let agents = facets["agents"].as_array().unwrap();
    assert!(agents.len() == 2 && agents[1] == "maker", "{facets}");
    let states: Vec<&str> = facets["states"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(states.len(), 8, "{facets}");
    assert!(states.contains(&"input-required") && !states.contains(&"unspecified"), "{facets}");
    let refused = app.client.get(format!("{}/admin/v1/tasks/facets", app.url)).send().await.unwrap();
    assert_eq!(refused.status(), 401);

    // A task's artifact sizes: the inline part's bytes, the stored file's size.
    let params = send_params("make", json!({"metadata": {"skill": "maker"}}));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
    let sent = app.client.post(&app.url).bearer_auth("acme-token").json(&body).send().await.unwrap();
    let sent: Value = sent.json().await.unwrap();
    let id = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_owned();
    let (_, detail) = admin_get(&app, VIEWER, &format!("/tasks/{id}")).await;
    assert!(detail["task"]["artifacts"][1]["parts"][0]["url"].is_string(), "stored as a file: {detail}");
    assert_eq!(detail["artifactSizes"], json!({"small": [5], "report": [5000]}), "{detail}");
}
