//! Opening the task store a node runs on: sled behind its write-ahead log in the data dir
//! (`store: sled`, the default), the shared Redis store (`store: redis`), or memory
//! (`store: memory`).

use super::StartupError;
use crate::config::{Config, StoreKind};
use crate::metrics::{MeteredQueue, Metrics};
use crate::os_error::io_cause;
use crate::push::PushStack;
use a2ad_actors::feed::NodeFeed;
use a2ad_storage::wal::WalOptions;
use a2ad_storage::{
    GroupCommit, MemoryStore, PushQueue, RedisStore, SledStore, StoreError, TaskStore, WalStore, WAL_DIR,
};
use std::sync::Arc;

/// The store a node runs on, with what commits it.
pub(super) struct OpenedStore {
    /// Counted by the metrics: built with them as its state observer, and seeded.
    pub store: Arc<dyn TaskStore>,
    pub commit: GroupCommit,
    /// sled behind its log: checkpointed in the background once recovery ran.
    pub journal: Option<Arc<WalStore>>,
    pub push: Option<PushStack>,
}

/// Opens the store the config names; each durable step is offered to `feed`, and each
/// task's change of state to `metrics`, whose per-state counts are seeded from the store
/// here.
pub(super) fn open(config: &Config, metrics: &Arc<Metrics>, feed: &Arc<NodeFeed>) -> Result<OpenedStore, StartupError> {
    let opened = match config.store {
        StoreKind::Sled => open_local(config, metrics, feed),
        StoreKind::Redis => open_shared(config, metrics, feed),
        StoreKind::Memory => open_memory(config, metrics, feed),
    }?;
    metrics.count_stored_tasks(opened.store.as_ref()).map_err(|e| match config.store {
        StoreKind::Redis => StartupError::SharedStore(e.to_string()),
        _ => store_error(config)(e),
    })?;
    Ok(opened)
}

/// Everything in memory: the tasks in a [`MemoryStore`], the push configs and queue in a
/// temporary sled database (in `/dev/shm` where there is one, removed when the node
/// stops), sealed with a key that lives as long (unless `A2AD_PUSH_KEY` names one).
/// Nothing is durable, so a step is answered once it is in memory.
fn open_memory(config: &Config, metrics: &Arc<Metrics>, feed: &Arc<NodeFeed>) -> Result<OpenedStore, StartupError> {
    tracing::warn!(
        "store: memory: tasks, sessions and push configs live in this process only and are lost when it stops"
    );
    create_data_dir(config)?;
    let mut memory = MemoryStore::new().with_event_retention(config.event_retention);
    let mut push = None;
    if config.push.enabled {
        let scratch = SledStore::temporary().map_err(store_error(config))?;
        let mut stack = PushStack::open_in_memory(&config.push, &scratch)?;
        let queue =
            MeteredQueue::new(Arc::clone(&stack.hooks.queue), Arc::clone(metrics)).map_err(store_error(config))?;
        stack.hooks.queue = Arc::new(queue);
        if let Some(local) = stack.local_queue() {
            memory = memory.with_push_queue(Arc::new(local));
        }
        push = Some(stack);
    }
    let memory = memory.with_listener(Arc::clone(feed) as _).with_state_changes(Arc::clone(metrics) as _);
    let store: Arc<dyn TaskStore> = Arc::new(memory);
    Ok(OpenedStore { commit: GroupCommit::immediate(Arc::clone(&store)), store, journal: None, push })
}

fn store_error(config: &Config) -> impl Fn(StoreError) -> StartupError + '_ {
    |cause| StartupError::Store { path: config.data_dir.display().to_string(), cause }
}

