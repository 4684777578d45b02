//! Authentication under attack, over real HTTP on loopback: failed attempts are limited
//! per client address and per Basic user name (429 RATE_LIMITED with `Retry-After`)
//! while other callers are served, and a verified Basic credential costs one PBKDF2 run.
//!
//! Linux routes all of 127.0.0.0/8 to the loopback interface, so a client bound to
//! 127.0.0.2 is a second client address talking to the node on 127.0.0.1.

use crate::support::{spawn_app, TestApp};
use a2ad::auth::{hash_password, AuthConfig, ThrottleConfig};
use base64::Engine as _;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};

fn throttled_config(throttle: ThrottleConfig) -> AuthConfig {
    let yaml = format!(
        "bearer-tokens:\n  - {{token: tok-alice, tenant: acme, principal: alice}}\n  - {{token: tok-eve, tenant: evil, principal: eve}}\n\
         basic-users:\n  - {{user: carol, password-hash: \"{}\", tenant: acme, principal: carol}}\n  - {{user: dave, password-hash: \"{}\", tenant: acme, principal: dave}}\n",
        hash_password("carol-pw", 1000),
        hash_password("dave-pw", 1000),
    );
    AuthConfig { throttle, ..serde_yaml_ng::from_str(&yaml).unwrap() }
}

async fn throttled_app(throttle: ThrottleConfig) -> TestApp {
    spawn_app(|c| c.auth = throttled_config(throttle)).await
}

/// A client whose connections come from 127.0.0.`last`.
fn client_from(last: u8) -> reqwest::Client {
    let local = IpAddr::V4(Ipv4Addr::new(127, 0, 0, last));
    reqwest::Client::builder().local_address(local).build().unwrap()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

/// `ListTasks` over JSON-RPC with this `Authorization`: (status, `Retry-After`, body).
async fn list_tasks(app: &TestApp, client: &reqwest::Client, authorization: &str) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let response = client.post(&app.url).header("Authorization", authorization).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry_after, response.json().await.unwrap_or(Value::Null))
}

fn assert_rate_limited((status, retry_after, body): &(u16, Option<String>, Value)) {
    assert_eq!(*status, 429, "{body}");
    let seconds: u64 = retry_after.as_deref().expect("Retry-After").parse().unwrap();
    assert!(seconds >= 1, "{retry_after:?}");
    assert_eq!(body["error"]["code"], -32052, "{body}");
}

fn limits(failure_burst: u32, user_failure_burst: u32) -> ThrottleConfig {
    ThrottleConfig {
        failures_per_minute: 1.0,
        failure_burst,
        user_failures_per_minute: 1.0,
        user_failure_burst,
        ..ThrottleConfig::default()
    }
}

#[actix_web::test]
async fn an_address_out_of_failures_gets_429_while_other_callers_are_served() {
    let app = throttled_app(limits(3, 100)).await;
    let attacker = client_from(2);
    for guess in ["tok-1", "tok-2", "tok-3"] {
        assert_eq!(list_tasks(&app, &attacker, &bearer(guess)).await.0, 401);
    }
    assert_rate_limited(&list_tasks(&app, &attacker, &bearer("tok-4")).await);
    // Over the limit nothing is checked: the right token from there is refused too, so
    // a refused guess tells nothing. HTTP+JSON answers the same.
    assert_rate_limited(&list_tasks(&app, &attacker, &bearer("tok-alice")).await);
    let rest = attacker.get(format!("{}/a2a/tasks", app.url)).header("Authorization", bearer("x")).send().await;
    let rest = rest.unwrap();
    assert_eq!(rest.status(), 429);
    assert!(rest.headers().contains_key("retry-after"));

    // gRPC counts the same address: RESOURCE_EXHAUSTED.
    let endpoint = tonic::transport::Endpoint::from_shared(app.grpc_url.clone()).unwrap();
    let channel = endpoint.local_address(Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))).connect().await.unwrap();
    let mut grpc = a2a_pb::proto::a2a_service_client::A2aServiceClient::new(channel);
    let mut request = tonic::Request::new(a2a_pb::proto::ListTasksRequest::default());
    request.metadata_mut().insert("authorization", "Bearer tok-alice".parse().unwrap());
    assert_eq!(grpc.list_tasks(request).await.unwrap_err().code(), tonic::Code::ResourceExhausted);

    // Another tenant, the same tenant, and a Basic user, from another address: served.
    let legitimate = client_from(1);
    for authorization in [bearer("tok-eve"), bearer("tok-alice"), basic("carol", "carol-pw")] {
        let (status, _, body) = list_tasks(&app, &legitimate, &authorization).await;
        assert_eq!(status, 200, "{authorization}: {body}");
        assert!(body["result"]["tasks"].is_array(), "{body}");
    }
    let metrics = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("a2ad_auth_throttled_total 4"), "{metrics}");
}

#[actix_web::test]
async fn a_basic_user_out_of_failures_is_refused_from_every_address() {
    let app = throttled_app(limits(100, 2)).await;
    for (last, guess) in [(2, "guess-1"), (3, "guess-2")] {
        assert_eq!(list_tasks(&app, &client_from(last), &basic("carol", guess)).await.0, 401);
    }
    assert_rate_limited(&list_tasks(&app, &client_from(4), &basic("carol", "carol-pw")).await);
    // Another user of the same tenant, from an address that guessed: served.
    let (status, _, body) = list_tasks(&app, &client_from(2), &basic("dave", "dave-pw")).await;
    assert_eq!(status, 200, "{body}");
}

#[actix_web::test]
async fn a_verified_basic_credential_costs_one_password_check() {
    let app = throttled_app(ThrottleConfig::default()).await;
    let client = client_from(1);
    for _ in 0..20 {
        let (status, _, body) = list_tasks(&app, &client, &basic("carol", "carol-pw")).await;
        assert_eq!(status, 200, "{body}");
    }
    let metrics = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("a2ad_auth_password_checks_total 1\n"), "{metrics}");
    // A wrong password is never answered from the cache: it runs PBKDF2 (and fails).
    assert_eq!(list_tasks(&app, &client, &basic("carol", "carol-pW")).await.0, 401);
    let metrics = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("a2ad_auth_password_checks_total 2\n"), "{metrics}");
}
