//! The shared task store (`store: redis`): tasks, their indexes, event logs and sessions
//! live in one Redis, so every node that points at it answers for every task.
//!
//! Each write is one Lua script (`scripts.rs`): Redis runs it whole and alone, and it
//! checks before it writes, so two nodes never interleave halves of their steps, and a
//! stale writer (a lower generation, or a context whose lease another node holds) is
//! refused rather than silently overwriting newer events. A write is as durable as
//! Redis's own persistence makes it once the script returns: with `appendonly yes` and
//! `appendfsync always`, on disk (see `docs/cluster.md`); there is no log or flush of
//! ours in front of it, so [`TaskStore::flush`] has nothing to do and a step is "durable"
//! as soon as its commit returns. Listeners ([`DurableSteps`]: the node's live feed) are
//! told of each step then.
//!
//! Where each thing lives: `keys.rs`. Reads are single commands or pipelines, scoped by the
//! owner key stored beside each task, so another owner's task is found absent without its
//! record being decoded (the one place tenant isolation is enforced, as in the sled store).

mod cluster;
mod keys;
mod lease;
mod scripts;
#[cfg(test)]
mod tests;
mod writes;

use crate::redis_link::RedisLink;
use crate::{
    ContextKey, DurableSteps, LoggedEvent, Scope, SessionRecord, StoreCounts, StoreError, TaskEntry, TaskPage,
    TaskQuery, TaskRecord, TaskStore, DEFAULT_EVENT_RETENTION,
};
use a2ad_protocol::{Message, TaskState};
use keys::Keys;
use redis::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Events a task's stream keeps beyond the event retention: a follower on another node
/// reads a commit's events after the commit, and a commit of more events than the
/// retention (or a follower a few commits behind) must still find them. Reads of the log
/// (`events_after`, resumes) see only the retained ones, as on sled.
pub(crate) const FOLLOW_SLACK: u64 = 256;

/// Where the store lives.
#[derive(Clone)]
pub struct RedisStoreOptions {
    /// `redis://[user][:password@]host[:port][/db]`.
    pub url: String,
    /// What every key starts with.
    pub prefix: String,
    /// How many connections the node keeps (commands in flight at once).
    pub connections: usize,
    /// The push queue's stream, when push jobs go to Redis Streams: a step's jobs are
    /// added to it by the step's own commit script.
    pub push_stream: Option<String>,
    /// How long a context's lease outlives its node's last renewal.
    pub lease_ttl: Duration,
    /// This node's id in leases (default: `<host>-<pid>-<random>`, unique per process).
    pub node_id: String,
}

impl Default for RedisStoreOptions {
    fn default() -> Self {
        RedisStoreOptions {
            url: "redis://127.0.0.1:6379/".to_owned(),
            prefix: "a2ad:store".to_owned(),
            connections: 8,
            push_stream: None,
            lease_ttl: Duration::from_secs(10),
            node_id: lease::new_node_id(),
        }
    }
}

impl std::fmt::Debug for RedisStoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStoreOptions")
            .field("url", &crate::redact_url(&self.url))
            .field("prefix", &self.prefix)
            .field("connections", &self.connections)
            .field("push_stream", &self.push_stream)
            .field("lease_ttl", &self.lease_ttl)
            .field("node_id", &self.node_id)
            .finish()
    }
}

/// The task store in Redis.
pub struct RedisStore {
    link: Arc<RedisLink>,
    keys: Keys,
    options: RedisStoreOptions,
    event_retention: u64,
    commit: redis::Script,
    settle: redis::Script,
    forget: redis::Script,
    list: redis::Script,
    listeners: RwLock<Vec<Arc<dyn DurableSteps>>>,
    leases: Arc<lease::Leases>,
    /// Renews the leases; stopped when the store is dropped.
    _keeper: crate::thread_owner::ThreadOwner,
    /// Set when the store is dropped: followers and the cancel listener stop.
    closing: Arc<AtomicBool>,
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Release);
    }
}

