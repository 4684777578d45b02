//! The `command` agent: real programs, started per turn.

use crate::support::{command_settings, eventually, spawn_app, TestApp};
use a2ad::agents::command::{CommandSettings, InputMode, OutputMode};
use a2ad::config::{AgentConfig, AgentKind};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

fn command(script: &str, output: OutputMode) -> CommandSettings {
    CommandSettings {
        env: BTreeMap::from([("GREETING".into(), "hi-there-secret".into())]),
        max_output: 4096,
        ..command_settings(&["/bin/sh", "-c", script], output)
    }
}

async fn app_with(settings: CommandSettings) -> TestApp {
    spawn_app(move |c| {
        let mut agent = AgentConfig::default_echo();
        agent.id = "cmd".into();
        agent.kind = AgentKind::Command(settings);
        c.agents = vec![agent];
    })
    .await
}

fn texts(task: &serde_json::Value) -> Vec<String> {
    task["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_AGENT")
        .map(|m| m["parts"][0]["text"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[actix_web::test]
async fn text_mode_streams_lines_with_a_clean_environment() {
    let app = app_with(command(
        r#"read line; echo "got: $line"; echo "task=$A2A_TASK_ID skill=$A2A_SKILL home=[$HOME] greeting=$GREETING""#,
        OutputMode::Text,
    ))
    .await;
    let task = app.send_text("hello", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let lines = texts(&task);
    assert_eq!(lines[0], "got: hello");
    let id = task["id"].as_str().unwrap();
    assert_eq!(lines[1], format!("task={id} skill=cmd home=[] greeting=hi-there-secret"), "nothing inherited but PATH");
}

#[actix_web::test]
async fn a_text_mode_answer_is_the_status_message_and_the_output_artifact() {
    let app = app_with(command(r#"read -r q; echo "one: $q"; echo "two""#, OutputMode::Text)).await;
    let task = app.send_text("x", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "one: x\ntwo", "the whole output");
    assert_eq!(task["artifacts"][0]["name"], "output");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "one: x\ntwo");
    assert_eq!(texts(&task), ["one: x", "two"], "the history keeps each line once");

    let silent = app_with(command("true", OutputMode::Text)).await.send_text("x", json!({})).await;
    assert_eq!(silent["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(silent["status"].get("message").is_none() && silent.get("artifacts").is_none(), "{silent}");
}

#[actix_web::test]
async fn jsonl_mode_carries_artifacts_and_the_final_state() {
    let script = r#"echo '{"type":"text","text":"working on it"}'
echo 'not json at all'
echo '{"type":"artifact","name":"out","text":"the result","mediaType":"text/plain"}'
echo '{"type":"final","state":"input-required","text":"anything else?"}'"#;
    let app = app_with(command(script, OutputMode::Jsonl)).await;
    let task = app.send_text("go", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "anything else?");
    assert_eq!(task["artifacts"][0]["name"], "out");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "the result");
    assert_eq!(texts(&task)[..2], ["working on it".to_owned(), "not json at all".to_owned()]);
}

#[actix_web::test]
async fn json_input_gives_the_program_the_message_and_ids() {
    let mut settings = command("cat", OutputMode::Text);
    settings.input = InputMode::Json;
    let app = app_with(settings).await;
    let task = app.send_text("structured", json!({})).await;
    let line: serde_json::Value = serde_json::from_str(&texts(&task)[0]).unwrap();
    assert_eq!(line["taskId"], task["id"]);
    assert_eq!(line["message"]["parts"][0]["text"], "structured");
    assert_eq!(line["skill"], "cmd");
}

#[actix_web::test]
async fn a_failing_program_fails_the_task_without_leaking_paths_or_secrets() {
    let app =
        app_with(command(r#"echo "cannot open /etc/a2ad/secret.key ($GREETING)" >&2; exit 3"#, OutputMode::Text)).await;
    let task = app.send_text("x", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("status 3") && text.contains("<path>") && text.contains("<redacted>"), "{text}");
    assert!(!text.contains("/etc") && !text.contains("hi-there-secret"), "{text}");
}

#[actix_web::test]
async fn cancel_stops_the_whole_process_group() {
    let app = app_with(command("echo started; sleep 31.5 & wait", OutputMode::Text)).await;
    let task = app.send_text("x", json!({"configuration": {"returnImmediately": true}})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let started = eventually(200, || async { !texts(&app.ok("GetTask", json!({"id": id})).await).is_empty() }).await;
    assert!(started);
    let sleeping = || std::process::Command::new("pgrep").args(["-f", "sleep 31.5"]).output().unwrap().status.success();
    assert!(sleeping(), "the program's child runs");
    app.ok("CancelTask", json!({"id": id})).await;
    let gone = eventually(200, || async { !sleeping() }).await;
    assert!(gone, "the child of the program was stopped with its group");
}

#[actix_web::test]
async fn timeouts_and_output_caps_stop_the_program() {
    let mut slow = command("sleep 5", OutputMode::Text);
    slow.timeout = Duration::from_millis(300);
    let app = app_with(slow).await;
    let task = app.send_text("x", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("timed out after 300ms"), "{text}");

    let app = app_with(command("yes", OutputMode::Text)).await;
    let task = app.send_text("x", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    assert!(task["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("more than 4096 bytes"));
}

#[actix_web::test]
async fn a_line_without_end_is_cut_at_the_cap_and_bad_utf8_is_read_lossily() {
    // 64 KiB with no newline against a 4096-byte cap: refused at the cap.
    let app = app_with(command("head -c 65536 /dev/zero | tr '\\0' a", OutputMode::Text)).await;
    let task = app.send_text("x", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    assert!(task["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("more than 4096 bytes"));

    let app = app_with(command(r#"printf 'caf\351 ok\n'"#, OutputMode::Text)).await;
    let task = app.send_text("x", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(texts(&task)[0], "caf\u{fffd} ok");
}

#[actix_web::test]
async fn full_pipes_stall_nothing_and_the_stderr_tail_is_the_end() {
    // Writes 200 KB before reading a 300 KB input: both pipes fill unless the node writes
    // stdin while it reads stdout. Then 200 KB of stderr, its last line the one shown.
    let script = "head -c 200000 /dev/zero | tr '\\0' a; echo; wc -c; \
                  head -c 200000 /dev/zero | tr '\\0' b >&2; echo; echo 'the real cause' >&2; exit 4";
    let mut settings = command(script, OutputMode::Text);
    settings.max_output = 1 << 20;
    settings.timeout = Duration::from_secs(60);
    let app = app_with(settings).await;
    let input = "i".repeat(300_000);
    let task = app.send_text(&input, json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("status 4") && text.ends_with("the real cause"), "{text}");
    let task = app.ok("GetTask", json!({"id": task["id"]})).await;
    assert!(texts(&task).iter().any(|line| line.trim() == "300000"), "the program read all of its input");
}

#[actix_web::test]
async fn processes_left_in_the_group_are_stopped_when_the_program_exits() {
    // Its stderr stays the program's: the turn must not wait for it to close.
    let app = app_with(command("sleep 32.5 >/dev/null & echo done", OutputMode::Text)).await;
    let task = app.send_text("x", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let sleeping = || std::process::Command::new("pgrep").args(["-f", "sleep 32.5"]).output().unwrap().status.success();
    let gone = eventually(200, || async { !sleeping() }).await;
    assert!(gone, "the background child was stopped with the group");
}

/// Settings built in code are checked at start-up as the config's are: no program is a
/// start-up error naming the agent, not a panic and not a node that fails every turn.
#[actix_web::test]
async fn settings_without_a_program_stop_start_up_naming_the_agent() {
    let mut settings = command("true", OutputMode::Text);
    settings.argv.clear();
    let dir = tempfile::tempdir().unwrap();
    let mut config = a2ad::config::Config::default_node();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.grpc_listen = None;
    config.data_dir = dir.path().join("data");
    let mut agent = AgentConfig::default_echo();
    agent.id = "cmd".into();
    agent.kind = AgentKind::Command(settings);
    config.agents = vec![agent];
    let error = a2ad::startup::Application::build(config).await.err().expect("start-up refuses");
    assert_eq!(error.to_string(), "agents[0].command.argv: agent `cmd`: names no program");
    assert!(!dir.path().join("data").exists(), "nothing is left behind");
}

#[actix_web::test]
async fn a_cancelled_program_gets_the_grace_period_to_clean_up() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("cleaned");
    let mut settings = command(
        r#"trap 'sleep 0.3; echo cleaned > "$MARK"; exit 0' TERM; echo started; sleep 34.5 & wait"#,
        OutputMode::Text,
    );
    settings.env.insert("MARK".into(), mark.to_str().unwrap().to_owned());
    settings.cancel_grace = Duration::from_secs(5);
    let app = app_with(settings).await;
    let task = app.send_text("x", json!({"configuration": {"returnImmediately": true}})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let started = eventually(200, || async { !texts(&app.ok("GetTask", json!({"id": id})).await).is_empty() }).await;
    assert!(started);
    app.ok("CancelTask", json!({"id": id})).await;
    let cleaned = eventually(200, || async { mark.exists() }).await;
    assert!(cleaned, "SIGTERM came first and the program could run its handler");
    let sleeping = || std::process::Command::new("pgrep").args(["-f", "sleep 34.5"]).output().unwrap().status.success();
    assert!(eventually(200, || async { !sleeping() }).await, "the group is gone");
}
