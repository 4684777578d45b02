//! Operator commands that work on a node's stores: `a2ad push dead list|retry`,
//! `a2ad admin stats` ([`stats`]), `a2ad admin compact` ([`compact`]) and
//! `a2ad admin move-to-redis` ([`move_to_redis`]).
//!
//! The data dir is sled's, which one process at a time may open: run these while the node
//! is stopped (the node delivers revived jobs when it starts). With the redis-streams
//! queue, `push dead` works while nodes run. `admin stats` and `push dead` also work
//! against a running node with `--url` ([`remote`]: the admin API).

pub mod compact;
pub mod move_to_redis;
pub mod remote;
pub mod stats;

pub use a2ad_node::admin::{AdminConfig, AdminListen, AdminTokenConfig, Role};

use crate::config::{Config, PushQueueKind, StoreKind};
use crate::push::{open_queue, PushSetupError};
use a2ad_node::admin::dead::DeadLetter;
use a2ad_storage::{JobQueue, SledStore};
use std::sync::Arc;

/// Why an admin command failed. Shown to the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("cannot open the data dir {0}: {1}")]
    Store(String, String),
    #[error(transparent)]
    Push(#[from] PushSetupError),
    #[error("push: {0}")]
    Queue(#[from] a2ad_storage::StoreError),
    #[error("there is no task store in {0} (check --data-dir or the config's data-dir)")]
    NoStore(String),
    #[error("store: memory keeps its tasks and push queue in the running node only: there is nothing on disk to read (ask the node: the admin API)")]
    InMemory,
    #[error(transparent)]
    Wal(#[from] a2ad_storage::wal::WalError),
    /// The online form: the node could not be reached, or refused.
    #[error("{0}")]
    Remote(String),
}

/// `a2ad admin repair`: cuts the data dir's write-ahead log at its first bad record
/// ([`a2ad_storage::wal::Wal::repair`]) and says what it did. Run it with the node
/// stopped; a sound log is left alone.
pub fn repair(config: &Config) -> Result<String, AdminError> {
    let dir = config.data_dir.join(a2ad_storage::WAL_DIR);
    if !dir.is_dir() {
        return Err(AdminError::NoStore(dir.display().to_string()));
    }
    let report = a2ad_storage::wal::Wal::repair(&dir)?;
    let Some(cut) = report.cut else {
        return Ok(format!("the write-ahead log is sound (last record {}); nothing changed\n", report.last_lsn));
    };
    Ok(format!(
        "cut {} at byte {} ({}): {} bytes dropped, {} later segment(s) removed; the log now ends at record {}\n",
        cut.segment.display(),
        cut.offset,
        cut.reason,
        report.dropped_bytes,
        report.removed_segments.len(),
        report.last_lsn
    ))
}

/// Opens the node's task store, saying what to do when the node still holds it.
pub fn open_store(config: &Config) -> Result<SledStore, AdminError> {
    if config.store == StoreKind::Memory {
        return Err(AdminError::InMemory);
    }
    if !config.data_dir.join("conf").exists() {
        return Err(AdminError::NoStore(config.data_dir.display().to_string()));
    }
    SledStore::open(&config.data_dir).map_err(|e| store_error(config, e))
}

/// A store that will not open: "the node is still running" when another process holds
/// its lock ([`a2ad_storage::StoreError::Locked`]), else the store's error.
fn store_error(config: &Config, error: a2ad_storage::StoreError) -> AdminError {
    let reason = match error {
        a2ad_storage::StoreError::Locked => {
            "another process holds it (is the node still running? stop it first)".to_owned()
        }
        other => other.to_string(),
    };
    AdminError::Store(config.data_dir.display().to_string(), reason)
}

/// The push queue the config names: the shared store's, with `store: redis`. A remote
/// queue needs no local store.
pub fn push_queue(config: &Config) -> Result<Arc<dyn JobQueue>, AdminError> {
    if config.store == StoreKind::Memory {
        return Err(AdminError::InMemory);
    }
    if config.store == StoreKind::Redis {
        let store = a2ad_storage::RedisStore::open(config.redis.store_options())?;
        return Ok(crate::push::open_shared_queue(&config.push, &store)?);
    }
    if config.push.queue != PushQueueKind::LocalFile {
        return Ok(open_queue(&config.push, None)?);
    }
    let sled = SledStore::open(&config.data_dir).map_err(|e| store_error(config, e))?;
    Ok(open_queue(&config.push, Some(&sled))?)
}

/// One line per dead job: id, attempts, when it died, the receiver's host (never the
/// URL's path or query), the last HTTP status, and why (offline and online alike); `-`
/// for what a job does not know.
pub fn format_dead(jobs: &[DeadLetter]) -> String {
    let mut out = String::new();
    for dead in jobs {
        let died = a2ad_protocol::timestamp::format(&a2ad_protocol::timestamp::from_millis(dead.died_ms));
        let host = dead.host.as_deref().unwrap_or("-");
        let status = dead.last_status.map_or_else(|| "-".to_owned(), |s| s.to_string());
        out.push_str(&format!(
            "{}\tattempts={}\tdied={}\thost={host}\tstatus={status}\t{}\n",
            dead.id, dead.attempts, died, dead.reason
        ));
    }
    out
}

/// The dead jobs of a stopped node's queue, as the admin API shows them.
pub fn dead_letters(queue: &dyn JobQueue) -> Result<Vec<DeadLetter>, AdminError> {
    Ok(queue.dead()?.iter().map(DeadLetter::from).collect())
}
