//! Building and running a node.

mod failure;
mod listeners;
mod preflight;
mod redis_settings;
mod stores;

pub use preflight::preflight;

use crate::agents::build_registry;
use crate::agents::process_groups::ProcessGroups;
use crate::card::{build_card, CardDocument};
use crate::config::Config;
use crate::core::{Core, CoreParts, RateLimiter};
use crate::grpc::GrpcServer;
use crate::http::admin::AdminSite;
use crate::http::body::BodyPace;
use crate::http::{routes, AppState};
use crate::metrics::Metrics;
use crate::os_error::io_cause;
use crate::push::{PushSetupError, PushStack};
use crate::transports::redis_streams::RedisTransport;
use crate::transports::stdio;
use crate::transports::unix::SocketFile;
use crate::transports::websocket::WsSettings;
use a2ad_actors::limits::TurnLimits;
use a2ad_actors::messages::{Drain, GetStats, StopAll, SupervisorStats};
use a2ad_actors::push::PushWorker;
use a2ad_actors::supervisor::Supervisor;
use a2ad_actors::{recovery, Runtime, RuntimeSettings};
use a2ad_node::admin::AdminListen;
use a2ad_storage::{Checkpointer, Forwarder, GroupCommit, StoreError};
use actix::prelude::*;
use actix_web::{dev::Server, web, App, HttpServer};
use failure::NewDirs;
use listeners::Listeners;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why a node could not start. Shown to the operator, so paths are fine here. Each
/// message holds its cause (the causes are not chained as `source`s, which `{:#}` would
/// print a second time): one line, naming the config key.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The data dir cannot be created or its store opened: `data-dir PATH: locked by
    /// another process` (or `read-only file system`, `permission denied`, ...).
    #[error("data-dir {path}: {cause}")]
    DataDir { path: String, cause: String },
    /// The shared store (`store: redis`) cannot be reached, or is set to lose or evict
    /// acknowledged writes: the message names the server (never its password) and the
    /// setting.
    #[error("redis: {0}")]
    SharedStore(String),
    /// The store failed after it opened (recovery, the first flush).
    #[error("data-dir {path}: the task store failed: {cause}")]
    Store { path: String, cause: StoreError },
    /// `listen` or `grpc-listen` cannot be bound: `listen 127.0.0.1:8080: address in use`.
    #[error("{key} {addr}: {cause}")]
    Bind { key: &'static str, addr: String, cause: String },
    #[error(transparent)]
    Push(#[from] PushSetupError),
    #[error("invalid authentication config: {0}")]
    Auth(String),
    /// A `card.signing-keys` key could not sign the card or the extended card. The
    /// signing error never carries key material (only a kid or a fixed reason).
    #[error("card.signing-keys: cannot sign the {card}: {source}")]
    CardSigning { card: &'static str, source: crate::card_signing::SigningError },
    #[error(transparent)]
    UnixSocket(#[from] crate::transports::unix::UnixSocketError),
    #[error(transparent)]
    RedisTransport(#[from] crate::transports::redis_streams::RedisTransportError),
    /// A command agent whose program or `cwd` is not there (or not executable).
    #[error(transparent)]
    Agent(#[from] crate::agents::programs::ProgramError),
}

/// A node that is bound and ready to run.
pub struct Application {
    server: Server,
    local: std::net::SocketAddr,
    public_url: String,
    node: NodeCore,
    grpc: Option<GrpcServer>,
    unix_socket: Option<SocketFile>,
    /// The admin API's own server (`admin.listen: <address>`), and its address.
    admin_server: Option<(actix_web::dev::ServerHandle, std::net::SocketAddr)>,
    redis: Option<RedisTransport>,
    /// Cancelled when the node stops: closes the WebSocket connections.
    closing: CancellationToken,
    /// SIGTERM and SIGINT, caught from the moment the node is built: a signal sent as
    /// soon as the "listening" line is out is a clean stop, not the default exit.
    signals: ShutdownSignals,
}

/// The node without listeners: the store, the actors and the [`Core`] every transport
/// calls. `a2ad serve` puts the HTTP, gRPC and other transports around it; `a2ad stdio`
/// only stdin and stdout.
pub struct NodeCore {
    pub core: Arc<Core>,
    supervisor: Addr<Supervisor>,
    commit: GroupCommit,
    /// Flushes sled behind the log in the background; stopped (after a last checkpoint)
    /// at close.
    checkpointer: Option<Arc<Checkpointer>>,
    recovered: usize,
    push_worker: Option<Addr<PushWorker>>,
    /// Moves durable outbox jobs into the Redis push queue (`redis-streams` only);
    /// stopped, after a last pass, at close.
    forwarder: Option<Forwarder>,
    shutdown_grace: Duration,
    workers: usize,
    /// Stops the background work (retention) when shutdown begins.
    stop_background: CancellationToken,
    /// The command agents' programs: their groups are killed at close, not left behind.
    process_groups: ProcessGroups,
}

/// The bound servers, before the application around them is assembled.
struct Served {
    server: Server,
    local: std::net::SocketAddr,
    public_url: String,
    grpc: Option<GrpcServer>,
    unix_socket: Option<SocketFile>,
    /// The admin API's own server (`admin.listen: <address>`), and its address.
    admin_server: Option<(actix_web::dev::ServerHandle, std::net::SocketAddr)>,
}

/// How often the checkpointer flushes sled behind the log, and after how many bytes of
/// log it does so sooner.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
const CHECKPOINT_BYTES: u64 = 32 << 20;

fn runtime_settings(config: &Config, workers: usize) -> RuntimeSettings {
    RuntimeSettings {
        idle_timeout: config.idle_timeout,
        sweep_interval: (config.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(5)),
        max_contexts: config.max_contexts,
        session_history_limit: config.session_history_limit,
        worker_threads: workers,
        stream_buffer: config.stream_buffer,
    }
}

/// How the card announces a configured extension.
fn announced_extension(extension: &crate::config::ExtensionConfig) -> a2ad_protocol::AgentExtension {
    a2ad_protocol::AgentExtension {
        uri: extension.uri.clone(),
        description: extension.description.clone(),
        required: extension.required,
        params: extension.params.clone(),
    }
}

/// The public card (and the extended one, kept in `core`), signed: interfaces, security
/// schemes, capabilities and extensions from the config, the 0.3 fields when
/// `card.compat-v03` is on.
fn node_card(
    config: &Config,
    core: &Core,
    public_url: &str,
    grpc_address: Option<&str>,
) -> Result<CardDocument, StartupError> {
    let mut card = unsigned_card(config, core, public_url, grpc_address);
    if config.extended_card {
        core.set_extended_card(signed_extended_card(config, &card)?);
    }
    // Signed last, so the signatures cover the finished card; the ETag covers them too.
    crate::card::sign_with_config(&mut card, &config.card)
        .map_err(|source| StartupError::CardSigning { card: "card", source })?;
    Ok(CardDocument::new(card))
}

/// The public card as [`node_card`] builds it, before its signatures.
fn unsigned_card(
    config: &Config,
    core: &Core,
    public_url: &str,
    grpc_address: Option<&str>,
) -> a2ad_protocol::AgentCard {
    let mut card = build_card(config, public_url, grpc_address);
    if config.websocket {
        let url = crate::transports::websocket::public_url(public_url);
        card.supported_interfaces.push(crate::card::interface(url, crate::transports::websocket::BINDING_URI));
    }
    let (schemes, requirements) = core.auth().security_schemes();
    (card.security_schemes, card.security_requirements) = (a2ad_protocol::SecuritySchemes::new(schemes), requirements);
    card.capabilities.extended_agent_card = Some(config.extended_card);
    card.capabilities.extensions = crate::card::node_extensions(config).iter().map(announced_extension).collect();
    if config.card.compat_v03 {
        // 0.3 clients discover the node by these (JSON-RPC at `/`, the `/v1/` routes at the
        // base); the extended card is built from this one, so it follows.
        a2ad_protocol::dialect::v03::add_compat_fields(&mut card, &format!("{public_url}/"), public_url);
    }
    card
}

/// The extended card built from the public `card` (unsigned), signed.
fn signed_extended_card(
    config: &Config,
    card: &a2ad_protocol::AgentCard,
) -> Result<a2ad_protocol::AgentCard, StartupError> {
    let mut extended = crate::extended_card::extended_card(card, config);
    crate::card::sign_with_config(&mut extended, &config.card)
        .map_err(|source| StartupError::CardSigning { card: "extended card", source })?;
    Ok(extended)
}

/// The cards of a wildcard `listen` with no `public-url`: each names the address a request
/// came to, and so does its gRPC interface when `grpc-listen` is a wildcard too and no
/// `grpc-public-address` is set. The public cards are the HTTP layer's
/// ([`crate::http::CardsByAddress`]); the extended ones, built alike, are `core`'s
/// ([`Core::set_extended_cards_by_base`]).
fn cards_by_address(
    config: &Config,
    core: &Arc<Core>,
    grpc: Option<&(std::net::TcpListener, std::net::SocketAddr)>,
) -> crate::http::CardsByAddress {
    let (config, grpc) = (Arc::new(config.clone()), grpc.map(|(_, addr)| *addr));
    let grpc_address = {
        let config = Arc::clone(&config);
        move |base: &str| {
            let host =
                base.strip_prefix("http://").and_then(|a| a.parse::<std::net::SocketAddr>().ok()).map(|a| a.ip());
            grpc.map(|addr| match (&config.grpc_public_address, host) {
                (Some(named), _) => named.clone(),
                (None, Some(ip)) if addr.ip().is_unspecified() => {
                    std::net::SocketAddr::new(ip, addr.port()).to_string()
                }
                (None, _) => addr.to_string(),
            })
        }
    };
    if config.extended_card {
        let (config, weak_core, grpc_address) = (Arc::clone(&config), Arc::downgrade(core), grpc_address.clone());
        core.set_extended_cards_by_base(Box::new(move |base: &str| {
            let core = weak_core.upgrade()?;
            let card = unsigned_card(&config, &core, base, grpc_address(base).as_deref());
            signed_extended_card(&config, &card)
                .map_err(|e| tracing::warn!(error = %e, "could not build the extended card for an address"))
                .ok()
        }));
    }
    let core = Arc::clone(core);
    crate::http::CardsByAddress::new(Box::new(move |base: &str| {
        let mut card = unsigned_card(&config, &core, base, grpc_address(base).as_deref());
        crate::card::sign_with_config(&mut card, &config.card)
            .map_err(|e| tracing::warn!(error = %e, "could not build the card for an address"))
            .ok()
            .map(|()| CardDocument::new(card))
    }))
}

/// How streams are bounded on every binding (`stream-write-timeout`, `stream-send-buffer`).
pub(crate) fn stream_bounds(config: &Config) -> crate::connection::StreamBounds {
    crate::connection::StreamBounds {
        write_timeout: config.stream_write_timeout,
        send_buffer: config.stream_send_buffer,
    }
}

/// Builds the card, then serves HTTP (and gRPC, and the Unix socket) on the bound
/// listeners: a card that cannot be signed stops start-up before any server runs.
fn serve(
    config: &Config,
    core: Arc<Core>,
    workers: usize,
    closing: &CancellationToken,
    listeners: Listeners,
) -> Result<Served, StartupError> {
    let Listeners {
        http: listener,
        http_addr: local,
        grpc: grpc_listener,
        unix,
        admin: admin_listener,
        card_per_address,
    } = listeners;
    let public_url = config.public_url.clone().unwrap_or_else(|| format!("http://{local}"));
    let grpc_address =
        grpc_listener.as_ref().map(|(_, addr)| config.grpc_public_address.clone().unwrap_or_else(|| addr.to_string()));
    let card = Arc::new(node_card(config, &core, &public_url, grpc_address.as_deref())?);
    let exposed =
        std::iter::once(("listen", local)).chain(grpc_listener.as_ref().map(|(_, addr)| ("grpc-listen", *addr)));
    let warnings = a2ad_node::exposure::warnings(&exposed.collect::<Vec<_>>(), core.auth().enabled());
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let cards_by_address = card_per_address.then(|| Arc::new(cards_by_address(config, &core, grpc_listener.as_ref())));
    let admin_on_main = config.admin.enabled() && !matches!(config.admin.listen, AdminListen::Address(_));
    let admin = config.admin.enabled().then(|| Arc::new(AdminSite::new(config, &card.card, warnings, closing.clone())));
    let state = web::Data::new(AppState {
        core,
        card,
        cards_by_address,
        old_clients: (!config.card.compat_v03).then(Arc::default),
        body_limit: config.body_limit,
        rest_body_limit: config.limits.rest_body_limit.unwrap_or(config.body_limit),
        body_pace: BodyPace { timeout: config.body_timeout, min_rate: config.body_min_rate },
        stream_bounds: stream_bounds(config),
        stream_keep_alive: config.stream_keep_alive,
        metrics_token: config.metrics_token.clone(),
        admin,
    });
    let grpc = grpc_listener.map(|bound| listeners::serve_grpc(config, &state.core, workers, bound)).transpose()?;
    let admin_server = admin_listener.map(|bound| listeners::serve_admin(config, state.clone(), bound)).transpose()?;
    let rest_prefix = config.rest_prefix.clone();
    let websocket = config.websocket.then(|| WsSettings {
        queue: config.websocket_queue,
        send_timeout: config.websocket_send_timeout,
        max_message: config.body_limit,
        ping_interval: config.stream_keep_alive,
        shutdown: closing.clone(),
    });
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .wrap(actix_web::middleware::from_fn(crate::http::observe::observe))
            .configure(|c| {
                routes(c, &rest_prefix, admin_on_main);
                if let Some(settings) = &websocket {
                    crate::transports::websocket::routes(c, settings.clone());
                }
            })
    })
    .workers(workers)
    // actix counts per worker; the key is per listener.
    .max_connections(config.max_connections.div_ceil(workers.max(1)))
    .on_connect(crate::connection::on_http_connect)
    .shutdown_timeout(config.shutdown_grace.as_secs() + 5)
    .disable_signals()
    // Every small SSE write goes out at once instead of waiting for the client's delayed
    // ACK (Nagle: ~40 ms per stream). TCP only: a Unix socket has no Nagle.
    .tcp_nodelay(true)
    .listen(listener)
    .map_err(|e| StartupError::Bind { key: "listen", addr: local.to_string(), cause: io_cause(&e) })?;
    let mut unix_socket = None;
    if let Some((listener, file)) = unix {
        let addr = file.path().display().to_string();
        server = server.listen_uds(listener).map_err(|e| StartupError::Bind {
            key: "listen-unix",
            addr,
            cause: io_cause(&e),
        })?;
        unix_socket = Some(file);
    }
    Ok(Served { server: server.run(), local, public_url, grpc, unix_socket, admin_server })
}

impl NodeCore {
    /// Opens the store, fails interrupted turns and starts the actors (and the push
    /// worker). Must run inside an actix system.
    pub async fn start(config: &Config) -> Result<Self, StartupError> {
        let shown = config.data_dir.display().to_string();
        let store_error = |cause| StartupError::Store { path: shown.clone(), cause };
        let auth = preflight(config)?;
        let operators = a2ad_node::admin::Operators::new(&config.admin, &auth)
            .map_err(|(key, message)| StartupError::Auth(format!("{key}: {message}")))?;
        let metrics = Arc::new(Metrics::default());
        let feed = Arc::new(a2ad_actors::feed::NodeFeed::default());
        let stores::OpenedStore { store, commit, journal, push } = stores::open(config, &metrics, &feed)?;
        let workers = if config.workers == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
        } else {
            config.workers
        };
        let process_groups = ProcessGroups::default();
        let rt = Arc::new(Runtime {
            store: Arc::clone(&store),
            commit: commit.clone(),
            agents: build_registry(&config.agents, config.agent_env(&process_groups, auth.enabled())),
            settings: runtime_settings(config, workers),
            push: push.as_ref().map(|p| p.hooks.clone()),
            turn_limits: TurnLimits::new(config.limits.max_running_turns, config.limits.max_running_turns_per_tenant),
            data_dir: config.data_dir.clone(),
            feed: Arc::clone(&feed),
        });
        let recovered = recovery::fail_interrupted_turns(&rt).map_err(store_error)?;
        remove_orphan_push_configs(&rt);
        commit.commit().await.map_err(store_error)?;
        let checkpointer = journal
            .map(|journal| Checkpointer::start(journal, CHECKPOINT_EVERY, CHECKPOINT_BYTES))
            .transpose()
            .map_err(store_error)?;
        let (push_worker, push_board) = push.as_ref().map(PushStack::start_worker).unzip();
        if let Some(board) = push_board {
            metrics.watch_push(board);
        }
        let forwarder = push.as_ref().map(PushStack::start_forwarder).transpose().map_err(store_error)?.flatten();
        let supervisor = Supervisor::new(Arc::clone(&rt));
        let live_contexts = supervisor.live_contexts();
        let supervisor = supervisor.start();
        let core = Arc::new(Core::new(CoreParts {
            rt,
            supervisor: supervisor.clone(),
            live_contexts,
            push_policy: push.map(|p| p.policy),
            auth,
            visibility: config.tenancy.visibility,
            rate: RateLimiter::new(config.limits.rate_per_second, config.limits.rate_burst),
            extensions: crate::card::node_extensions(config),
            metrics,
            dialect_01: config.dialect_01.clone(),
            streaming: config.streaming,
            operators: Arc::new(operators),
        }));
        let stop_background = CancellationToken::new();
        crate::retention::Sweeper::new(Arc::clone(&core), config.retention.clone()).start(stop_background.clone());
        core.start_cluster_duties(config.redis.lease_ttl, stop_background.clone());
        if !config.admin.tokens.is_empty() {
            a2ad_node::admin::series::start(Arc::clone(&core), stop_background.clone());
        }
        let shutdown_grace = config.shutdown_grace;
        Ok(NodeCore {
            core,
            supervisor,
            commit,
            checkpointer: checkpointer.map(Arc::new),
            recovered,
            push_worker,
            forwarder,
            shutdown_grace,
            workers,
            stop_background,
            process_groups,
        })
    }

    /// How many tasks start-up recovery marked FAILED.
    pub fn recovered_tasks(&self) -> usize {
        self.recovered
    }

    /// Refuses new turns, lets running ones go on for the grace period, then ends the rest
    /// honestly (FAILED, saying why), which sends every open stream its final event.
    pub async fn drain(&self) {
        tracing::info!(grace_seconds = self.shutdown_grace.as_secs(), "shutting down");
        self.core.start_draining();
        self.stop_background.cancel();
        let _ = self.supervisor.send(Drain { grace: self.shutdown_grace }).await;
        let _ = self.supervisor.send(StopAll).await;
    }

    /// Stops the push worker and the actors, ends the agent programs still running (each
    /// gets SIGTERM and its `cancel-grace`, then SIGKILL) and flushes the store.
    pub async fn close(mut self) {
        self.stop_background.cancel();
        // In-flight deliveries stop here; their jobs stay in the queue for the next start.
        if let Some(worker) = self.push_worker.take() {
            let _ = worker.send(a2ad_actors::push::StopWorker).await;
        }
        let _ = self.supervisor.send(StopAll).await;
        self.process_groups.close().await;
        if let Err(e) = self.commit.commit().await {
            tracing::error!(error = %e, "final flush failed");
        }
        if let Some(forwarder) = self.forwarder.take() {
            let _ = actix_web::rt::task::spawn_blocking(move || forwarder.stop()).await;
        }
        if let Some(checkpointer) = self.checkpointer.take() {
            let _ = actix_web::rt::task::spawn_blocking(move || checkpointer.stop()).await;
        }
        let stats = self.commit.stats();
        tracing::info!(
            flushes = stats.flushes,
            commits = stats.waiters_served,
            flush_micros = stats.flush_micros,
            "store closed"
        );
        self.commit.close();
    }
}

impl Application {
    /// Binds the listeners, opens the store, fails interrupted turns, starts the actors
    /// and serves. Must run inside an actix system. A failure leaves nothing behind: no
    /// socket file, no data dir this start created, no actor or server running.
    pub async fn build(mut config: Config) -> Result<Self, StartupError> {
        let listeners = Listeners::bind(&config)?;
        // The bound address is the default public URL (port 0 picks one): the card and
        // the artifact links name the same.
        config.public_url.get_or_insert_with(|| format!("http://{}", listeners.http_addr));
        let unix_file = listeners.unix.as_ref().map(|(_, file)| file.path().to_owned());
        let new_dirs = NewDirs::before_creating(&config.data_dir);
        let started = match NodeCore::start(&config).await {
            Ok(node) => Self::assemble(&config, node, listeners).await,
            Err(e) => Err(e),
        };
        if started.is_err() {
            if let Some(path) = unix_file {
                let _ = std::fs::remove_file(path);
            }
            new_dirs.remove();
        }
        started
    }

    /// Starts the Redis transport and the servers around a started core; on a failure the
    /// core is closed again (its actors stopped inside the runtime, the store flushed).
    async fn assemble(config: &Config, node: NodeCore, listeners: Listeners) -> Result<Self, StartupError> {
        let redis = match &config.redis_transport {
            Some(settings) => {
                let (core, settings) = (Arc::clone(&node.core), settings.clone());
                match RedisTransport::start(core, settings, config.body_limit).await {
                    Ok(redis) => Some(redis),
                    Err(e) => {
                        node.close().await;
                        return Err(e.into());
                    }
                }
            }
            None => None,
        };
        let closing = CancellationToken::new();
        match serve(config, Arc::clone(&node.core), node.workers, &closing, listeners) {
            Ok(Served { server, local, public_url, grpc, unix_socket, admin_server }) => Ok(Application {
                server,
                local,
                public_url,
                node,
                grpc,
                unix_socket,
                admin_server,
                redis,
                closing,
                signals: ShutdownSignals::register(),
            }),
            Err(e) => {
                if let Some(redis) = redis {
                    redis.stop().await;
                }
                node.close().await;
                Err(e)
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.local.port()
    }

    /// The base URL clients are told to use (the card's).
    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// The loopback URL the server is bound on, whatever the public URL says.
    pub fn local_url(&self) -> String {
        format!("http://{}", self.local)
    }

    /// The gRPC server's address, when it runs.
    pub fn grpc_addr(&self) -> Option<std::net::SocketAddr> {
        self.grpc.as_ref().map(GrpcServer::addr)
    }

    /// The admin API's own address (`admin.listen: <address>`), when it has one.
    pub fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        self.admin_server.as_ref().map(|(_, addr)| *addr)
    }

    /// The Unix socket the HTTP server also listens on, when configured.
    pub fn unix_socket(&self) -> Option<&std::path::Path> {
        self.unix_socket.as_ref().map(SocketFile::path)
    }

    /// How many tasks start-up recovery marked FAILED.
    pub fn recovered_tasks(&self) -> usize {
        self.node.recovered
    }

    /// A handle to stop the HTTP server (graceful with `true`).
    pub fn server_handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// A way to read the supervisor's counters (tests, metrics).
    pub fn stats_probe(&self) -> StatsProbe {
        StatsProbe { supervisor: self.node.supervisor.clone() }
    }

    /// Serves until the HTTP server stops (signal or handle), then ends every running
    /// turn honestly, stops the actors and flushes the store.
    pub async fn run_until_stopped(mut self) -> std::io::Result<()> {
        let handle = self.server.handle();
        let supervisor = self.node.supervisor.clone();
        let grace = self.node.shutdown_grace;
        let closing = self.closing.clone();
        let redis_stop = self.redis.as_ref().map(RedisTransport::stop_token);
        let stop_background = self.node.stop_background.clone();
        let signals = std::mem::replace(&mut self.signals, ShutdownSignals(None));
        let core = Arc::clone(&self.node.core);
        // Set when a signal arrives, and once the turns are drained: with no connection
        // open, the HTTP server stops at once, and the close below must not cut the
        // running turns' grace period short.
        let (signalled, drained) = (CancellationToken::new(), CancellationToken::new());
        let (signal_seen, drain_done) = (signalled.clone(), drained.clone());
        // On SIGTERM or SIGINT: stop accepting, let running turns finish for the grace
        // period, then end the rest honestly (FAILED, saying why), which sends every open
        // stream its final event so that the HTTP server can finish draining.
        actix_web::rt::spawn(async move {
            signals.wait().await;
            signal_seen.cancel();
            core.start_draining();
            tracing::info!(grace_seconds = grace.as_secs(), "shutting down");
            stop_background.cancel();
            let stopping = handle.stop(true);
            // New Redis requests stay in the stream for the other nodes.
            if let Some(stop) = redis_stop {
                stop.cancel();
            }
            let _ = supervisor.send(Drain { grace }).await;
            let _ = supervisor.send(StopAll).await;
            drain_done.cancel();
            closing.cancel();
            stopping.await;
        });
        let served = self.server.await;
        if signalled.is_cancelled() {
            drained.cancelled().await;
        }
        self.closing.cancel();
        if let Some((admin, _)) = self.admin_server.take() {
            admin.stop(false).await;
        }
        if let Some(redis) = self.redis.take() {
            redis.stop().await;
        }
        if let Some(mut grpc) = self.grpc.take() {
            let _ = actix_web::web::block(move || grpc.stop()).await;
        }
        if let Some(file) = self.unix_socket.take() {
            file.remove();
        }
        self.node.close().await;
        served
    }
}

/// Removes the push configs a crash left without their task, before any request can
/// store a new task's config (see [`crate::retention::remove_orphan_push_configs`]). A
/// failure is logged: the configs only take space, the node can run.
fn remove_orphan_push_configs(rt: &Runtime) {
    let Some(push) = &rt.push else { return };
    // On a shared store another node may be storing a config whose task it has not
    // written yet: what is an orphan there is not for a starting node to judge.
    if rt.store.cluster().is_some() {
        return;
    }
    match crate::retention::remove_orphan_push_configs(rt.store.as_ref(), &push.configs) {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "removed push configs whose task was gone"),
        Err(e) => tracing::error!(error = %e, "could not sweep orphaned push configs"),
    }
}

/// Resolves on SIGTERM or SIGINT.
pub(crate) async fn wait_for_signal() {
    ShutdownSignals::register().wait().await
}

/// SIGTERM and SIGINT, registered when made (from then on neither ends the process by
/// default) and awaited later.
struct ShutdownSignals(Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>);

impl ShutdownSignals {
    fn register() -> ShutdownSignals {
        use tokio::signal::unix::{signal, SignalKind};
        ShutdownSignals(signal(SignalKind::terminate()).ok().zip(signal(SignalKind::interrupt()).ok()))
    }

    /// Resolves on the first of the two (never, if they could not be registered).
    async fn wait(self) {
        let Some((mut term, mut int)) = self.0 else { return std::future::pending().await };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}

/// Reads the supervisor's counters.
#[derive(Clone)]
pub struct StatsProbe {
    supervisor: Addr<Supervisor>,
}

impl StatsProbe {
    pub async fn stats(&self) -> Option<SupervisorStats> {
        self.supervisor.send(GetStats).await.ok()
    }
}

/// `a2ad stdio`: runs a node on stdin and stdout until stdin ends (or a signal), then
/// stops it cleanly (see [`crate::transports::stdio`]).
pub async fn run_stdio(mut config: Config) -> Result<(), StartupError> {
    if config.public_url.is_none() {
        // No HTTP listener here to serve the artifact route: link the files themselves.
        config.artifacts.links = crate::artifacts::ArtifactLinks::File;
    }
    let node = NodeCore::start(&config).await?;
    if node.recovered_tasks() > 0 {
        tracing::warn!(tasks = node.recovered_tasks(), "marked tasks that were running at the last stop as failed");
    }
    let owner = stdio::local_owner(&node.core);
    let session = stdio::Session::start(Arc::clone(&node.core), owner, tokio::io::stdout());
    tokio::select! {
        read = session.read_all(tokio::io::stdin(), config.body_limit) => match read {
            Ok(()) => tracing::info!("stdin closed: stopping"),
            Err(e) => tracing::error!(error = %e, "cannot read stdin: stopping"),
        },
        () = wait_for_signal() => tracing::info!("signal: stopping"),
    }
    let finished = tokio::time::timeout(config.shutdown_grace, session.idle()).await.is_ok();
    if !finished {
        tracing::info!("requests still running after the grace period");
    }
    node.drain().await;
    session.finish().await;
    node.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card_signing::SigningError;

    #[test]
    fn a_card_signing_failure_is_its_own_error_and_names_the_key_setting() {
        let err = StartupError::CardSigning { card: "extended card", source: SigningError::UnknownKid("k1".into()) };
        assert_eq!(err.to_string(), "card.signing-keys: cannot sign the extended card: no key with kid k1 is known");
        assert!(!err.to_string().contains("authentication"), "not reported as an auth config error");
    }
}
