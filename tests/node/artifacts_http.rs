//! Artifacts served by the node, over the real binary: a stored artifact's part links the
//! node's artifact route (`<public-url>/a2a/tasks/{id}/artifacts/{file}`), which serves it
//! to the task's owner only, with its type, size, hash (ETag), name and byte ranges;
//! `a2ad call` saves such files (`--save DIR`) or prints their URLs; the official Python
//! client downloads one with the credentials it already has.

use crate::interop::{interop_tool, repo_path, run_check};
use crate::support::{send_params, NodeProcess};
use serde_json::{json, Value};
use std::path::Path;

/// The report the agent writes: 8,893 bytes of numbers, larger than `inline-max`.
fn report() -> String {
    (1..=2000).map(|n| format!("{n} ")).collect()
}

/// A node with two tenants (`tok-a`: acme, `tok-b`: beta) whose agent answers every
/// message with the report as a markdown artifact.
fn node(dir: &Path) -> NodeProcess {
    let script = dir.join("maker.sh");
    std::fs::write(
        &script,
        "cat > /dev/null\nbody=$(seq 1 2000 | tr '\\n' ' ')\n\
         printf '{\"type\":\"artifact\",\"artifactId\":\"report\",\"text\":\"%s\",\"filename\":\"report.md\",\"mediaType\":\"text/markdown\"}\\n' \"$body\"\n\
         echo '{\"type\":\"final\",\"state\":\"completed\",\"text\":\"done\"}'\n",
    )
    .unwrap();
    let config = dir.join("a2ad.yaml");
    let yaml = format!(
        "auth:\n  bearer-tokens:\n    - {{token: tok-a, tenant: acme, principal: alice}}\n    - {{token: tok-b, tenant: beta, principal: bob}}\n\
         agents:\n  - id: maker\n    kind: command\n    command: {{argv: [/bin/sh, {}], output: jsonl}}\n",
        script.display()
    );
    std::fs::write(&config, yaml).unwrap();
    let data = dir.join("data");
    NodeProcess::start(dir, &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()])
}

/// The stored part of a new task of `tok-a`'s.
async fn report_part(node: &NodeProcess) -> (String, Value) {
    let answer = node.app_view().rpc_as("tok-a", "SendMessage", send_params("make a report", json!({}))).await;
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    (task["id"].as_str().unwrap().to_owned(), task["artifacts"][0]["parts"][0].clone())
}

async fn get(url: &str, token: Option<&str>, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("sent")
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

#[actix_web::test]
async fn a_stored_artifact_is_served_to_its_owner_with_its_type_hash_and_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path());
    let (task_id, part) = report_part(&node).await;
    let body = report();
    let url = part["url"].as_str().expect("a url part").to_owned();
    let prefix = format!("{}/a2a/tasks/{task_id}/artifacts/", node.url);
    assert!(url.starts_with(&prefix), "{url} is the node's route, absolute");
    assert!(!url.contains(dir.path().to_str().unwrap()), "no path of the node's disk: {url}");
    assert_eq!((part["mediaType"].as_str(), part["filename"].as_str()), (Some("text/markdown"), Some("report.md")));
    let sha256 = a2ad::artifacts::sha256_hex(body.as_bytes());
    assert_eq!(part["metadata"]["a2ad"], json!({"byteSize": body.len(), "sha256": sha256}));

    let whole = get(&url, Some("tok-a"), &[]).await;
    assert_eq!(whole.status(), 200);
    assert_eq!(header(&whole, "content-type"), "text/markdown");
    assert_eq!(header(&whole, "content-length"), body.len().to_string());
    assert_eq!(header(&whole, "etag"), format!("\"{sha256}\""));
    assert_eq!(header(&whole, "accept-ranges"), "bytes");
    assert!(header(&whole, "content-disposition").starts_with("attachment; filename=\"report.md\""));
    assert_eq!(whole.text().await.unwrap(), body);

    let first = get(&url, Some("tok-a"), &[("Range", "bytes=0-9")]).await;
    assert_eq!(first.status(), 206);
    assert_eq!(header(&first, "content-range"), format!("bytes 0-9/{}", body.len()));
    assert_eq!(first.text().await.unwrap(), &body[..10]);
    let last = get(&url, Some("tok-a"), &[("Range", "bytes=-6")]).await;
    assert_eq!((last.status().as_u16(), last.text().await.unwrap()), (206, body[body.len() - 6..].to_owned()));
    let past_the_end = format!("bytes={}-", body.len());
    let refused = get(&url, Some("tok-a"), &[("Range", past_the_end.as_str())]).await;
    assert_eq!(refused.status(), 416);
    assert_eq!(header(&refused, "content-range"), format!("bytes */{}", body.len()));
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["details"][0]["reason"], "RANGE_NOT_SATISFIABLE", "{error}");
    let etag = format!("\"{sha256}\"");
    let unchanged = get(&url, Some("tok-a"), &[("If-None-Match", etag.as_str())]).await;
    assert_eq!(unchanged.status(), 304);
    let stale = get(&url, Some("tok-a"), &[("Range", "bytes=0-9"), ("If-Range", "\"other\"")]).await;
    assert_eq!(
        (stale.status().as_u16(), stale.text().await.unwrap().len()),
        (200, body.len()),
        "another version: whole"
    );
    let head = reqwest::Client::new().head(&url).bearer_auth("tok-a").send().await.unwrap();
    assert_eq!((head.status().as_u16(), header(&head, "content-length")), (200, body.len().to_string().as_str()));
}

