//! Exposure, over the real binary: a listener other hosts reach without authentication is
//! warned of at start-up and on `/admin/v1/status`, and a card served on a wildcard
//! address names the address each request came to, never `0.0.0.0`.

use crate::support::NodeProcess;
use serde_json::Value;
use std::path::Path;

const ADMIN: &str = "admin-token";

/// A node on `listen` with `yaml` and the admin API (`admin-token`); its log file.
fn start(dir: &Path, listen: &str, yaml: &str) -> (NodeProcess, std::path::PathBuf) {
    let config = dir.join("a2ad.yaml");
    let yaml = format!("{yaml}admin:\n  tokens:\n    - {{token: {ADMIN}, name: ops, role: viewer}}\n");
    std::fs::write(&config, yaml).unwrap();
    let log = dir.join("node.log");
    let data = dir.join("data");
    let args = ["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    (NodeProcess::start_logging_on(dir, listen, &args, &log), log)
}

fn port(node: &NodeProcess) -> u16 {
    node.url.rsplit(':').next().unwrap().trim_end_matches('/').parse().unwrap()
}

async fn get(url: &str, token: Option<&str>) -> Value {
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().json().await.unwrap()
}

fn urls(card: &Value) -> Vec<String> {
    card["supportedInterfaces"].as_array().unwrap().iter().map(|i| i["url"].as_str().unwrap().to_owned()).collect()
}

#[actix_web::test]
async fn a_wildcard_listener_without_auth_is_warned_of_and_its_card_names_the_address_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (node, log) = start(dir.path(), "0.0.0.0:0", "");
    let port = port(&node);
    for host in ["127.0.0.1", "127.0.0.2"] {
        let card = get(&format!("http://{host}:{port}/.well-known/agent-card.json"), None).await;
        let urls = urls(&card);
        assert!(urls.iter().any(|u| u == &format!("http://{host}:{port}/")), "{urls:?}");
        assert!(urls.iter().all(|u| !u.contains("0.0.0.0")), "never the wildcard: {urls:?}");
    }
    let status = get(&format!("http://127.0.0.1:{port}/admin/v1/status"), Some(ADMIN)).await;
    let warnings = status["warnings"].as_array().unwrap_or_else(|| panic!("{status}"));
    assert_eq!(warnings.len(), 1, "{status}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains(&format!("`listen` 0.0.0.0:{port}")) && warning.contains("authentication is off"),
        "{warning}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = logged.lines().find(|l| l.contains("reachable from other hosts")).unwrap_or_else(|| panic!("{logged}"));
    assert!(line.contains("WARN") && line.contains("configure `auth`"), "{line}");
}

#[actix_web::test]
async fn loopback_or_authentication_or_a_public_url_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (node, log) = start(dir.path(), "127.0.0.1:0", "");
    let status = get(&format!("{}/admin/v1/status", node.url), Some(ADMIN)).await;
    assert_eq!(status["warnings"], serde_json::json!([]), "{status}");
    drop(node);
    assert!(!std::fs::read_to_string(&log).unwrap().contains("reachable from other hosts"));

    let dir = tempfile::tempdir().unwrap();
    let yaml = "auth:\n  bearer-tokens:\n    - {token: tok-a, tenant: acme, principal: alice}\nextended-card: true\n";
    let (node, log) = start(dir.path(), "0.0.0.0:0", yaml);
    let port = port(&node);
    let status = get(&format!("http://127.0.0.1:{port}/admin/v1/status"), Some(ADMIN)).await;
    assert_eq!(status["warnings"], serde_json::json!([]), "authentication is on: {status}");
    assert!(!std::fs::read_to_string(&log).unwrap().contains("reachable from other hosts"));

    // The extended card, too, names the address each request came to, on both bindings.
    for host in ["127.0.0.1", "127.0.0.2"] {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}});
        let request = reqwest::Client::new().post(format!("http://{host}:{port}/")).bearer_auth("tok-a").json(&body);
        let answer: Value = request.header("A2A-Version", "1.0").send().await.unwrap().json().await.unwrap();
        let rest = get(&format!("http://{host}:{port}/a2a/extendedAgentCard"), Some("tok-a")).await;
        for card in [&answer["result"], &rest] {
            let urls = urls(card);
            assert!(urls.iter().any(|u| u == &format!("http://{host}:{port}/")), "{card}");
            assert!(urls.iter().all(|u| !u.contains("0.0.0.0")), "never the wildcard: {urls:?}");
        }
    }
}

#[actix_web::test]
async fn on_a_wildcard_address_a_public_url_wins() {
    let app = crate::support::spawn_app(|c| {
        c.listen = "0.0.0.0:0".parse().unwrap();
        c.public_url = Some("https://a2a.example.com".into());
    })
    .await;
    let port = app.url.rsplit(':').next().unwrap();
    let card = get(&format!("http://127.0.0.1:{port}/.well-known/agent-card.json"), None).await;
    assert_eq!(urls(&card)[0], "https://a2a.example.com/", "{card}");
}

/// A request that looks like 0.3 on a node whose card is 1.0 only gets one hint per
/// client address naming `card.compat-v03`; with it on, none.
#[actix_web::test]
async fn an_old_client_gets_one_hint_naming_compat_v03() {
    let old_request = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}});
    // From a second client address, a 0.3 HTTP+JSON route (`/v1/`): a hint of its own.
    let rest_client = reqwest::Client::builder().local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap());
    let rest_client = rest_client.build().unwrap();
    for (yaml, hints) in [("", 2), ("card:\n  compat-v03: true\n", 0)] {
        let dir = tempfile::tempdir().unwrap();
        let (node, log) = start(dir.path(), "127.0.0.1:0", yaml);
        let client = reqwest::Client::new();
        for _ in 0..3 {
            client.post(&node.url).json(&old_request).send().await.unwrap();
            client.get(format!("{}/.well-known/agent-card.json", node.url)).send().await.unwrap();
            rest_client.get(format!("{}/v1/tasks/unknown", node.url)).send().await.unwrap();
        }
        drop(node);
        let logged = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = logged.lines().filter(|l| l.contains("looks like an A2A 0.3 client")).collect();
        assert_eq!(lines.len(), hints, "once per client address: {logged}");
        if let Some(line) = lines.first() {
            assert!(line.contains("WARN") && line.contains("`card.compat-v03: true`"), "{line}");
        }
        if hints > 0 {
            assert!(lines.iter().any(|l| l.contains("127.0.0.1")), "the JSON-RPC client: {logged}");
            assert!(lines.iter().any(|l| l.contains("127.0.0.2")), "the /v1/ client: {logged}");
        }
    }
}
