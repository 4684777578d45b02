//! `A2A-Extensions`: a required extension must be activated; activated ones are echoed.

use crate::support::{spawn_app, TestApp};
use a2ad::config::ExtensionConfig;
use serde_json::{json, Value};

const REQUIRED: &str = "urn:a2ad:test-required:v1";

async fn app() -> TestApp {
    spawn_app(|c| {
        c.extensions = vec![
            ExtensionConfig {
                uri: REQUIRED.into(),
                description: Some("must be on".into()),
                required: true,
                params: None,
            },
            ExtensionConfig {
                uri: "urn:a2ad:test-optional:v1".into(),
                description: None,
                required: false,
                params: None,
            },
        ]
    })
    .await
}

async fn list(app: &TestApp, header: Option<(&str, &str)>) -> (Value, Option<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let mut request = app.client.post(&app.url).json(&body);
    if let Some((name, value)) = header {
        request = request.header(name, value);
    }
    let response = request.send().await.unwrap();
    let echoed = response.headers().get("a2a-extensions").map(|v| v.to_str().unwrap().to_owned());
    (response.json().await.unwrap(), echoed)
}

#[actix_web::test]
async fn a_required_extension_must_be_activated_and_activated_ones_are_echoed() {
    let app = app().await;
    let (refused, _) = list(&app, None).await;
    assert_eq!(refused["error"]["code"], -32008);
    assert_eq!(refused["error"]["data"][0]["reason"], "EXTENSION_SUPPORT_REQUIRED");
    assert!(refused["error"]["message"].as_str().unwrap().contains(REQUIRED));

    let header = format!("{REQUIRED}, urn:someone-else:v1, urn:a2ad:test-optional:v1");
    let (ok, echoed) = list(&app, Some(("A2A-Extensions", &header))).await;
    assert!(ok.get("result").is_some(), "{ok}");
    assert_eq!(echoed.as_deref(), Some("urn:a2ad:test-required:v1, urn:a2ad:test-optional:v1"), "only supported ones");
    let (legacy, _) = list(&app, Some(("X-A2A-Extensions", REQUIRED))).await;
    assert!(legacy.get("result").is_some(), "the 0.3 header works too");

    let rest = app.client.get(format!("{}/a2a/tasks", app.url)).send().await.unwrap();
    assert_eq!(rest.status(), 400);
    let rest =
        app.client.get(format!("{}/a2a/tasks", app.url)).header("A2A-Extensions", REQUIRED).send().await.unwrap();
    assert_eq!(rest.status(), 200);
    assert_eq!(rest.headers()["a2a-extensions"], REQUIRED);
}

#[actix_web::test]
async fn the_card_announces_the_extensions() {
    let app = app().await;
    let card = app.card().await;
    let extensions = card["capabilities"]["extensions"].as_array().unwrap();
    assert_eq!(extensions[0]["uri"], REQUIRED);
    assert_eq!(extensions[0]["required"], true);
    assert_eq!(extensions[1]["uri"], "urn:a2ad:test-optional:v1");
}

#[actix_web::test]
async fn grpc_metadata_behaves_like_the_header() {
    let app = app().await;
    let mut grpc = a2a_pb::proto::a2a_service_client::A2aServiceClient::connect(app.grpc_url.clone()).await.unwrap();
    let refused = grpc.list_tasks(a2a_pb::proto::ListTasksRequest::default()).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    let mut request = tonic::Request::new(a2a_pb::proto::ListTasksRequest::default());
    request.metadata_mut().insert("a2a-extensions", REQUIRED.parse().unwrap());
    let response = grpc.list_tasks(request).await.unwrap();
    assert_eq!(response.metadata().get("a2a-extensions").unwrap().to_str().unwrap(), REQUIRED);
}