impl RedisStore {
    /// The store at `options.url`, not connected yet (the first call connects). Only a
    /// URL that is not a Redis URL fails here.
    pub fn open(options: RedisStoreOptions) -> Result<Self, StoreError> {
        let keys = Keys::new(&options.prefix);
        let lease_link = RedisLink::open(&options.url, 1, "lease keeper")?;
        let leases =
            Arc::new(lease::Leases::new(lease_link, options.node_id.clone(), options.lease_ttl, keys.lease_epoch()));
        Ok(RedisStore {
            link: Arc::new(RedisLink::open(&options.url, options.connections, "task store")?),
            _keeper: leases.start_keeper()?,
            leases,
            closing: Arc::default(),
            keys,
            options,
            event_retention: DEFAULT_EVENT_RETENTION as u64,
            commit: redis::Script::new(&scripts::commit()),
            settle: redis::Script::new(&scripts::settle()),
            forget: redis::Script::new(scripts::FORGET_SESSION),
            list: redis::Script::new(scripts::LIST),
            listeners: RwLock::default(),
        })
    }

    /// [`RedisStore::open`], then one PING: an unreachable Redis is an error naming the
    /// server (never its password).
    pub fn connect(options: RedisStoreOptions) -> Result<Self, StoreError> {
        let store = RedisStore::open(options)?;
        store.ping()?;
        Ok(store)
    }

    /// Keeps the last `events` events of each task (at least 1).
    pub fn with_event_retention(mut self, events: usize) -> Self {
        self.event_retention = events.max(1) as u64;
        self
    }

    pub fn options(&self) -> &RedisStoreOptions {
        &self.options
    }

    /// The rows of push configs in this store ([`crate::PushConfigStore::in_redis`]).
    pub(crate) fn push_config_rows(&self) -> crate::push_configs::RedisRows {
        crate::push_configs::RedisRows::new(Arc::clone(&self.link), &self.options.prefix)
    }

    /// Sets the push queue's stream, which each step's commit adds its push jobs to.
    pub fn with_push_stream(mut self, stream: impl Into<String>) -> Self {
        self.options.push_stream = Some(stream.into());
        self
    }

    /// One round trip: whether Redis answers now (readiness).
    pub fn ping(&self) -> Result<(), StoreError> {
        self.link.with_conn("reach the task store", |conn| Ok(redis::cmd("PING").query::<()>(conn)?))
    }

    /// The server's setting `name` (`CONFIG GET`), `None` when it has no such setting.
    /// Fails where CONFIG is disabled (some hosted Redis services rename it).
    pub fn server_setting(&self, name: &str) -> Result<Option<String>, StoreError> {
        let pairs: Vec<(String, String)> = self
            .link
            .with_conn("read a server setting", |conn| Ok(redis::cmd("CONFIG").arg("GET").arg(name).query(conn)?))?;
        Ok(pairs.into_iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value))
    }

    /// Tells `listener` of every task step from now on, once it is committed.
    pub fn on_durable(&self, listener: Arc<dyn DurableSteps>) {
        self.listeners.write().unwrap_or_else(|p| p.into_inner()).push(listener);
    }

    fn tell(&self, record: &TaskRecord, events: &[LoggedEvent]) {
        for listener in self.listeners.read().unwrap_or_else(|p| p.into_inner()).iter() {
            listener.durable(record, events);
        }
    }

    /// A stored record's JSON, decoded.
    fn decode(json: &[u8]) -> Result<TaskRecord, StoreError> {
        serde_json::from_slice(json).map_err(|e| StoreError::Corrupt(format!("task record: {e}")))
    }

    /// The records of `ids`, in order, skipping any removed meanwhile (one pipeline).
    fn records(&self, ids: &[String]) -> Result<Vec<TaskRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HGET").arg(self.keys.task(id)).arg("r");
        }
        let raw: Vec<Option<Vec<u8>>> = self.link.with_conn("read tasks", |conn| Ok(pipe.query(conn)?))?;
        raw.into_iter().flatten().map(|json| Self::decode(&json)).collect()
    }

    /// The node-wide index, as (id, value) pairs.
    fn all_entries(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.link.with_conn("read the task index", |conn| {
            let (mut entries, mut cursor) = (Vec::new(), 0u64);
            loop {
                let (next, page): (u64, Vec<(String, String)>) =
                    redis::cmd("HSCAN").arg(self.keys.all()).arg(cursor).arg("COUNT").arg(500).query(conn)?;
                entries.extend(page);
                if next == 0 {
                    return Ok(entries);
                }
                cursor = next;
            }
        })
    }
}

