//! The one request handler behind every binding.
//!
//! Each A2A method is a file here: it validates its request, applies it (through the
//! store for reads, through the context's actor for anything that changes a task) and
//! returns the wire result. Bindings only decode, call, and encode.

mod artifact_file;
mod cancel_task;
mod cluster;
mod dispatch;
mod durable_stream;
pub mod extensions;
mod get_task;
mod list_tasks;
mod push_config;
mod rate;
mod send_message;
mod subscribe;
pub mod version;

use a2ad_actors::context::ContextActor;
use a2ad_actors::supervisor::{LiveContexts, Route, Supervisor};
use a2ad_actors::{Runtime, RuntimeError};
use a2ad_protocol::{A2aError, Task};
use a2ad_storage::{ContextKey, Owner, Scope, TaskRecord};
use actix::prelude::*;
use std::sync::Arc;

pub use dispatch::{Call, Reply, ReplyBody};
pub use durable_stream::send_when_durable;
pub use rate::RateLimiter;

/// Shared by every request. Its fields are private: the bindings and the background
/// work reach the node through the methods below, so what a binding may touch is said here.
pub struct Core {
    rt: Arc<Runtime>,
    supervisor: Addr<Supervisor>,
    /// The supervisor's live contexts: a request finds a running context's actor here,
    /// without a round trip through the supervisor's thread.
    live_contexts: Arc<LiveContexts>,
    /// The webhook URL policy, when push notifications are on.
    push_policy: Option<Arc<crate::push::url_guard::UrlPolicy>>,
    /// Who is calling. With nothing configured, everyone is the anonymous owner.
    auth: crate::auth::Authenticator,
    /// Which owner a caller acts as (`tenancy.visibility`).
    visibility: crate::auth::Visibility,
    /// Requests per second per owner, when limited.
    rate: Option<rate::RateLimiter>,
    /// Extensions the node supports (and may require).
    extensions: Vec<crate::config::ExtensionConfig>,
    /// The extended card, set once the public card is built (when `extended-card` is on).
    extended_card: std::sync::OnceLock<a2ad_protocol::AgentCard>,
    /// On a wildcard `listen` with no `public-url`: the extended card of each address a
    /// request came to, built on first use (`extended_card.rs`).
    extended_cards_by_base: std::sync::OnceLock<crate::extended_card::CardsByBase>,
    /// The node's metrics (`GET /metrics`).
    metrics: Arc<crate::metrics::Metrics>,
    /// How the 0.1 dialect behaves (`dialect-01:`).
    dialect_01: crate::config::Dialect01Config,
    /// Streams are served (`streaming`); off, the streaming calls are refused in
    /// [`Core::execute`], whatever binding or dialect they came by.
    streaming: bool,
    /// Set once shutdown begins: readiness answers 503 from then on.
    draining: std::sync::atomic::AtomicBool,
    /// The admin API's operators (`admin:`); their tokens are refused on A2A calls.
    operators: Arc<crate::auth::operators::Operators>,
    /// When the node started (the admin status's uptime).
    started: std::time::Instant,
    /// The admin API's samples of the last hour (filled by the admin API's sampler, `admin/series.rs`).
    series: crate::metrics::series::Series,
}

/// What a [`Core`] is made of, as start-up assembles it.
pub struct CoreParts {
    pub rt: Arc<Runtime>,
    pub supervisor: Addr<Supervisor>,
    /// [`Supervisor::live_contexts`] of that supervisor.
    pub live_contexts: Arc<LiveContexts>,
    /// The webhook URL policy, when push notifications are on.
    pub push_policy: Option<Arc<crate::push::url_guard::UrlPolicy>>,
    /// Who is calling. With nothing configured, everyone is the anonymous owner.
    pub auth: crate::auth::Authenticator,
    /// Which owner a caller acts as (`tenancy.visibility`).
    pub visibility: crate::auth::Visibility,
    /// Requests per second per owner, when limited.
    pub rate: Option<rate::RateLimiter>,
    /// Extensions the node supports (and may require).
    pub extensions: Vec<crate::config::ExtensionConfig>,
    /// The node's metrics (`GET /metrics`).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// How the 0.1 dialect behaves (`dialect-01:`).
    pub dialect_01: crate::config::Dialect01Config,
    /// Streams are served (`streaming`); off, the streaming calls are refused in
    /// [`Core::execute`], whatever binding or dialect they came by.
    pub streaming: bool,
    /// The admin API's operators (`admin:`).
    pub operators: Arc<crate::auth::operators::Operators>,
}

