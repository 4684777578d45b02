//! Private data on disk, over the real binary started with a permissive umask (`022`): the
//! data dir is `0700` and every file the node writes in it (sled, the write-ahead log,
//! push.key, artifact files) is `0600`, while an agent program's own files keep the umask
//! the node was started with; an existing data dir that others can read is warned about.

use crate::support::{send_params, with_umask, NodeProcess};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A jsonl agent that writes a large (stored) artifact and a file of its own in `own`.
fn config(own: &Path) -> String {
    let script = format!(
        "touch {}; big=$(head -c 5000 /dev/zero | tr '\\0' y); \
         echo \"{{\\\"type\\\":\\\"artifact\\\",\\\"artifactId\\\":\\\"r\\\",\\\"text\\\":\\\"$big\\\"}}\"; \
         echo '{{\"type\":\"final\",\"state\":\"completed\"}}'",
        own.display()
    );
    format!(
        "push-notifications: true\nagents:\n  - id: maker\n    kind: command\n    command:\n      argv: [/bin/sh, -c, {}]\n      \
         output: jsonl\n",
        serde_json::to_string(&script).unwrap()
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every directory and file under `dir`, with its mode.
fn walk(dir: &Path, found: &mut Vec<(std::path::PathBuf, bool, u32)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        found.push((path.clone(), meta.is_dir(), meta.permissions().mode() & 0o777));
        if meta.is_dir() {
            walk(&path, found);
        }
    }
}

#[actix_web::test]
async fn the_data_dir_is_0700_and_its_files_0600_whatever_the_umask() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cwd.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let own = cwd.path().join("agent-made.txt");
    std::fs::write(cwd.path().join("a2ad.yml"), config(&own)).unwrap();
    let log = cwd.path().join("node.log");
    let args = ["--config", "a2ad.yml", "--data-dir", "state/data"];
    let node = NodeProcess::start_logging_with_umask(cwd.path(), &args, &log, 0o022);
    let task = node.app_view().ok("SendMessage", send_params("hi", json!({}))).await;
    assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let part = &task["task"]["artifacts"][0]["parts"][0];
    // Linked (over HTTP by default, or `file://`) because it was stored as a file.
    assert!(part["url"].as_str().is_some_and(|u| u.contains("/artifacts/")), "the artifact is a stored file: {part}");
    assert!(node.terminate().success());

    let data = cwd.path().join("state/data");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&cwd.path().join("state")), 0o700, "a parent it created too");
    let mut found = Vec::new();
    walk(&data, &mut found);
    let names: Vec<String> =
        found.iter().map(|(p, _, _)| p.strip_prefix(&data).unwrap().display().to_string()).collect();
    for wanted in ["push.key", "wal", "conf", "artifacts"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} is there: {names:?}");
    }
    assert!(found.iter().any(|(p, dir, _)| !dir && p.starts_with(data.join("artifacts"))), "{names:?}");
    for (path, is_dir, mode) in &found {
        let wanted = if *is_dir { 0o700 } else { 0o600 };
        assert_eq!(*mode & 0o077, 0, "{} is {mode:04o}, wanted {wanted:04o}", path.display());
    }
    assert_eq!(mode(&own), 0o644, "the agent program keeps the umask the node was started with");
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(!logs.contains("can be read by other users"), "a dir it made itself is not warned about: {logs}");

    // Compaction writes a fresh store into the data dir: private too.
    let mut compact = std::process::Command::new(env!("CARGO_BIN_EXE_a2ad"));
    compact.args(["admin", "compact", "--data-dir"]).arg(&data);
    with_umask(&mut compact, 0o022);
    let out = compact.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut found = Vec::new();
    walk(&data, &mut found);
    for (path, _, mode) in &found {
        assert_eq!(*mode & 0o077, 0, "after compaction {} is {mode:04o}", path.display());
    }
}

#[actix_web::test]
async fn an_existing_data_dir_others_can_read_is_warned_about() {
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = cwd.path().join("node.log");
    let node = NodeProcess::start_logging(cwd.path(), &["--data-dir", "data"], &log);
    assert!(node.terminate().success());
    let logs = std::fs::read_to_string(&log).unwrap();
    let line = logs.lines().find(|l| l.contains("can be read by other users")).unwrap_or_else(|| panic!("{logs}"));
    assert!(line.contains("WARN") && line.contains("0755") && line.contains("chmod 700"), "{line}");
    assert_eq!(mode(&data), 0o755, "the operator's dir is left as it is");
}
