//! Push notifications: config methods, delivery, retries, dead letters, crash safety.

use crate::receiver::{Received, Receiver};
use crate::support::JsonBody as _;
use crate::support::{eventually, send_params, spawn_app, NodeProcess};
use a2ad::config::Config;
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

fn push_on(c: &mut Config) {
    c.push.enabled = true;
    c.push.allow = vec!["127.0.0.1/32".into()];
    c.push.retry_base = Duration::from_millis(40);
    c.push.retry_max = Duration::from_millis(200);
    // A receiver failing every event in a row opens its circuit: keep that short here.
    c.push.circuit_open = Duration::from_millis(100);
}

/// Events delivered (2xx) to `path`, by event id.
fn delivered(received: &[Received], path: &str) -> Vec<String> {
    received.iter().filter(|r| r.path == path && r.status == 200).map(Received::event_id).collect()
}

#[actix_web::test]
async fn config_methods_follow_the_spec() {
    let app = spawn_app(push_on).await;
    let card = app.card().await;
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    let done = app.send_text("x", json!({})).await;
    let task_id = done["id"].as_str().unwrap();
    let hook = "http://127.0.0.1:9/hook";
    let created =
        app.ok("CreateTaskPushNotificationConfig", json!({"taskId": task_id, "url": hook, "token": "t0k"})).await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(!id.is_empty(), "the id defaults to a new one: {created}");
    assert_eq!(created["taskId"], task_id, "a config can be created on a terminal task");
    let named = app.ok("CreateTaskPushNotificationConfig", json!({"taskId": task_id, "id": "mine", "url": hook})).await;
    assert_eq!(named["id"], "mine");
    let got = app.ok("GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": id})).await;
    assert_eq!(got, created);
    let listed = app.ok("ListTaskPushNotificationConfigs", json!({"taskId": task_id})).await;
    assert_eq!(listed["configs"].as_array().unwrap().len(), 2);
    assert_eq!(
        app.rpc("DeleteTaskPushNotificationConfig", json!({"taskId": task_id, "id": "mine"})).await["result"],
        Value::Null
    );
    app.ok("DeleteTaskPushNotificationConfig", json!({"taskId": task_id, "id": "mine"})).await; // idempotent
    let missing = app.err("GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": "mine"})).await;
    assert_eq!(missing["code"], -32001);
    let unknown = app.err("CreateTaskPushNotificationConfig", json!({"taskId": "nope", "url": hook})).await;
    assert_eq!(unknown["code"], -32001);
    for bad in [
        "http://10.0.0.1/h",
        "http://localhost/h",
        "ftp://example.com/h",
        "http://user:pw@example.com/h",
        "http://169.254.169.254/",
    ] {
        let refused = app.err("CreateTaskPushNotificationConfig", json!({"taskId": task_id, "url": bad})).await;
        assert_eq!(refused["code"], -32602, "{bad}");
        assert!(refused["message"].as_str().unwrap().contains("url"), "{bad}: {refused}");
    }
}

async fn wait_delivered(receiver: &Receiver, path: &str, n: usize) -> bool {
    eventually(400, || async { delivered(&receiver.received(), path).len() >= n }).await
}

