//! The public agent card and its caching.

use crate::support::{echo_agent, spawn_app};
use a2ad_protocol::TaskState;
use serde_json::Value;
use std::time::Duration;

#[actix_web::test]
async fn card_has_required_fields_interfaces_and_skills() {
    let app = spawn_app(|c| {
        c.public_url = Some("https://agents.example.com".into());
        c.agents = vec![
            echo_agent("first", TaskState::Completed, 0, Duration::ZERO),
            echo_agent("second", TaskState::InputRequired, 0, Duration::ZERO),
        ];
    })
    .await;
    let response = app.client.get(format!("{}/.well-known/agent-card.json", app.url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let card: Value = response.json().await.unwrap();
    for field in ["name", "description", "version", "capabilities", "defaultInputModes", "defaultOutputModes"] {
        assert!(card.get(field).is_some(), "missing {field}: {card}");
    }
    let iface = &card["supportedInterfaces"][0];
    assert_eq!(iface["url"], "https://agents.example.com/");
    assert_eq!(iface["protocolBinding"], "JSONRPC");
    assert_eq!(iface["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], true);
    let skills: Vec<&str> = card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(skills, ["first", "second"]);
    assert!(card["skills"][0]["tags"].is_array());
    // The 0.3 fields, for 0.3 clients (see tests/node/dialect_v03.rs).
    assert_eq!(card["url"], "https://agents.example.com/");
    assert_eq!(card["protocolVersion"], "0.3.0");
}

#[actix_web::test]
async fn card_is_cacheable_and_answers_conditional_requests() {
    let app = spawn_app(|_| {}).await;
    let card_url = format!("{}/.well-known/agent-card.json", app.url);
    let first = app.client.get(&card_url).send().await.unwrap();
    let headers = first.headers().clone();
    assert_eq!(headers["cache-control"], "public, max-age=60");
    let etag = headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "a strong ETag: {etag}");
    let last_modified = headers["last-modified"].to_str().unwrap().to_owned();

    let by_etag = app.client.get(&card_url).header("If-None-Match", &etag).send().await.unwrap();
    assert_eq!(by_etag.status(), 304);
    assert_eq!(by_etag.headers()["etag"].to_str().unwrap(), etag);
    assert!(by_etag.bytes().await.unwrap().is_empty());
    let weak = app.client.get(&card_url).header("If-None-Match", format!("W/{etag}")).send().await.unwrap();
    assert_eq!(weak.status(), 304);
    let other = app.client.get(&card_url).header("If-None-Match", "\"stale\"").send().await.unwrap();
    assert_eq!(other.status(), 200);

    let by_date = app.client.get(&card_url).header("If-Modified-Since", &last_modified).send().await.unwrap();
    assert_eq!(by_date.status(), 304);
    let old =
        app.client.get(&card_url).header("If-Modified-Since", "Mon, 01 Jan 2001 00:00:00 GMT").send().await.unwrap();
    assert_eq!(old.status(), 200);
}

#[actix_web::test]
async fn health_is_public_and_plain() {
    let app = spawn_app(|_| {}).await;
    let response = app.client.get(format!("{}/health", app.url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<Value>().await.unwrap(), serde_json::json!({"status": "healthy"}));
}
