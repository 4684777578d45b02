//! `a2ad admin move-to-redis`: copies a stopped sled node's tasks (with their retained
//! events), sessions and push configs into the shared store at `redis.url`, so that the
//! node (and others) can go on with `store: redis` (docs/cluster.md).
//!
//! The data dir is opened as the node opens it: the write-ahead log's tail is applied
//! first, so a node that crashed loses nothing it acknowledged in the move. The copy can
//! be run again after a failure: a task already in Redis at the same generation or a later
//! one is left alone (a later one is newer than the copy), a session already in Redis is
//! kept, and push configs are written again as they are. Push jobs still queued in the
//! data dir are not moved (the command says how many): let the node deliver them first.

use super::{open_store, AdminError};
use crate::config::{Config, PushQueueKind};
use a2ad_storage::wal::WalOptions;
use a2ad_storage::TaskStoreExt;
use a2ad_storage::{PushConfigStore, PushQueue, RedisStore, Scope, TaskStore, WalStore};
use std::sync::Arc;

/// What the move did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MoveReport {
    pub tasks: usize,
    /// Tasks Redis already had at this generation or a later one.
    pub tasks_skipped: usize,
    pub events: usize,
    pub sessions: usize,
    pub sessions_skipped: usize,
    pub push_configs: usize,
    /// Push jobs left in the data dir's queue.
    pub queued_jobs: usize,
}

impl MoveReport {
    pub fn to_text(&self) -> String {
        format!(
            "moved {} task(s) with {} event(s), {} session(s), {} push config(s); \
             already in Redis: {} task(s), {} session(s)\n{}",
            self.tasks,
            self.events,
            self.sessions,
            self.push_configs,
            self.tasks_skipped,
            self.sessions_skipped,
            match self.queued_jobs {
                0 => String::new(),
                n => format!("not moved: {n} push job(s) still queued in the data dir (start the node on sled to deliver them)\n"),
            }
        )
    }
}

/// Moves a stopped node's data dir into the Redis store of `config.redis`.
pub fn run(config: &Config) -> Result<MoveReport, AdminError> {
    if config.redis.url.is_empty() {
        return Err(AdminError::Remote("redis.url is not set: the move needs the shared store's server".into()));
    }
    let sled = open_store(config)?;
    let configs = sled.tree("push_configs").map_err(AdminError::Queue)?;
    let queue_tree = match config.push.queue {
        PushQueueKind::LocalFile => a2ad_storage::PUSH_QUEUE_TREE,
        PushQueueKind::RedisStreams => a2ad_storage::PUSH_OUTBOX_TREE,
    };
    let queue = PushQueue::new(sled.tree(queue_tree).map_err(AdminError::Queue)?);
    let sessions = sled.session_keys().map_err(AdminError::Queue)?;
    let wal_dir = config.data_dir.join(a2ad_storage::WAL_DIR);
    let (source, _) = WalStore::open(Arc::new(sled), Some(queue.clone()), &wal_dir, WalOptions::default())?;
    let target = RedisStore::connect(config.redis.store_options())?.with_event_retention(config.event_retention);
    let mut report = MoveReport { queued_jobs: a2ad_storage::JobQueue::depth(&queue)?, ..MoveReport::default() };
    move_tasks(&source, &target, &mut report)?;
    move_sessions(&source, &target, &sessions, config.session_history_limit, &mut report)?;
    let key = || crate::push::push_key(&config.data_dir);
    let (from, to) = (PushConfigStore::new(configs, key()?), target.push_configs(key()?));
    for task_id in from.task_ids()? {
        for stored in from.list(Scope::Node, &task_id)? {
            to.put(&stored.owner, &stored.config)?;
            report.push_configs += 1;
        }
    }
    a2ad_storage::GroupCommit::over_log(Arc::new(source)).close();
    Ok(report)
}

/// Every task with its retained events; a task Redis has at this generation or later is
/// skipped, and only events above Redis's generation are sent (a move run again).
fn move_tasks(source: &dyn TaskStore, target: &RedisStore, report: &mut MoveReport) -> Result<(), AdminError> {
    let mut ids = Vec::new();
    source.visit_tasks(&mut |entry| ids.push(entry.task_id))?;
    for id in ids {
        let Some(record) = source.get_task(Scope::Node, &id)? else { continue };
        let stored = target.task_version(&id)?.map(|(generation, _)| generation);
        if stored.is_some_and(|generation| generation >= record.last_event_seq) {
            report.tasks_skipped += 1;
            continue;
        }
        let after = stored.unwrap_or(0);
        let events = source.events_after(Scope::Node, &id, after, usize::MAX)?;
        target.put_task(&record, &events)?;
        report.tasks += 1;
        report.events += events.len();
    }
    Ok(())
}

/// Every session with its last `limit` messages; one Redis already has is kept.
fn move_sessions(
    source: &dyn TaskStore,
    target: &RedisStore,
    keys: &[a2ad_storage::ContextKey],
    limit: usize,
    report: &mut MoveReport,
) -> Result<(), AdminError> {
    for key in keys {
        if target.get_session(key, 0)?.is_some() {
            report.sessions_skipped += 1;
            continue;
        }
        let Some(session) = source.get_session(key, limit)? else { continue };
        let history: Vec<_> = session.history.iter().cloned().collect();
        target.put_session(&session, &history, limit)?;
        report.sessions += 1;
    }
    Ok(())
}
