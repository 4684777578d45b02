//! Agents an operator can debug, over the real binary: a program's stderr in the node's
//! log line by line (task, context and agent named, redacted, capped per turn), every
//! failed or timed-out turn a `warn` line whose correlation id the task's status carries,
//! and a program that is missing, not executable, or has no `cwd` stops start-up with one
//! line naming the agent.

use crate::support::{send_params, NodeProcess};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};

/// A node (JSON logs to `node.log`) hosting one command agent `dbg` running `script`.
fn node_with(cwd: &Path, script: &str, extra: &str) -> NodeProcess {
    let config = format!(
        "log-format: json\nagents:\n  - id: dbg\n    kind: command\n    command:\n      argv: [/bin/sh, -c, {}]\n      \
         env: {{API_TOKEN: tok-very-secret-1}}\n{extra}",
        serde_json::to_string(script).unwrap()
    );
    std::fs::write(cwd.join("a2ad.yml"), config).unwrap();
    NodeProcess::start_logging(cwd, &["--config", "a2ad.yml", "--data-dir", "data"], &cwd.join("node.log"))
}

/// The node's JSON log records, after it stopped.
fn records(cwd: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(cwd.join("node.log")).unwrap();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn stderr_lines<'a>(logs: &'a [Value], task_id: &str) -> Vec<&'a Value> {
    logs.iter()
        .filter(|r| r["target"] == "a2ad::agent::stderr" && r["fields"]["task_id"] == task_id)
        .filter(|r| r["fields"]["line"].is_string())
        .collect()
}

#[actix_web::test]
async fn stderr_reaches_the_log_line_by_line_with_its_ids_and_redacted() {
    let cwd = tempfile::tempdir().unwrap();
    let script = "echo \"starting with token=abc123 from /etc/agent.conf\" >&2; \
                  echo \"key $API_TOKEN loaded\" >&2; echo answer";
    let node = node_with(cwd.path(), script, "");
    let task = node.app_view().ok("SendMessage", send_params("hi", json!({"contextId": "ctx-dbg"}))).await;
    let task_id = task["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(node.terminate().success());

    let logs = records(cwd.path());
    let lines = stderr_lines(&logs, &task_id);
    let texts: Vec<&str> = lines.iter().map(|r| r["fields"]["line"].as_str().unwrap()).collect();
    assert_eq!(texts, ["starting with token=<redacted> from <path>", "key <redacted> loaded"], "{lines:?}");
    for record in &lines {
        assert_eq!(record["fields"]["context_id"], "ctx-dbg");
        assert_eq!(record["fields"]["agent"], "dbg");
    }
    let all = std::fs::read_to_string(cwd.path().join("node.log")).unwrap();
    assert!(!all.contains("abc123") && !all.contains("tok-very-secret-1"), "no secret in the log");
}

#[actix_web::test]
async fn a_chatty_program_logs_at_most_its_budget_per_turn() {
    let cwd = tempfile::tempdir().unwrap();
    // About 70 KiB of stderr, more than the 16 KiB a turn may log.
    let script = "i=0; while [ $i -lt 2000 ]; do echo \"line $i of a long and chatty agent\" >&2; i=$((i+1)); done; \
                  echo done";
    let node = node_with(cwd.path(), script, "");
    let task = node.app_view().ok("SendMessage", send_params("hi", json!({}))).await;
    let task_id = task["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED", "the rest is drained: {task}");
    assert!(node.terminate().success());

    let logs = records(cwd.path());
    let lines = stderr_lines(&logs, &task_id);
    let bytes: usize = lines.iter().map(|r| r["fields"]["line"].as_str().unwrap().len() + 1).sum();
    assert!(lines.len() > 100 && lines.len() < 2000, "capped, not silenced: {} lines", lines.len());
    assert!(bytes <= a2ad::agents::stderr::STDERR_LOG_BYTES + 2048, "{bytes} bytes logged");
    assert_eq!(lines[0]["fields"]["line"], "line 0 of a long and chatty agent", "the beginning is logged");
    let spent = logs.iter().filter(|r| {
        r["fields"]["task_id"] == task_id.as_str()
            && r["fields"]["message"].as_str().is_some_and(|m| m.contains("budget"))
    });
    assert_eq!(spent.count(), 1, "one line says the rest is not logged");
}

/// The correlation id of a FAILED task's status, and the `warn` record that carries it.
fn failure_record<'a>(logs: &'a [Value], task: &Value) -> &'a Value {
    let correlation =
        task["status"]["message"]["metadata"]["a2ad"]["correlationId"].as_str().expect("a correlation id");
    let found: Vec<&Value> = logs.iter().filter(|r| r["fields"]["correlation_id"] == correlation).collect();
    assert_eq!(found.len(), 1, "one log record per failed turn: {found:?}");
    assert_eq!(found[0]["level"], "WARN");
    assert_eq!(found[0]["fields"]["task_id"], task["id"]);
    assert_eq!(found[0]["fields"]["agent"], "dbg");
    found[0]
}