impl Core {
    pub fn new(parts: CoreParts) -> Core {
        let CoreParts {
            rt,
            supervisor,
            live_contexts,
            push_policy,
            auth,
            visibility,
            rate,
            extensions,
            metrics,
            dialect_01,
            streaming,
            operators,
        } = parts;
        Core {
            rt,
            supervisor,
            live_contexts,
            push_policy,
            auth,
            visibility,
            rate,
            extensions,
            extended_card: std::sync::OnceLock::new(),
            extended_cards_by_base: std::sync::OnceLock::new(),
            metrics,
            dialect_01,
            streaming,
            draining: std::sync::atomic::AtomicBool::new(false),
            operators,
            started: std::time::Instant::now(),
            series: crate::metrics::series::Series::default(),
        }
    }

    /// Shutdown has begun: readiness answers 503 from now on.
    pub fn start_draining(&self) {
        self.draining.store(true, std::sync::atomic::Ordering::Release);
    }

    /// The actor runtime: the store, group commit, agents and settings.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// The supervisor of the context actors.
    pub fn supervisor(&self) -> &Addr<Supervisor> {
        &self.supervisor
    }

    /// The authenticator (for the bindings' challenges and the card's schemes).
    pub fn auth(&self) -> &crate::auth::Authenticator {
        &self.auth
    }

    /// The admin API's operators.
    pub fn operators(&self) -> &Arc<crate::auth::operators::Operators> {
        &self.operators
    }

    /// How long the node has run.
    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// The admin API's series of samples.
    pub fn series(&self) -> &crate::metrics::series::Series {
        &self.series
    }

    /// The node's metrics.
    pub fn metrics(&self) -> &Arc<crate::metrics::Metrics> {
        &self.metrics
    }

    /// How the 0.1 dialect behaves.
    pub fn dialect_01(&self) -> &crate::config::Dialect01Config {
        &self.dialect_01
    }

    /// Sets the extended card once the public card is built (the first call wins).
    pub fn set_extended_card(&self, card: a2ad_protocol::AgentCard) {
        let _ = self.extended_card.set(card);
    }

    /// On a wildcard listener, builds the extended card of each base URL a request came
    /// to (`http://<local address>`), so that it never names `0.0.0.0` (the first call
    /// wins).
    pub fn set_extended_cards_by_base(&self, build: crate::extended_card::CardBuilder) {
        let _ = self.extended_cards_by_base.set(crate::extended_card::CardsByBase::new(build));
    }

    /// The extended card for a request that came to `base` (see [`Call::came_to`]): that
    /// address's on a wildcard listener, else the node's one card; `None` when the node
    /// offers none.
    fn extended_card_at(&self, base: Option<&str>) -> Option<a2ad_protocol::AgentCard> {
        let by_base = self.extended_cards_by_base.get().zip(base);
        by_base.and_then(|(cards, base)| cards.for_base(base)).or_else(|| self.extended_card.get().cloned())
    }
}

impl Core {
    /// A stream that sends each event once it is durable (`durable_stream.rs`).
    fn durable_stream(&self, subscription: a2ad_actors::messages::Subscription) -> a2ad_actors::messages::Subscription {
        send_when_durable(subscription, self.rt.settings.stream_buffer)
    }

