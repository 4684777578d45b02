//! Artifacts: large text and raw payloads are stored under
//! `<data-dir>/artifacts/<task-id>/` and sent as URL parts with their size and hash (here
//! `artifacts.links: file`, whose `file://` URLs name the stored file itself; the node's
//! artifact route is `artifacts_http.rs`); small ones stay inline; appended chunks add parts.

use crate::support::{command_agent, command_settings, send_params, spawn_app, TestApp};
use a2ad::agents::command::OutputMode;
use serde_json::{json, Value};

async fn app(script: &str, inline_max: Option<usize>) -> TestApp {
    let agent = command_agent("maker", command_settings(&["/bin/sh", "-c", script], OutputMode::Jsonl));
    spawn_app(move |c| {
        c.agents = vec![agent];
        c.artifacts.links = a2ad::artifacts::ArtifactLinks::File;
        if let Some(max) = inline_max {
            c.artifacts.inline_max = max;
        }
    })
    .await
}

fn sha256_hex(bytes: &[u8]) -> String {
    a2ad::artifacts::sha256_hex(bytes)
}

/// The local file a `file://` part names, checked to be in the task's artifact dir.
fn stored_file(app: &TestApp, task_id: &str, part: &Value) -> Vec<u8> {
    let url = reqwest::Url::parse(part["url"].as_str().expect("a url part")).unwrap();
    let path = url.to_file_path().unwrap();
    let dir = app._dir.path().join("data").join("artifacts").join(task_id).canonicalize().unwrap();
    assert_eq!(path.parent().unwrap().canonicalize().unwrap(), dir, "stored under <data-dir>/artifacts/<task-id>/");
    std::fs::read(path).unwrap()
}

