//! The embedded sled store.
//!
//! Two trees, each written with atomic batches (cheaper than sled transactions, and atomic
//! all the same within one tree), or, behind the write-ahead log, key by key in the same
//! order (`writes.rs`: there the log record makes a step atomic):
//!
//! `tasks`, with one key space per prefix byte:
//! * `t` ‖ task id → stamp ‖ [`TaskRecord`] as JSON ‖ the events of the step that wrote
//!   it (`task_value.rs`), where the 9-byte stamp is the status time (ms, BE) and the
//!   state number, so that an update finds the index entries it replaces without decoding
//!   the old record.
//! * `e` ‖ task id ‖ sequence (BE) → one event (`StreamResponse` JSON) of the task's event
//!   log, but for the newest step's, which its record carries (`events.rs`); only the last
//!   `event_retention` are kept.
//!
//! The task indexes (by owner and status time, by owner and context, the active tasks) and
//! the counters behind `totalSize` are not in sled: they are held in memory, built from
//! the `t` values at open (`task_index.rs`), since each sled key a step inserts costs more
//! than the key's bytes.
//!
//! `sessions` (`sessions.rs`):
//! * `m` ‖ owner ‖ context id → [`SessionRecord`] metadata as JSON.
//! * `H` ‖ owner ‖ context id ‖ first sequence ‖ count → one turn's messages, with the
//!   metadata after them; the chunks holding the last `history_limit` are kept. A turn
//!   whose messages end its task's history has no chunk: the task's value lists it.
//! * `P` ‖ owner ‖ context id → where the session was last pruned.
//!
//! The default tree holds `format` → the store's format version; opening a store from
//! before it, or of an older version, migrates it (`migrations.rs`, the one place that
//! knows older layouts).
//!
//! Retention removes a task with its keys at once ([`TaskStore::delete_task`]),
//! and a context's session once the context has no task left. A Message-only reply
//! writes its session and removes its task in one sled transaction across both trees
//! ([`TaskStore::settle_reply`]), the one write that spans them.
//!
//! A task is written only by its context's actor (and by recovery before serving), so
//! reading the old stamp, applying the batch and then moving the task's index entries
//! cannot race with another writer of that task.

mod compact;
mod durable;
mod events;
mod index;
mod migrations;
mod removal;
mod sessions;
mod settle;
mod task_index;
mod task_value;
mod writes;

pub use compact::{compact, sled_files_size, tree_size, CompactReport};

use crate::{
    ContextKey, LoggedEvent, Scope, SessionRecord, StoreCounts, StoreError, TaskEntry, TaskPage, TaskQuery, TaskRecord,
    TaskStore, TaskStoreExt,
};
use a2ad_protocol::{Message, TaskState};
use index::{Prefix, Stamp};
use std::path::Path;
pub(crate) use task_value::HeldTurn;
use writes::{Atomicity, Writes};

/// The sled-backed [`TaskStore`].
pub struct SledStore {
    db: sled::Db,
    /// The directory sled's files are in (for the `fsync`s of [`TaskStore::flush`]).
    dir: std::path::PathBuf,
    tasks: sled::Tree,
    sessions: sled::Tree,
    event_retention: u64,
    /// The task indexes and counters, in memory (`task_index.rs`).
    index: task_index::TaskIndex,
    /// Key by key behind the write-ahead log, else atomic batches (`writes.rs`).
    atomicity: Atomicity,
}

/// sled reports a lock held by another process as an I/O error without an OS error code,
/// only a message: its lock (on the `db` file) is tried once more to name that case.
fn locked_or_engine(dir: &Path, error: sled::Error) -> StoreError {
    let no_os_code = matches!(&error, sled::Error::Io(e) if e.raw_os_error().is_none());
    match no_os_code && lock_is_held(&dir.join("db")) {
        true => StoreError::Locked,
        false => error.into(),
    }
}

/// Whether another open file holds the exclusive lock sled takes on `file`. A lock got
/// here is released at once, when the file closes.
fn lock_is_held(file: &Path) -> bool {
    use fs2::FileExt;
    let contended = fs2::lock_contended_error().raw_os_error();
    std::fs::File::open(file).is_ok_and(|f| f.try_lock_exclusive().is_err_and(|e| e.raw_os_error() == contended))
}

