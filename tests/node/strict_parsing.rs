//! Requests that two readers could read two ways, on every binding: a key named twice, a
//! JSON-RPC notification, a body not declared as JSON, a limit's 429, gRPC's codec
//! refusals.

use crate::support::{send_params, slow_echo, spawn_app, TestApp};
use a2a_pb::proto::{self, a2a_service_client::A2aServiceClient};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tonic::Code;
use tonic_types::StatusExt;

/// The smuggling body of the finding: `ListTasks` to whoever keeps the first key,
/// `GetTask` to whoever keeps the last.
const TWO_METHODS: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","method":"GetTask","params":{}}"#;

async fn post_json(app: &TestApp, path: &str, body: &str) -> reqwest::Response {
    app.client
        .post(format!("{}{path}", app.url))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

#[actix_web::test]
async fn a_key_named_twice_is_refused_naming_it_on_every_http_binding() {
    let app = spawn_app(|_| {}).await;
    let rpc: Value = post_json(&app, "/", TWO_METHODS).await.json().await.unwrap();
    assert_eq!(rpc["error"]["code"], -32600, "{rpc}");
    assert_eq!(rpc["error"]["data"][0]["metadata"]["key"], "method");
    assert!(rpc["error"]["message"].as_str().unwrap().contains("`method`"), "{rpc}");

    let message = r#"{"message":{"role":"ROLE_USER","messageId":"m1","messageId":"m2","parts":[{"text":"x"}]}}"#;
    for path in ["/a2a/message:send", "/v1/message:send"] {
        let rest = post_json(&app, path, message).await;
        assert_eq!(rest.status(), 400, "{path}");
        let body: Value = rest.json().await.unwrap();
        assert_eq!(body["error"]["details"][0]["metadata"]["key"], "messageId", "{path}: {body}");
    }
    let listed = app.ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 0, "nothing ran");
}

#[actix_web::test]
async fn a_notification_is_run_and_never_answered_over_http() {
    let app = spawn_app(|_| {}).await;
    let notification = json!({"jsonrpc": "2.0", "method": "SendMessage", "params": send_params("quiet", json!({}))});
    let response = post_json(&app, "/", &notification.to_string()).await;
    assert_eq!(response.status(), 204);
    assert!(response.bytes().await.unwrap().is_empty());
    // Not even an error: an unknown method as a notification is silent too.
    let unknown = post_json(&app, "/", r#"{"jsonrpc":"2.0","method":"NoSuchMethod"}"#).await;
    assert_eq!(unknown.status(), 204);
    // An envelope too broken to tell is answered, with id null, as JSON-RPC says.
    let broken: Value = post_json(&app, "/", r#"{"jsonrpc":"1.0","method":"ListTasks"}"#).await.json().await.unwrap();
    assert_eq!((broken["id"].clone(), broken["error"]["code"].clone()), (Value::Null, json!(-32600)));
    let listed = app.ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 1, "the notification's message was run: {listed}");
}

#[actix_web::test]
async fn bodies_not_declared_as_json_get_415_on_every_http_binding() {
    let app = spawn_app(|_| {}).await;
    let message = json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]}}).to_string();
    let jsonrpc = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("x", json!({}))});
    let cases = [("/", jsonrpc.to_string()), ("/a2a/message:send", message.clone()), ("/v1/message:send", message)];
    for (path, body) in cases {
        for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            let refused = app
                .client
                .post(format!("{}{path}", app.url))
                .header("content-type", content_type)
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(refused.status(), 415, "{path} as {content_type}");
        }
        let untyped = app.client.post(format!("{}{path}", app.url)).body(body.clone()).send().await.unwrap();
        assert_eq!(untyped.status(), 415, "{path} without a type");
        let typed = post_json(&app, path, &body).await;
        assert_eq!(typed.status(), 200, "{path} as JSON");
    }
}