#[actix_web::test]
async fn large_payloads_are_stored_and_small_ones_stay_inline() {
    let script = r#"big=$(head -c 5000 /dev/zero | tr '\0' y)
echo '{"type":"artifact","artifactId":"small","name":"note","text":"short and sweet"}'
echo "{\"type\":\"artifact\",\"artifactId\":\"report\",\"name\":\"report\",\"text\":\"$big\",\"filename\":\"report.md\",\"mediaType\":\"text/markdown\"}"
raw=$(head -c 6000 /dev/zero | base64 -w0)
echo "{\"type\":\"artifact\",\"artifactId\":\"blob\",\"raw\":\"$raw\",\"filename\":\"../../zeros.bin\",\"mediaType\":\"application/octet-stream\"}"
echo '{"type":"final","state":"completed"}'"#;
    let app = app(script, None).await;
    let events = app.stream("SendStreamingMessage", send_params("go", json!({})), &[]).await.unwrap().rest().await;
    let updates: Vec<Value> = events.iter().filter_map(|e| e.result().get("artifactUpdate").cloned()).collect();
    assert_eq!(updates.len(), 3);
    let task_id = updates[0]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(updates[0]["artifact"]["parts"][0]["text"], "short and sweet", "small: inline");

    let report = &updates[1]["artifact"]["parts"][0];
    assert!(report.get("text").is_none(), "the content is not copied: {report}");
    assert_eq!(report["mediaType"], "text/markdown");
    assert_eq!(report["filename"], "report.md");
    let expected = "y".repeat(5000);
    assert_eq!(report["metadata"]["a2ad"], json!({"byteSize": 5000, "sha256": sha256_hex(expected.as_bytes())}));
    assert_eq!(stored_file(&app, &task_id, report), expected.as_bytes());

    let blob = &updates[2]["artifact"]["parts"][0];
    assert_eq!(blob["metadata"]["a2ad"]["byteSize"], 6000);
    assert_eq!(stored_file(&app, &task_id, blob), vec![0u8; 6000], "a hostile filename stays in the directory");

    let task = app.ok("GetTask", json!({"id": task_id})).await;
    let ids: Vec<&str> =
        task["artifacts"].as_array().unwrap().iter().map(|a| a["artifactId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["small", "report", "blob"], "recorded in the task's artifacts");
    assert_eq!(task["artifacts"][1]["parts"][0], *report);
}

#[actix_web::test]
async fn appended_chunks_add_parts_and_the_threshold_is_configurable() {
    let script = r#"echo '{"type":"artifact","artifactId":"log","text":"first chunk of the log","lastChunk":false}'
echo '{"type":"artifact","artifactId":"log","text":"tiny","append":true}'
echo '{"type":"artifact","artifactId":"log","text":"second chunk of the log","append":true,"lastChunk":true}'"#;
    let app = app(script, Some(10)).await;
    let events = app.stream("SendStreamingMessage", send_params("go", json!({})), &[]).await.unwrap().rest().await;
    let updates: Vec<Value> = events.iter().filter_map(|e| e.result().get("artifactUpdate").cloned()).collect();
    let flags: Vec<(bool, bool)> = updates
        .iter()
        .map(|u| (u["append"].as_bool().unwrap_or(false), u["lastChunk"].as_bool().unwrap_or(false)))
        .collect();
    assert_eq!(flags, [(false, false), (true, false), (true, true)]);
    let task_id = updates[0]["taskId"].as_str().unwrap().to_owned();
    let task = app.ok("GetTask", json!({"id": task_id})).await;
    let parts = task["artifacts"][0]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert_eq!(stored_file(&app, &task_id, &parts[0]), b"first chunk of the log");
    assert_eq!(parts[1]["text"], "tiny", "under the threshold of 10 bytes: inline");
    assert_eq!(stored_file(&app, &task_id, &parts[2]), b"second chunk of the log");
}

#[actix_web::test]
async fn a_bad_artifact_fails_the_turn_clearly() {
    let app = app(r#"echo '{"type":"artifact","artifactId":"../x","text":"a"}'"#, None).await;
    let task = app.send_text("go", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("the artifact id `../x` is not valid"), "{text}");
    let app = self::app(r#"echo '{"type":"artifact","raw":"***"}'"#, None).await;
    let task = app.send_text("go", json!({})).await;
    assert!(task["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("not valid base64"));
}

#[actix_web::test]
async fn files_the_program_wrote_are_copied_into_the_store() {
    let script = r#"head -c 5000 /dev/zero | tr '\0' z > out.txt
printf 'small' > small.txt
echo '{"type":"artifact","artifactId":"big","path":"out.txt","mediaType":"text/plain"}'
echo "{\"type\":\"artifact\",\"artifactId\":\"tiny\",\"url\":\"file://$PWD/small.txt\"}"
echo '{"type":"artifact","artifactId":"link","url":"https://example.com/report.pdf","mediaType":"application/pdf"}'"#;
    let app = app(script, None).await;
    let work = tempfile::tempdir().unwrap();
    let extra = json!({"metadata": {"a2ad": {"cwd": work.path().to_str().unwrap()}}});
    let task = app.send_text("go", extra).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let task_id = task["id"].as_str().unwrap();
    let big = &task["artifacts"][0]["parts"][0];
    assert_eq!(big["filename"], "out.txt");
    assert_eq!(big["metadata"]["a2ad"]["byteSize"], 5000);
    std::fs::remove_file(work.path().join("out.txt")).unwrap();
    assert_eq!(stored_file(&app, task_id, big), vec![b'z'; 5000], "the node's copy outlives the workspace");
    let tiny = &task["artifacts"][1]["parts"][0];
    assert_eq!(tiny["raw"], "c21hbGw=", "a small file stays inline: {tiny}");
    assert_eq!(tiny["filename"], "small.txt");
    assert_eq!(task["artifacts"][2]["parts"][0]["url"], "https://example.com/report.pdf", "other URLs pass on");

    let app = self::app(r#"echo '{"type":"artifact","path":"/etc/passwd"}'"#, None).await;
    let task = app.send_text("go", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("`/etc/passwd` is not available"), "{text}");
}
