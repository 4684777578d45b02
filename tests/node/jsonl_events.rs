//! The command agent's jsonl events that carry node metadata (tool, permission, usage,
//! thinking) and the Message-only reply; the card's metadata extensions.

use crate::support::{command_agent, command_settings, send_params, spawn_app, TestApp};
use a2ad::agents::command::OutputMode;
use serde_json::{json, Value};

const SCRIPT: &str = r#"long=$(head -c 5000 /dev/zero | tr '\0' x)
echo '{"type":"thinking","text":"let me think"}'
echo '{"type":"tool","status":"started","toolUseId":"t1","name":"search"}'
echo '{"type":"tool","status":"input_delta","toolUseId":"t1","input":"{\"q\":"}'
echo '{"type":"tool","event":"input_complete","toolUseId":"t1","input":{"q":"rust"}}'
echo '{"type":"permission","toolUseId":"t1","name":"search","decision":"allowed","reason":"read-only"}'
echo "{\"type\":\"tool\",\"event\":\"completed\",\"toolUseId\":\"t1\",\"result\":\"$long\"}"
echo '{"type":"tool","event":"failed","toolUseId":"t2","name":"write","result":"disk full"}'
echo '{"type":"usage","inputTokens":7,"outputTokens":3}'
echo '{"type":"some-future-event","x":1}'
echo '{"type":"final","state":"completed","text":"done"}'"#;

async fn app(script: &str, thinking: bool) -> TestApp {
    let agent = command_agent("events", command_settings(&["/bin/sh", "-c", script], OutputMode::Jsonl));
    spawn_app(move |c| {
        c.agents = vec![agent];
        c.thinking_exposure = thinking;
    })
    .await
}

/// Every `metadata.a2ad` of the turn's status updates, in order.
async fn node_metadata(app: &TestApp) -> Vec<Value> {
    let events = app.stream("SendStreamingMessage", send_params("go", json!({})), &[]).await.unwrap().rest().await;
    events.iter().filter_map(|e| e.result()["statusUpdate"]["metadata"].get("a2ad").cloned()).collect()
}

#[actix_web::test]
async fn tool_permission_and_usage_events_become_status_metadata() {
    let app = app(SCRIPT, false).await;
    let meta = node_metadata(&app).await;
    assert!(meta.iter().all(|m| m.get("thinking").is_none()), "thinking is off by default: {meta:?}");
    let tools: Vec<&Value> = meta.iter().filter_map(|m| m.get("tool")).collect();
    let kinds: Vec<&str> = tools.iter().map(|t| t["status"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["started", "input_delta", "input_complete", "completed", "failed"]);
    assert_eq!(tools[0]["name"], "search");
    assert_eq!(tools[3]["name"], "search", "named by its toolUseId");
    assert_eq!(tools[2]["input"], json!({"q": "rust"}));
    assert_eq!(tools[3]["result"].as_str().unwrap().len(), 4000, "cut to 4000 characters");
    assert_eq!(tools[4]["result"], "disk full");
    let permission = meta.iter().find_map(|m| m.get("permission")).expect("a permission decision");
    assert_eq!(permission, &json!({"toolUseId": "t1", "name": "search", "decision": "allowed", "reason": "read-only"}));
    let usage = meta.iter().find_map(|m| m.get("usage")).expect("usage");
    assert_eq!(usage, &json!({"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}));
}

#[actix_web::test]
async fn thinking_is_sent_only_when_exposed_and_the_card_says_so() {
    let app = app(SCRIPT, true).await;
    let meta = node_metadata(&app).await;
    assert_eq!(meta[0], json!({"thinking": {"text": "let me think"}}));
    let card = app.card().await;
    let extensions = card["capabilities"]["extensions"].as_array().unwrap();
    let thinking = extensions.iter().find(|e| e["uri"] == "urn:a2ad:thinking-exposure:v1").expect("announced");
    assert_eq!(thinking["params"]["enabledTypes"], json!(["thinking"]));
    assert!(extensions.iter().any(|e| e["uri"] == "urn:a2ad:agent-metadata:v1"));

    let plain = self::app(SCRIPT, false).await;
    let card = plain.card().await;
    let uris: Vec<&str> =
        card["capabilities"]["extensions"].as_array().unwrap().iter().map(|e| e["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["urn:a2ad:agent-metadata:v1"]);
}

#[actix_web::test]
async fn a_bad_tool_event_fails_the_turn_clearly() {
    let app = app(r#"echo '{"type":"tool","event":"exploded"}'"#, false).await;
    let task = app.send_text("go", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("a tool event needs `status`"), "{text}");
}

#[actix_web::test]
async fn a_reply_event_answers_with_a_message_only() {
    let app = app(r#"echo '{"type":"reply","text":"just a message"}'"#, false).await;
    let result = app.ok("SendMessage", send_params("hi", json!({"contextId": "reply-1"}))).await;
    assert!(result.get("task").is_none(), "{result}");
    assert_eq!(result["message"]["role"], "ROLE_AGENT");
    assert_eq!(result["message"]["parts"][0]["text"], "just a message");
    assert_eq!(result["message"]["contextId"], "reply-1");
}
