//! Push notifications on the node's side: the SSRF guard for webhook URLs, the HTTP
//! sender, and starting the push stack (config store, queues, worker, and with
//! `redis-streams` the outbox forwarder) from the config.

pub mod sender;
mod settings;
pub mod url_guard;

pub use settings::{PushConfig, PushQueueKind};

use a2ad_actors::push::{PushBoard, PushHooks, PushSettings, PushWorker};
use a2ad_storage::{
    Forwarder, ForwarderSettings, JobQueue, PushConfigStore, PushQueue, RedisFailure, RedisQueue, RedisQueueOptions,
    RedisStore, SecretKey, SledStore, StoreError, PUSH_OUTBOX_TREE,
};
use actix::prelude::*;
use std::path::Path;
use std::sync::Arc;
use url_guard::UrlPolicy;

/// The push stack of a node, before and after its worker starts.
pub struct PushStack {
    pub hooks: PushHooks,
    pub policy: Arc<UrlPolicy>,
    settings: PushSettings,
    timeout: std::time::Duration,
    /// The queue a step's jobs go into, with the step ([`PushStack::local_queue`]); none
    /// on the shared store, whose commit adds a step's jobs to the Redis queue itself.
    local: Option<PushQueue>,
    /// With `redis-streams`: the forwarder's own connection to the queue, and the outbox
    /// it empties (which holds only jobs whose step is durable: the store behind the log
    /// applies a step's jobs after its sync).
    forward: Option<Forward>,
}

struct Forward {
    target: Arc<dyn JobQueue>,
    outbox: Arc<dyn JobQueue>,
}

/// Why push could not start.
#[derive(Debug, thiserror::Error)]
pub enum PushSetupError {
    #[error("push: {0}")]
    Store(#[from] StoreError),
    #[error("push: {0}")]
    Config(String),
}

impl PushStack {
    /// Opens the config store (the key from `A2AD_PUSH_KEY`, else `push.key` in the data
    /// dir) and the queues. A Redis queue that cannot be reached now (refused, timed out)
    /// is a warning, not a failure: the node starts, and its pushes wait in the outbox
    /// until Redis answers. A bad setting (not a Redis URL, a refused login) stops it.
    pub fn open(config: &PushConfig, sled: &SledStore, data_dir: &Path) -> Result<PushStack, PushSetupError> {
        let configs = PushConfigStore::new(sled.tree("push_configs")?, push_key(data_dir)?);
        let (local, queue, forward) = match config.queue {
            PushQueueKind::LocalFile => {
                let local = PushQueue::new(sled.tree(a2ad_storage::PUSH_QUEUE_TREE)?);
                (local.clone(), Arc::new(local) as Arc<dyn JobQueue>, None)
            }
            PushQueueKind::RedisStreams => {
                let options = redis_options(config)?;
                let worker_queue = RedisQueue::open(options.clone())?;
                warn_if_unreachable(&worker_queue)?;
                let target = Arc::new(RedisQueue::open(options)?) as Arc<dyn JobQueue>;
                let local = PushQueue::new(sled.tree(PUSH_OUTBOX_TREE)?);
                let forward = Forward { target, outbox: Arc::new(local.clone()) };
                (local, Arc::new(worker_queue) as Arc<dyn JobQueue>, Some(forward))
            }
        };
        let outbox = forward.as_ref().map(|_| Arc::new(local.clone()) as Arc<dyn JobQueue>);
        Self::assemble(config, configs, queue, outbox, Some(local), forward)
    }

    /// The push stack of a node that keeps nothing (`store: memory`): the configs and the
    /// local queue in `scratch`, a temporary database, the configs sealed with a key made
    /// now (or `A2AD_PUSH_KEY`'s), which no file keeps.
    pub fn open_in_memory(config: &PushConfig, scratch: &SledStore) -> Result<PushStack, PushSetupError> {
        if config.queue != PushQueueKind::LocalFile {
            return Err(PushSetupError::Config(
                "with store: memory the push queue is in memory too: leave push-queue at local-file".into(),
            ));
        }
        let key = match std::env::var("A2AD_PUSH_KEY") {
            Ok(text) => SecretKey::from_base64(&text)?,
            Err(_) => SecretKey::generate()?,
        };
        let configs = PushConfigStore::new(scratch.tree("push_configs")?, key);
        let local = PushQueue::new(scratch.tree(a2ad_storage::PUSH_QUEUE_TREE)?);
        let queue = Arc::new(local.clone()) as Arc<dyn JobQueue>;
        Self::assemble(config, configs, queue, None, Some(local), None)
    }

    /// The push stack on the shared store (`store: redis`): the configs in the store's
    /// Redis, the jobs in a Redis Streams queue on the same server, which each step's
    /// commit script adds its jobs to (so no outbox: the commit is the durable write).
    /// Returns the stack and the queue's stream, for the store.
    pub fn open_shared(
        config: &PushConfig,
        store: &RedisStore,
        data_dir: &Path,
    ) -> Result<(PushStack, String), PushSetupError> {
        let configs = store.push_configs(push_key(data_dir)?);
        let mut shared = config.clone();
        match &shared.redis_url {
            Some(url) if *url != store.options().url => {
                return Err(PushSetupError::Config(
                    "with store: redis the push queue lives on the store's Redis: leave push-redis-url unset \
                     (or set it to redis.url)"
                        .into(),
                ))
            }
            _ => shared.redis_url = Some(store.options().url.clone()),
        }
        let options = shared_queue_options(&shared, store)?;
        let stream = options.stream.clone();
        let queue = Arc::new(RedisQueue::connect(options)?) as Arc<dyn JobQueue>;
        let mut stack = Self::assemble(config, configs, queue, None, None, None)?;
        // The store's commit script reads the task's configs (they are in its Redis).
        stack.hooks.configs_in_commit = true;
        Ok((stack, stream))
    }