/// The size of sled's log segments for a new store: sled's default, 512 KiB. 8 MiB was
/// tried (fewer buffer writes) and reverted: sled keeps a value larger than a quarter
/// segment in a blob file of its own and anything smaller inline in its B-tree node, so
/// with 8 MiB a task record of up to 2 MiB (a long streamed artifact) was copied and
/// rewritten with its node on every update, and a fire-hose stream of 60,000 events took
/// 38 s instead of 1.2 s. A store keeps the size it was made with (sled refuses another).
const SEGMENT_SIZE: usize = 512 * 1024;

/// The segment size a store in `dir` was created with (sled refuses to open it with
/// another one), or [`SEGMENT_SIZE`] for a new store. sled keeps it in `conf`: `key:
/// value` lines, then a binary checksum (so the file is not UTF-8 as a whole).
pub(crate) fn segment_size_for(dir: &Path) -> usize {
    let conf = std::fs::read(dir.join("conf")).unwrap_or_default();
    String::from_utf8_lossy(&conf)
        .lines()
        .find_map(|line| line.strip_prefix("segment_size:"))
        .and_then(|size| size.trim().parse().ok())
        .unwrap_or(SEGMENT_SIZE)
}

/// How often sled's own flusher runs behind the log, and with it its segment cleaner
/// (see [`SledStore::open_behind_log`]); the cleaner spends at most half of it.
pub const GC_EVERY_MS: u64 = 500;

/// sled's page cache budget unless configured otherwise (the node's `store-cache-size`).
/// sled counts it in the serialized bytes of the cached pages, so it bounds the cache,
/// not sled's memory: under writes sled holds much more (BENCHMARKS.md, "Soak").
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

