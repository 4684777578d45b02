//! Workspaces per tenant, over the real binary: `allowed-cwds: [<root>/{tenant}]` gives each
//! tenant its own directory; tenant B can neither read A's files nor run in A's workspace,
//! every refusal of a path reads the same whether it exists or not (inside the roots or
//! outside: `/proc/self/environ`), the node's data dir stays out of reach even inside a
//! root, and with authentication on and no `allowed-cwds` workspaces are refused outright.

use crate::support::{send_params, NodeProcess, RemoteNode};
use serde_json::{json, Value};
use std::path::Path;

/// Two tenants (`tok-a`: acme, `tok-b`: beta); the agent prints its directory and prompt.
/// `roots`: the `allowed-cwds` line, if any. The data dir is `<dir>/root/acme/a2ad-data`:
/// inside acme's root.
fn node(dir: &Path, roots: Option<&str>) -> NodeProcess {
    let config = dir.join("a2ad.yaml");
    let roots = roots.map(|r| format!("allowed-cwds: [{r}]\n")).unwrap_or_default();
    let yaml = format!(
        "auth:\n  bearer-tokens:\n    - {{token: tok-a, tenant: acme, principal: alice}}\n    - {{token: tok-b, tenant: beta, principal: bob}}\n\
         {roots}agents:\n  - id: show\n    kind: command\n    command: {{argv: [/bin/sh, -c, 'pwd; cat'], output: text}}\n\
         {RELAY}"
    );
    std::fs::write(&config, yaml).unwrap();
    let data = dir.join("root/acme/a2ad-data");
    NodeProcess::start(dir, &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()])
}

/// A second agent (skill `relay`) that offers the file its prompt names as an artifact
/// (jsonl `path`): what a client could ask a program to hand over.
const RELAY: &str = "  - id: relay\n    kind: command\n    command: {argv: [/bin/sh, -c, 'read -r p; printf \"{\\\"type\\\":\\\"artifact\\\",\\\"path\\\":\\\"%s\\\"}\\n\" \"$p\"'], output: jsonl}\n";

/// `<dir>/root/{acme,beta}`, each with a file; acme's is a secret.
fn tenant_dirs(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("root");
    for (tenant, text) in [("acme", "acme's secret"), ("beta", "beta's notes")] {
        std::fs::create_dir_all(root.join(tenant)).unwrap();
        std::fs::write(root.join(tenant).join("notes.txt"), text).unwrap();
    }
    root.canonicalize().unwrap()
}

/// The message with a `file://` part for `path` (text) and, if given, a workspace.
fn asking(path: Option<&Path>, cwd: Option<&Path>) -> Value {
    let mut parts = vec![json!({"text": "look"})];
    if let Some(path) = path {
        parts.push(json!({"url": format!("file://{}", path.display()), "mediaType": "text/plain"}));
    }
    let mut params = send_params("look", json!({}));
    params["message"]["parts"] = json!(parts);
    if let Some(cwd) = cwd {
        params["message"]["metadata"] = json!({"a2ad": {"cwd": cwd.to_str().unwrap()}});
    }
    params
}

/// The task's outcome: (state, the agent's output or the failure's text).
async fn outcome(node: &RemoteNode, token: &str, params: Value) -> (String, String) {
    let answer = node.rpc_as(token, "SendMessage", params).await;
    let task = &answer["result"]["task"];
    let state = task["status"]["state"].as_str().unwrap_or_else(|| panic!("no task: {answer}")).to_owned();
    let text = match state.as_str() {
        "TASK_STATE_FAILED" => task["status"]["message"]["parts"][0]["text"].as_str().unwrap_or("").to_owned(),
        _ => task["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or("").to_owned(),
    };
    (state, text)
}

#[actix_web::test]
async fn each_tenant_reaches_only_its_own_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let root = tenant_dirs(dir.path());
    let node = node(dir.path(), Some(&format!("'{}/{{tenant}}'", root.display())));
    let remote = node.app_view();
    let (acme, beta) = (root.join("acme"), root.join("beta"));

    let (state, text) = outcome(&remote, "tok-a", asking(Some(&acme.join("notes.txt")), Some(&acme))).await;
    assert_eq!(state, "TASK_STATE_COMPLETED", "{text}");
    assert!(text.starts_with(acme.to_str().unwrap()) && text.contains("acme's secret"), "{text}");
    let (state, text) = outcome(&remote, "tok-b", asking(Some(&beta.join("notes.txt")), Some(&beta))).await;
    assert!(state == "TASK_STATE_COMPLETED" && text.contains("beta's notes"), "{text}");

    let (state, text) = outcome(&remote, "tok-b", asking(Some(&acme.join("notes.txt")), None)).await;
    assert_eq!(state, "TASK_STATE_FAILED");
    assert!(text.contains("is not available") && !text.contains("secret"), "B reads nothing of A's: {text}");
    let (state, text) = outcome(&remote, "tok-b", asking(None, Some(&acme))).await;
    assert_eq!(state, "TASK_STATE_FAILED");
    assert!(text.contains("the working directory") && text.contains("is not available"), "{text}");
    let via_dots = beta.join("../acme/notes.txt");
    let (state, _) = outcome(&remote, "tok-b", asking(Some(&via_dots), None)).await;
    assert_eq!(state, "TASK_STATE_FAILED", "`..` does not lead into A's root");

    let store = acme.join("a2ad-data");
    let (state, text) = outcome(&remote, "tok-a", asking(None, Some(&store))).await;
    assert_eq!(state, "TASK_STATE_FAILED", "the data dir is no workspace, even in A's root: {text}");
    let journal = std::fs::read_dir(&store).unwrap().flatten().find(|e| e.path().is_file()).expect("a store file");
    let (state, _) = outcome(&remote, "tok-a", asking(Some(&journal.path()), None)).await;
    assert_eq!(state, "TASK_STATE_FAILED", "nor is a file in it readable");
}

