//! `lf.a2a.v1.A2AService`: each RPC decodes its message, runs the core, encodes.

use super::convert::{from_json, to_json, to_status};
use crate::auth::RequestCredentials;
use crate::core::{version, Call, Core, Reply};
use a2a_pb::{proto, protojson};
use a2ad_actors::messages::Subscription;
use a2ad_protocol::{A2aError, Method};
use futures_util::stream::{BoxStream, StreamExt};
use prost::Message;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct A2aGrpc {
    core: Arc<Core>,
    /// How streams whose client does not read are dropped.
    stream_bounds: crate::connection::StreamBounds,
}

impl A2aGrpc {
    pub fn new(core: Arc<Core>, stream_bounds: crate::connection::StreamBounds) -> Self {
        A2aGrpc { core, stream_bounds }
    }

    /// Decodes `request` as the 1.0 `method` and runs it, counting it in the metrics.
    async fn run<P, J>(&self, method: Method, request: Request<P>) -> Result<(Reply, Vec<String>), Status>
    where
        P: Message,
        J: Message + Default + Serialize,
    {
        let started = std::time::Instant::now();
        let result = self.decode_and_run::<P, J>(method, request).await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(status) => status_reason(status),
        };
        self.core.metrics().record(crate::metrics::Binding::Grpc, method.name(), outcome, started.elapsed());
        result
    }

    async fn decode_and_run<P, J>(&self, method: Method, request: Request<P>) -> Result<(Reply, Vec<String>), Status>
    where
        P: Message,
        J: Message + Default + Serialize,
    {
        let metadata = |name: &str| request.metadata().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let credentials = RequestCredentials {
            authorization: metadata("authorization"),
            api_key: metadata("x-api-key"),
            platform_user_id: metadata("x-platform-user-id"),
        };
        let peer = request.extensions().get::<super::incoming::GrpcConnInfo>().and_then(|c| c.peer);
        let client = crate::auth::ClientAddr::peer(peer.or_else(|| request.remote_addr()));
        let owner = self.core.authenticate(&credentials, client).await.map_err(|e| match e.rate_limited() {
            Some(limited) => to_status(limited),
            None => Status::unauthenticated("Unauthorized"),
        })?;
        let extensions = request.metadata().get_all("a2a-extensions").iter().filter_map(|v| v.to_str().ok());
        let activated =
            self.core.activate_extensions(&crate::core::extensions::parse(extensions)).map_err(to_status)?;
        let requested = request.metadata().get("a2a-version").map(|v| v.to_str().unwrap_or("?").to_owned());
        version::check(requested.as_deref()).map_err(to_status)?;
        let params = to_json::<P, J>(request.get_ref())?;
        let value = request.metadata().get("last-event-id").map(|v| v.to_str().unwrap_or("?"));
        let last_event_id = crate::core::parse_last_event_id("last-event-id", value).map_err(to_status)?;
        let call = Call::decode(method, params, last_event_id).map_err(to_status)?;
        let reply = self.core.execute(&owner, call).await.map_err(to_status)?;
        Ok((reply, activated))
    }

    /// A unary RPC whose result is the twin `JR` of the prost response `PR`.
    async fn unary<P, J, JR, PR>(&self, method: Method, request: Request<P>) -> Result<Response<PR>, Status>
    where
        P: Message,
        J: Message + Default + Serialize,
        JR: Message + DeserializeOwned,
        PR: Message + Default,
    {
        match self.run::<P, J>(method, request).await? {
            (Reply::Result(body), activated) => {
                let value =
                    serde_json::to_value(&*body).map_err(|e| to_status(A2aError::internal(format!("result: {e}"))))?;
                Ok(with_extensions(Response::new(from_json::<JR, PR>(value)?), &activated))
            }
            (Reply::Stream(_), _) => Err(to_status(A2aError::internal("a unary method streamed"))),
        }
    }

    /// A server-streaming RPC.
    async fn streaming<P, J>(&self, method: Method, request: Request<P>) -> Result<Response<EventStream>, Status>
    where
        P: Message,
        J: Message + Default + Serialize,
    {
        let socket = request.extensions().get::<super::incoming::GrpcConnInfo>().map(|c| Arc::clone(&c.socket));
        match self.run::<P, J>(method, request).await? {
            (Reply::Stream(subscription), activated) => {
                let open = self.core.metrics().open_stream();
                let stalled = tokio_util::sync::CancellationToken::new();
                let events = event_stream(subscription, open, stalled.clone().cancelled_owned());
                let events = crate::connection::watch(events, socket, self.stream_bounds, stalled).boxed();
                Ok(with_extensions(Response::new(events), &activated))
            }
            (Reply::Result(_), _) => Err(to_status(A2aError::internal("a streaming method answered once"))),
        }
    }
}

