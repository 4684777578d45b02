//! Authentication and tenant isolation over real HTTP and gRPC.

use crate::support::{send_params, spawn_app, TestApp};
use a2ad::auth::{hash_password, AuthConfig};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

const JWT_SECRET: &str = "a-jwt-secret-of-at-least-32-bytes!!";

fn auth_config() -> AuthConfig {
    let yaml = format!(
        "bearer-tokens:\n  - {{token: tok-alice, tenant: acme, principal: alice}}\n  - {{token: tok-bob, tenant: acme, principal: bob}}\n  - {{token: tok-eve, tenant: evil, principal: eve}}\n\
         basic-users:\n  - {{user: carol, password-hash: \"{}\", tenant: acme, principal: carol}}\n\
         api-keys:\n  - {{key: key-batch, tenant: acme, principal: batch}}\n\
         integrator-keys:\n  - {{key: key-platform, tenant: platform}}\n\
         jwt:\n  secrets: [{{secret: \"{JWT_SECRET}\"}}]\n  issuer: https://idp.test\n  audience: a2ad\n",
        hash_password("carol-pw", 1000)
    );
    serde_yaml_ng::from_str(&yaml).unwrap()
}

async fn secured_app() -> TestApp {
    secured_app_with(|_| {}).await
}

/// [`secured_app`] with one more change to its config.
async fn secured_app_with(tweak: impl FnOnce(&mut a2ad::config::Config)) -> TestApp {
    spawn_app(|c| {
        c.auth = auth_config();
        c.push.enabled = true;
        c.push.allow = vec!["127.0.0.1/32".into()];
        tweak(c);
    })
    .await
}