impl SledStore {
    /// Opens (or creates) the store in `dir`, first finishing a compaction that was
    /// interrupted there. sled flushes its own buffers every second (what the admin
    /// commands, which write without a log in front, rely on).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with(dir, Some(1000), Atomicity::Batch, DEFAULT_CACHE_BYTES)
    }

    /// Opens the store for use behind the write-ahead log. Its writes are applied key by
    /// key (the log record makes each step atomic: `writes.rs`); the checkpointer flushes
    /// it durably (with [`TaskStore::flush`]) on its own schedule.
    ///
    /// sled's periodic flusher stays on all the same, every `GC_EVERY_MS`: it is the
    /// only caller of sled's segment cleaner (`PageCache::attempt_gc`, which moves the
    /// live pages out of mostly-dead segments so they can be reused). With it off, as it
    /// once was here, the `db` file never gave back the space of removed or rewritten
    /// tasks: a soak with flat task counts grew it by ~530 MiB a minute (BENCHMARKS.md,
    /// issue 17 point 8).
    pub fn open_behind_log(dir: &Path) -> Result<Self, StoreError> {
        Self::open_behind_log_with_cache(dir, DEFAULT_CACHE_BYTES)
    }

    /// [`SledStore::open_behind_log`] with a page cache of at most `cache_bytes`.
    pub fn open_behind_log_with_cache(dir: &Path, cache_bytes: usize) -> Result<Self, StoreError> {
        Self::open_with(dir, Some(GC_EVERY_MS), Atomicity::Log, cache_bytes)
    }

    /// A store in a temporary sled database (in `/dev/shm` where there is one), removed
    /// when its last handle is dropped: the trees of a node that keeps nothing
    /// (`store: memory`, whose push configs and queue live in it).
    pub fn temporary() -> Result<Self, StoreError> {
        let db = sled::Config::new().temporary(true).mode(sled::Mode::HighThroughput).open()?;
        Ok(SledStore {
            tasks: db.open_tree("tasks")?,
            sessions: db.open_tree("sessions")?,
            db,
            dir: std::path::PathBuf::new(),
            event_retention: crate::DEFAULT_EVENT_RETENTION as u64,
            index: task_index::TaskIndex::default(),
            atomicity: Atomicity::Batch,
        })
    }

    fn open_with(
        dir: &Path,
        flush_every_ms: Option<u64>,
        atomicity: Atomicity,
        cache_bytes: usize,
    ) -> Result<Self, StoreError> {
        compact::recover(dir)?;
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(cache_bytes as u64)
            .segment_size(segment_size_for(dir))
            .flush_every_ms(flush_every_ms)
            .open()
            .map_err(|e| locked_or_engine(dir, e))?;
        let tasks = db.open_tree("tasks")?;
        let sessions = db.open_tree("sessions")?;
        migrations::run(&migrations::Trees { db: &db, tasks: &tasks, sessions: &sessions }, !db.was_recovered())?;
        let index = task_index::TaskIndex::build(&tasks, &sessions)?;
        Ok(SledStore {
            tasks,
            sessions,
            db,
            dir: dir.to_path_buf(),
            event_retention: crate::DEFAULT_EVENT_RETENTION as u64,
            index,
            atomicity,
        })
    }

    /// Keeps the last `events` events of each task (at least 1).
    pub fn with_event_retention(mut self, events: usize) -> Self {
        self.event_retention = events.max(1) as u64;
        self
    }

    /// Drops a tree from under every handle to it, so that their writes fail (tests of a
    /// store that refuses an apply).
    #[cfg(test)]
    pub(crate) fn drop_tree_for_test(&self, name: &str) {
        self.db.drop_tree(name).expect("the tree is dropped");
    }

    /// Another tree of the same database, for stores that share its durability (one
    /// flush, one group commit): push configs, the local push queue.
    pub fn tree(&self, name: &str) -> Result<sled::Tree, StoreError> {
        Ok(self.db.open_tree(name)?)
    }

    /// The key of every stored session, read off the metadata records (moving a store
    /// into another: `a2ad admin move-to-redis`).
    pub fn session_keys(&self) -> Result<Vec<ContextKey>, StoreError> {
        let mut keys = Vec::new();
        for entry in self.sessions.scan_prefix([Prefix::SessionMeta as u8]) {
            let (_, bytes) = entry?;
            let session: SessionRecord =
                serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt(format!("session record: {e}")))?;
            keys.push(session.key);
        }
        Ok(keys)
    }

    /// The stored value of task `task_id` if it is in `scope`: the owner is compared on
    /// the raw JSON, before anything is decoded (see [`Scope`]); a value that does not
    /// start with its owner is decoded to compare.
    fn scoped_task_bytes(&self, scope: Scope<'_>, task_id: &str) -> Result<Option<sled::IVec>, StoreError> {
        let prefix = scope.json_prefix();
        let Some(bytes) = self.tasks.get(index::key(Prefix::Task, task_id.as_bytes()))? else {
            // The unpacking and the comparison a found record costs, so that a miss costs
            // about the same.
            let unknown = task_value::parse(std::hint::black_box(unknown_owner_value()));
            let json = unknown.as_ref().map_or(UNKNOWN_OWNER, |v| v.record_json());
            std::hint::black_box(Scope::admits_json(prefix.as_deref(), std::hint::black_box(json)));
            return Ok(None);
        };
        let value = task_value::parse(&bytes).ok();
        let json = value.as_ref().map_or(&[][..], |v| v.record_json());
        let admitted = match Scope::admits_json(prefix.as_deref(), json) {
            Some(admitted) => admitted,
            None => scope.admits(&Self::decode_task(&bytes)?.owner),
        };
        Ok(admitted.then_some(bytes))
    }

    fn decode_task(bytes: &[u8]) -> Result<TaskRecord, StoreError> {
        Self::decode_record(&task_value::parse(bytes)?)
    }

    /// The record of a parsed task value.
    fn decode_record(value: &task_value::TaskValue<'_>) -> Result<TaskRecord, StoreError> {
        serde_json::from_slice(value.record_json()).map_err(|e| StoreError::Corrupt(format!("task record: {e}")))
    }
}

/// What an unknown id's read compares the caller's owner with (see
/// [`SledStore::scoped_task_bytes`]): the start of a record of some other owner.
const UNKNOWN_OWNER: &[u8] = br#"{"owner":{"tenant":"","principal":""},"agent":""}"#;

/// What an unknown id's read unpacks: a stored value of about an echo task's size, packed
/// as a found one is, whose record starts with [`UNKNOWN_OWNER`].
fn unknown_owner_value() -> &'static [u8] {
    static VALUE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    VALUE.get_or_init(|| {
        let filler = r#"{"kind":"text","text":"an echo turn's message, part and artifact"},"#.repeat(30);
        let record = [&UNKNOWN_OWNER[..UNKNOWN_OWNER.len() - 1], br#","task":["#, filler.as_bytes(), b"{}]}"].concat();
        task_value::encode(Stamp { millis: 0, state: 0 }, &record, &[], &[])
    })
}

