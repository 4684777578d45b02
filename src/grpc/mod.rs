//! The gRPC binding: `lf.a2a.v1.A2AService` with tonic, on a port of its own (actix-web
//! cannot send HTTP/2 trailers), using the official generated types (`a2a-pb`).
//!
//! Like the other bindings it only decodes, calls [`crate::core::Core::execute`] and
//! encodes. Messages cross over through ProtoJSON: a request is re-read as the ProtoJSON
//! twin type of `a2a-pb` and handed to the core as JSON (the same path as JSON-RPC), and
//! results go back the same way, so the three bindings cannot drift apart.

mod convert;
mod incoming;
mod refusals;
mod service;

use crate::core::Core;
use a2a_pb::proto::a2a_service_server::A2aServiceServer;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// How the gRPC server bounds what clients may hold.
#[derive(Debug, Clone, Copy)]
pub struct GrpcSettings {
    /// Runtime worker threads.
    pub threads: usize,
    /// The largest request message (`limits.grpc-message-limit`).
    pub message_limit: usize,
    /// Connections open at once (`max-connections`).
    pub max_connections: usize,
    /// How streams whose client does not read are dropped.
    pub stream_bounds: crate::connection::StreamBounds,
}

/// A running gRPC server. Stops when [`GrpcServer::stop`] is called or it is dropped.
pub struct GrpcServer {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl GrpcServer {
    /// Serves on `listener` (bound by start-up with the other listeners, so that a taken
    /// port stops start-up before anything runs) on a thread of its own, as `settings` say.
    pub fn start(
        core: Arc<Core>,
        listener: std::net::TcpListener,
        settings: GrpcSettings,
    ) -> std::io::Result<GrpcServer> {
        let GrpcSettings { threads, message_limit, max_connections, stream_bounds } = settings;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("a2ad-grpc")
            .enable_all()
            .build()?;
        let (shutdown, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("a2ad-grpc".into()).spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(e) => return tracing::error!(error = %e, "gRPC listener failed"),
                };
                let incoming = incoming::incoming(listener, max_connections);
                let service = A2aServiceServer::new(service::A2aGrpc::new(core, stream_bounds))
                    .max_decoding_message_size(message_limit);
                let service = refusals::TableStatuses::new(service, message_limit);
                let served = tonic::transport::Server::builder()
                    .add_service(service)
                    .serve_with_incoming_shutdown(incoming, async {
                        let _ = stopped.await;
                    })
                    .await;
                if let Err(e) = served {
                    tracing::error!(error = %e, "gRPC server failed");
                }
            });
        })?;
        Ok(GrpcServer { addr, shutdown: Some(shutdown), thread: Some(thread) })
    }

    /// The address it is bound on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, ends the server and waits for its thread. Blocks.
    pub fn stop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}