#[actix_web::test]
async fn events_are_delivered_with_the_spec_headers_and_body() {
    let receiver = Receiver::start();
    let app = spawn_app(push_on).await;
    let config = json!({"url": format!("{}/ok", receiver.base), "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "cred-1"}});
    let task = app.send_text("hello", json!({"configuration": {"taskPushNotificationConfig": config}})).await;
    let distinct = || {
        let mut ids = delivered(&receiver.received(), "/ok");
        ids.sort();
        ids.dedup();
        ids
    };
    assert!(eventually(400, || async { distinct().len() >= 3 }).await, "{:?}", receiver.received());
    let got = receiver.received();
    let task_id = task["id"].as_str().unwrap();
    // Every event, each at least once; in any order, since a task's deliveries run side
    // by side (docs/push.md), and a busy machine lets a later one overtake.
    assert_eq!(distinct(), [format!("{task_id}:1"), format!("{task_id}:2"), format!("{task_id}:3")]);
    for r in &got {
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(r.headers["authorization"], "Bearer cred-1");
        assert_eq!(r.headers["x-a2a-notification-token"], "tok-1");
        assert_eq!(r.headers["a2a-notification-token"], "tok-1");
        let keys: Vec<&String> = r.body.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 1, "one StreamResponse member: {}", r.body);
    }
    let last = got.iter().find(|r| r.event_id() == format!("{task_id}:3")).unwrap();
    assert_eq!(last.body["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(got.iter().any(|r| r.body.get("task").is_some()), "the task itself is pushed first");
}

#[actix_web::test]
async fn a_failing_receiver_gets_each_event_once_acknowledged() {
    let receiver = Receiver::start();
    let app = spawn_app(push_on).await;
    let config = json!({"url": format!("{}/flaky/3", receiver.base)});
    let task = app.send_text("retry me", json!({"configuration": {"taskPushNotificationConfig": config}})).await;
    assert!(wait_delivered(&receiver, "/flaky/3", 3).await, "{:?}", receiver.received());
    let got = receiver.received();
    let task_id = task["id"].as_str().unwrap();
    for seq in 1..=3 {
        let id = format!("{task_id}:{seq}");
        let attempts = got.iter().filter(|r| r.event_id() == id).count();
        let acks = got.iter().filter(|r| r.event_id() == id && r.status == 200).count();
        assert_eq!((attempts, acks), (4, 1), "event {id}: three failures, then one acknowledged delivery");
    }
}

#[actix_web::test]
async fn terminal_only_pushes_only_the_end_of_a_turn() {
    let receiver = Receiver::start();
    let app = spawn_app(|c| {
        push_on(c);
        c.push.terminal_only = true;
    })
    .await;
    let config = json!({"url": format!("{}/ok", receiver.base)});
    app.send_text("x", json!({"configuration": {"taskPushNotificationConfig": config}})).await;
    assert!(wait_delivered(&receiver, "/ok", 1).await);
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    let got = receiver.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].body["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[actix_web::test]
async fn the_raw_data_dir_holds_no_plaintext_secret() {
    let app = spawn_app(push_on).await;
    let task = app.send_text("x", json!({})).await;
    let config = json!({"taskId": task["id"], "url": "http://127.0.0.1:9/", "token": "tok-e2e-SECRET-81",
        "authentication": {"scheme": "Basic", "credentials": "cred-e2e-SECRET-82"}});
    app.ok("CreateTaskPushNotificationConfig", config).await;
    let mut found = Vec::new();
    scan(app._dir.path(), &mut found);
    assert!(found.is_empty(), "plaintext secrets in {found:?}");
}

fn scan(dir: &std::path::Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            scan(&path, found);
        } else if let Ok(bytes) = std::fs::read(&path) {
            let text = String::from_utf8_lossy(&bytes);
            if text.contains("tok-e2e-SECRET-81") || text.contains("cred-e2e-SECRET-82") {
                found.push(path.display().to_string());
            }
        }
    }
}

fn push_config_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("a2ad.yml");
    std::fs::write(
        &path,
        "push-notifications: true\npush-allow: [127.0.0.1/32]\npush-retry-base: 50ms\npush-retry-max: 200ms\npush-max-attempts: 3\n",
    )
    .unwrap();
    path
}

fn cli(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_a2ad")).args(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[actix_web::test]
async fn a_permanent_refusal_goes_to_the_dead_letters_and_a_cli_retry_delivers_it() {
    let receiver = Receiver::start();
    let cwd = tempfile::tempdir().unwrap();
    let config = push_config_file(cwd.path());
    let data = cwd.path().join("data");
    let args = ["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let hook = json!({"url": format!("{}/gone", receiver.base)});
    let sent = node
        .app_view()
        .ok("SendMessage", send_params("x", json!({"configuration": {"taskPushNotificationConfig": hook}})))
        .await;
    let task_id = sent["task"]["id"].as_str().unwrap().to_owned();
    let refused =
        eventually(400, || async { receiver.received().iter().filter(|r| r.status == 404).count() >= 3 }).await;
    assert!(refused, "{:?}", receiver.received());
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    assert!(node.terminate().success());

    let listed =
        cli(&["push", "dead", "list", "--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    assert_eq!(listed.lines().count(), 3, "one dead job per event: {listed}");
    assert!(listed.contains(&format!("{task_id}:1:")) && listed.contains("HTTP 404"), "{listed}");
    // Offline too, each line names the receiver's host (not the path) and the status.
    let shown = format!("host={}\tstatus=404\t", receiver.base.trim_start_matches("http://"));
    assert!(listed.lines().all(|l| l.contains(&shown) && !l.contains("/gone")), "{listed}");
    receiver.set_gone_ok(true);
    let retried = cli(&[
        "push",
        "dead",
        "retry",
        "--all",
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    assert!(retried.contains("3 job(s)"), "{retried}");

    let _node = NodeProcess::start(cwd.path(), &args);
    assert!(wait_delivered(&receiver, "/gone", 3).await, "{:?}", receiver.received());
    let again = cli_fails_while_running(&config, &data);
    assert!(again, "the CLI refuses a data dir in use");
}

fn cli_fails_while_running(config: &std::path::Path, data: &std::path::Path) -> bool {
    let output = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["push", "dead", "list", "--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()])
        .output()
        .unwrap();
    !output.status.success() && String::from_utf8_lossy(&output.stderr).contains("stop it first")
}

#[actix_web::test]
async fn a_job_in_flight_when_the_node_is_killed_is_delivered_after_restart() {
    let receiver = Receiver::start();
    let cwd = tempfile::tempdir().unwrap();
    let config_path = cwd.path().join("a2ad.yml");
    std::fs::write(&config_path, "push-notifications: true\npush-allow: [127.0.0.1/32]\npush-terminal-only: true\n")
        .unwrap();
    let data = cwd.path().join("data");
    let args = ["--config", config_path.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let hook = json!({"url": format!("{}/slow", receiver.base)});
    node.app_view()
        .ok("SendMessage", send_params("x", json!({"configuration": {"taskPushNotificationConfig": hook}})))
        .await;
    let in_flight = eventually(400, || async { !receiver.received().is_empty() }).await;
    assert!(in_flight, "the delivery started");
    node.crash(); // SIGKILL while the receiver holds the request

    let _node = NodeProcess::start(cwd.path(), &args);
    let redelivered = eventually(400, || async { receiver.received().len() >= 2 }).await;
    assert!(redelivered, "{:?}", receiver.received());
    let got = receiver.received();
    assert_eq!(got[0].event_id(), got[1].event_id(), "the same event, delivered again");
}

#[actix_web::test]
async fn a_name_that_resolves_to_loopback_is_refused_at_dispatch_once_not_allowlisted() {
    let receiver = Receiver::start();
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    let data = data.to_str().unwrap();
    let port = receiver.base.rsplit(':').next().unwrap().to_owned();
    let write = |name: &str, allow: &str| {
        let path = cwd.path().join(name);
        let agents = "agents:\n  - {id: chat, kind: echo, echo: {end-state: input-required}}\n";
        std::fs::write(&path, format!("push-notifications: true\npush-terminal-only: true\n{allow}{agents}")).unwrap();
        path
    };
    let trusting = write("trusting.yml", "push-allow: [localhost]\n");
    let strict = write("strict.yml", "");

    let node = NodeProcess::start(cwd.path(), &["--config", trusting.to_str().unwrap(), "--data-dir", data]);
    let hook = json!({"url": format!("http://localhost:{port}/ok")});
    let sent = node
        .app_view()
        .ok("SendMessage", send_params("x", json!({"configuration": {"taskPushNotificationConfig": hook}})))
        .await;
    assert!(wait_delivered(&receiver, "/ok", 1).await, "delivered while localhost was allowlisted");
    assert!(node.terminate().success());

    let node = NodeProcess::start(cwd.path(), &["--config", strict.to_str().unwrap(), "--data-dir", data]);
    let follow_up = send_params("more", json!({"taskId": sent["task"]["id"]}));
    node.app_view().ok("SendMessage", follow_up).await;
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    assert!(node.terminate().success());
    assert_eq!(receiver.received().len(), 1, "nothing reached the receiver once it was not allowlisted");
    let dead = cli(&["push", "dead", "list", "--config", strict.to_str().unwrap(), "--data-dir", data]);
    assert!(dead.contains("refused") && dead.contains("localhost"), "{dead}");
}

#[actix_web::test]
async fn a_forced_internal_failure_answers_with_a_correlation_id_only() {
    let cwd = tempfile::tempdir().unwrap();
    let config = push_config_file(cwd.path());
    let data = cwd.path().join("data");
    let args = ["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let remote = node.app_view();
    let task = remote.ok("SendMessage", send_params("x", json!({}))).await;
    let task_id = task["task"]["id"].as_str().unwrap().to_owned();
    let hook = json!({"taskId": task_id, "id": "c1", "url": "http://127.0.0.1:9/h", "token": "tok-x"});
    remote.ok("CreateTaskPushNotificationConfig", hook).await;
    assert!(node.terminate().success());

    // Another (valid, 0600) key: the sealed token can no longer be opened.
    use base64::Engine as _;
    use std::os::unix::fs::PermissionsExt as _;
    let key_path = data.join("push.key");
    std::fs::write(&key_path, base64::engine::general_purpose::STANDARD.encode([7u8; 32])).unwrap();
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();

    let node = NodeProcess::start(cwd.path(), &args);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTaskPushNotificationConfig", "params": {"taskId": task_id, "id": "c1"}});
    let response: Value = reqwest::Client::new().post(&node.url).json(&body).json_body().await;
    let error = &response["error"];
    assert_eq!(error["code"], -32603, "{response}");
    let correlation = error["data"][0]["metadata"]["correlationId"].as_str().unwrap();
    assert_eq!(error["message"], format!("Internal error (correlation id {correlation})"));
    let text = response.to_string();
    for leak in ["decrypt", "key", "push.key", cwd.path().to_str().unwrap(), "tok-x"] {
        assert!(!text.contains(leak), "{leak:?} leaked: {text}");
    }
}
