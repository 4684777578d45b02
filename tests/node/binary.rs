//! The real binary: defaults, config errors, restarts and crash recovery.

use crate::support::{send_params, NodeProcess};
use serde_json::json;
use std::process::{Command, Stdio};

#[actix_web::test]
async fn with_no_config_it_serves_echo_in_the_working_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let node = NodeProcess::start(cwd.path(), &[]);
    let remote = node.app_view();
    let task = remote.ok("SendMessage", send_params("hello", json!({}))).await;
    assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(cwd.path().join("a2ad-data").is_dir(), "the default data dir is under the working directory");
    assert!(node.terminate().success(), "SIGTERM is a clean exit");
}

#[actix_web::test]
async fn tasks_survive_a_restart() {
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("store");
    let data_arg = data.to_str().unwrap();
    let node = NodeProcess::start(cwd.path(), &["--data-dir", data_arg]);
    let remote = node.app_view();
    let mut ids = Vec::new();
    for i in 0..5 {
        let result = remote.ok("SendMessage", send_params(&format!("m{i}"), json!({"contextId": "ctx-r"}))).await;
        ids.push(result["task"]["id"].as_str().unwrap().to_owned());
    }
    let before = remote.ok("ListTasks", json!({"includeArtifacts": true})).await;
    assert!(node.terminate().success());

    let node = NodeProcess::start(cwd.path(), &["--data-dir", data_arg]);
    let remote = node.app_view();
    let after = remote.ok("ListTasks", json!({"includeArtifacts": true})).await;
    assert_eq!(after, before, "ListTasks returns everything after the restart");
    for id in &ids {
        let task = remote.ok("GetTask", json!({"id": id})).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    }
    let next = remote.ok("SendMessage", send_params("after", json!({"contextId": "ctx-r"}))).await;
    assert_eq!(next["task"]["status"]["message"]["metadata"]["echo"]["sessionMessages"], 10, "the session survived");
}

#[actix_web::test]
async fn a_task_running_at_a_crash_is_marked_failed_at_start_up() {
    let cwd = tempfile::tempdir().unwrap();
    let config = cwd.path().join("a2ad.yml");
    std::fs::write(&config, "agents:\n  - id: slow\n    kind: echo\n    echo: {chunk-size: 1, chunk-delay: 2s}\n")
        .unwrap();
    let args = ["--config", config.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let remote = node.app_view();
    let params = send_params("abcdef", json!({"configuration": {"returnImmediately": true}}));
    let started = remote.ok("SendMessage", params).await;
    let id = started["task"]["id"].as_str().unwrap().to_owned();
    node.crash();

    let node = NodeProcess::start(cwd.path(), &args);
    let task = node.app_view().ok("GetTask", json!({"id": id})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("restarted"), "{text}");
}

#[test]
fn an_unknown_config_key_stops_start_up_and_names_the_key() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("bad.yml"), "listen: 127.0.0.1:0\nidle-timout: 5s\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--config", "bad.yml"])
        .current_dir(cwd.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown key `idle-timout`; did you mean `idle-timeout`?"), "{stderr}");
    assert!(stderr.contains("push-max-attempts"), "every key is listed, the push-* ones too: {stderr}");

    // The issue's own case: `push_notifications` for `push-notifications`.
    std::fs::write(cwd.path().join("bad3.yml"), "listen: 127.0.0.1:0\npush_notifications: true\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--config", "bad3.yml"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did you mean `push-notifications`?"), "{stderr}");
    assert!(
        stderr.contains("push-allow") && stderr.contains("push-retry-base"),
        "the push-* keys are listed: {stderr}"
    );

    let output = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--config", "missing.yml"])
        .current_dir(cwd.path())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("a2ad: invalid configuration: cannot read config file missing.yml"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line, no backtrace: {stderr}");
    assert_eq!(stderr.matches("No such file").count(), 1, "the cause once: {stderr}");

    std::fs::write(cwd.path().join("bad2.yml"), "body-limit: 12 parsecs\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--config", "bad2.yml"])
        .current_dir(cwd.path())
        .env("A2AD_LISTEN", "127.0.0.1:0")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("body-limit"), "{stderr}");
    assert!(!cwd.path().join("a2ad-data").exists(), "nothing was created");
}