/// sled in the data dir, behind the write-ahead log, with the push stack on its trees.
fn open_local(config: &Config, metrics: &Arc<Metrics>, feed: &Arc<NodeFeed>) -> Result<OpenedStore, StartupError> {
    let sled = open_sled(config)?;
    let mut push = match config.push.enabled {
        true => Some(PushStack::open(&config.push, &sled, &config.data_dir)?),
        false => None,
    };
    if let Some(push) = push.as_mut() {
        let queue =
            MeteredQueue::new(Arc::clone(&push.hooks.queue), Arc::clone(metrics)).map_err(store_error(config))?;
        push.hooks.queue = Arc::new(queue);
    }
    let local_queue = push.as_ref().and_then(PushStack::local_queue);
    let journal = open_journal(config, sled, local_queue, metrics).map_err(store_error(config))?;
    journal.on_durable(Arc::clone(feed) as _);
    Ok(OpenedStore {
        store: Arc::clone(&journal) as _,
        commit: GroupCommit::over_log(Arc::clone(&journal)),
        journal: Some(journal),
        push,
    })
}

/// The shared store in Redis: checked for settings that would lose or evict acknowledged
/// writes, then opened (the data dir keeps only the node's own files).
fn open_shared(config: &Config, metrics: &Arc<Metrics>, feed: &Arc<NodeFeed>) -> Result<OpenedStore, StartupError> {
    create_data_dir(config)?;
    let redis_failed = |e: StoreError| StartupError::SharedStore(e.to_string());
    let redis = RedisStore::connect(config.redis.store_options()).map_err(redis_failed)?;
    super::redis_settings::check(&redis, config.redis.allow_weak_persistence)?;
    let mut redis = redis.with_event_retention(config.event_retention).with_state_changes(Arc::clone(metrics) as _);
    let mut push = None;
    if config.push.enabled {
        let (mut stack, stream) = PushStack::open_shared(&config.push, &redis, &config.data_dir)?;
        let queue = MeteredQueue::new(Arc::clone(&stack.hooks.queue), Arc::clone(metrics)).map_err(redis_failed)?;
        stack.hooks.queue = Arc::new(queue);
        redis = redis.with_push_stream(stream);
        push = Some(stack);
    }
    let redis = Arc::new(redis);
    redis.on_durable(Arc::clone(feed) as _);
    let store: Arc<dyn TaskStore> = redis;
    Ok(OpenedStore { commit: GroupCommit::immediate(Arc::clone(&store)), store, journal: None, push })
}

/// Creates the data dir (`0700`, the node's files in it `0600`: see
/// [`crate::private_files`]; an existing one that others can read is warned about) and
/// opens the sled store in it (for use behind the log), its page cache bounded by
/// `store-cache-size`.
fn open_sled(config: &Config) -> Result<SledStore, StartupError> {
    crate::private_files::warn_if_exposed(&config.data_dir);
    create_data_dir(config)?;
    Ok(SledStore::open_behind_log_with_cache(&config.data_dir, config.store_cache_size)
        .map_err(|e| data_dir_failed(config, super::failure::store_cause(&e)))?
        .with_event_retention(config.event_retention))
}

/// Creates the data dir `0700` (if need be), every file the node writes in it `0600`.
fn create_data_dir(config: &Config) -> Result<(), StartupError> {
    crate::private_files::make_files_private();
    crate::private_files::create_private_dir(&config.data_dir).map_err(|e| data_dir_failed(config, io_cause(&e)))
}

fn data_dir_failed(config: &Config, cause: String) -> StartupError {
    StartupError::DataDir { path: config.data_dir.display().to_string(), cause }
}

/// Opens the write-ahead log in the data dir in front of `sled` and replays its tail
/// (with push, into the local queue a step's jobs go to, so jobs come back with their
/// events); from then on, each task's change of state is told to `metrics`.
fn open_journal(
    config: &Config,
    sled: SledStore,
    local_queue: Option<PushQueue>,
    metrics: &Arc<Metrics>,
) -> Result<Arc<WalStore>, StoreError> {
    let dir = config.data_dir.join(WAL_DIR);
    let options = WalOptions::default().segment_size(config.wal_segment_size as u64);
    let (journal, report) = WalStore::open(Arc::new(sled), local_queue, &dir, options)?;
    if let Some(bytes) = report.torn_tail_bytes {
        tracing::warn!(bytes, "write-ahead log: dropped a record a crash left half-written");
    }
    if report.replayed > 0 {
        tracing::info!(records = report.replayed, after = report.checkpoint, "write-ahead log replayed");
    }
    Ok(Arc::new(journal.with_state_changes(Arc::clone(metrics) as _)))
}
