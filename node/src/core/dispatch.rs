//! Every A2A 1.0 method as one value, and its answer: what the bindings share.
//!
//! A binding turns its request into a [`Call`] (JSON-RPC from the method name and
//! `params`, HTTP+JSON from the route, path, query and body, gRPC from the RPC and its
//! message), hands it to [`Core::execute`], and encodes the [`Reply`] its own way. All
//! behaviour lives behind `execute`; no binding decides anything else.

use super::Core;
use a2ad_actors::messages::Subscription;
use a2ad_protocol::jsonrpc::parse_params;
use a2ad_protocol::{
    A2aError, AgentCard, CancelTaskRequest, ErrorCode, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Method, SendMessageRequest,
    SendMessageResponse, SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
use a2ad_storage::Owner;
use serde::Serialize;
use serde_json::Value;

/// One decoded request.
pub enum Call {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    /// With the binding's `Last-Event-ID`, if any.
    SubscribeToTask(SubscribeToTaskRequest, Option<u64>),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(TaskPushNotificationConfigRef),
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(TaskPushNotificationConfigRef),
    /// With the base URL the request came to, on a wildcard listener ([`Call::came_to`]).
    GetExtendedAgentCard(Option<String>),
}

impl Call {
    /// Decodes a call from a 1.0 method name and its params (a JSON object).
    pub fn from_method(method: &str, params: Value, last_event_id: Option<u64>) -> Result<Call, A2aError> {
        let Some(known) = Method::from_name(method) else {
            let shown: String = method.chars().filter(|c| !c.is_control()).take(64).collect();
            return Err(A2aError::new(ErrorCode::MethodNotFound, format!("Method not found: {shown}")));
        };
        Call::decode(known, params, last_event_id)
    }

    /// Decodes the params of `method` (a request message as ProtoJSON: JSON-RPC's
    /// `params`, or what HTTP+JSON gathers from the path, query and body).
    pub fn decode(method: Method, params: Value, last_event_id: Option<u64>) -> Result<Call, A2aError> {
        Ok(match method {
            Method::SendMessage => Call::SendMessage(parse_params(params)?),
            Method::SendStreamingMessage => Call::SendStreamingMessage(parse_params(params)?),
            Method::GetTask => Call::GetTask(parse_params(params)?),
            Method::ListTasks => Call::ListTasks(parse_params(params)?),
            Method::CancelTask => Call::CancelTask(parse_params(params)?),
            Method::SubscribeToTask => Call::SubscribeToTask(parse_params(params)?, last_event_id),
            Method::CreateTaskPushNotificationConfig => Call::CreatePushConfig(parse_params(params)?),
            Method::GetTaskPushNotificationConfig => Call::GetPushConfig(parse_params(params)?),
            Method::ListTaskPushNotificationConfigs => Call::ListPushConfigs(parse_params(params)?),
            Method::DeleteTaskPushNotificationConfig => Call::DeletePushConfig(parse_params(params)?),
            Method::GetExtendedAgentCard => Call::GetExtendedAgentCard(None),
        })
    }

    /// The base URL the request came to (`http://<local address>`), for a binding whose
    /// listener is a wildcard: the extended card then names that address, as the public
    /// card does. Other calls ignore it.
    pub fn came_to(mut self, base: Option<String>) -> Self {
        if let Call::GetExtendedAgentCard(slot) = &mut self {
            *slot = base;
        }
        self
    }
}

impl Call {
    /// The request's `tenant` field, if the client set one.
    fn tenant(&self) -> Option<&str> {
        let tenant = match self {
            Call::SendMessage(r) | Call::SendStreamingMessage(r) => &r.tenant,
            Call::GetTask(r) => &r.tenant,
            Call::ListTasks(r) => &r.tenant,
            Call::CancelTask(r) => &r.tenant,
            Call::SubscribeToTask(r, _) => &r.tenant,
            Call::CreatePushConfig(r) => &r.tenant,
            Call::GetPushConfig(r) | Call::DeletePushConfig(r) => &r.tenant,
            Call::ListPushConfigs(r) => &r.tenant,
            Call::GetExtendedAgentCard(_) => &None,
        };
        tenant.as_deref().filter(|t| !t.is_empty())
    }
}

/// What a call answers: one result, or a stream.
pub enum Reply {
    Result(Box<ReplyBody>),
    Stream(Subscription),
}

/// A single result, serialised as the method's response message.
#[derive(Serialize)]
#[serde(untagged)]
pub enum ReplyBody {
    SendMessage(SendMessageResponse),
    Task(Task),
    ListTasks(ListTasksResponse),
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    /// `google.protobuf.Empty`: `null` over JSON-RPC, `{}` over HTTP+JSON.
    Empty,
    Card(AgentCard),
}

impl Core {
    /// Applies one call. With authentication on, a `tenant` in the request must be the
    /// caller's own.
    pub async fn execute(&self, owner: &Owner, call: Call) -> Result<Reply, A2aError> {
        self.admit(owner)?;
        if !self.streaming && matches!(call, Call::SendStreamingMessage(_) | Call::SubscribeToTask(..)) {
            // Every binding and dialect (0.3 `message/stream`, 0.1 `tasks/sendSubscribe`, …)
            // comes through here, so this one check covers them all.
            return Err(A2aError::unsupported(
                "Streaming is off on this node (capabilities.streaming is false): send with SendMessage \
                 and follow the task with GetTask",
            ));
        }
        if let Some(tenant) = call.tenant().filter(|t| self.auth.enabled() && *t != owner.tenant) {
            let shown: String = tenant.chars().filter(|c| !c.is_control()).take(64).collect();
            return Err(A2aError::invalid_field("tenant", &format!("`{shown}` is not the caller's tenant")));
        }
        let body = match call {
            Call::SendMessage(req) => ReplyBody::SendMessage(self.send_message(owner, req).await?),
            Call::GetTask(req) => ReplyBody::Task(self.get_task(owner, req).await?),
            Call::ListTasks(req) => ReplyBody::ListTasks(self.list_tasks(owner, req).await?),
            Call::CancelTask(req) => ReplyBody::Task(self.cancel_task(owner, req).await?),
            Call::SendStreamingMessage(req) => {
                return Ok(Reply::Stream(self.send_streaming_message(owner, req).await?))
            }
            Call::SubscribeToTask(req, last_event_id) => {
                let subscription = self.subscribe_to_task(owner, req, last_event_id).await?;
                return Ok(Reply::Stream(self.durable_stream(subscription)));
            }
            Call::CreatePushConfig(config) => ReplyBody::PushConfig(self.create_push_config(owner, config).await?),
            Call::GetPushConfig(req) => ReplyBody::PushConfig(self.get_push_config(owner, req).await?),
            Call::ListPushConfigs(req) => ReplyBody::PushConfigs(self.list_push_configs(owner, req).await?),
            Call::DeletePushConfig(req) => {
                self.delete_push_config(owner, req).await?;
                ReplyBody::Empty
            }
            Call::GetExtendedAgentCard(base) => match self.extended_card_at(base.as_deref()) {
                Some(card) => ReplyBody::Card(card),
                None => {
                    return Err(A2aError::unsupported(
                        "This node does not offer an extended agent card (capabilities.extendedAgentCard is false)",
                    ));
                }
            },
        };
        Ok(Reply::Result(Box::new(body)))
    }
}