/// The generation (`last_event_seq`) of a stored task, read off the end of its JSON
/// without decoding it: `last_event_seq` is the last field of [`TaskRecord`], so the
/// record ends with `"last_event_seq":N}`. `None` when it does not (then no check).
fn stored_generation(record_json: &[u8]) -> Option<u64> {
    const FIELD: &[u8] = b"\"last_event_seq\":";
    let body = record_json.strip_suffix(b"}")?;
    let tail = &body[body.len().saturating_sub(FIELD.len() + 20)..];
    let at = tail.windows(FIELD.len()).rposition(|w| w == FIELD)?;
    std::str::from_utf8(&tail[at + FIELD.len()..]).ok()?.parse().ok()
}

fn corrupt(e: serde_json::Error) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

impl SledStore {
    /// The task write of a step with `record_json`, the record as `serde_json` writes it
    /// (the bytes the write-ahead log's record already holds, so the log's writer thread
    /// does not serialize every task twice: BENCHMARKS.md, issue 15). The stored value is
    /// the stamp, then `record_json` as given, then the step's events when they are few
    /// and small (`task_value.rs`); the events the old value carried become keys of their
    /// own.
    pub(crate) fn put_task_json(
        &self,
        record: &TaskRecord,
        record_json: &[u8],
        events: &[LoggedEvent],
        turn: Option<HeldTurn>,
    ) -> Result<Option<TaskState>, StoreError> {
        let id = record.task.id.as_bytes();
        let stamp = Stamp::of(record);
        let stored = self.tasks.get(index::key(Prefix::Task, id))?;
        // A value that does not parse is replaced, as before carried events: the record is
        // what the step says, and its carried events are lost with the damage.
        let stored_value = stored.as_deref().and_then(|value| task_value::parse(value).ok());
        if let Some(generation) = stored_value.as_ref().and_then(|v| stored_generation(v.record_json())) {
            if generation > record.last_event_seq {
                let (task_id, offered) = (record.task.id.clone(), record.last_event_seq);
                return Err(StoreError::Conflict { task_id, stored: generation, offered });
            }
        }
        let old = stored.as_deref().and_then(Stamp::decode);
        // The record goes last: key by key (behind the log), a step a crash cut short
        // still has the old record, whose carried events its replay moves again.
        let mut batch = Writes::default();
        let previous = stored_value.as_ref().map(|v| v.events()).unwrap_or_default();
        let carried = self.event_writes(&record.task.id, &previous, events, &mut batch);
        let mut turns = stored_value.as_ref().map(|v| v.turns().to_vec()).unwrap_or_default();
        if let Some(turn) = turn {
            // A replayed step holds its turn once.
            turns.retain(|held| held.first < turn.first);
            turns.push(turn);
        }
        batch.insert(index::key(Prefix::Task, id), task_value::encode(stamp, record_json, &carried, &turns));
        batch.apply(&self.tasks, self.atomicity)?;
        self.index.put(&task_index::Indexed::of(record, stamp), old, turn);
        Ok(old.and_then(|stamp| TaskState::from_number(i64::from(stamp.state))))
    }
}

impl SledStore {
    /// Writes a session's metadata and appends `appended` (the messages that end at
    /// `session.message_count`) to its stored history, dropping stored messages older
    /// than the last `history_limit`. Not the node's write of a session (that is a
    /// step's, [`crate::Step::session`], or [`crate::TaskStore::settle_reply`]'s): what
    /// the log's replay (of a step's session too) and the tests write.
    pub fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError> {
        self.session_batch(session, appended, history_limit, false)?.apply(&self.sessions, self.atomicity)?;
        Ok(())
    }

    /// [`SledStore::put_session`] for the session write of a step that also writes a
    /// task, applied after it. `held` is the turn that task holds, if it does
    /// ([`SledStore::held_turn`]): then the session writes no chunk for it.
    pub(crate) fn put_turn_session(
        &self,
        write: crate::SessionWrite<'_>,
        held: Option<HeldTurn>,
    ) -> Result<(), StoreError> {
        let writes = self.session_batch(write.session, write.appended, write.history_limit, held.is_some())?;
        writes.apply(&self.sessions, self.atomicity)?;
        Ok(())
    }