/// The ErrorInfo reason of a refusal, for the metrics (`UNAUTHENTICATED` and the like
/// when there is none: those come from tonic or the authenticator).
fn status_reason(status: &Status) -> &'static str {
    use tonic_types::StatusExt;
    match status.get_details_error_info() {
        Some(info) => crate::metrics::reason_label(&info.reason),
        None if status.code() == tonic::Code::Unauthenticated => "UNAUTHENTICATED",
        None => "UNKNOWN",
    }
}

/// Echoes the activated extensions in the response metadata.
fn with_extensions<T>(mut response: Response<T>, activated: &[String]) -> Response<T> {
    if let Ok(value) = activated.join(", ").parse() {
        if !activated.is_empty() {
            response.metadata_mut().insert("a2a-extensions", value);
        }
    }
    response
}

/// The events of a subscription as `StreamResponse` messages; a subscriber that fell
/// behind gets a final RESOURCE_EXHAUSTED status naming the last event it received.
type EventStream = BoxStream<'static, Result<proto::StreamResponse, Status>>;

/// `open` keeps the stream counted as open until the stream is dropped. Once `stalled`
/// resolves (the client stopped taking events, see [`crate::connection`]), the stream
/// ends as a subscriber that fell behind does, with the last event it delivered.
fn event_stream(
    sub: Subscription,
    open: crate::metrics::StreamGuard,
    stalled: impl std::future::Future<Output = ()> + Send + 'static,
) -> EventStream {
    sub.into_items_until(stalled)
        .map(move |item| {
            let _open = &open;
            let event = item.map_err(to_status)?;
            let value: serde_json::Value = serde_json::from_str(&event.json)
                .map_err(|e| to_status(A2aError::internal(format!("stored event: {e}"))))?;
            from_json::<protojson::StreamResponse, proto::StreamResponse>(value)
        })
        .boxed()
}

#[tonic::async_trait]
impl proto::a2a_service_server::A2aService for A2aGrpc {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        self.unary::<_, protojson::SendMessageRequest, protojson::SendMessageResponse, _>(Method::SendMessage, request)
            .await
    }

    type SendStreamingMessageStream = EventStream;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<EventStream>, Status> {
        self.streaming::<_, protojson::SendMessageRequest>(Method::SendStreamingMessage, request).await
    }

    async fn get_task(&self, request: Request<proto::GetTaskRequest>) -> Result<Response<proto::Task>, Status> {
        self.unary::<_, protojson::GetTaskRequest, protojson::Task, _>(Method::GetTask, request).await
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        self.unary::<_, protojson::ListTasksRequest, protojson::ListTasksResponse, _>(Method::ListTasks, request).await
    }

    async fn cancel_task(&self, request: Request<proto::CancelTaskRequest>) -> Result<Response<proto::Task>, Status> {
        self.unary::<_, protojson::CancelTaskRequest, protojson::Task, _>(Method::CancelTask, request).await
    }

    type SubscribeToTaskStream = EventStream;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<EventStream>, Status> {
        self.streaming::<_, protojson::SubscribeToTaskRequest>(Method::SubscribeToTask, request).await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary::<_, protojson::TaskPushNotificationConfig, protojson::TaskPushNotificationConfig, _>(
            Method::CreateTaskPushNotificationConfig,
            request,
        )
        .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary::<_, protojson::GetTaskPushNotificationConfigRequest, protojson::TaskPushNotificationConfig, _>(
            Method::GetTaskPushNotificationConfig,
            request,
        )
        .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary::<
            _,
            protojson::ListTaskPushNotificationConfigsRequest,
            protojson::ListTaskPushNotificationConfigsResponse,
            _,
        >(Method::ListTaskPushNotificationConfigs, request)
        .await
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        self.unary::<_, protojson::GetExtendedAgentCardRequest, protojson::AgentCard, _>(
            Method::GetExtendedAgentCard,
            request,
        )
        .await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        match self
            .run::<_, protojson::DeleteTaskPushNotificationConfigRequest>(
                Method::DeleteTaskPushNotificationConfig,
                request,
            )
            .await?
        {
            (Reply::Result(_), activated) => Ok(with_extensions(Response::new(()), &activated)),
            (Reply::Stream(_), _) => Err(to_status(A2aError::internal("a unary method streamed"))),
        }
    }
}
