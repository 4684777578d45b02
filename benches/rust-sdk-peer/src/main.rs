//! The official Rust A2A SDK (`a2a-server-lf`) serving an echo agent from its in-memory
//! task store, as the load driver's peer of a2ad (`benches/load`, BENCHMARKS.md).
//!
//! The agent does what a2ad's `echo` agent does for one `SendMessage`: the SDK's default
//! handler stores a SUBMITTED task whose history holds the user's message, then the agent
//! adds an `echo` artifact with the user's parts and completes the task with an agent
//! message repeating them. JSON-RPC on `/` of 127.0.0.1:0, on one tokio thread (the
//! driver also pins the process to one core); the first stdout line names the URL, in
//! the form the driver parses for a2ad (`listening on http://127.0.0.1:PORT`).

use a2a::{
    A2AError, Artifact, Message, Role, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use axum::serve::ListenerExt;
use futures::stream::{self, BoxStream};
use std::io::Write;
use std::sync::Arc;

/// Echoes the user's parts as an artifact and as the completing status message.
struct EchoAgent;

impl AgentExecutor for EchoAgent {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let parts = ctx.message.map(|m| m.parts).unwrap_or_default();
        let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            artifact: Artifact {
                artifact_id: "echo".into(),
                name: Some("echo".into()),
                description: None,
                parts: parts.clone(),
                metadata: None,
                extensions: None,
            },
            append: Some(false),
            last_chunk: Some(true),
            metadata: None,
        });
        let mut reply = Message::new(Role::Agent, parts);
        reply.context_id = Some(ctx.context_id.clone());
        reply.task_id = Some(ctx.task_id.clone());
        let completed = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: ctx.task_id,
            context_id: ctx.context_id,
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(reply),
                timestamp: Some(chrono::Utc::now()),
            },
            metadata: None,
        });
        Box::pin(stream::iter([Ok(artifact), Ok(completed)]))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let canceled = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: ctx.task_id,
            context_id: ctx.context_id,
            status: TaskStatus { state: TaskState::Canceled, message: None, timestamp: Some(chrono::Utc::now()) },
            metadata: None,
        });
        Box::pin(stream::iter([Ok(canceled)]))
    }
}

fn main() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let handler = Arc::new(DefaultRequestHandler::new(EchoAgent, InMemoryTaskStore::new()));
        let router = a2a_server::jsonrpc::jsonrpc_router(handler);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("rust-sdk-peer (a2a-server-lf 0.5.3) listening on http://{}", listener.local_addr()?);
        std::io::stdout().flush()?;
        // TCP_NODELAY, as a2ad sets on its HTTP connections.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router).await
    })
}