/// A JSON-RPC call with extra headers; returns (HTTP status, body).
async fn rpc_as(app: &TestApp, headers: &[(&str, &str)], method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = app.client.post(&app.url).json(&body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn bearer(token: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {token}"))
}

fn jwt(claims: Value, secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let signature = ring::hmac::sign(&key, format!("{header}.{payload}").as_bytes());
    format!("{header}.{payload}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
}

#[actix_web::test]
async fn the_card_and_health_stay_public_and_announce_the_schemes() {
    let app = secured_app_with(|c| c.card.compat_v03 = true).await;
    let card = app.card().await;
    for scheme in ["bearerAuth", "basicAuth", "apiKeyAuth"] {
        assert!(card["securitySchemes"].get(scheme).is_some(), "{scheme}: {}", card["securitySchemes"]);
    }
    assert!(!card["securityRequirements"].as_array().unwrap().is_empty());
    // With card.compat-v03, each entry in both shapes: the 1.0 wrapper, and the 0.3 fields
    // beside it.
    let bearer = &card["securitySchemes"]["bearerAuth"];
    assert_eq!(bearer["httpAuthSecurityScheme"]["scheme"], "bearer", "{bearer}");
    assert_eq!((bearer["type"].as_str(), bearer["scheme"].as_str()), (Some("http"), Some("bearer")), "{bearer}");
    let api_key = &card["securitySchemes"]["apiKeyAuth"];
    assert_eq!((api_key["type"].as_str(), api_key["in"].as_str()), (Some("apiKey"), Some("header")), "{api_key}");
    assert_eq!(api_key["name"], api_key["apiKeySecurityScheme"]["name"]);
    // a2ad's own card model reads it back.
    let parsed: a2ad_protocol::AgentCard = serde_json::from_value(card.clone()).unwrap();
    assert_eq!(parsed.security_schemes.len(), 3);
    assert_eq!(app.client.get(format!("{}/health", app.url)).send().await.unwrap().status(), 200);
}

#[actix_web::test]
async fn by_default_the_schemes_are_1_0_only_and_the_card_is_strict_1_0() {
    let app = secured_app().await;
    let card = app.card().await;
    crate::card::assert_pure_1_0(&card);
    let bearer = &card["securitySchemes"]["bearerAuth"];
    assert_eq!(bearer.as_object().unwrap().keys().collect::<Vec<_>>(), ["httpAuthSecurityScheme"], "{bearer}");
    assert_eq!(bearer["httpAuthSecurityScheme"]["scheme"], "bearer");
    assert_eq!(card["securitySchemes"]["apiKeyAuth"]["apiKeySecurityScheme"]["location"], "header");
    assert!(!card["securityRequirements"].as_array().unwrap().is_empty());
    let parsed: a2ad_protocol::AgentCard = serde_json::from_value(card).unwrap();
    assert_eq!(parsed.security_schemes.len(), 3);
}

#[actix_web::test]
async fn missing_or_bad_credentials_get_401_on_every_binding() {
    let app = secured_app().await;
    for headers in [vec![], vec![("Authorization", "Bearer nope".to_owned())], vec![("X-Api-Key", "nope".to_owned())]] {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = rpc_as(&app, &headers, "ListTasks", json!({})).await;
        assert_eq!((status, body), (401, json!({"error": "Unauthorized"})));
    }
    let rest = app.client.get(format!("{}/a2a/tasks", app.url)).send().await.unwrap();
    assert_eq!(rest.status(), 401);
    assert!(rest.headers()["www-authenticate"].to_str().unwrap().contains("Bearer"));
    let mut grpc = a2a_pb::proto::a2a_service_client::A2aServiceClient::connect(app.grpc_url.clone()).await.unwrap();
    let refused = grpc.list_tasks(a2a_pb::proto::ListTasksRequest::default()).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let mut authed = tonic::Request::new(a2a_pb::proto::ListTasksRequest::default());
    authed.metadata_mut().insert("authorization", "Bearer tok-alice".parse().unwrap());
    assert!(grpc.list_tasks(authed).await.is_ok());
}

#[actix_web::test]
async fn every_scheme_is_accepted_with_its_own_identity() {
    let app = secured_app().await;
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("carol:carol-pw"));
    let bad_basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("carol:wrong"));
    let now = chrono::Utc::now().timestamp();
    let good_jwt = jwt(
        json!({"sub": "dave", "tenant": "acme", "iss": "https://idp.test", "aud": "a2ad", "exp": now + 60}),
        JWT_SECRET,
    );
    let expired = jwt(
        json!({"sub": "dave", "tenant": "acme", "iss": "https://idp.test", "aud": "a2ad", "exp": now - 600}),
        JWT_SECRET,
    );
    let wrong_aud = jwt(
        json!({"sub": "dave", "tenant": "acme", "iss": "https://idp.test", "aud": "other", "exp": now + 60}),
        JWT_SECRET,
    );
    let wrong_key = jwt(
        json!({"sub": "dave", "tenant": "acme", "iss": "https://idp.test", "aud": "a2ad", "exp": now + 60}),
        "another-secret-of-32-bytes-or-more!!",
    );
    let accepted: Vec<Vec<(&str, String)>> = vec![
        vec![bearer("tok-alice")],
        vec![("Authorization", basic)],
        vec![("X-Api-Key", "key-batch".into())],
        vec![("X-Api-Key", "key-platform".into()), ("X-Platform-User-Id", "user-42".into())],
        vec![("Authorization", format!("Bearer {good_jwt}"))],
    ];
    for headers in &accepted {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = rpc_as(&app, &headers, "SendMessage", send_params("hi", json!({}))).await;
        assert_eq!(status, 200, "{headers:?}: {body}");
        assert_eq!(body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    }
    let refused: Vec<Vec<(&str, String)>> = vec![
        vec![("Authorization", bad_basic)],
        vec![("X-Api-Key", "key-platform".into())],
        vec![("Authorization", format!("Bearer {expired}"))],
        vec![("Authorization", format!("Bearer {wrong_aud}"))],
        vec![("Authorization", format!("Bearer {wrong_key}"))],
    ];
    for headers in &refused {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, _) = rpc_as(&app, &headers, "ListTasks", json!({})).await;
        assert_eq!(status, 401, "{headers:?}");
    }
}

#[actix_web::test]
async fn another_owner_sees_nothing_on_any_method() {
    let app = secured_app().await;
    let alice = bearer("tok-alice");
    let alice = [(alice.0, alice.1.as_str())];
    let hook = json!({"url": "http://127.0.0.1:9/h"});
    let (_, made) = rpc_as(
        &app,
        &alice,
        "SendMessage",
        send_params("mine", json!({"configuration": {"taskPushNotificationConfig": hook}})),
    )
    .await;
    let task_id = made["result"]["task"]["id"].as_str().unwrap().to_owned();
    let (_, configs) = rpc_as(&app, &alice, "ListTaskPushNotificationConfigs", json!({"taskId": task_id})).await;
    let config_id = configs["result"]["configs"][0]["id"].as_str().unwrap().to_owned();

    for other in ["tok-bob", "tok-eve"] {
        let who = bearer(other);
        let who = [(who.0, who.1.as_str())];
        for (method, params) in [
            ("GetTask", json!({"id": task_id})),
            ("CancelTask", json!({"id": task_id})),
            ("SubscribeToTask", json!({"id": task_id})),
            ("SendMessage", send_params("hijack", json!({"taskId": task_id}))),
            ("CreateTaskPushNotificationConfig", json!({"taskId": task_id, "url": "http://127.0.0.1:9/x"})),
            ("GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})),
            ("ListTaskPushNotificationConfigs", json!({"taskId": task_id})),
            ("DeleteTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})),
        ] {
            let (_, body) = rpc_as(&app, &who, method, params).await;
            assert_eq!(body["error"]["code"], -32001, "{other} {method}: {body}");
            assert_eq!(body["error"]["message"], "Task not found", "no detail leaks");
        }
        let (_, listed) = rpc_as(&app, &who, "ListTasks", json!({})).await;
        assert_eq!(listed["result"]["totalSize"], 0, "{other} lists nothing of alice's");
    }
    let (_, still) =
        rpc_as(&app, &alice, "GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})).await;
    assert!(still.get("result").is_some(), "alice's config survived: {still}");
    let (_, mine) = rpc_as(&app, &alice, "ListTasks", json!({})).await;
    assert_eq!(mine["result"]["totalSize"], 1);
}

#[actix_web::test]
async fn the_request_tenant_must_be_the_callers() {
    let app = secured_app().await;
    let alice = bearer("tok-alice");
    let alice = [(alice.0, alice.1.as_str())];
    let (_, ok) = rpc_as(&app, &alice, "ListTasks", json!({"tenant": "acme"})).await;
    assert!(ok.get("result").is_some(), "{ok}");
    let (_, wrong) = rpc_as(&app, &alice, "ListTasks", json!({"tenant": "evil"})).await;
    assert_eq!(wrong["error"]["code"], -32602);
    assert!(wrong["error"]["message"].as_str().unwrap().contains("tenant"));
    let rest = app
        .client
        .get(format!("{}/a2a/evil/tasks", app.url))
        .header("Authorization", "Bearer tok-alice")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 400);
    let own = app
        .client
        .get(format!("{}/a2a/acme/tasks", app.url))
        .header("Authorization", "Bearer tok-alice")
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);
}

#[actix_web::test]
async fn the_extended_card_is_for_authenticated_callers_and_has_runtime_details() {
    let app = spawn_app(|c| {
        c.auth = auth_config();
        c.extended_card = true;
        c.limits.max_running_turns = 7;
    })
    .await;
    let public = app.card().await;
    assert_eq!(public["capabilities"]["extendedAgentCard"], true);
    let (status, _) = rpc_as(&app, &[], "GetExtendedAgentCard", json!({})).await;
    assert_eq!(status, 401);
    let alice = bearer("tok-alice");
    let (_, extended) = rpc_as(&app, &[(alice.0, alice.1.as_str())], "GetExtendedAgentCard", json!({})).await;
    let card = &extended["result"];
    assert_eq!(card["name"], public["name"]);
    let runtime = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == "urn:a2ad:runtime:v1")
        .unwrap_or_else(|| panic!("no runtime extension: {card}"));
    assert_eq!(runtime["params"]["limits"]["maxRunningTurns"], 7);
    assert_eq!(runtime["params"]["agents"][0]["id"], "echo");
    let rest = app
        .client
        .get(format!("{}/a2a/extendedAgentCard", app.url))
        .header("Authorization", "Bearer tok-alice")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 200);
    let mut grpc = a2a_pb::proto::a2a_service_client::A2aServiceClient::connect(app.grpc_url.clone()).await.unwrap();
    let mut request = tonic::Request::new(a2a_pb::proto::GetExtendedAgentCardRequest::default());
    request.metadata_mut().insert("authorization", "Bearer tok-alice".parse().unwrap());
    let over_grpc = grpc.get_extended_agent_card(request).await.unwrap().into_inner();
    assert!(over_grpc.capabilities.unwrap().extensions.iter().any(|e| e.uri == "urn:a2ad:runtime:v1"));
    // Like the public card, a strict 1.0 card by default.
    crate::card::assert_pure_1_0(card);
    assert_eq!(runtime["params"]["features"]["streaming"], true);
}

