//! `a2ad stdio`: the real binary, talked to over its pipes.

use crate::support::send_params;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long a test waits for a line before it gives up (a hang guard only).
const PATIENCE: Duration = Duration::from_secs(30);

/// A running `a2ad stdio`.
struct StdioNode {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl StdioNode {
    /// Starts `a2ad stdio` on `dir`'s config and data dir; its agent echoes slowly.
    fn start(dir: &Path) -> StdioNode {
        StdioNode::start_with(dir, "")
    }

    /// The same with `extra` YAML appended to the config.
    fn start_with(dir: &Path, extra: &str) -> StdioNode {
        StdioNode::spawn(dir, &config_file(dir, extra))
    }

    /// Starts `a2ad stdio` on `yaml` as its whole config.
    fn start_yaml(dir: &Path, yaml: &str) -> StdioNode {
        let config = dir.join("stdio.yml");
        std::fs::write(&config, yaml).unwrap();
        StdioNode::spawn(dir, &config)
    }

    fn spawn(dir: &Path, config: &Path) -> StdioNode {
        let mut child = Command::new(env!("CARGO_BIN_EXE_a2ad"))
            .arg("stdio")
            .args(["--config", config.to_str().unwrap(), "--data-dir", dir.join("data").to_str().unwrap()])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the binary starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        StdioNode { child, stdin, stdout }
    }

    async fn write_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send(&mut self, id: Value, method: &str, params: Value) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write_line(&request.to_string()).await;
    }

    /// The next line on stdout, which must be one JSON document; `None` at its end.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line()).await.expect("a line in time").unwrap()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}")))
    }

    /// Closes stdin and waits for the process to exit; returns the lines it still wrote.
    async fn close(mut self) -> (std::process::ExitStatus, Vec<Value>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(line) = self.next().await {
            rest.push(line);
        }
        let status = tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("exits in time").unwrap();
        (status, rest)
    }
}

/// The config both the stdio node and a later `serve` use.
fn config_file(dir: &Path, extra: &str) -> std::path::PathBuf {
    let config = dir.join("stdio.yml");
    let agents = "agents:\n  - id: slow\n    kind: echo\n    echo: {chunk-size: 1, chunk-delay: 30ms}\n";
    std::fs::write(&config, format!("{agents}shutdown-grace: 5s\n{extra}")).unwrap();
    config
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

#[actix_web::test]
async fn stdio_answers_send_get_stream_and_errors_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = StdioNode::start(dir.path());
    node.send(json!(1), "SendMessage", send_params("hi", json!({}))).await;
    let sent = node.next().await.unwrap();
    assert_eq!(sent["id"], 1);
    let task = &sent["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED");
    let task_id = task["id"].as_str().unwrap().to_owned();

    node.send(json!("get"), "GetTask", json!({"id": task_id})).await;
    let got = node.next().await.unwrap();
    assert_eq!((got["id"].clone(), got["result"]["id"].clone()), (json!("get"), json!(task_id)));

    node.send(json!(3), "SendStreamingMessage", send_params("ab", json!({}))).await;
    let mut frames = 0;
    loop {
        let frame = node.next().await.unwrap();
        assert_eq!((frame["jsonrpc"].clone(), frame["id"].clone()), (json!("2.0"), json!(3)), "{frame}");
        assert!(frame["eventId"].as_u64().is_some(), "each frame says its event id: {frame}");
        frames += 1;
        if frame["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
    }
    assert!(frames >= 4, "the task, status and artifact updates, each a line ({frames})");

    node.write_line("{this is not json").await;
    let parse = node.next().await.unwrap();
    assert_eq!((parse["id"].clone(), parse["error"]["code"].clone()), (Value::Null, json!(-32700)));
    node.write_line("").await; // blank lines are skipped
    node.send(json!(5), "tasks/explode", json!({})).await;
    let unknown = node.next().await.unwrap();
    assert_eq!((unknown["id"].clone(), unknown["error"]["code"].clone()), (json!(5), json!(-32601)));
    node.send(json!(6), "GetTask", json!({})).await;
    let params = node.next().await.unwrap();
    assert_eq!((params["id"].clone(), params["error"]["code"].clone()), (json!(6), json!(-32602)), "{params}");
    node.send(json!(7), "GetTask", json!({"id": "no-such-task"})).await;
    let missing = node.next().await.unwrap();
    assert_eq!((missing["id"].clone(), missing["error"]["code"].clone()), (json!(7), json!(-32001)), "{missing}");

    let (status, rest) = node.close().await;
    assert!(status.success(), "end of stdin is a clean exit: {status:?}");
    assert!(rest.is_empty(), "{rest:?}");
}

#[actix_web::test]
async fn stdio_handles_requests_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = StdioNode::start(dir.path());
    node.send(json!("slow"), "SendMessage", send_params("abcdefghij", json!({}))).await;
    node.send(json!("quick"), "ListTasks", json!({})).await;
    let first = node.next().await.unwrap();
    assert_eq!(first["id"], "quick", "the quick request is not held up: {first}");
    let second = node.next().await.unwrap();
    assert_eq!(second["id"], "slow");
    assert_eq!(state(&second["result"]["task"]), "TASK_STATE_COMPLETED");
    let (status, _) = node.close().await;
    assert!(status.success());
}