#[actix_web::test]
async fn a_refusal_reads_the_same_whether_the_path_exists_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let root = tenant_dirs(dir.path());
    let node = node(dir.path(), Some(&format!("'{}/{{tenant}}'", root.display())));
    let remote = node.app_view();
    let (acme, beta) = (root.join("acme"), root.join("beta"));
    let files = [
        Path::new("/proc/self/environ").to_owned(),
        Path::new("/proc/self/no-such-file").to_owned(),
        acme.join("notes.txt"),
        acme.join("missing.txt"),
        beta.join("missing.txt"),
        beta.clone(),
    ];
    let mut answers = Vec::new();
    for path in &files {
        let (state, text) = outcome(&remote, "tok-b", asking(Some(path), None)).await;
        assert_eq!(state, "TASK_STATE_FAILED", "{}", path.display());
        answers.push(text.replace(&format!("file://{}", path.display()), "URL"));
    }
    assert!(answers.iter().all(|a| *a == answers[0]), "one answer for every file: {answers:#?}");
    let dirs = [Path::new("/proc/self").to_owned(), Path::new("/no/such/dir").to_owned(), acme, beta.join("missing")];
    let mut answers = Vec::new();
    for path in &dirs {
        let (state, text) = outcome(&remote, "tok-b", asking(None, Some(path))).await;
        assert_eq!(state, "TASK_STATE_FAILED", "{}", path.display());
        answers.push(text.replace(path.to_str().unwrap(), "DIR"));
    }
    assert!(answers.iter().all(|a| *a == answers[0]), "one answer for every directory: {answers:#?}");
}

#[actix_web::test]
async fn with_authentication_and_no_allowed_cwds_workspaces_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = tenant_dirs(dir.path());
    let node = node(dir.path(), None);
    let remote = node.app_view();
    let (cwd, file) = (root.join("acme"), format!("file://{}", root.join("acme/notes.txt").display()));
    let asked = [
        (asking(None, Some(&cwd)), cwd.display().to_string()),
        (asking(Some(&root.join("acme/notes.txt")), None), file),
    ];
    for (params, shown) in asked {
        let answer = remote.rpc_as("tok-a", "SendMessage", params).await;
        assert_eq!(answer["error"]["data"][0]["reason"], "INVALID_PARAMS", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("no `allowed-cwds` is configured"), "{message}");
        assert!(message.contains(&format!("`{shown}`")), "the refusal names the path given: {message}");
        assert!(
            message.contains("adds a root that holds it to `allowed-cwds`"),
            "and the key that allows it: {message}"
        );
    }
    let (state, text) = outcome(&remote, "tok-a", asking(None, None)).await;
    assert!(state == "TASK_STATE_COMPLETED" && text.contains("look"), "a message without paths runs: {text}");
}

#[actix_web::test]
async fn a_program_cannot_hand_another_tenant_a_file_either() {
    let dir = tempfile::tempdir().unwrap();
    let root = tenant_dirs(dir.path());
    let node = node(dir.path(), Some(&format!("'{}/{{tenant}}'", root.display())));
    let remote = node.app_view();
    let secret = root.join("acme/notes.txt");
    let relay = |token: &'static str| {
        let params = send_params(secret.to_str().unwrap(), json!({"metadata": {"skill": "relay"}}));
        let remote = &remote;
        async move { remote.rpc_as(token, "SendMessage", params).await["result"]["task"].clone() }
    };
    let for_a = relay("tok-a").await;
    assert_eq!(for_a["status"]["state"], "TASK_STATE_COMPLETED", "{for_a}");
    assert_eq!(for_a["artifacts"][0]["parts"][0]["filename"], "notes.txt", "A's own file, for A");
    let for_b = relay("tok-b").await;
    assert_eq!(for_b["status"]["state"], "TASK_STATE_FAILED", "{for_b}");
    let text = for_b["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("is not available") && for_b["artifacts"].as_array().is_none_or(Vec::is_empty), "{for_b}");
}