#[actix_web::test]
async fn the_extended_card_follows_card_compat_v03_and_streaming() {
    let app = spawn_app(|c| {
        c.auth = auth_config();
        c.extended_card = true;
        c.card.compat_v03 = true;
        c.streaming = false;
    })
    .await;
    let alice = bearer("tok-alice");
    let (_, extended) = rpc_as(&app, &[(alice.0, alice.1.as_str())], "GetExtendedAgentCard", json!({})).await;
    let card = &extended["result"];
    assert_eq!(card["protocolVersion"], "0.3.0", "{card}");
    assert_eq!(card["supportsAuthenticatedExtendedCard"], true);
    assert_eq!(card["securitySchemes"]["bearerAuth"]["type"], "http");
    assert!(card["supportedInterfaces"].as_array().unwrap().iter().any(|i| i["protocolVersion"] == "0.3"));
    assert_eq!(card["capabilities"]["streaming"], false);
    let runtime =
        card["capabilities"]["extensions"].as_array().unwrap().iter().find(|e| e["uri"] == "urn:a2ad:runtime:v1");
    assert_eq!(runtime.unwrap()["params"]["features"]["streaming"], false);
}

#[actix_web::test]
async fn an_extended_card_without_authentication_stops_start_up() {
    let mut config = a2ad::config::Config::default_node();
    config.extended_card = true;
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.grpc_listen = None;
    config.data_dir = tempfile::tempdir().unwrap().keep();
    let error = a2ad::startup::Application::build(config).await.err().expect("refused");
    assert!(error.to_string().contains("extended-card"), "{error}");
}

#[actix_web::test]
async fn owners_using_the_same_context_id_get_separate_contexts() {
    let app = spawn_app(|c| {
        c.auth = auth_config();
        c.agents = vec![crate::support::echo_agent(
            "chat",
            a2ad_protocol::TaskState::InputRequired,
            0,
            std::time::Duration::ZERO,
        )];
    })
    .await;
    for token in ["tok-alice", "tok-eve"] {
        let who = bearer(token);
        let (_, body) =
            rpc_as(&app, &[(who.0, who.1.as_str())], "SendMessage", send_params("hi", json!({"contextId": "shared"})))
                .await;
        let task = &body["result"]["task"];
        assert_eq!(task["contextId"], "shared");
        assert_eq!(
            task["status"]["message"]["metadata"]["echo"]["sessionMessages"], 0,
            "{token} starts a fresh session: no one else's history"
        );
    }
    let stats = app.probe.stats().await.unwrap();
    assert_eq!(stats.live_contexts, 2, "one context actor per owner");
}