#[actix_web::test]
async fn end_of_stdin_answers_what_was_read_then_exits_and_the_tasks_persist() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = StdioNode::start(dir.path());
    // Closed right after: the running turn still gets its answer before the exit.
    node.send(json!(1), "SendMessage", send_params("abcdef", json!({}))).await;
    let (status, lines) = node.close().await;
    assert!(status.success(), "{status:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let task = &lines[0]["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{}", lines[0]);
    let task_id = task["id"].as_str().unwrap();

    let mut again = StdioNode::start(dir.path());
    again.send(json!(2), "GetTask", json!({"id": task_id})).await;
    let got = again.next().await.unwrap();
    assert_eq!(state(&got["result"]), "TASK_STATE_COMPLETED", "persisted across restarts: {got}");
    assert_eq!(got["result"]["artifacts"][0]["parts"].as_array().map(Vec::len), Some(6), "{got}");
    let (status, _) = again.close().await;
    assert!(status.success());
}

#[actix_web::test]
async fn with_authentication_on_stdio_requests_belong_to_the_local_process_owner() {
    let reach = stdio_task_reach("").await;
    assert_eq!(reach, [true, false, false], "tenant local, principal uid:<uid>; another principal does not see it");
}

#[actix_web::test]
async fn with_tenant_visibility_stdio_requests_belong_to_the_local_tenant() {
    let reach = stdio_task_reach("tenancy: {visibility: tenant}\n").await;
    assert_eq!(reach, [true, true, false], "every principal of tenant local sees it, another tenant does not");
}

/// Makes a task over stdio with authentication on (and `extra` config), then asks the
/// same node served over HTTP which of three callers can read it: the process's own
/// identity (tenant `local`, principal `uid:<uid>`), another principal of `local`, and a
/// principal of another tenant.
async fn stdio_task_reach(extra: &str) -> [bool; 3] {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let auth = format!(
        "auth:\n  bearer-tokens:\n    - {{token: tok-local, tenant: local, principal: 'uid:{uid}'}}\n    \
         - {{token: tok-other, tenant: local, principal: someone-else}}\n    \
         - {{token: tok-stranger, tenant: elsewhere, principal: 'uid:{uid}'}}\n{extra}"
    );
    let mut node = StdioNode::start_with(dir.path(), &auth);
    node.send(json!(1), "SendMessage", send_params("mine", json!({}))).await;
    let task_id = node.next().await.unwrap()["result"]["task"]["id"].as_str().unwrap().to_owned();
    let (status, _) = node.close().await;
    assert!(status.success());

    let config = config_file(dir.path(), &auth);
    let data = dir.path().join("data");
    let served = crate::support::NodeProcess::start(
        dir.path(),
        &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()],
    );
    let mut reach = [false; 3];
    for (i, token) in ["tok-local", "tok-other", "tok-stranger"].into_iter().enumerate() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}});
        let client = reqwest::Client::new();
        let got: Value =
            client.post(&served.url).bearer_auth(token).json(&body).send().await.unwrap().json().await.unwrap();
        reach[i] = got["result"]["id"] == task_id.as_str();
        assert!(reach[i] || got["error"]["code"] == -32001, "{token}: {got}");
    }
    reach
}

#[actix_web::test]
async fn a_line_over_the_body_limit_is_refused_and_the_next_one_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = StdioNode::start_with(dir.path(), "body-limit: 1KiB\n");
    let long = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params(&"z".repeat(2000), json!({}))});
    node.write_line(&long.to_string()).await;
    let refused = node.next().await.unwrap();
    assert_eq!(refused["id"], Value::Null);
    assert_eq!(refused["error"]["data"][0]["reason"], "PAYLOAD_TOO_LARGE", "{refused}");
    node.send(json!(2), "ListTasks", json!({})).await;
    let listed = node.next().await.unwrap();
    assert_eq!(listed["id"], 2);
    assert_eq!(listed["result"]["tasks"].as_array().map(Vec::len), Some(0), "the long line made no task");
    let (status, _) = node.close().await;
    assert!(status.success());
}

