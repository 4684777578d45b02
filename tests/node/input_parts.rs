//! Input parts: every category reaches the agent's prompt, and every rejection is a
//! clear error (before any task exists) or, for files read in the turn, a FAILED task.
//!
//! The agent is `cat`: the prompt comes back line by line as agent text.

use crate::support::{command_agent, command_settings, reason, spawn_app, TestApp};
use a2ad::agents::command::OutputMode;
use a2ad::config::{AgentConfig, Config};
use base64::Engine as _;
use serde_json::{json, Value};

fn cat_agent(id: &str, accepts: &[&str]) -> AgentConfig {
    let mut agent = command_agent(id, command_settings(&["cat"], OutputMode::Text));
    agent.input_modes = accepts.iter().map(|m| (*m).to_owned()).collect();
    agent
}

async fn app(tweak: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app(|c| {
        c.agents = vec![cat_agent("cat", &[]), cat_agent("text-only", &["text/plain", "application/json"])];
        c.body_limit = 32 << 20;
        c.input_parts.text_types = vec!["text/csv".into()];
        c.input_parts.media_types = vec!["application/pdf".into()];
        tweak(c);
    })
    .await
}

fn message(parts: Value, metadata: Value) -> Value {
    json!({"message": {
        "messageId": a2ad_protocol::ids::new_id(), "role": "ROLE_USER", "parts": parts, "metadata": metadata,
    }})
}

/// The agent's text lines of a finished task.
fn lines(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_AGENT")
        .filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_owned))
        .collect()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn file_url(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

#[actix_web::test]
async fn text_like_parts_go_into_the_prompt() {
    let app = app(|_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "# from a file").unwrap();
    let parts = json!([
        {"text": "plain words"},
        {"text": "*markdown*", "mediaType": "text/markdown"},
        {"data": {"b": [1, 2], "a": "x"}},
        {"raw": b64(b"key: value"), "mediaType": "application/yaml"},
        {"raw": b64(b"a,b"), "mediaType": "text/csv"},
        {"url": file_url(&notes), "mediaType": "text/markdown"},
    ]);
    let result = app.ok("SendMessage", message(parts, json!({}))).await;
    let task = &result["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let text = lines(task).join("\n");
    for expected in ["plain words", "*markdown*", r#"{"a":"x","b":[1,2]}"#, "key: value", "a,b", "# from a file"] {
        assert!(text.contains(expected), "{expected:?} missing from {text:?}");
    }
}

#[actix_web::test]
async fn media_parts_become_manifest_lines() {
    let app = app(|_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let pdf = dir.path().join("paper.pdf");
    std::fs::write(&pdf, b"%PDF-1.7 tiny").unwrap();
    let parts = json!([
        {"text": "look at these"},
        {"raw": b64(b"abc"), "mediaType": "image/png", "filename": "dot.png"},
        {"url": file_url(&pdf), "mediaType": "application/pdf", "filename": "paper.pdf"},
    ]);
    let result = app.ok("SendMessage", message(parts, json!({}))).await;
    let text = lines(&result["task"]).join("\n");
    let sha_abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    let image =
        format!("[attachment] filename=dot.png mediaType=image/png byteSize=3 sha256={sha_abc} origin=inline raw");
    assert!(text.contains(&image), "{text}");
    assert!(text.contains("filename=paper.pdf mediaType=application/pdf byteSize=13"), "{text}");
    assert!(text.contains(&format!("origin={}", file_url(&pdf))), "{text}");
}

/// Sends `parts` and returns the error, which must have `reason`.
async fn refused(app: &TestApp, parts: Value, skill: &str, expected_reason: &str, needle: &str) {
    let error = app.err("SendMessage", message(parts, json!({"skill": skill}))).await;
    assert_eq!(reason(&error), expected_reason, "{error}");
    assert!(error["message"].as_str().unwrap().contains(needle), "{needle:?} not in {error}");
}

#[actix_web::test]
async fn each_rejection_is_a_clear_error_before_any_task() {
    let app = app(|_| {}).await;
    let mib = 1024 * 1024;
    let big_text = "x".repeat(mib);
    refused(&app, json!([{"text": "  "}]), "cat", "INVALID_PARAMS", "text must not be empty").await;
    refused(&app, json!([{"data": [big_text]}]), "cat", "INVALID_PARAMS", "data is larger than 1 MiB").await;
    let raw_big = json!([{"raw": b64(&vec![b'a'; mib + 1]), "mediaType": "text/plain"}]);
    refused(&app, raw_big, "cat", "INVALID_PARAMS", "raw content is larger than 1 MiB").await;
    let not_utf8 = json!([{"raw": b64(&[0xff, 0xfe, 0x00]), "mediaType": "text/plain"}]);
    refused(&app, not_utf8, "cat", "INVALID_PARAMS", "not valid UTF-8").await;
    let image_big = json!([{"raw": b64(&vec![0u8; 5 * mib + 1]), "mediaType": "image/png"}]);
    refused(&app, image_big, "cat", "INVALID_PARAMS", "raw content is larger than 5 MiB").await;
    let remote = json!([{"url": "https://example.com/a.txt", "mediaType": "text/plain"}]);
    refused(&app, remote, "cat", "INVALID_PARAMS", "remote URLs are not fetched").await;
    let ftp = json!([{"url": "ftp://example.com/a.txt", "mediaType": "text/plain"}]);
    refused(&app, ftp, "cat", "INVALID_PARAMS", "only file:// URLs").await;
    let zip = json!([{"raw": b64(b"PK"), "mediaType": "application/zip"}]);
    refused(&app, zip, "cat", "CONTENT_TYPE_NOT_SUPPORTED", "`application/zip` is not supported").await;
    let image = json!([{"raw": b64(b"abc"), "mediaType": "image/png"}]);
    refused(&app, image, "text-only", "CONTENT_TYPE_NOT_SUPPORTED", "is not accepted by this agent").await;
    let listed = app.ok("ListTasks", json!({})).await;
    assert_eq!(listed["tasks"], json!([]), "no task was created for a refused message");
}

async fn failed_with(app: &TestApp, parts: Value, needle: &str) {
    let result = app.ok("SendMessage", message(parts, json!({}))).await;
    let status = &result["task"]["status"];
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{status}");
    let text = status["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains(needle), "{needle:?} not in {text:?}");
}

#[actix_web::test]
async fn file_parts_are_checked_when_the_turn_reads_them() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let allowed = root.path().to_owned();
    let app = app(move |c| c.allowed_cwds = vec![allowed]).await;

    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "do not read").unwrap();
    let url = file_url(&secret);
    failed_with(&app, json!([{"url": url, "mediaType": "text/plain"}]), "is not available").await;

    let link = root.path().join("link.txt");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let via_link = json!([{"url": file_url(&link), "mediaType": "text/plain"}]);
    failed_with(&app, via_link, "is not available").await;

    let missing = json!([{"url": file_url(&root.path().join("nope.txt")), "mediaType": "text/plain"}]);
    failed_with(&app, missing, "is not available").await;

    let big = root.path().join("big.txt");
    std::fs::File::create(&big).unwrap().set_len(1024 * 1024 + 1).unwrap();
    failed_with(&app, json!([{"url": file_url(&big), "mediaType": "text/plain"}]), "larger than 1 MiB").await;

    let video = root.path().join("huge.png");
    std::fs::File::create(&video).unwrap().set_len(25 * 1024 * 1024 + 1).unwrap();
    failed_with(&app, json!([{"url": file_url(&video), "mediaType": "image/png"}]), "larger than 25 MiB").await;
}
