//! The public agent card and its caching; by default a strict 1.0 card (checked against
//! the 1.0 proto's AgentCard as a JSON Schema with no additional properties,
//! `tests/schema/`), with `card.compat-v03` also a card 0.3 clients read.

use crate::support::{echo_agent, spawn_app};
use a2ad_protocol::TaskState;
use serde_json::{json, Value};
use std::time::Duration;

/// The top-level fields only a 0.3 card has.
pub const V03_FIELDS: &[&str] = &[
    "url",
    "preferredTransport",
    "protocolVersion",
    "additionalInterfaces",
    "supportsAuthenticatedExtendedCard",
    "security",
];

/// Where `card` breaks the strict 1.0 AgentCard schema: one line per error, none when valid.
pub fn strict_1_0_violations(card: &Value) -> Vec<String> {
    let text = include_str!("../schema/agent-card-1.0.schema.json");
    let schema: Value = serde_json::from_str(text).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    validator.iter_errors(card).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

/// The card's `supportedInterfaces` as (binding, protocol version, url), in order.
pub fn interfaces(card: &Value) -> Vec<(&str, &str, &str)> {
    fn text<'a>(interface: &'a Value, name: &str) -> &'a str {
        interface[name].as_str().unwrap_or("")
    }
    let listed = card["supportedInterfaces"].as_array().expect("supportedInterfaces");
    listed.iter().map(|i| (text(i, "protocolBinding"), text(i, "protocolVersion"), text(i, "url"))).collect()
}

/// `card` is a pure 1.0 card: valid against the strict schema, no 0.3 field, every
/// interface 1.0 and no security scheme in its 0.3 shape.
pub fn assert_pure_1_0(card: &Value) {
    let violations = strict_1_0_violations(card);
    assert!(violations.is_empty(), "not a strict 1.0 card: {violations:#?}\n{card:#}");
    for field in V03_FIELDS {
        assert!(card.get(field).is_none(), "0.3 field {field}: {card}");
    }
    let listed = interfaces(card);
    assert!(listed.iter().all(|(_, version, _)| *version == "1.0"), "{listed:?}");
    let schemes = card.get("securitySchemes").and_then(Value::as_object).cloned().unwrap_or_default();
    assert!(schemes.values().all(|s| s.get("type").is_none()), "a 0.3 scheme shape: {schemes:?}");
}

#[actix_web::test]
async fn card_has_required_fields_interfaces_and_skills() {
    let app = spawn_app(|c| {
        c.card.compat_v03 = true;
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
async fn the_default_card_is_a_strict_1_0_card() {
    let app = spawn_app(|c| {
        c.public_url = Some("https://agents.example.com".into());
        c.websocket = true;
        c.push.enabled = true;
        c.card.provider =
            Some(a2ad::config::ProviderConfig { organization: "Example".into(), url: "https://example.com".into() });
        c.card.documentation_url = Some("https://example.com/docs".into());
    })
    .await;
    let card = app.card().await;
    assert_pure_1_0(&card);
    let bindings: Vec<&str> = interfaces(&card).into_iter().map(|(binding, ..)| binding).collect();
    assert_eq!(bindings[..3], ["JSONRPC", "HTTP+JSON", "GRPC"], "{bindings:?}");
    assert_eq!(bindings.len(), 4, "and WebSocket: {bindings:?}");
    assert_eq!(card["capabilities"]["streaming"], true);
}

#[actix_web::test]
async fn card_compat_v03_adds_the_0_3_fields_and_interfaces() {
    let app = spawn_app(|c| c.card.compat_v03 = true).await;
    let card = app.card().await;
    for field in &V03_FIELDS[..5] {
        assert!(card.get(field).is_some(), "{field} missing: {card}");
    }
    let listed = interfaces(&card);
    let rpc = format!("{}/", app.url);
    assert_eq!(listed[..2], [("JSONRPC", "1.0", rpc.as_str()), ("HTTP+JSON", "1.0", &format!("{}/a2a", app.url))]);
    assert_eq!(listed[2].0, "GRPC");
    assert_eq!(
        listed[3..],
        [("JSONRPC", "0.3", rpc.as_str()), ("HTTP+JSON", "0.3", app.url.as_str())],
        "the 0.3 interfaces after the 1.0 ones"
    );
    // What a strict 1.0 reader refuses, and why the key is off by default.
    let violations = strict_1_0_violations(&card).join("\n");
    assert!(violations.contains("protocolVersion") && violations.contains("preferredTransport"), "{violations}");
    assert!(strict_1_0_violations(&json!({"name": "n"})).len() > 1, "the schema checks required fields");
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