    /// Readiness (`GET /ready`): whether the node takes work. Not while it drains, nor
    /// while the store refuses writes (the last attempt to make a write durable failed;
    /// the log retries with the next commit and readiness returns with it).
    pub fn ready(&self) -> Result<(), &'static str> {
        if self.draining.load(std::sync::atomic::Ordering::Acquire) {
            return Err("draining");
        }
        if self.rt.commit.is_failing() {
            return Err("store-unavailable");
        }
        Ok(())
    }

    /// The owner the caller acts as, from its credentials (any binding), sent from
    /// `client`, whose failed attempts are limited (`auth.throttle`): its identity, made
    /// an owner by [`Core::owner_of`]. A refusal is 401, except those
    /// [`crate::auth::AuthError::rate_limited`] makes RATE_LIMITED.
    pub async fn authenticate(
        &self,
        credentials: &crate::auth::RequestCredentials,
        client: crate::auth::ClientAddr,
    ) -> Result<Owner, crate::auth::AuthError> {
        if !self.auth.enabled() {
            // An operator token is no tenant credential, even where anyone may call. With
            // authentication on it fails as any unknown token does (it may equal none:
            // [`crate::auth::operators::Operators::new`]), so the check costs nothing there.
            if self.operators.is_operator_credential(credentials.authorization.as_deref()) {
                return Err(crate::auth::AuthError::Invalid);
            }
            return Ok(self.owner_of(Owner::anonymous()));
        }
        Ok(self.owner_of(self.auth.authenticate(credentials, client).await?))
    }

    /// The owner a caller known as `identity` acts as (`tenancy.visibility`, see
    /// [`crate::auth::Visibility`]): every caller's owner is made here, so that tenant
    /// isolation is decided in one place and enforced by the store's [`Scope`].
    pub fn owner_of(&self, identity: Owner) -> Owner {
        self.visibility.owner_of(identity)
    }

    /// Counts a request against the caller's rate limit.
    pub fn admit(&self, owner: &Owner) -> Result<(), A2aError> {
        self.rate.as_ref().map_or(Ok(()), |rate| rate.admit(owner))
    }

    /// Sends `msg` to the actor of `key`, starting it if needed: a running actor is found
    /// in the live contexts, and only a start asks the supervisor. An actor evicted between
    /// routing and delivery is routed again once.
    pub(crate) async fn call<M>(&self, key: &ContextKey, msg: M) -> Result<M::Result, A2aError>
    where
        M: Message + Send + Clone + 'static,
        M::Result: Send,
        ContextActor: Handler<M>,
    {
        for _ in 0..2 {
            let addr = match self.live_contexts.find(key)? {
                Some(running) => running,
                None => {
                    let route = self.supervisor.send(Route { key: key.clone() });
                    route.await.map_err(|_| A2aError::from(RuntimeError::ShuttingDown))??
                }
            };
            match addr.send(msg.clone()).await {
                Ok(result) => return Ok(result),
                Err(MailboxError::Closed) => continue,
                Err(MailboxError::Timeout) => break,
            }
        }
        Err(RuntimeError::ContextUnavailable.into())
    }

    /// The caller's task, or TaskNotFound: another owner's task is never revealed (the
    /// store reads it by owner and id together, see [`Scope`]).
    /// Read through the store's seam: on Redis the HTTP worker awaits the answer, it does
    /// not wait for it.
    pub(crate) async fn owned_task(&self, owner: &Owner, task_id: &str) -> Result<TaskRecord, A2aError> {
        let read = self.rt.store.read_task(Scope::Owner(owner), task_id).await?;
        read.ok_or_else(|| A2aError::task_not_found(task_id))
    }
}

/// Logs the detail of an internal error under its correlation id; every binding calls it
/// on the errors it answers with, so the id a client reports finds the cause.
pub fn report(error: &A2aError) {
    if let Some(detail) = &error.detail {
        let correlation = error.metadata.get("correlationId").map(String::as_str).unwrap_or("");
        tracing::error!(correlation_id = correlation, detail = %detail, "internal error");
    }
}

/// A binding's `Last-Event-ID` (HTTP header or gRPC metadata, named `field`).
pub fn parse_last_event_id(field: &str, value: Option<&str>) -> Result<Option<u64>, A2aError> {
    value
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| A2aError::invalid_field(field, "must be a non-negative integer (an event id)"))
        })
        .transpose()
}

/// Checks a `historyLength`: absent, or zero or more.
fn check_history_length(field: &str, value: Option<i32>) -> Result<(), A2aError> {
    match value {
        Some(n) if n < 0 => Err(A2aError::invalid_field(field, "must not be negative")),
        _ => Ok(()),
    }
}

/// A task as a response carries it, with `historyLength` applied.
fn present(mut task: Task, history_length: Option<i32>) -> Task {
    task.truncate_history(history_length);
    task
}
