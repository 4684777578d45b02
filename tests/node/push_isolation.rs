//! Webhooks under hostile load, over loopback with real receivers: a receiver that never
//! answers holds only its own destination's slots while a healthy one gets every
//! delivery; and the URLs that could never be delivered as given are refused when stored,
//! with the exact error.

use crate::receiver::{Received, Receiver};
use crate::support::{eventually, send_params, spawn_app};
use a2ad::config::Config;
use serde_json::{json, Value};
use std::time::Duration;

fn push_on(c: &mut Config) {
    c.push.enabled = true;
    c.push.allow = vec!["127.0.0.1/32".into()];
}

fn count(received: &[Received], path: &str, status: u16) -> usize {
    received.iter().filter(|r| r.path == path && r.status == status).count()
}

#[actix_web::test]
async fn a_receiver_that_never_answers_does_not_hold_up_a_healthy_one() {
    let hanging = Receiver::start();
    let healthy = Receiver::start();
    let app = spawn_app(|c| {
        push_on(c);
        c.push.concurrency = 4;
        c.push.destination_concurrency = 2;
        c.push.tenant_concurrency = 4;
        // Longer than the test: the hanging deliveries hold their slots throughout.
        c.push.timeout = Duration::from_secs(600);
    })
    .await;
    // The hanging destination's jobs come first, and outnumber every slot of the node.
    for i in 0..10 {
        let config = json!({"url": format!("{}/hang", hanging.base)});
        app.send_text(&format!("hang {i}"), json!({"configuration": {"taskPushNotificationConfig": config}})).await;
    }
    for i in 0..10 {
        let config = json!({"url": format!("{}/ok", healthy.base)});
        app.send_text(&format!("ok {i}"), json!({"configuration": {"taskPushNotificationConfig": config}})).await;
    }
    // Three events per task: 30 healthy deliveries, all of them, while 30 hang.
    let all_healthy = eventually(2400, || async { count(&healthy.received(), "/ok", 200) >= 30 }).await;
    assert!(all_healthy, "healthy deliveries: {}", count(&healthy.received(), "/ok", 200));
    assert!(eventually(400, || async { count(&hanging.received(), "/hang", 0) == 2 }).await);
    assert_eq!(count(&hanging.received(), "/hang", 0), 2, "the hanging destination holds only its own two slots");
    // A delivery is acknowledged just after its receiver answered: wait for the last
    // healthy ones to leave the queue.
    let metrics_now =
        || async { app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap() };
    eventually(400, || async { metrics_now().await.contains("a2ad_push_queue_depth 30") }).await;
    let metrics = metrics_now().await;
    let destination = hanging.base.trim_start_matches("http://");
    let in_flight = format!("a2ad_push_destination_in_flight{{destination=\"{destination}\"}} 2");
    assert!(metrics.contains(&in_flight), "{metrics}");
    assert!(
        metrics.contains("a2ad_push_queue_depth 30"),
        "the hanging destination's jobs are all still held: {metrics}"
    );
    assert!(metrics.contains("a2ad_push_dead_letters 0"), "{metrics}");
}

/// The exact refusal of `url`, by CreateTaskPushNotificationConfig and by an inline
/// config on SendMessage.
async fn refusals(app: &crate::support::TestApp, task_id: &str, url: &str) -> [Value; 2] {
    let created = app.err("CreateTaskPushNotificationConfig", json!({"taskId": task_id, "url": url})).await;
    let inline = json!({"configuration": {"taskPushNotificationConfig": {"url": url}}});
    let sent = app.err("SendMessage", send_params("x", inline)).await;
    [created, sent]
}

#[actix_web::test]
async fn urls_that_could_not_be_delivered_as_given_are_refused_with_the_exact_error() {
    let app = spawn_app(push_on).await;
    let task = app.send_text("x", json!({})).await;
    let task_id = task["id"].as_str().unwrap();
    let long = format!("http://93.184.216.34/{}", "a".repeat(2030));
    let cases = [
        (
            "http://93.184.216.34/a\r\nX-Evil: 1",
            "it contains a control character (U+000D) at byte 22",
            "control_character",
        ),
        ("http://93.184.216.34/\tx", "it contains a control character (U+0009) at byte 21", "control_character"),
        (long.as_str(), "it is 2051 bytes long (at most 2048)", "too_long"),
        (
            "http://[::ffff:0:a00:1]/",
            "::ffff:0:a00:1 is a private address (it carries IPv4 10.0.0.1)",
            "forbidden_address",
        ),
        (
            "http://[64:ff9b:1::a9fe:a9fe]/",
            "64:ff9b:1::a9fe:a9fe is a cloud metadata address (it carries IPv4 169.254.169.254)",
            "forbidden_address",
        ),
        (
            "http://[64:ff9b::c0a8:101]/",
            "64:ff9b::c0a8:101 is a private address (it carries IPv4 192.168.1.1)",
            "forbidden_address",
        ),
    ];
    for (url, why, refusal) in cases {
        for error in refusals(&app, task_id, url).await {
            assert_eq!(error["code"], -32602, "{url:?}: {error}");
            assert_eq!(error["message"], format!("Invalid params: `url` is refused: {why}"), "{url:?}");
            assert_eq!(error["data"][0]["metadata"]["refusal"], refusal, "{url:?}: {error}");
        }
    }
    let listed = app.ok("ListTaskPushNotificationConfigs", json!({"taskId": task_id})).await;
    assert!(listed["configs"].as_array().is_none_or(Vec::is_empty), "nothing was stored: {listed}");
    // This node allowlists 127.0.0.1/32, and that applies to the IPv4 an IPv6 form carries.
    for allowed in ["http://127.0.0.1:9/h", "http://[64:ff9b::7f00:1]:9/h", "http://[::ffff:0:7f00:1]:9/h"] {
        app.ok("CreateTaskPushNotificationConfig", json!({"taskId": task_id, "url": allowed})).await;
    }
}