#[actix_web::test]
async fn a_concurrency_limit_is_429_with_retry_after_on_every_binding() {
    let app = spawn_app(|c| {
        slow_echo(Duration::from_millis(40))(c);
        c.limits.max_running_turns = 1;
    })
    .await;
    let long = |ctx: &str| {
        send_params(&"x".repeat(50), json!({"contextId": ctx, "configuration": {"returnImmediately": true}}))
    };
    let first = app.ok("SendMessage", long("c-1")).await;
    let rpc = post_json(
        &app,
        "/",
        &json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": long("c-2")}).to_string(),
    )
    .await;
    assert_eq!(rpc.status(), 429);
    assert_eq!(rpc.headers()["retry-after"], "1");
    assert_eq!(rpc.json::<Value>().await.unwrap()["error"]["code"], -32053);
    let rest = post_json(&app, "/a2a/message:send", &long("c-3").to_string()).await;
    assert_eq!(rest.status(), 429);
    assert_eq!(rest.headers()["retry-after"], "1");
    assert_eq!(rest.json::<Value>().await.unwrap()["error"]["details"][0]["reason"], "LIMIT_EXCEEDED");
    let mut grpc = A2aServiceClient::connect(app.grpc_url.clone()).await.unwrap();
    let message = proto::Message {
        message_id: a2ad_protocol::ids::new_id(),
        role: proto::Role::User as i32,
        parts: vec![proto::Part { content: Some(proto::part::Content::Text("y".into())), ..Default::default() }],
        ..Default::default()
    };
    let refused = grpc
        .send_message(proto::SendMessageRequest { message: Some(message), ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(refused.get_details_error_info().unwrap().reason, "LIMIT_EXCEEDED");
    assert_eq!(refused.metadata().get("retry-after").unwrap(), "1");
    app.ok("CancelTask", json!({"id": first["task"]["id"]})).await;
}

/// Sends raw bytes as a `GetTask` request message: what a broken or hostile client does.
mod raw_grpc {
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
    use tonic::Status;

    #[derive(Default)]
    pub struct Raw;

    pub struct RawCoder;

    impl Encoder for RawCoder {
        type Item = Vec<u8>;
        type Error = Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
            prost::bytes::BufMut::put_slice(dst, &item);
            Ok(())
        }
    }

    impl Decoder for RawCoder {
        type Item = Vec<u8>;
        type Error = Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
            let len = prost::bytes::Buf::remaining(src);
            Ok(Some(prost::bytes::Buf::copy_to_bytes(src, len).to_vec()))
        }
    }

    impl Codec for Raw {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = RawCoder;
        type Decoder = RawCoder;
        fn encoder(&mut self) -> RawCoder {
            RawCoder
        }
        fn decoder(&mut self) -> RawCoder {
            RawCoder
        }
    }

    pub async fn get_task(url: &str, message: Vec<u8>) -> Status {
        let channel = tonic::transport::Channel::from_shared(url.to_owned()).unwrap().connect().await.unwrap();
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap();
        let path = tonic::codegen::http::uri::PathAndQuery::from_static("/lf.a2a.v1.A2AService/GetTask");
        grpc.unary(tonic::Request::new(message), path, Raw).await.unwrap_err()
    }
}

#[actix_web::test]
async fn grpc_codec_refusals_follow_the_error_table_with_error_info() {
    let app = spawn_app(|c| c.limits.grpc_message_limit = Some(2048)).await;
    // Field 1 (`id`, a string) declared 100 bytes long with 2 present: not a message.
    let undecodable = raw_grpc::get_task(&app.grpc_url, vec![0x0a, 100, b'a', b'b']).await;
    assert_eq!(undecodable.code(), Code::InvalidArgument, "{undecodable:?}");
    assert_eq!(undecodable.get_details_error_info().unwrap().reason, "INVALID_REQUEST");
    let mut oversized = vec![0x0a, 0x90, 0x4e]; // field 1, 10_000 bytes
    oversized.extend(vec![b'a'; 10_000]);
    let too_large = raw_grpc::get_task(&app.grpc_url, oversized).await;
    assert_eq!(too_large.code(), Code::ResourceExhausted, "{too_large:?}");
    let info = too_large.get_details_error_info().unwrap();
    assert_eq!((info.reason.as_str(), info.metadata["limitBytes"].as_str()), ("PAYLOAD_TOO_LARGE", "2048"));
}

#[actix_web::test]
async fn websocket_refuses_repeated_keys_and_never_answers_notifications() {
    let app = spawn_app(|c| c.websocket = true).await;
    let url = format!("{}/ws", app.url.replacen("http://", "ws://", 1));
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let notification = json!({"jsonrpc": "2.0", "method": "SendMessage", "params": send_params("quiet", json!({}))});
    ws.send(Message::Text(notification.to_string().into())).await.unwrap();
    ws.send(Message::Text(TWO_METHODS.replace(r#""id":1"#, r#""id":"dup""#).into())).await.unwrap();
    let answer = loop {
        let message = tokio::time::timeout(Duration::from_secs(30), ws.next()).await.expect("an answer in time");
        if let Message::Text(text) = message.unwrap().unwrap() {
            break serde_json::from_str::<Value>(text.as_str()).unwrap();
        }
    };
    // The first (and only) answer is the refusal: the notification got none.
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (Value::Null, json!(-32600)), "{answer}");
    assert_eq!(answer["error"]["data"][0]["metadata"]["key"], "method");
    assert!(
        crate::support::eventually(200, || async { app.ok("ListTasks", json!({})).await["totalSize"] == 1 }).await,
        "the notification's message was run"
    );
}
