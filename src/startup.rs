//! Building and running a node.

use crate::agents::build_registry;
use crate::auth::Authenticator;
use crate::card::{build_card, CardDocument};
use crate::config::Config;
use crate::core::{Core, RateLimiter};
use crate::grpc::GrpcServer;
use crate::http::{routes, AppState};
use crate::metrics::{MeteredQueue, MeteredStore, Metrics};
use crate::push::{PushSetupError, PushStack};
use a2ad_actors::limits::TurnLimits;
use a2ad_actors::messages::{Drain, GetStats, StopAll, SupervisorStats};
use a2ad_actors::push::PushWorker;
use a2ad_actors::supervisor::Supervisor;
use a2ad_actors::{recovery, Runtime, RuntimeSettings};
use a2ad_storage::{GroupCommit, SledStore, StoreError, TaskStore};
use actix::prelude::*;
use actix_web::{dev::Server, web, App, HttpServer};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

/// Why a node could not start. Shown to the operator, so paths are fine here.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot create the data dir {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    #[error("cannot open the task store in {path}: {source} (is another a2ad using it?)")]
    Store { path: String, source: StoreError },
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error(transparent)]
    Push(#[from] PushSetupError),
    #[error("invalid authentication config: {0}")]
    Auth(String),
}

/// A node that is bound and ready to run.
pub struct Application {
    server: Server,
    local: std::net::SocketAddr,
    public_url: String,
    supervisor: Addr<Supervisor>,
    commit: GroupCommit,
    recovered: usize,
    grpc: Option<GrpcServer>,
    push_worker: Option<Addr<PushWorker>>,
    shutdown_grace: Duration,
    /// Stops the background work (retention) when shutdown begins.
    stop_background: tokio_util::sync::CancellationToken,
}

/// The bound servers, before the application around them is assembled.
struct Served {
    server: Server,
    local: std::net::SocketAddr,
    public_url: String,
    grpc: Option<GrpcServer>,
}

/// Creates the data dir and opens the sled store in it.
fn open_store(config: &Config) -> Result<SledStore, StartupError> {
    let shown = config.data_dir.display().to_string();
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|source| StartupError::DataDir { path: shown.clone(), source })?;
    Ok(SledStore::open(&config.data_dir)
        .map_err(|source| StartupError::Store { path: shown, source })?
        .with_event_retention(config.event_retention))
}

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

/// Binds HTTP (and gRPC) and builds the card.
fn serve(config: &Config, core: Arc<Core>, workers: usize) -> Result<Served, StartupError> {
    let listener = TcpListener::bind(config.listen)
        .map_err(|source| StartupError::Bind { addr: config.listen.to_string(), source })?;
    let local =
        listener.local_addr().map_err(|source| StartupError::Bind { addr: config.listen.to_string(), source })?;
    let public_url = config.public_url.clone().unwrap_or_else(|| format!("http://{local}"));
    let grpc = match config.grpc_listen {
        Some(addr) => Some(
            GrpcServer::start(
                Arc::clone(&core),
                addr,
                workers,
                config.limits.grpc_message_limit.unwrap_or(config.body_limit),
            )
            .map_err(|source| StartupError::Bind { addr: addr.to_string(), source })?,
        ),
        None => None,
    };
    let grpc_address =
        grpc.as_ref().map(|g| config.grpc_public_address.clone().unwrap_or_else(|| g.addr().to_string()));
    let mut card = build_card(config, &public_url, grpc_address.as_deref());
    (card.security_schemes, card.security_requirements) = core.auth.security_schemes();
    card.capabilities.extended_agent_card = Some(config.extended_card);
    card.capabilities.extensions = crate::card::node_extensions(config).iter().map(announced_extension).collect();
    // 0.3 clients discover the node by these (JSON-RPC at `/`, the `/v1/` routes at the base).
    card.v03 = a2ad_protocol::dialect::v03::card_fields(&card, &format!("{public_url}/"), &public_url);
    if config.extended_card {
        let mut extended = crate::extended_card::extended_card(&card, config);
        crate::card::sign_with_config(&mut extended, &config.card)
            .map_err(|e| StartupError::Auth(format!("card.signing-keys: cannot sign the extended card: {e}")))?;
        let _ = core.extended_card.set(extended);
    }
    // Signed last, so the signatures cover the finished card; the ETag covers them too.
    crate::card::sign_with_config(&mut card, &config.card)
        .map_err(|e| StartupError::Auth(format!("card.signing-keys: cannot sign the card: {e}")))?;
    let card = Arc::new(CardDocument::new(card));
    let state = web::Data::new(AppState {
        core,
        card,
        body_limit: config.body_limit,
        rest_body_limit: config.limits.rest_body_limit.unwrap_or(config.body_limit),
        stream_keep_alive: config.stream_keep_alive,
        metrics_token: config.metrics_token.clone(),
    });
    let rest_prefix = config.rest_prefix.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .wrap(actix_web::middleware::from_fn(crate::http::observe::observe))
            .configure(|c| routes(c, &rest_prefix))
    })
    .workers(workers)
    .shutdown_timeout(config.shutdown_grace.as_secs() + 5)
    .disable_signals()
    .listen(listener)
    .map_err(|source| StartupError::Bind { addr: local.to_string(), source })?
    .run();
    Ok(Served { server, local, public_url, grpc })
}

