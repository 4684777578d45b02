//! `a2ad admin stats|compact` on the data dir of a stopped node (the real binary).

use crate::support::{eventually, send_params, NodeProcess};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

fn admin(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .arg("admin")
        .args(args)
        .args(["--data-dir", data.to_str().unwrap()])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap()
}

fn stats(data: &Path) -> Value {
    let output = admin(&["stats", "--json"], data);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[actix_web::test]
async fn stats_reports_tasks_events_and_sizes_and_refuses_a_running_node() {
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    let node = NodeProcess::start(cwd.path(), &["--data-dir", data.to_str().unwrap()]);
    let remote = node.app_view();
    let mut first = String::new();
    for i in 0..4 {
        let task = remote.ok("SendMessage", send_params(&format!("m{i}"), json!({}))).await;
        first = task["task"]["id"].as_str().unwrap().to_owned();
    }
    let refused = admin(&["stats"], &data);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("still running"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line, no backtrace, no Debug dump: {stderr}");
    assert!(!stderr.contains("Os {") && !stderr.contains("acktrace"), "{stderr}");
    assert!(node.terminate().success());

    let artifacts = data.join("artifacts").join(&first);
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("a.bin"), vec![1u8; 5000]).unwrap();
    let report = stats(&data);
    assert_eq!(report["totalTasks"], 4);
    assert_eq!(report["tasks"][""]["completed"], 4, "{report}");
    assert!(report["events"].as_u64().unwrap() >= 4, "{report}");
    assert_eq!(report["sessions"], 4);
    assert!(report["storeBytes"].as_u64().unwrap() > 0);
    assert_eq!((report["artifactBytes"].as_u64(), report["artifactDirs"].as_u64()), (Some(5000), Some(1)));
    let text = admin(&["stats"], &data);
    assert!(String::from_utf8_lossy(&text.stdout).contains("tenant (default): completed=4"));

    let missing = admin(&["stats"], &cwd.path().join("nowhere"));
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no task store"));
    assert!(!cwd.path().join("nowhere").exists(), "nothing was created");
}

#[actix_web::test]
async fn compact_reclaims_the_space_of_removed_tasks_and_the_node_starts_on_it() {
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    std::fs::write(cwd.path().join("a2ad.yml"), "retention: {max-age: 300ms, sweep-interval: 100ms}\n").unwrap();
    let args = ["--config", "a2ad.yml", "--data-dir", data.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let remote = node.app_view();
    for i in 0..300 {
        remote.ok("SendMessage", send_params(&format!("{i}{}", "x".repeat(4000)), json!({}))).await;
    }
    let emptied = eventually(400, || async { remote.ok("ListTasks", json!({})).await["totalSize"] == 0 }).await;
    assert!(emptied, "retention removed everything");
    assert!(node.terminate().success());
    let before = stats(&data);
    assert_eq!(before["totalTasks"], 0);

    let output = admin(&["compact"], &data);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(printed.starts_with("compacted: "), "{printed}");
    let after = stats(&data);
    let (was, is) = (before["storeBytes"].as_u64().unwrap(), after["storeBytes"].as_u64().unwrap());
    eprintln!("compact: {was} -> {is} bytes");
    assert!(is < was, "compaction reclaimed space: {was} -> {is}");

    let node = NodeProcess::start(cwd.path(), &args);
    let remote = node.app_view();
    let answer = remote.ok("SendMessage", send_params("after", json!({}))).await;
    assert_eq!(answer["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(node.terminate().success());
}