impl TaskStore for RedisStore {
    fn put_task(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Option<TaskState>, StoreError> {
        self.put_step(record, events, Vec::new())
    }

    fn put_step(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<crate::PushJob>,
    ) -> Result<Option<TaskState>, StoreError> {
        self.commit_step(record, events, &jobs, None)
    }

    fn put_step_with_session(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<crate::PushJob>,
        session: crate::SessionWrite<'_>,
    ) -> Result<Option<TaskState>, StoreError> {
        self.commit_step(record, events, &jobs, Some(session))
    }

    fn events_after(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET").arg(self.keys.task(task_id)).arg("o").arg("l");
        let start = format!("{}-0", after.saturating_add(1));
        // The stream keeps FOLLOW_SLACK events more than the retention (for followers):
        // read past them, and keep only the retained ones.
        let count = limit.saturating_add(FOLLOW_SLACK as usize).min(i64::MAX as usize);
        pipe.cmd("XRANGE").arg(self.keys.events(task_id)).arg(start).arg("+").arg("COUNT").arg(count);
        let ((owner, last), entries): ((Option<Vec<u8>>, Option<u64>), Value) =
            self.link.with_conn("read task events", |conn| Ok(pipe.query(conn)?))?;
        if !writes::owner_admits(scope, owner.as_deref()) {
            return Ok(Vec::new());
        }
        let oldest_retained = last.unwrap_or(0).saturating_sub(self.event_retention);
        let events = writes::parse_events(entries)?.into_iter().filter(|e| e.seq > oldest_retained);
        Ok(events.take(limit).collect())
    }

    fn get_task(&self, scope: Scope<'_>, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let (owner, json): (Option<Vec<u8>>, Option<Vec<u8>>) = self.link.with_conn("read a task", |conn| {
            Ok(redis::cmd("HMGET").arg(self.keys.task(task_id)).arg("o").arg("r").query(conn)?)
        })?;
        match (writes::owner_admits(scope, owner.as_deref()), json) {
            (true, Some(json)) => Ok(Some(Self::decode(&json)?)),
            _ => Ok(None),
        }
    }

    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let (total, mut ids) = self.list_ids(query)?;
        let more = ids.len() > query.page_size;
        ids.truncate(query.page_size);
        let records = self.records(&ids)?;
        let next_cursor = match more {
            true => records.last().map(|r| crate::Cursor { ts: r.status_millis().max(0), id: r.task.id.clone() }),
            false => None,
        };
        Ok(TaskPage { records, next_cursor, total })
    }

    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        if !states.is_empty() && states.iter().all(|s| s.is_active()) {
            // The sweep's question, answered from the active set, not a scan of every task.
            let mut ids: Vec<String> = self.link.with_conn("read the active tasks", |conn| {
                Ok(redis::cmd("SMEMBERS").arg(self.keys.active()).query(conn)?)
            })?;
            ids.sort(); // In id order, as the other stores give them.
            let records = self.records(&ids)?;
            return Ok(records.into_iter().filter(|r| states.contains(&r.state())).collect());
        }
        let wanted: Vec<String> = states.iter().map(|s| keys::state_code(*s)).collect();
        let ids: Vec<String> = self
            .all_entries()?
            .into_iter()
            .filter(|(_, value)| value.split_once(':').is_some_and(|(state, _)| wanted.iter().any(|w| w == state)))
            .map(|(id, _)| id)
            .collect();
        self.records(&ids)
    }

    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError> {
        let meta_key = self.keys.session(key);
        // A limit of 0 reads no message (`LRANGE -0 -1` would read them all).
        let (meta, messages): (Option<Vec<u8>>, Vec<Vec<u8>>) = match history_limit {
            0 => {
                let meta = self
                    .link
                    .with_conn("read a session", |conn| Ok(redis::cmd("GET").arg(&meta_key).query(conn)?))?;
                (meta, Vec::new())
            }
            limit => {
                let first = -(i64::try_from(limit).unwrap_or(i64::MAX));
                let mut pipe = redis::pipe();
                pipe.cmd("GET").arg(&meta_key).cmd("LRANGE").arg(self.keys.messages(key)).arg(first).arg(-1);
                self.link.with_conn("read a session", |conn| Ok(pipe.query(conn)?))?
            }
        };
        let Some(meta) = meta else { return Ok(None) };
        let mut session: SessionRecord =
            serde_json::from_slice(&meta).map_err(|e| StoreError::Corrupt(format!("session: {e}")))?;
        let history: Result<Vec<Message>, _> = messages.iter().map(|m| serde_json::from_slice(m)).collect();
        session.history = Arc::new(history.map_err(|e| StoreError::Corrupt(format!("session message: {e}")))?);
        Ok(Some(session))
    }

    fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError> {
        self.settle_writes(None, Some(crate::SessionWrite { session, appended, history_limit })).map(|_| ())
    }

    /// Nothing of ours to flush: a commit is as durable as Redis's persistence once it
    /// returns.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The task version without decoding the record (one HMGET).
    fn task_version(&self, task_id: &str) -> Result<Option<(u64, TaskState)>, StoreError> {
        let (generation, state): (Option<u64>, Option<String>) =
            self.link.with_conn("read a task version", |conn| {
                Ok(redis::cmd("HMGET").arg(self.keys.task(task_id)).arg("g").arg("s").query(conn)?)
            })?;
        Ok(generation.zip(state.as_deref().and_then(keys::parse_state)))
    }

    fn cluster(&self) -> Option<&dyn crate::Cluster> {
        Some(self)
    }

    /// Nothing on this node's disk.
    fn size_on_disk(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        for (task_id, value) in self.all_entries()? {
            if let Some((state, status_millis, owner)) = keys::parse_all_value(&value) {
                visit(TaskEntry { owner, task_id, status_millis, state });
            }
        }
        Ok(())
    }

    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.settle_writes(Some(task_id), None)
    }

    fn forget_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        let [session, messages, sessions] = self.keys.of_session(key);
        let forgot: i64 = self.link.with_conn("forget a session", |conn| {
            Ok(self
                .forget
                .key(self.keys.context_tasks(key))
                .key(session)
                .key(messages)
                .key(sessions)
                .arg(key.storage_key())
                .invoke(conn)?)
        })?;
        Ok(forgot == 1)
    }

    fn counts(&self) -> Result<StoreCounts, StoreError> {
        let ids: Vec<String> = self.all_entries()?.into_iter().map(|(id, _)| id).collect();
        let contexts: Vec<Vec<u8>> = self.link.with_conn("read the sessions", |conn| {
            Ok(redis::cmd("SMEMBERS").arg(self.keys.sessions()).query(conn)?)
        })?;
        let events = self.sum_lengths("XLEN", ids.iter().map(|id| self.keys.events(id)), self.event_retention)?;
        let messages = self.sum_lengths("LLEN", contexts.iter().map(|c| self.keys.messages_of(c)), u64::MAX)?;
        Ok(StoreCounts { events, sessions: contexts.len() as u64, session_messages: messages })
    }

    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.settle_writes(Some(task_id), Some(crate::SessionWrite { session, appended, history_limit }))
    }
}