    fn assemble(
        config: &PushConfig,
        configs: PushConfigStore,
        queue: Arc<dyn JobQueue>,
        outbox: Option<Arc<dyn JobQueue>>,
        local: Option<PushQueue>,
        forward: Option<Forward>,
    ) -> Result<PushStack, PushSetupError> {
        let policy = Arc::new(UrlPolicy::new(&config.allow).map_err(PushSetupError::Config)?);
        let settings = PushSettings {
            max_attempts: config.max_attempts,
            max_age: config.max_age,
            retry_base: config.retry_base,
            retry_max: config.retry_max,
            concurrency: config.concurrency,
            destination_concurrency: config.destination_concurrency,
            tenant_concurrency: config.tenant_concurrency,
            circuit_failures: config.circuit_failures,
            circuit_open: config.circuit_open,
            ..PushSettings::default()
        };
        let deliveries = Default::default();
        let hooks = PushHooks {
            configs,
            queue,
            outbox,
            terminal_only: config.terminal_only,
            deliveries,
            configs_in_commit: false,
        };
        Ok(PushStack { hooks, policy, settings, timeout: config.timeout, local, forward })
    }

    /// The queue the store puts a step's jobs into, in the step's own log record
    /// ([`a2ad_storage::TaskStore::commit`]): the local-file queue, or the outbox.
    pub fn local_queue(&self) -> Option<PushQueue> {
        self.local.clone()
    }

    /// Starts the delivery worker; its board shows its destinations to the metrics.
    pub fn start_worker(&self) -> (Addr<PushWorker>, PushBoard) {
        let sender = Arc::new(sender::HttpSender::new(Arc::clone(&self.policy), self.timeout));
        let worker =
            PushWorker::new(Arc::clone(&self.hooks.queue), self.hooks.configs.clone(), sender, self.settings.clone())
                .recording_to(self.hooks.deliveries.clone());
        let board = worker.board();
        (worker.start(), board)
    }

    /// Starts the forwarder from the outbox to the Redis queue, with `redis-streams`.
    pub fn start_forwarder(&self) -> Result<Option<Forwarder>, StoreError> {
        let Some(Forward { target, outbox }) = &self.forward else { return Ok(None) };
        Forwarder::start(Arc::clone(outbox), Arc::clone(target), ForwarderSettings::default()).map(Some)
    }
}

/// Logs a Redis that cannot be reached now (an outage the forwarder waits out); any other
/// failure is an error.
fn warn_if_unreachable(queue: &RedisQueue) -> Result<(), PushSetupError> {
    match queue.reach() {
        Err(StoreError::Redis {
            kind: RedisFailure::Refused | RedisFailure::TimedOut | RedisFailure::Dropped,
            message,
        }) => {
            tracing::warn!(error = %message, "the Redis push queue cannot be reached; pushes wait in the outbox until it can");
            Ok(())
        }
        other => Ok(other?),
    }
}

/// The push-secret key: `A2AD_PUSH_KEY`, else `push.key` in the data dir (created on
/// first use). Nodes sharing a store must share the key (set the variable on each).
pub fn push_key(data_dir: &Path) -> Result<SecretKey, PushSetupError> {
    Ok(match std::env::var("A2AD_PUSH_KEY") {
        Ok(text) => SecretKey::from_base64(&text)?,
        Err(_) => SecretKey::load_or_create(data_dir)?,
    })
}

/// The Redis queue's settings, from the config.
fn redis_options(config: &PushConfig) -> Result<RedisQueueOptions, PushSetupError> {
    let url = config.redis_url.clone().ok_or_else(|| PushSetupError::Config("push-redis-url is not set".into()))?;
    let mut options = RedisQueueOptions {
        url,
        stream: config.stream.clone(),
        retry_key: config.retry_key.clone(),
        dead_stream: config.dead_stream.clone(),
        group: config.consumer_group.clone(),
        lease_timeout: config.lease_timeout,
        ..RedisQueueOptions::default()
    };
    if let Some(name) = &config.consumer_name {
        options.consumer = name.clone();
    }
    Ok(options)
}

/// The options of the queue on the shared store: on its Redis (one server or the cluster),
/// in its shards, so that each step's commit adds its jobs in its own hash slot.
fn shared_queue_options(config: &PushConfig, store: &RedisStore) -> Result<RedisQueueOptions, PushSetupError> {
    let mut options = redis_options(config)?;
    options.topology = store.topology();
    options.shards = store.queue_keys(&options);
    Ok(options)
}

/// The queue of the shared store `store`, for the admin commands (connected to).
pub fn open_shared_queue(config: &PushConfig, store: &RedisStore) -> Result<Arc<dyn JobQueue>, PushSetupError> {
    let mut shared = config.clone();
    shared.redis_url = Some(store.options().url.clone());
    Ok(Arc::new(RedisQueue::connect(shared_queue_options(&shared, store)?)?))
}

/// The queue `push-queue` names, for the admin commands: the local-file queue lives in
/// `sled` (the node's store); the Redis queue is connected to (an unreachable Redis is an
/// error here).
pub fn open_queue(config: &PushConfig, sled: Option<&SledStore>) -> Result<Arc<dyn JobQueue>, PushSetupError> {
    match config.queue {
        PushQueueKind::LocalFile => {
            let sled = sled.ok_or_else(|| PushSetupError::Config("the local-file queue needs the data dir".into()))?;
            Ok(Arc::new(PushQueue::new(sled.tree(a2ad_storage::PUSH_QUEUE_TREE)?)))
        }
        PushQueueKind::RedisStreams => Ok(Arc::new(RedisQueue::connect(redis_options(config)?)?)),
    }
}
