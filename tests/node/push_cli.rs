//! Push from end to end, over the real binary: `a2ad call --push-url --push-token` sets a
//! push config; a delivery that fails or dies is logged at `warn` with the task, the
//! config id, the URL's host and the reason; and the dead letters count attempts as the
//! delivery log does.

use crate::client::{a2ad, stderr};
use crate::receiver::Receiver;
use crate::support::{eventually, NodeProcess};
use serde_json::Value;

const ADMIN: &str = "admin-token";

fn node(dir: &std::path::Path) -> (NodeProcess, std::path::PathBuf) {
    let yaml = format!(
        "push-notifications: true\npush-allow: ['127.0.0.1/32']\npush-max-attempts: 2\n\
         push-retry-base: 40ms\npush-retry-max: 200ms\npush-circuit-open: 100ms\n\
         admin:\n  tokens:\n    - {{token: {ADMIN}, name: ops, role: viewer}}\n"
    );
    let config = dir.join("a2ad.yaml");
    std::fs::write(&config, yaml).unwrap();
    let (log, data) = (dir.join("node.log"), dir.join("data"));
    let args = ["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    (NodeProcess::start_logging(dir, &args, &log), log)
}

async fn admin_get(node: &NodeProcess, path: &str) -> Value {
    let url = format!("{}/admin/v1{path}", node.url);
    reqwest::Client::new().get(url).bearer_auth(ADMIN).send().await.unwrap().json().await.unwrap()
}

/// The task id `a2ad call --json` answered with.
fn task_id(output: &std::process::Output) -> String {
    let first = String::from_utf8_lossy(&output.stdout).lines().next().map(str::to_owned).unwrap_or_default();
    let line: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first} {}", stderr(output)));
    let task = line.get("task").or_else(|| line.get("statusUpdate")).unwrap_or(&line);
    task.get("id").or_else(|| task.get("taskId")).and_then(Value::as_str).unwrap().to_owned()
}

#[actix_web::test]
async fn call_sets_a_push_config_and_failed_deliveries_are_logged_and_counted_once() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let (node, log) = node(dir.path());
    let hook = format!("{}/ok", receiver.base);
    let output = a2ad(&["call", &node.url, "hello", "--json", "--push-url", &hook, "--push-token", "tok-1"], &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let task = task_id(&output);
    let delivered = eventually(400, || async {
        receiver.received().iter().any(|r| r.path == "/ok" && r.status == 200 && r.body.to_string().contains(&task))
    })
    .await;
    assert!(delivered, "{:?}", receiver.received());
    let got = receiver.received();
    assert!(got.iter().all(|r| r.headers.get("x-a2a-notification-token").map(String::as_str) == Some("tok-1")));

    let refused = a2ad(&["call", &node.url, "x", "--push-token", "t"], &[]).await;
    assert!(!refused.status.success() && stderr(&refused).contains("--push-url"), "{}", stderr(&refused));

    // Every attempt answered 500: two attempts, then the dead letters.
    let failing = format!("{}/flaky/100", receiver.base);
    let output = a2ad(&["call", &node.url, "doomed", "--json", "--push-url", &failing], &[]).await;
    let task = task_id(&output);
    let dead = eventually(400, || async {
        let dead = admin_get(&node, "/push/dead").await["dead"].clone();
        dead.as_array().is_some_and(|d| d.iter().any(|j| j["taskId"] == task.as_str()))
    })
    .await;
    assert!(dead, "the deliveries die");
    let letters = admin_get(&node, "/push/dead").await["dead"].clone();
    let letter = letters.as_array().unwrap().iter().find(|j| j["taskId"] == task.as_str()).unwrap().clone();
    let detail = admin_get(&node, &format!("/tasks/{task}")).await;
    let deliveries = detail["deliveries"].as_array().unwrap();
    let last = deliveries.iter().filter(|d| d["outcome"] == "dead").map(|d| d["attempt"].clone()).next().unwrap();
    assert_eq!(letter["attempts"], 2, "{letter}");
    assert_eq!(last, letter["attempts"], "one attempt count: the dead letters and the delivery log agree");
    // And `a2ad push dead list` says the same, as the console does.
    let listed = a2ad(&["push", "dead", "list", "--url", &node.url, "--token", ADMIN], &[]).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let line = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .find(|l| l.contains(letter["id"].as_str().unwrap()))
        .map(str::to_owned);
    assert!(line.as_deref().is_some_and(|l| l.contains("\tattempts=2\t")), "{line:?}");

    let logged = std::fs::read_to_string(&log).unwrap();
    let host = receiver.base.trim_start_matches("http://");
    let config_id = letter["configId"].as_str().unwrap();
    for message in ["push delivery failed: will retry", "push delivery is dead"] {
        let line = logged
            .lines()
            .find(|l| l.contains(message) && l.contains(&task))
            .unwrap_or_else(|| panic!("no {message:?} line in {logged}"));
        assert!(line.contains("WARN") && line.contains(host) && line.contains(config_id), "{line}");
        assert!(line.contains("HTTP 500") || line.contains("500"), "the reason: {line}");
        assert!(!line.contains("/flaky"), "the host, not the path: {line}");
    }
}
