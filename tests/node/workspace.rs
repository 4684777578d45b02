//! Workspaces: `message.metadata.a2ad.cwd` picks the command agent's working directory,
//! inside the allowed roots only, and a context keeps the one it started with.

use crate::support::{command_agent, command_settings, reason, spawn_app, TestApp};
use a2ad::agents::command::{CommandSettings, OutputMode};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

async fn pwd_app(roots: Vec<PathBuf>) -> TestApp {
    pwd_app_with(roots, Duration::from_secs(300)).await
}

async fn pwd_app_with(roots: Vec<PathBuf>, idle_timeout: Duration) -> TestApp {
    spawn_app(move |c| {
        c.idle_timeout = idle_timeout;
        let settings = CommandSettings { max_output: 4096, ..command_settings(&["pwd"], OutputMode::Text) };
        c.agents = vec![command_agent("pwd", settings)];
        c.allowed_cwds = roots;
    })
    .await
}

fn with_cwd(cwd: &str, context: &str) -> Value {
    json!({"contextId": context, "metadata": {"a2ad": {"cwd": cwd}}})
}

fn first_line(task: &Value) -> String {
    let history = task["history"].as_array().unwrap();
    let agent = history.iter().find(|m| m["role"] == "ROLE_AGENT").expect("agent output");
    agent["parts"][0]["text"].as_str().unwrap().to_owned()
}

fn failure(task: &Value) -> String {
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    task["status"]["message"]["parts"][0]["text"].as_str().unwrap().to_owned()
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[actix_web::test]
async fn the_cwd_selects_the_working_directory_and_binds_the_context() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("project");
    std::fs::create_dir(&work).unwrap();
    let app = pwd_app(vec![root.path().to_owned()]).await;
    let task = app.send_text("where?", with_cwd(text(&work), "ws-1")).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(first_line(&task), text(&work.canonicalize().unwrap()));

    let again = app.send_text("and now?", json!({"contextId": "ws-1"})).await;
    assert_eq!(first_line(&again), text(&work.canonicalize().unwrap()), "the context keeps its cwd");
    let same = app.send_text("same", with_cwd(text(&work), "ws-1")).await;
    assert_eq!(same["status"]["state"], "TASK_STATE_COMPLETED");

    let params = crate::support::send_params("elsewhere", with_cwd(text(root.path()), "ws-1"));
    let error = app.err("SendMessage", params).await;
    assert_eq!(reason(&error), "INVALID_PARAMS");
    assert!(error["message"].as_str().unwrap().contains("bound to another working directory"), "{error}");
}

#[actix_web::test]
async fn an_invalid_cwd_fails_the_task_without_leaking_paths() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
    let app = pwd_app(vec![root.path().to_owned()]).await;

    let task = app.send_text("x", with_cwd("relative/dir", "bad-1")).await;
    let message = failure(&task);
    assert!(
        message.starts_with("Agent failed: the working directory `relative/dir` is not an absolute path"),
        "{message}"
    );
    assert!(message.contains("`allowed-cwds`"), "the refusal names the key: {message}");

    let missing = format!("{}/missing", text(root.path()));
    let task = app.send_text("x", with_cwd(&missing, "bad-2")).await;
    let message = failure(&task);
    assert!(
        message.contains(&format!("`{missing}` is not available")) && message.contains("`allowed-cwds`"),
        "{message}"
    );

    let task = app.send_text("x", with_cwd(text(outside.path()), "bad-3")).await;
    let message = failure(&task);
    assert!(message.contains("is not available"), "{message}");
    assert!(!message.contains(text(root.path())), "the roots are not shown: {message}");

    let escape = format!("{}/escape", text(root.path()));
    let task = app.send_text("x", with_cwd(&escape, "bad-4")).await;
    let message = failure(&task);
    assert!(message.contains("is not available"), "a symlink does not lead out: {message}");
    assert!(!message.contains(text(outside.path())), "the link target is not shown: {message}");

    let params = crate::support::send_params("x", json!({"metadata": {"a2ad": {"cwd": 7}}}));
    let error = app.err("SendMessage", params).await;
    assert!(error["message"].as_str().unwrap().contains("must be a string"), "{error}");
}

#[actix_web::test]
async fn the_default_roots_are_the_working_directory_and_the_temp_dir() {
    let app = pwd_app(Vec::new()).await;
    let tmp = tempfile::tempdir().unwrap();
    let task = app.send_text("x", with_cwd(text(tmp.path()), "def-1")).await;
    assert_eq!(first_line(&task), text(&tmp.path().canonicalize().unwrap()));
    let task = app.send_text("x", with_cwd("/", "def-2")).await;
    assert!(failure(&task).contains("is not available"));
}

#[actix_web::test]
async fn the_binding_survives_eviction() {
    let root = tempfile::tempdir().unwrap();
    let app = pwd_app_with(Vec::new(), Duration::from_millis(150)).await;
    let task = app.send_text("x", with_cwd(text(root.path()), "ws-evict")).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let evicted =
        crate::support::eventually(200, || async { app.probe.stats().await.unwrap().evicted_total >= 1 }).await;
    assert!(evicted);
    let again = app.send_text("x", json!({"contextId": "ws-evict"})).await;
    assert_eq!(first_line(&again), text(&root.path().canonicalize().unwrap()), "the stored session keeps the cwd");
    let other = tempfile::tempdir().unwrap();
    let error =
        app.err("SendMessage", crate::support::send_params("x", with_cwd(text(other.path()), "ws-evict"))).await;
    assert_eq!(reason(&error), "INVALID_PARAMS");
}