#[actix_web::test]
async fn a_reply_only_agent_streams_one_message_line_and_leaves_no_task() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("reply.sh");
    std::fs::write(&script, crate::reply_only::REPLY).unwrap();
    let yaml = format!(
        "agents:\n  - id: reply\n    kind: command\n    command:\n      argv: [/bin/sh, {}]\n      input: json\n      output: jsonl\n",
        script.display()
    );
    let mut node = StdioNode::start_yaml(dir.path(), &yaml);
    node.send(json!(1), "SendStreamingMessage", send_params("hi", json!({"contextId": "pipe"}))).await;
    let frame = node.next().await.unwrap();
    assert_eq!(frame["id"], 1);
    let message = &frame["result"]["message"];
    assert_eq!(message["role"], "ROLE_AGENT", "the one line is the reply: {frame}");
    assert!(message["parts"][0]["text"].as_str().unwrap().starts_with("answer history=none"), "{frame}");
    // The stream is over: the next line answers the next request, and no task is left.
    node.send(json!(2), "ListTasks", json!({})).await;
    let listed = node.next().await.unwrap();
    assert_eq!((listed["id"].as_i64(), listed["result"]["totalSize"].as_i64()), (Some(2), Some(0)), "{listed}");
    node.send(json!(3), "SendMessage", send_params("again", json!({"contextId": "pipe"}))).await;
    let again = node.next().await.unwrap();
    let text = again["result"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("answer history=seen"), "the session kept the first reply: {again}");
    let (status, rest) = node.close().await;
    assert!(status.success());
    assert!(rest.is_empty(), "no frame after the message: {rest:?}");
}

#[actix_web::test]
async fn a_stdio_subscription_to_an_interrupted_task_follows_its_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let agents = "agents:\n  - id: chat\n    kind: echo\n    echo: {end-state: input-required}\n";
    let mut node = StdioNode::start_yaml(dir.path(), agents);
    node.send(json!(1), "SendMessage", send_params("hi", json!({}))).await;
    let task_id = node.next().await.unwrap()["result"]["task"]["id"].as_str().unwrap().to_owned();
    node.send(json!("watch"), "SubscribeToTask", json!({"id": task_id})).await;
    let snapshot = node.next().await.unwrap();
    assert_eq!(state(&snapshot["result"]["task"]), "TASK_STATE_INPUT_REQUIRED", "{snapshot}");

    node.send(json!(2), "SendMessage", send_params("more", json!({"taskId": task_id}))).await;
    let mut watched = Vec::new();
    let mut answered = false;
    while !answered || watched.last().map(String::as_str) != Some("TASK_STATE_INPUT_REQUIRED") {
        let line = node.next().await.unwrap();
        match line["id"].as_str() {
            Some("watch") => watched.push(state(&line["result"]["statusUpdate"]).to_owned()),
            _ => answered = line["id"] == 2,
        }
    }
    node.send(json!(3), "CancelTask", json!({"id": task_id})).await;
    loop {
        let line = node.next().await.unwrap();
        if line["id"] == "watch" {
            watched.push(state(&line["result"]["statusUpdate"]).to_owned());
            break;
        }
    }
    let states: Vec<&str> = watched.iter().map(String::as_str).filter(|s| !s.is_empty()).collect();
    assert_eq!(states, ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"]);
    let (status, _) = node.close().await;
    assert!(status.success());
}

#[actix_web::test]
async fn stdio_refuses_repeated_keys_and_writes_nothing_for_a_notification() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = StdioNode::start(dir.path());
    let notification = json!({"jsonrpc": "2.0", "method": "ListTasks", "params": {}});
    node.write_line(&notification.to_string()).await;
    node.write_line(r#"{"jsonrpc":"2.0","id":2,"method":"ListTasks","method":"GetTask","params":{}}"#).await;
    node.send(json!(3), "ListTasks", json!({})).await;
    // The notification wrote no line: the first line answers the second request.
    let refused = node.next().await.unwrap();
    assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (Value::Null, json!(-32600)), "{refused}");
    assert_eq!(refused["error"]["data"][0]["metadata"]["key"], "method");
    let listed = node.next().await.unwrap();
    assert_eq!(listed["id"], 3, "{listed}");
    let (status, rest) = node.close().await;
    assert!(status.success() && rest.is_empty(), "{status:?} {rest:?}");
}
