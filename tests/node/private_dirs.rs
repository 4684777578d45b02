//! A private working directory per task, over the real binary: a command agent with no
//! `cwd` runs in `<data-dir>/workdirs/<owner>/<task-id>/`, never in the node's own working
//! directory; the files it writes there become artifacts, with authentication on and no
//! `allowed-cwds` as without authentication; a program that lists `..` sees its own tenant's directories only; and
//! retention removes the directory with its task.

use crate::support::{eventually, send_params, NodeProcess, RemoteNode};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The agent: prints its directory and what `..` holds, writes `out.txt` (the task id)
/// and offers it as an artifact by its relative path.
const PROGRAM: &str = r#"pwd
ls -a ..
echo "$A2A_TASK_ID" > out.txt
echo '{"type":"artifact","artifactId":"out","path":"out.txt"}'
"#;

/// Two tenants (`tok-a`: acme, `tok-b`: beta), no `allowed-cwds`, and retention that keeps
/// one terminal task per tenant. The node runs in `<dir>/node-cwd`, its data in
/// `<dir>/data`.
fn node(dir: &Path) -> (NodeProcess, PathBuf) {
    let auth = "auth:\n  bearer-tokens:\n    - {token: tok-a, tenant: acme, principal: alice}\n    - {token: tok-b, tenant: beta, principal: bob}\n";
    node_with(dir, auth)
}

/// The node of [`node`], with `auth` (YAML, or nothing) in its config.
fn node_with(dir: &Path, auth: &str) -> (NodeProcess, PathBuf) {
    let program = dir.join("agent.sh");
    std::fs::write(&program, PROGRAM).unwrap();
    let yaml = format!(
        "{auth}retention: {{max-tasks: 1, sweep-interval: 100ms}}\n\
         agents:\n  - id: files\n    kind: command\n    command: {{argv: [/bin/sh, '{}'], output: jsonl}}\n",
        program.display()
    );
    let config = dir.join("a2ad.yaml");
    std::fs::write(&config, yaml).unwrap();
    let (cwd, data) = (dir.join("node-cwd"), dir.join("data"));
    std::fs::create_dir_all(&cwd).unwrap();
    let node = NodeProcess::start(&cwd, &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    (node, data.canonicalize().unwrap())
}

/// The completed task, the agent's text lines, and the artifact's bytes.
async fn run(node: &RemoteNode, token: &str) -> (Value, Vec<String>, Vec<u8>) {
    let answer = node.rpc_as(token, "SendMessage", send_params("go", json!({}))).await;
    let task = answer["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let lines = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_AGENT")
        .filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_owned))
        .collect();
    let part = &task["artifacts"][0]["parts"][0];
    assert_eq!(part["filename"], "out.txt", "{task}");
    let raw = a2ad_protocol::decode_base64(part["raw"].as_str().expect("inline raw bytes")).unwrap();
    (task, lines, raw)
}

#[actix_web::test]
async fn each_task_runs_in_a_private_directory_that_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (node, data) = node(dir.path());
    let remote = node.app_view();

    let (task_a, lines, raw) = run(&remote, "tok-a").await;
    let id_a = task_a["id"].as_str().unwrap();
    let private_a = data.join("workdirs/acme+alice").join(id_a);
    assert_eq!(lines[0], private_a.to_str().unwrap(), "not the node's working directory: {lines:?}");
    assert_eq!(String::from_utf8(raw).unwrap().trim(), id_a, "the file it wrote is the artifact");
    assert!(std::fs::read_dir(dir.path().join("node-cwd")).unwrap().next().is_none(), "nothing in the node's cwd");

    let (task_b, lines, _) = run(&remote, "tok-b").await;
    let id_b = task_b["id"].as_str().unwrap();
    assert_eq!(lines[0], data.join("workdirs/beta+bob").join(id_b).to_str().unwrap());
    let listed: Vec<&str> = lines[1..].iter().map(String::as_str).filter(|n| !n.starts_with('.')).collect();
    assert_eq!(listed, [id_b], "`..` holds B's own directories only: {lines:?}");

    // A's second task puts the first past `max-tasks: 1`: retention removes it, and its
    // directory with it.
    let (second, lines, _) = run(&remote, "tok-a").await;
    let listed: Vec<&str> = lines[1..].iter().map(String::as_str).filter(|n| !n.starts_with('.')).collect();
    assert!(listed.contains(&second["id"].as_str().unwrap()) && !listed.contains(&id_b), "{lines:?}");
    let gone = eventually(400, || async { !private_a.exists() }).await;
    assert!(gone, "retention removes the private directory with its task");
    // The task's removal is read once its commit lands (the checkpointer's, within 100 ms
    // when the sweep does not wait for it), which may be just after its files went.
    let not_found = eventually(400, || async {
        let answer = remote.rpc_as("tok-a", "GetTask", json!({"id": id_a})).await;
        answer["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"
    })
    .await;
    assert!(not_found, "retention removed the task with its directory");
    assert!(data.join("workdirs/acme+alice").join(second["id"].as_str().unwrap()).exists());
}

#[actix_web::test]
async fn without_authentication_the_files_a_task_writes_become_artifacts_too() {
    let dir = tempfile::tempdir().unwrap();
    let (node, data) = node_with(dir.path(), "");
    let remote = node.app_view();
    let answer = remote.ok("SendMessage", send_params("go", json!({}))).await;
    let task = &answer["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let id = task["id"].as_str().unwrap();
    let part = &task["artifacts"][0]["parts"][0];
    let raw = a2ad_protocol::decode_base64(part["raw"].as_str().expect("inline raw bytes")).unwrap();
    assert_eq!(String::from_utf8(raw).unwrap().trim(), id, "the file it wrote is the artifact: {task}");
    assert!(data.join("workdirs/%+%").join(id).join("out.txt").exists(), "the anonymous owner's private directory");
    assert!(std::fs::read_dir(dir.path().join("node-cwd")).unwrap().next().is_none(), "nothing in the node's cwd");
}
