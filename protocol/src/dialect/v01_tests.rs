//! Unit tests of the 0.1 conversions, kept beside `v01.rs` so the dialect stays under the
//! file size limit; each pins one wire shape 0.1 clients depend on.

use super::*;
use crate::{Part, TaskStatus};

#[test]
fn capability_form_routes_to_the_skill_and_wraps_the_input() {
    let p = send_request(json!({"capability_id": "echo", "input": {"q": 1}})).unwrap();
    let m = &p.request.message;
    assert_eq!(m.metadata.as_ref().unwrap()["skill"], "echo");
    assert_eq!(m.metadata.as_ref().unwrap()[ORIGIN_KEY], ORIGIN);
    assert_eq!(serde_json::to_value(&m.parts).unwrap(), json!([{"data": {"input": {"q": 1}}}]));
    assert!(p.request.configuration.unwrap().return_immediately);
    assert!(p.task_id.is_none());
}

#[test]
fn session_form_maps_session_to_context_and_keeps_the_id() {
    let p = send_request(json!({"id": "t-1", "sessionId": "s-1", "historyLength": 2,
        "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}, {"type": "data", "data": {"a": 1}}]}}))
    .unwrap();
    assert_eq!(p.task_id.as_deref(), Some("t-1"));
    assert_eq!(p.request.message.context_id.as_deref(), Some("s-1"));
    assert!(!p.request.message.message_id.is_empty());
    assert_eq!(serde_json::to_value(&p.request.message.parts).unwrap(), json!([{"text": "hi"}, {"data": {"a": 1}}]));
    assert_eq!(p.request.configuration.unwrap().history_length, Some(2));
    let p = send_request(
        json!({"capability_id": "echo", "pushNotification": {"url": "http://127.0.0.1:9/h", "token": "t"}}),
    )
    .unwrap();
    let push = p.request.configuration.unwrap().task_push_notification_config.unwrap();
    assert_eq!((push.url.as_str(), push.token.as_deref()), ("http://127.0.0.1:9/h", Some("t")));
    let e = send_request(json!({"capability_id": "echo", "pushNotification": {"token": "t"}})).unwrap_err();
    assert!(e.message.contains("pushNotification"), "{}", e.message);
}

#[test]
fn bad_params_name_the_field() {
    assert_eq!(send_request(json!({"capability_id": 5})).unwrap_err().metadata["field"], "capability_id");
    let e = send_request(json!({"message": {"role": "user", "parts": [{"text": "x"}]}})).unwrap_err();
    assert_eq!(e.metadata["field"], "message.parts[0].type");
    let e = send_request(json!({"message": {"role": "robot", "parts": []}})).unwrap_err();
    assert_eq!(e.metadata["field"], "message.role");
}

#[test]
fn tasks_are_flat_with_lowercase_status_and_typed_parts() {
    let mut task = Task {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus::now(TaskState::Rejected, None),
        artifacts: vec![],
        history: vec![],
        metadata: None,
    };
    task.apply_artifact(
        Artifact {
            artifact_id: "a".into(),
            name: Some("out".into()),
            description: None,
            parts: vec![
                Part::text("hi"),
                Part { content: PartContent::Data(json!([1])), metadata: None, filename: None, media_type: None },
            ],
            metadata: None,
            extensions: vec![],
        },
        false,
    );
    let owner = json!({"tenant": "acme", "principal": "bob"}).as_object().cloned().unwrap();
    let v = task_to_v01(&task, &owner);
    assert_eq!(v["status"], "failed");
    assert_eq!(v["metadata"], json!({"context_id": "c", "tenant": "acme", "principal": "bob"}));
    assert_eq!(
        v["artifacts"],
        json!([{"name": "out", "parts": [{"type": "text", "data": "hi"}, {"type": "data", "data": [1]}]}])
    );
    let sent = send_result(&task);
    assert_eq!((sent["id"].as_str(), sent["status"].as_str()), (Some("t"), Some("failed")));
    assert!(sent["created_at"].is_string());
}

#[test]
fn error_codes() {
    assert_eq!(jsonrpc_code(ErrorCode::TaskNotFound, false), -32001);
    assert_eq!(jsonrpc_code(ErrorCode::TaskNotFound, true), -32004);
    assert_eq!(jsonrpc_code(ErrorCode::RateLimited, false), -32002);
    assert_eq!(jsonrpc_code(ErrorCode::TaskNotCancelable, true), -32003);
    assert_eq!(jsonrpc_code(ErrorCode::VersionNotSupported, false), -32603);
    assert_eq!(jsonrpc_code(ErrorCode::InvalidParams, false), -32602);
    assert_eq!((http_status(ErrorCode::TaskNotFound), http_status(ErrorCode::RateLimited)), (404, 429));
    assert_eq!(http_status(ErrorCode::InvalidParams), 400);
    assert_eq!(authentication_error(&json!(1))["error"]["code"], -32000);
}