impl Application {
    /// Opens the store, fails interrupted turns, starts the actors and binds the server.
    /// Must run inside an actix system.
    pub async fn build(config: Config) -> Result<Self, StartupError> {
        let shown = config.data_dir.display().to_string();
        let store_error = |source| StartupError::Store { path: shown.clone(), source };
        let auth = Authenticator::new(&config.auth, |name| std::env::var(name).ok())
            .map_err(|e| StartupError::Auth(e.to_string()))?;
        if config.extended_card && !auth.enabled() {
            return Err(StartupError::Auth(
                "extended-card needs authentication: the extended card is for authenticated callers only".into(),
            ));
        }
        let sled = open_store(&config)?;
        let metrics = Arc::new(Metrics::default());
        let mut push = match config.push.enabled {
            true => Some(PushStack::open(&config.push, &sled, &config.data_dir)?),
            false => None,
        };
        if let Some(push) = push.as_mut() {
            let queue = MeteredQueue::new(Arc::clone(&push.hooks.queue), Arc::clone(&metrics)).map_err(store_error)?;
            push.hooks.queue = Arc::new(queue);
        }
        let store: Arc<dyn TaskStore> =
            Arc::new(MeteredStore::new(Arc::new(sled), Arc::clone(&metrics)).map_err(store_error)?);
        let commit = GroupCommit::start(Arc::clone(&store)).map_err(store_error)?;
        let workers = if config.workers == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
        } else {
            config.workers
        };
        let rt = Arc::new(Runtime {
            store: Arc::clone(&store),
            commit: commit.clone(),
            agents: build_registry(&config),
            settings: runtime_settings(&config, workers),
            push: push.as_ref().map(|p| p.hooks.clone()),
            turn_limits: TurnLimits::new(config.limits.max_running_turns, config.limits.max_running_turns_per_tenant),
        });
        let recovered = recovery::fail_interrupted_turns(&rt).map_err(store_error)?;
        store.flush().map_err(store_error)?;
        let push_worker = push.as_ref().map(PushStack::start_worker);
        let supervisor = Supervisor::new(Arc::clone(&rt)).start();
        let core = Arc::new(Core {
            rt,
            supervisor: supervisor.clone(),
            push_policy: push.map(|p| p.policy),
            auth,
            rate: RateLimiter::new(config.limits.rate_per_second, config.limits.rate_burst),
            extensions: crate::card::node_extensions(&config),
            extended_card: std::sync::OnceLock::new(),
            metrics,
            dialect_01: config.dialect_01.clone(),
        });
        let stop_background = tokio_util::sync::CancellationToken::new();
        crate::retention::Sweeper::new(Arc::clone(&core), config.retention.clone(), config.data_dir.clone())
            .start(stop_background.clone());
        let Served { server, local, public_url, grpc } = serve(&config, core, workers)?;
        Ok(Application {
            server,
            local,
            public_url,
            supervisor,
            commit,
            recovered,
            grpc,
            push_worker,
            shutdown_grace: config.shutdown_grace,
            stop_background,
        })
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

    /// How many tasks start-up recovery marked FAILED.
    pub fn recovered_tasks(&self) -> usize {
        self.recovered
    }

    /// A handle to stop the HTTP server (graceful with `true`).
    pub fn server_handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// A way to read the supervisor's counters (tests, metrics).
    pub fn stats_probe(&self) -> StatsProbe {
        StatsProbe { supervisor: self.supervisor.clone() }
    }

    /// Serves until the HTTP server stops (signal or handle), then ends every running
    /// turn honestly, stops the actors and flushes the store.
    pub async fn run_until_stopped(mut self) -> std::io::Result<()> {
        let handle = self.server.handle();
        let supervisor = self.supervisor.clone();
        let grace = self.shutdown_grace;
        let stop_background = self.stop_background.clone();
        // On SIGTERM or SIGINT: stop accepting, let running turns finish for the grace
        // period, then end the rest honestly (FAILED, saying why), which sends every open
        // stream its final event so that the HTTP server can finish draining.
        actix_web::rt::spawn(async move {
            wait_for_signal().await;
            tracing::info!(grace_seconds = grace.as_secs(), "shutting down");
            stop_background.cancel();
            let stopping = handle.stop(true);
            let _ = supervisor.send(Drain { grace }).await;
            let _ = supervisor.send(StopAll).await;
            stopping.await;
        });
        let served = self.server.await;
        self.stop_background.cancel();
        if let Some(mut grpc) = self.grpc.take() {
            let _ = actix_web::web::block(move || grpc.stop()).await;
        }
        // In-flight deliveries stop here; their jobs stay in the queue for the next start.
        if let Some(worker) = self.push_worker.take() {
            let _ = worker.send(a2ad_actors::push::StopWorker).await;
        }
        let _ = self.supervisor.send(StopAll).await;
        if let Err(e) = self.commit.commit().await {
            tracing::error!(error = %e, "final flush failed");
        }
        let stats = self.commit.stats();
        tracing::info!(
            flushes = stats.flushes,
            commits = stats.waiters_served,
            flush_micros = stats.flush_micros,
            "store closed"
        );
        self.commit.close();
        served
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
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