#[actix_web::test]
async fn sigterm_lets_short_turns_finish_ends_long_ones_honestly_and_closes_streams() {
    use crate::support::SseReader;
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        cwd.path().join("a2ad.yml"),
        "shutdown-grace: 1s\nagents:\n  - {id: slow, kind: echo, echo: {chunk-size: 1, chunk-delay: 100ms}}\n",
    )
    .unwrap();
    let data = cwd.path().join("data");
    let args = ["--config", "a2ad.yml", "--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let remote = node.app_view();
    let start = |text: &str| send_params(text, json!({"configuration": {"returnImmediately": true}}));
    let short = remote.ok("SendMessage", start("abc")).await["task"]["id"].as_str().unwrap().to_owned();
    let long = remote.ok("SendMessage", start(&"z".repeat(80))).await["task"]["id"].as_str().unwrap().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": long}});
    let response = remote.client.post(&remote.url).json(&body).send().await.unwrap();
    let mut stream = SseReader::from_response(response).await.unwrap();
    let watcher = actix_web::rt::spawn(async move { stream.rest().await });

    let exit = actix_web::rt::task::spawn_blocking(move || node.terminate()).await.unwrap();
    assert!(exit.success(), "a clean exit: {exit:?}");
    let events = watcher.await.unwrap();
    let last = events.last().expect("the stream got events").result();
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_FAILED", "the stream ends with the final event");

    let node = NodeProcess::start(cwd.path(), &args);
    let remote = node.app_view();
    let done = remote.ok("GetTask", json!({"id": short})).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "a short turn finished within the grace period");
    let ended = remote.ok("GetTask", json!({"id": long})).await;
    assert_eq!(ended["status"]["state"], "TASK_STATE_FAILED");
    let text = ended["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("shut down"), "recorded at shutdown, not found at restart: {text}");
}

/// With no connection open the HTTP server stops at once on SIGTERM; the running turns
/// still get their grace period.
#[actix_web::test]
async fn sigterm_with_no_connection_open_still_gives_running_turns_their_grace() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        cwd.path().join("a2ad.yml"),
        "shutdown-grace: 5s\nagents:\n  - {id: slow, kind: echo, echo: {chunk-size: 1, chunk-delay: 100ms}}\n",
    )
    .unwrap();
    let data = cwd.path().join("data");
    let args = ["--config", "a2ad.yml", "--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let short = {
        let remote = node.app_view();
        let params = send_params("abcdefgh", json!({"configuration": {"returnImmediately": true}}));
        remote.ok("SendMessage", params).await["task"]["id"].as_str().unwrap().to_owned()
    };
    let exit = actix_web::rt::task::spawn_blocking(move || node.terminate()).await.unwrap();
    assert!(exit.success(), "a clean exit: {exit:?}");
    let node = NodeProcess::start(cwd.path(), &args);
    let done = node.app_view().ok("GetTask", json!({"id": short})).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "the turn finished within the grace period: {done}");
}

#[actix_web::test]
async fn a_program_that_cannot_start_is_explained_in_plain_logs_not_to_the_client() {
    let cwd = tempfile::tempdir().unwrap();
    let config = "agents:\n  - {id: gone, kind: command, command: {argv: [bin/not-here.sh]}}\n";
    std::fs::write(cwd.path().join("a2ad.yml"), config).unwrap();
    // There at start-up (which checks it), gone by the first turn.
    let program = cwd.path().join("bin/not-here.sh");
    std::fs::create_dir(cwd.path().join("bin")).unwrap();
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let log = cwd.path().join("node.log");
    let node = NodeProcess::start_logging(cwd.path(), &["--config", "a2ad.yml", "--data-dir", "data"], &log);
    std::fs::remove_file(&program).unwrap();
    let task = node.app_view().ok("SendMessage", send_params("m1", json!({}))).await;
    let text = task["task"]["status"]["message"]["parts"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!(text, "Agent failed: the agent program could not be started", "no path for the client");
    assert!(node.terminate().success());
    let logs = std::fs::read_to_string(&log).unwrap();
    let line = logs.lines().find(|l| l.contains("could not be started")).unwrap_or_else(|| panic!("{logs}"));
    assert!(line.contains("not-here.sh") && line.contains("No such file"), "the operator learns why: {line}");
    assert!(!logs.contains('\u{1b}'), "no colour codes when stderr is not a terminal: {logs}");
}

#[actix_web::test]
async fn json_logs_carry_the_request_id_and_never_a_credential() {
    let cwd = tempfile::tempdir().unwrap();
    let config = "log-format: json\nlog-level: debug\nmetrics-token: metrics-secret-1234\n\
                  auth:\n  bearer-tokens: [{token: bearer-secret-5678, tenant: acme, principal: ci}]\n";
    std::fs::write(cwd.path().join("a2ad.yml"), config).unwrap();
    let log = cwd.path().join("node.log");
    let node = NodeProcess::start_logging(cwd.path(), &["--config", "a2ad.yml", "--data-dir", "data"], &log);
    let client = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("m1", json!({}))});
    let answer = client
        .post(&node.url)
        .bearer_auth("bearer-secret-5678")
        .header("X-Request-Id", "qa-req-1")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
    let refused = client.post(&node.url).bearer_auth("wrong-secret-9999").json(&body).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let metrics = client.get(format!("{}/metrics", node.url)).bearer_auth("metrics-secret-1234").send().await.unwrap();
    assert!(metrics.status().is_success());
    assert!(node.terminate().success());

    let logs = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> =
        logs.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let answered = lines
        .iter()
        .find(|l| l["fields"]["message"] == "answered" && l["span"]["request_id"] == "qa-req-1")
        .unwrap_or_else(|| panic!("no answered line with the request id: {logs}"));
    assert_eq!(answered["fields"]["method"], "SendMessage", "{answered}");
    for secret in ["bearer-secret-5678", "wrong-secret-9999", "metrics-secret-1234"] {
        assert!(!logs.contains(secret), "{secret} is in the logs");
    }
}

