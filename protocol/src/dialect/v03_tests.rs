//! Unit tests of the 0.3 conversions, kept beside `v03.rs` so the dialect stays under the
//! file size limit; each pins one wire shape the 0.3 SDKs depend on.

use super::*;
use crate::{TaskStatus, TaskStatusUpdateEvent};

#[test]
fn send_params_convert_parts_roles_and_blocking() {
    let req = send_request(json!({
        "message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [
            {"kind": "text", "text": "hi"},
            {"kind": "file", "file": {"bytes": "aGk=", "name": "a.bin", "mimeType": "application/octet-stream"}},
            {"kind": "file", "file": {"uri": "https://example.com/a.pdf"}},
            {"kind": "data", "data": {"k": 1}}
        ]},
        "configuration": {"blocking": false, "historyLength": 2,
            "pushNotificationConfig": {"url": "http://127.0.0.1:1/h", "authentication": {"schemes": ["Bearer"], "credentials": "x"}}}
    }))
    .unwrap();
    assert_eq!(req.message.role, crate::Role::User);
    let parts = serde_json::to_value(&req.message.parts).unwrap();
    assert_eq!(parts[0], json!({"text": "hi"}));
    assert_eq!(parts[1], json!({"raw": "aGk=", "filename": "a.bin", "mediaType": "application/octet-stream"}));
    assert_eq!(parts[2], json!({"url": "https://example.com/a.pdf"}));
    assert_eq!(parts[3], json!({"data": {"k": 1}}));
    let config = req.configuration.unwrap();
    assert!(config.return_immediately);
    assert_eq!(config.history_length, Some(2));
    assert_eq!(config.task_push_notification_config.unwrap().authentication.unwrap().scheme, "Bearer");
}

#[test]
fn bad_requests_name_the_field() {
    let e = send_request(json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}})).unwrap_err();
    assert_eq!(e.metadata["field"], "message.role");
    let e =
        send_request(json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "video"}]}})).unwrap_err();
    assert_eq!(e.metadata["field"], "message.parts[0].kind");
    let e = send_request(json!({"message": {"role": "user", "parts": []}})).unwrap_err();
    assert!(e.message.contains("messageId"), "{}", e.message);
    assert_eq!(send_request(json!({})).unwrap_err().metadata["field"], "message");
    assert_eq!(task_id(&json!({"id": ""})).unwrap_err().code, ErrorCode::InvalidParams);
}

#[test]
fn results_carry_kind_lowercase_states_and_final() {
    let mut task = Task {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus::now(TaskState::InputRequired, None),
        artifacts: vec![],
        history: vec![Message::agent_text("m".into(), "c", Some("t"), "hi")],
        metadata: None,
    };
    task.apply_artifact(
        Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part {
                content: PartContent::Data(json!([1])),
                metadata: None,
                filename: None,
                media_type: None,
            }],
            metadata: None,
            extensions: vec![],
        },
        false,
    );
    let v = task_to_v03(&task);
    assert_eq!(v["kind"], "task");
    assert_eq!(v["status"]["state"], "input-required");
    assert!(v["status"]["timestamp"].is_string());
    assert_eq!(v["history"][0]["role"], "agent");
    assert_eq!(v["history"][0]["parts"][0], json!({"kind": "text", "text": "hi"}));
    assert_eq!(v["artifacts"][0]["parts"][0]["data"], json!({"value": [1]}));
    assert_eq!(v["artifacts"][0]["parts"][0]["metadata"]["data_part_compat"], true);
    let update = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus { state: TaskState::Completed, message: None, timestamp: None },
        metadata: None,
    });
    assert_eq!(
        stream_event_to_v03(&update),
        json!({"kind": "status-update", "taskId": "t", "contextId": "c", "status": {"state": "completed"}, "final": true})
    );
}

#[test]
fn wrapped_data_comes_back_unwrapped() {
    let req = send_request(json!({"message": {"messageId": "m", "role": "agent", "parts": [
        {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}}
    ]}}))
    .unwrap();
    assert_eq!(serde_json::to_value(&req.message.parts[0]).unwrap(), json!({"data": [1, 2]}));
}

#[test]
fn push_configs_nest_and_default_their_id_to_the_task() {
    let c = push_config_set(
        json!({"taskId": "t", "pushNotificationConfig": {"url": "http://127.0.0.1:9/h", "token": "k"}}),
    )
    .unwrap();
    assert_eq!((c.task_id.as_deref(), c.id.as_deref()), (Some("t"), Some("t")));
    let v = push_config_to_v03(&c);
    assert_eq!(
        v,
        json!({"taskId": "t", "pushNotificationConfig": {"id": "t", "url": "http://127.0.0.1:9/h", "token": "k"}})
    );
    let r = push_config_ref(json!({"id": "t"})).unwrap();
    assert_eq!((r.task_id.as_str(), r.id.as_str()), ("t", "t"));
    let r = push_config_ref(json!({"id": "t", "pushNotificationConfigId": "p"})).unwrap();
    assert_eq!(r.id, "p");
}

#[test]
fn one_point_o_only_codes_become_internal() {
    assert_eq!(jsonrpc_code(ErrorCode::VersionNotSupported), -32603);
    assert_eq!(jsonrpc_code(ErrorCode::ExtensionSupportRequired), -32603);
    assert_eq!(jsonrpc_code(ErrorCode::TaskNotFound), -32001);
    assert_eq!(jsonrpc_code(ErrorCode::ExtendedAgentCardNotConfigured), -32007);
    let e = error_object(&A2aError::task_not_found("t"));
    assert_eq!(e["data"]["taskId"], "t");
}
