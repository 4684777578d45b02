//! The gRPC binding, with a real tonic client (`a2a-pb`'s generated client).

use crate::support::{slow_echo, spawn_app, TestApp};
use a2a_pb::proto::{self, a2a_service_client::A2aServiceClient, part, stream_response};
use serde_json::json;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Request};
use tonic_types::StatusExt;

async fn client(app: &TestApp) -> A2aServiceClient<Channel> {
    A2aServiceClient::connect(app.grpc_url.clone()).await.expect("gRPC connects")
}

fn text_message(text: &str) -> proto::Message {
    proto::Message {
        message_id: a2ad_protocol::ids::new_id(),
        role: proto::Role::User as i32,
        parts: vec![proto::Part { content: Some(part::Content::Text(text.into())), ..Default::default() }],
        ..Default::default()
    }
}

fn send(text: &str, return_immediately: bool) -> proto::SendMessageRequest {
    proto::SendMessageRequest {
        message: Some(text_message(text)),
        configuration: Some(proto::SendMessageConfiguration { return_immediately, ..Default::default() }),
        ..Default::default()
    }
}

fn task_of(response: proto::SendMessageResponse) -> proto::Task {
    match response.payload {
        Some(proto::send_message_response::Payload::Task(task)) => task,
        other => panic!("not a task: {other:?}"),
    }
}

fn state(task: &proto::Task) -> proto::TaskState {
    proto::TaskState::try_from(task.status.as_ref().unwrap().state).unwrap()
}

/// The ErrorInfo reason of a failed call.
fn reason(status: &tonic::Status) -> String {
    status.get_error_details().error_info().map(|i| i.reason.clone()).unwrap_or_default()
}