/// A program that ignores SIGTERM, running when the node is told to stop: the node's
/// close SIGKILLs its group after `cancel-grace` instead of exiting first and leaving it.
#[actix_web::test]
async fn a_program_that_ignores_sigterm_does_not_outlive_the_node() {
    let cwd = tempfile::tempdir().unwrap();
    let pid_file = cwd.path().join("program.pid");
    let script = format!("echo $$ > {}; trap '' TERM; echo started; sleep 60", pid_file.display());
    let config = format!(
        "shutdown-grace: 1s\nagents:\n  - id: stubborn\n    kind: command\n    command:\n      \
         argv: [/bin/sh, -c, \"{script}\"]\n      cancel-grace: 1s\n      timeout: 5m\n"
    );
    std::fs::write(cwd.path().join("a2ad.yml"), config).unwrap();
    let node = NodeProcess::start(cwd.path(), &["--config", "a2ad.yml", "--data-dir", "data"]);
    let started = send_params("go", json!({"configuration": {"returnImmediately": true}}));
    node.app_view().ok("SendMessage", started).await;
    let pid = wait_for(|| std::fs::read_to_string(&pid_file).ok().and_then(|p| p.trim().parse::<i32>().ok()))
        .await
        .expect("the program started and wrote its pid");
    assert!(running(pid), "the program runs during the turn");

    let exit = actix_web::rt::task::spawn_blocking(move || node.terminate()).await.unwrap();
    assert!(exit.success(), "a clean exit: {exit:?}");
    let gone = wait_for(|| (!running(pid)).then_some(())).await;
    assert!(gone.is_some(), "the program {pid} outlived the node");
}

/// Polls `probe` every 50 ms, at most 200 times (10 s); its first `Some`.
async fn wait_for<T>(mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..200 {
        if let Some(found) = probe() {
            return Some(found);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    None
}

/// Whether process `pid` exists and is not a zombie (dead, waiting to be reaped).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may hold spaces.
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Push configs whose task is gone (a crash between a task's removal and its configs')
/// are removed at start-up; a task's own config stays.
#[actix_web::test]
async fn start_up_removes_push_configs_whose_task_is_gone() {
    use a2ad_storage::{Owner, PushConfigStore, SecretKey, SledStore};
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a2ad.yml"), "push-notifications: true\n").unwrap();
    let data = cwd.path().join("data");
    let args = ["--config", "a2ad.yml", "--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let push = json!({"url": "https://hooks.example/a2a", "token": "tok-1"});
    let params = send_params("keep me", json!({"configuration": {"taskPushNotificationConfig": push}}));
    let kept = node.app_view().ok("SendMessage", params).await["task"]["id"].as_str().unwrap().to_owned();
    assert!(node.terminate().success());
    let configs_of = |data: &std::path::Path| {
        let store = SledStore::open(data).unwrap();
        let configs =
            PushConfigStore::new(store.tree("push_configs").unwrap(), SecretKey::load_or_create(data).unwrap());
        (store, configs)
    };
    {
        let (_store, configs) = configs_of(&data);
        let orphan = a2ad_protocol::TaskPushNotificationConfig {
            tenant: None,
            id: Some("c1".into()),
            task_id: Some("0193-removed-task".into()),
            url: "https://hooks.example/a2a".into(),
            token: Some("tok-2".into()),
            authentication: None,
        };
        configs.put(&Owner::anonymous(), &orphan).unwrap();
        assert_eq!(configs.task_ids().unwrap().len(), 2);
    }

    let node = NodeProcess::start(cwd.path(), &args);
    let task = node.app_view().ok("GetTask", json!({"id": kept})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "serving (and the signal handler is set)");
    assert!(node.terminate().success());
    let (_store, configs) = configs_of(&data);
    assert_eq!(configs.task_ids().unwrap(), [kept.as_str()], "only the orphan went");
    assert_eq!(configs.list(a2ad_storage::Scope::Node, &kept).unwrap()[0].config.token.as_deref(), Some("tok-1"));
}

#[actix_web::test]
async fn a_sigterm_right_after_the_listening_line_is_a_clean_stop() {
    // The signal handlers are in place before the line that says the node listens, so a
    // supervisor that stops the node at once gets a clean exit, not the default SIGTERM death.
    for _ in 0..3 {
        let cwd = tempfile::tempdir().unwrap();
        let node = NodeProcess::start(cwd.path(), &[]);
        assert!(node.terminate().success(), "caught and handled");
    }
}
