//! `examples/agents/`: the real binary serves the example config from the repository
//! root, and both example agents answer.

use crate::support::JsonBody as _;
use crate::support::{send_params, NodeProcess};
use serde_json::json;

#[actix_web::test]
async fn the_example_agents_answer() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = tempfile::tempdir().unwrap();
    let args = ["--config", "examples/agents/a2ad.yaml", "--data-dir", data.path().to_str().unwrap()];
    let node = NodeProcess::start(repo, &args);
    let remote = node.app_view();

    let card: serde_json::Value = remote
        .client
        .get(format!("{}/.well-known/agent-card.json", remote.url.trim_end_matches('/')))
        .json_body()
        .await;
    let skills: Vec<&str> = card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(skills, ["shout", "wordstats"]);

    let shout = remote.ok("SendMessage", send_params("hello there", json!({"metadata": {"skill": "shout"}}))).await;
    let task = &shout["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let lines: Vec<&str> = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_AGENT")
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(lines, ["You said 2 word(s).", "HELLO THERE"]);

    let text = "the cat and the dog and the bird";
    let stats = remote.ok("SendMessage", send_params(text, json!({"metadata": {"skill": "wordstats"}}))).await;
    let task = &stats["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "8 words, 5 distinct.");
    let report = &task["artifacts"][0]["parts"][0]["data"];
    assert_eq!(report["words"], 8);
    assert_eq!(report["top"][0], json!(["the", 3]));
    assert_eq!(report["taskId"], task["id"]);

    let params = send_params("one two two", json!({"metadata": {"skill": "wordstats"}}));
    let events = streamed(&remote.url, params).await;
    let meta: Vec<serde_json::Value> =
        events.iter().filter_map(|e| e["result"]["statusUpdate"]["metadata"].get("a2ad").cloned()).collect();
    let tools: Vec<&str> = meta.iter().filter_map(|m| m["tool"]["status"].as_str()).collect();
    assert_eq!(tools, ["started", "completed"]);
    assert_eq!(meta.iter().find_map(|m| m.get("usage")).unwrap()["inputTokens"], 3);
    assert!(events.iter().any(|e| e["result"]["artifactUpdate"]["artifact"]["artifactId"] == "word-stats"));
    assert!(node.terminate().success());
}

/// The JSON-RPC events of a `SendStreamingMessage`, read until the stream closes.
async fn streamed(url: &str, params: serde_json::Value) -> Vec<serde_json::Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params});
    let response = reqwest::Client::new().post(url).json(&body).send().await.unwrap();
    let text = response.text().await.unwrap();
    text.lines().filter_map(|l| l.strip_prefix("data:")).filter_map(|d| serde_json::from_str(d.trim()).ok()).collect()
}