#[actix_web::test]
async fn unary_calls_match_the_json_rpc_view() {
    let app = spawn_app(|_| {}).await;
    let mut grpc = client(&app).await;
    let task = task_of(grpc.send_message(send("hello over grpc", false)).await.unwrap().into_inner());
    assert_eq!(state(&task), proto::TaskState::Completed);
    assert!(matches!(&task.artifacts[0].parts[0].content, Some(part::Content::Text(t)) if t == "hello over grpc"));

    let via_jsonrpc = app.ok("GetTask", json!({"id": task.id})).await;
    let got = grpc
        .get_task(proto::GetTaskRequest { id: task.id.clone(), history_length: Some(1), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.history.len(), 1);
    assert_eq!(via_jsonrpc["id"], task.id);
    assert_eq!(via_jsonrpc["contextId"], task.context_id);
    assert_eq!(via_jsonrpc["status"]["timestamp"].as_str().unwrap().len(), 24);

    let listed = grpc
        .list_tasks(proto::ListTasksRequest { page_size: Some(10), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((listed.total_size, listed.tasks.len(), listed.next_page_token.as_str()), (1, 1, ""));
}

#[actix_web::test]
async fn streams_and_cancel_over_grpc() {
    let app = spawn_app(slow_echo(Duration::from_millis(5))).await;
    let mut grpc = client(&app).await;
    let mut stream = grpc.send_streaming_message(send("abc", false)).await.unwrap().into_inner();
    let mut kinds = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        kinds.push(match event.payload.unwrap() {
            stream_response::Payload::Task(_) => "task",
            stream_response::Payload::Message(_) => "message",
            stream_response::Payload::StatusUpdate(_) => "status",
            stream_response::Payload::ArtifactUpdate(_) => "artifact",
        });
    }
    assert_eq!(kinds, ["task", "status", "artifact", "status", "artifact", "status", "artifact", "status"]);

    let running = task_of(grpc.send_message(send(&"x".repeat(300), true)).await.unwrap().into_inner());
    let mut watch = grpc
        .subscribe_to_task(proto::SubscribeToTaskRequest { id: running.id.clone(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert!(matches!(first.payload, Some(stream_response::Payload::Task(_))));
    // Cancel over JSON-RPC: the gRPC stream sees it.
    app.ok("CancelTask", json!({"id": running.id})).await;
    let mut last = None;
    while let Some(event) = watch.message().await.unwrap() {
        last = Some(event);
    }
    match last.unwrap().payload.unwrap() {
        stream_response::Payload::StatusUpdate(update) => {
            assert_eq!(update.status.unwrap().state, proto::TaskState::Canceled as i32)
        }
        other => panic!("{other:?}"),
    }
    let again = grpc.cancel_task(proto::CancelTaskRequest { id: running.id, ..Default::default() }).await.unwrap_err();
    assert_eq!((again.code(), reason(&again).as_str()), (Code::FailedPrecondition, "TASK_NOT_CANCELABLE"));
}

#[actix_web::test]
async fn a_grpc_subscription_follows_an_interrupted_task_to_its_end() {
    let app = spawn_app(crate::support::asking_agent()).await;
    let mut grpc = client(&app).await;
    let asked = task_of(grpc.send_message(send("hi", false)).await.unwrap().into_inner());
    assert_eq!(state(&asked), proto::TaskState::InputRequired);
    let subscribe = proto::SubscribeToTaskRequest { id: asked.id.clone(), ..Default::default() };
    let mut watch = grpc.subscribe_to_task(subscribe).await.unwrap().into_inner();
    assert!(matches!(watch.message().await.unwrap().unwrap().payload, Some(stream_response::Payload::Task(_))));
    let mut done = text_message("done");
    done.task_id = asked.id.clone();
    let request = proto::SendMessageRequest { message: Some(done), ..Default::default() };
    assert_eq!(state(&task_of(grpc.send_message(request).await.unwrap().into_inner())), proto::TaskState::Completed);
    let mut states = Vec::new();
    while let Some(event) = watch.message().await.unwrap() {
        if let Some(stream_response::Payload::StatusUpdate(update)) = event.payload {
            states.push(proto::TaskState::try_from(update.status.unwrap().state).unwrap());
        }
    }
    use proto::TaskState::{Completed, Working};
    assert_eq!(states, [Working, Working, Completed], "the next turn, then the end of the stream");
}

#[actix_web::test]
async fn grpc_errors_follow_the_table() {
    let app = spawn_app(|_| {}).await;
    let mut grpc = client(&app).await;
    let missing =
        grpc.get_task(proto::GetTaskRequest { id: "missing".into(), ..Default::default() }).await.unwrap_err();
    assert_eq!((missing.code(), reason(&missing).as_str()), (Code::NotFound, "TASK_NOT_FOUND"));
    let error_info = missing.get_error_details().error_info().cloned().unwrap();
    assert_eq!(error_info.domain, "a2a-protocol.org");

    let mut bad_id = send("x", false);
    bad_id.message.as_mut().unwrap().context_id = "bad/ctx".into();
    let invalid = grpc.send_message(bad_id).await.unwrap_err();
    assert_eq!((invalid.code(), reason(&invalid).as_str()), (Code::InvalidArgument, "INVALID_PARAMS"));
    assert!(invalid.message().contains("message.contextId"), "{}", invalid.message());

    let push = grpc
        .create_task_push_notification_config(proto::TaskPushNotificationConfig {
            task_id: "t".into(),
            url: "https://example.com".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!((push.code(), reason(&push).as_str()), (Code::FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED"));
    let card = grpc.get_extended_agent_card(proto::GetExtendedAgentCardRequest::default()).await.unwrap_err();
    assert_eq!(reason(&card), "UNSUPPORTED_OPERATION");

    let mut versioned = Request::new(proto::ListTasksRequest::default());
    versioned.metadata_mut().insert("a2a-version", "99.0".parse().unwrap());
    let version = grpc.list_tasks(versioned).await.unwrap_err();
    assert_eq!((version.code(), reason(&version).as_str()), (Code::FailedPrecondition, "VERSION_NOT_SUPPORTED"));
    let mut ok = Request::new(proto::ListTasksRequest::default());
    ok.metadata_mut().insert("a2a-version", "1.0".parse().unwrap());
    assert!(grpc.list_tasks(ok).await.is_ok());
    let bad_size =
        grpc.list_tasks(proto::ListTasksRequest { page_size: Some(500), ..Default::default() }).await.unwrap_err();
    assert_eq!(bad_size.code(), Code::InvalidArgument);
}

#[actix_web::test]
async fn the_card_lists_grpc_third_as_host_and_port() {
    let app = spawn_app(|_| {}).await;
    let card = app.card().await;
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let bindings: Vec<&str> = interfaces.iter().map(|i| i["protocolBinding"].as_str().unwrap()).collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    assert_eq!(interfaces[2]["url"], app.grpc_url.trim_start_matches("http://"));
    assert!(interfaces.iter().all(|i| i["protocolVersion"] == "1.0"));
}

#[actix_web::test]
async fn push_config_crud_over_grpc() {
    let app = spawn_app(|c| {
        c.push.enabled = true;
        c.push.allow = vec!["127.0.0.1/32".into()];
    })
    .await;
    let mut grpc = client(&app).await;
    let task = task_of(grpc.send_message(send("x", false)).await.unwrap().into_inner());
    let config = proto::TaskPushNotificationConfig {
        task_id: task.id.clone(),
        url: "http://127.0.0.1:9/hook".into(),
        token: "tok".into(),
        ..Default::default()
    };
    let created = grpc.create_task_push_notification_config(config).await.unwrap().into_inner();
    assert!(!created.id.is_empty(), "an id is assigned");
    let reference = proto::GetTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: created.id.clone(),
        ..Default::default()
    };
    let got = grpc.get_task_push_notification_config(reference).await.unwrap().into_inner();
    assert_eq!(got, created);
    let listed = grpc
        .list_task_push_notification_configs(proto::ListTaskPushNotificationConfigsRequest {
            task_id: task.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.configs, vec![created.clone()]);
    let delete = proto::DeleteTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: created.id.clone(),
        ..Default::default()
    };
    grpc.delete_task_push_notification_config(delete.clone()).await.unwrap();
    grpc.delete_task_push_notification_config(delete).await.unwrap();
    let bad =
        proto::TaskPushNotificationConfig { task_id: task.id, url: "http://192.168.1.1/".into(), ..Default::default() };
    let refused = grpc.create_task_push_notification_config(bad).await.unwrap_err();
    assert_eq!((refused.code(), reason(&refused).as_str()), (Code::InvalidArgument, "INVALID_PARAMS"));
}