#[actix_web::test]
async fn failed_and_timed_out_turns_are_warnings_under_the_correlation_id_the_task_carries() {
    let cwd = tempfile::tempdir().unwrap();
    let script = "case \"$(cat)\" in slow) sleep 30;; *) echo 'warming up' >&2; echo 'cannot reach the model' >&2; exit 3;; esac";
    let node = node_with(cwd.path(), script, "      timeout: 1s\n      cancel-grace: 1s\n");
    let remote = node.app_view();
    let failed = remote.ok("SendMessage", send_params("fail", json!({}))).await["task"].clone();
    let slow = remote.ok("SendMessage", send_params("slow", json!({}))).await["task"].clone();
    assert_eq!(
        (&failed["status"]["state"], &slow["status"]["state"]),
        (&json!("TASK_STATE_FAILED"), &json!("TASK_STATE_FAILED"))
    );
    assert!(node.terminate().success());

    let logs = records(cwd.path());
    let cause = failure_record(&logs, &failed)["fields"]["cause"].as_str().unwrap().to_owned();
    // One line in any log: the tail's line break is escaped there, kept in the status.
    assert_eq!(cause, "Agent failed: the agent program exited with status 3: warming up\\ncannot reach the model");
    let status = failed["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert_eq!(status, "Agent failed: the agent program exited with status 3: warming up\ncannot reach the model");
    let cause = failure_record(&logs, &slow)["fields"]["cause"].as_str().unwrap().to_owned();
    assert!(cause.contains("timed out after 1s"), "{cause}");
}

/// `a2ad serve` with `config` that must not start: its one line of stderr.
fn refused_start(cwd: &Path, config: &str) -> String {
    std::fs::write(cwd.join("a2ad.yml"), config).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--config", "a2ad.yml", "--data-dir", "data", "--listen", "127.0.0.1:0"])
        .args(["--grpc-listen", "127.0.0.1:0"])
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "it never listened");
    assert!(!cwd.join("data").exists(), "no data dir is left");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr.trim_end().to_owned()
}

#[test]
fn a_missing_or_unrunnable_program_or_cwd_stops_start_up_naming_the_agent() {
    use std::os::unix::fs::PermissionsExt;
    let cwd = tempfile::tempdir().unwrap();
    let agent = |command: &str| {
        format!("agents:\n  - id: echo\n    kind: echo\n  - id: mine\n    kind: command\n    command: {command}\n")
    };
    let missing = cwd.path().join("bin/agent.sh");
    let line = refused_start(cwd.path(), &agent("{argv: [bin/agent.sh, --fast]}"));
    assert_eq!(
        line,
        format!("a2ad: agents[1].command.argv: agent `mine`: program `{}`: does not exist", missing.display())
    );

    std::fs::create_dir(cwd.path().join("bin")).unwrap();
    std::fs::write(&missing, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&missing, std::fs::Permissions::from_mode(0o644)).unwrap();
    let line = refused_start(cwd.path(), &agent("{argv: [bin/agent.sh]}"));
    assert_eq!(
        line,
        format!("a2ad: agents[1].command.argv: agent `mine`: program `{}` is not executable", missing.display())
    );

    let line = refused_start(cwd.path(), &agent("{argv: [no-such-agent-program]}"));
    assert!(
        line.starts_with(
            "a2ad: agents[1].command.argv: agent `mine`: program `no-such-agent-program` is not found in PATH"
        ),
        "{line}"
    );

    std::fs::set_permissions(&missing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let line = refused_start(cwd.path(), &agent("{argv: [bin/agent.sh], cwd: /no/such/dir}"));
    assert_eq!(line, "a2ad: agents[1].command.cwd: agent `mine`: `/no/such/dir`: does not exist");
}