    /// The task, then the session; a store of its own has no push queue (the log's
    /// applier queues a step's jobs: `sled/journal/applier.rs`).
    fn write(&self, step: crate::Step<'_>) -> Result<crate::Replaced, StoreError> {
        crate::refuse_jobs_without_queue(false, &step.jobs)?;
        let json = serde_json::to_vec(step.record).map_err(corrupt)?;
        let held = step.session.as_ref().and_then(|write| Self::held_turn(write, step.record));
        let previous = self.put_task_json(step.record, &json, step.events, held)?;
        if let Some(write) = step.session {
            self.put_turn_session(write, held)?;
        }
        Ok(previous)
    }

    /// The generation (`last_event_seq`) and state of a task, with no owner check: what
    /// the log's writer compares a new version with. Read off the stamp and the end of
    /// the stored JSON, without decoding the record.
    pub fn task_version(&self, task_id: &str) -> Result<Option<(u64, TaskState)>, StoreError> {
        let Some(bytes) = self.tasks.get(index::key(Prefix::Task, task_id.as_bytes()))? else { return Ok(None) };
        let state = Stamp::decode(&bytes).and_then(|stamp| TaskState::from_number(i64::from(stamp.state)));
        match (task_value::parse(&bytes).ok().and_then(|v| stored_generation(v.record_json())), state) {
            (Some(generation), Some(state)) => Ok(Some((generation, state))),
            _ => Self::decode_task(&bytes).map(|r| Some((r.last_event_seq, r.state()))),
        }
    }
}

impl TaskStore for SledStore {
    fn commit(&self, step: crate::Step<'_>) -> crate::StoreFuture<crate::Replaced> {
        crate::ready(self.write(step))
    }

    fn read_task(&self, scope: Scope<'_>, task_id: &str) -> crate::StoreFuture<Option<TaskRecord>> {
        crate::ready(self.scoped_task_bytes(scope, task_id).and_then(|b| b.map(|b| Self::decode_task(&b)).transpose()))
    }

    fn read_events(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> crate::StoreFuture<Vec<LoggedEvent>> {
        crate::ready(self.events_of(scope, task_id, after, limit))
    }

    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let page = self.index.page(query);
        let total = self.index.total(query);
        let mut records = Vec::with_capacity(page.ids.len());
        for id in &page.ids {
            // A task removed between the index scan and this read is simply skipped.
            if let Some(record) = self.get_task(Scope::Owner(&query.owner), id)? {
                records.push(record);
            }
        }
        Ok(TaskPage { records, next_cursor: page.next_cursor, total })
    }

    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        let mut out = Vec::new();
        for id in self.index.active_ids() {
            if let Some(record) = self.get_task(Scope::Node, &id)? {
                if states.contains(&record.state()) {
                    out.push(record);
                }
            }
        }
        Ok(out)
    }

    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError> {
        self.load_session(key, history_limit)
    }

    /// `db.flush()` writes sled's buffers out but only `sync_file_range`s them (sled
    /// 0.34.7 `sync_all`s only in its periodic flusher), so the files are `fsync`ed here:
    /// the log file `db`, `conf`, every blob, and the directories that name them.
    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        durable::sync_sled_files(&self.dir)
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        Ok(self.db.size_on_disk()?)
    }

    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        self.index.visit(visit)
    }

    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.remove_task(task_id)
    }

    fn forget_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        self.remove_session_if_unused(key)
    }

    fn counts(&self) -> Result<StoreCounts, StoreError> {
        self.count_entries()
    }

    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.settle_reply_atomically(task_id, session, appended, history_limit)
    }
}

/// Opens a store that this process just closed. sled releases its file lock from a
/// background thread shortly after the last handle is dropped, so a test that reopens at
/// once retries for a moment instead of failing on the lock.
#[cfg(test)]
pub(crate) fn open_retrying(dir: &Path) -> SledStore {
    for _ in 0..250 {
        if let Ok(store) = SledStore::open(dir) {
            return store;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    SledStore::open(dir).expect("the store reopens")
}

#[cfg(test)]
mod events_tests;
#[cfg(test)]
mod task_index_tests;
#[cfg(test)]
pub(crate) mod tests;