#[actix_web::test]
async fn another_tenant_or_no_credential_gets_nothing_and_learns_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path());
    let (task_id, part) = report_part(&node).await;
    let url = part["url"].as_str().unwrap().to_owned();
    assert_eq!(get(&url, None, &[]).await.status(), 401);

    let foreign = get(&url, Some("tok-b"), &[]).await;
    assert_eq!(foreign.status(), 404);
    let foreign: Value = foreign.json().await.unwrap();
    let unknown_url = url.replace(&task_id, "0193aaaa-unknown");
    let unknown: Value = get(&unknown_url, Some("tok-b"), &[]).await.json().await.unwrap();
    assert_eq!(foreign["error"]["details"][0]["reason"], "TASK_NOT_FOUND", "{foreign}");
    assert_eq!(foreign.to_string().replace(&task_id, "ID"), unknown.to_string().replace("0193aaaa-unknown", "ID"));

    let file = url.rsplit('/').next().unwrap();
    for name in ["not-a-file.md", "..%2F..%2Fdb", ".hidden"] {
        let other = url.replace(file, name);
        let answer = get(&other, Some("tok-a"), &[]).await;
        assert_eq!(answer.status(), 404, "{name}");
        let error: Value = answer.json().await.unwrap();
        assert_eq!(error["error"]["details"][0]["reason"], "ARTIFACT_NOT_FOUND", "{name}: {error}");
    }
}

/// Runs `a2ad call` against the node; (exit code, stdout, stderr).
async fn call(node: &NodeProcess, args: &[&str]) -> (i32, String, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_a2ad"));
    command.args(["call", &node.url, "make a report", "--token", "tok-a"]).args(args);
    let output = actix_web::rt::task::spawn_blocking(move || command.output()).await.unwrap().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

#[actix_web::test]
async fn a2ad_call_saves_the_files_an_answer_links_or_prints_their_urls() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path());
    let (code, stdout, stderr) = call(&node, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let line = stdout.lines().find(|l| l.starts_with("file ")).unwrap_or_else(|| panic!("no file line: {stdout}"));
    let size = report().len();
    assert!(
        line.starts_with(&format!("file report.md ({size} bytes, text/markdown): {}/a2a/tasks/", node.url)),
        "{line}"
    );

    let saved = dir.path().join("downloads");
    let to = saved.to_str().unwrap();
    for name in ["report.md", "report-1.md"] {
        let (code, stdout, stderr) = call(&node, &["--save", to]).await;
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        let path = saved.join(name);
        assert!(stderr.contains(&format!("a2ad: saved {} ({size} bytes)", path.display())), "{stderr}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), report(), "a second save does not overwrite the first");
        assert!(!stdout.lines().any(|l| l.starts_with("file ")), "saved, not printed: {stdout}");
    }
}

#[actix_web::test]
async fn the_official_python_client_downloads_an_artifact_with_its_credentials() {
    let Some(python) = interop_tool("A2AD_INTEROP_PYTHON", "a2a-sdk") else { return };
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path());
    let script = repo_path("tests/interop/artifact_download.py");
    let args = vec![script.into_os_string(), node.url.clone().into(), "tok-a".into(), "tok-b".into()];
    run_check(python, args, "artifact-download: 3 passed, 0 failed".into()).await;
}
