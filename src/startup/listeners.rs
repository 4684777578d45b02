//! Every listener of `a2ad serve`, bound before the node starts: a taken port or a wrong
//! socket path stops start-up before the data dir is created or a thread is started, so
//! there is nothing to undo.

use super::StartupError;
use crate::config::Config;
use crate::core::Core;
use crate::grpc::{GrpcServer, GrpcSettings};
use crate::os_error::io_cause;
use crate::transports::unix::SocketFile;
use a2ad_node::admin::AdminListen;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::sync::Arc;

/// The bound sockets, not yet served.
pub(super) struct Listeners {
    pub http: TcpListener,
    /// The HTTP address bound (the port when `listen` asked for port 0).
    pub http_addr: SocketAddr,
    pub grpc: Option<(TcpListener, SocketAddr)>,
    pub unix: Option<(UnixListener, SocketFile)>,
    /// The admin API's own listener (`admin.listen: <address>`).
    pub admin: Option<(TcpListener, SocketAddr)>,
    /// `listen` is a wildcard address (`0.0.0.0`, `[::]`) and no `public-url` is set:
    /// the card advertises the address each request came to, never the wildcard.
    pub card_per_address: bool,
}

impl Listeners {
    /// Binds `listen`, `grpc-listen` and `listen-unix`, in that order; a failure names the
    /// key, the address and the cause.
    pub(super) fn bind(config: &Config) -> Result<Listeners, StartupError> {
        let (http, http_addr) = bind_tcp("listen", config.listen)?;
        let grpc = config.grpc_listen.map(|addr| bind_tcp("grpc-listen", addr)).transpose()?;
        let admin = match config.admin.listen {
            AdminListen::Address(addr) if config.admin.enabled() => Some(bind_tcp("admin.listen", addr)?),
            _ => None,
        };
        // Last: a socket file is the one thing a failure after it would have to remove.
        let unix = match &config.listen_unix {
            Some(path) => Some(crate::transports::unix::bind(path, config.listen_unix_mode)?),
            None => None,
        };
        let card_per_address = config.public_url.is_none() && http_addr.ip().is_unspecified();
        Ok(Listeners { http, http_addr, grpc, unix, admin, card_per_address })
    }
}

/// Binds a TCP listener for the config key `key`. Nagle is turned off per accepted
/// connection by the server that takes the listener (HTTP: `tcp_nodelay`, gRPC: its
/// accept loop, `grpc/incoming.rs`).
fn bind_tcp(key: &'static str, addr: SocketAddr) -> Result<(TcpListener, SocketAddr), StartupError> {
    let error = |e: std::io::Error| StartupError::Bind { key, addr: addr.to_string(), cause: io_cause(&e) };
    let listener = TcpListener::bind(addr).map_err(error)?;
    let local = listener.local_addr().map_err(error)?;
    Ok((listener, local))
}

/// Starts the gRPC server on its bound listener (`grpc-listen`).
pub(super) fn serve_grpc(
    config: &Config,
    core: &Arc<Core>,
    workers: usize,
    (listener, addr): (TcpListener, SocketAddr),
) -> Result<GrpcServer, StartupError> {
    let settings = GrpcSettings {
        threads: workers,
        message_limit: config.limits.grpc_message_limit.unwrap_or(config.body_limit),
        max_connections: config.max_connections,
        stream_bounds: super::stream_bounds(config),
    };
    GrpcServer::start(Arc::clone(core), listener, settings).map_err(|e| StartupError::Bind {
        key: "grpc-listen",
        addr: addr.to_string(),
        cause: io_cause(&e),
    })
}

/// Serves the admin API and the console, and nothing else, on their own listener
/// (`admin.listen: <address>`), with the main server's state.
pub(super) fn serve_admin(
    config: &Config,
    state: actix_web::web::Data<crate::http::AppState>,
    (listener, addr): (TcpListener, SocketAddr),
) -> Result<(actix_web::dev::ServerHandle, SocketAddr), StartupError> {
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new().app_data(state.clone()).configure(crate::http::admin::routes)
    })
    .workers(1)
    .max_connections(config.max_connections)
    .disable_signals()
    .shutdown_timeout(1)
    .listen(listener)
    .map_err(|e| StartupError::Bind { key: "admin.listen", addr: addr.to_string(), cause: io_cause(&e) })?;
    let server = server.run();
    let handle = server.handle();
    // It runs as a task of its own; the node stops it through the handle.
    actix_web::rt::spawn(server);
    Ok((handle, addr))
}
