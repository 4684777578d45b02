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
mod jobs;
mod keys;
mod lease;
mod options;
mod reads;
mod scripts;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_commit;
mod writes;

use crate::redis::keys::{Keys, Shard};
use crate::redis::link::{Conn, LuaScript, RedisLink, Topology};
use crate::{
    ContextKey, DurableSteps, LoggedEvent, Scope, SessionRecord, StoreCounts, StoreError, TaskEntry, TaskPage,
    TaskQuery, TaskRecord, TaskStore, DEFAULT_EVENT_RETENTION,
};
use a2ad_protocol::{Message, TaskState};
pub use options::RedisStoreOptions;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// Events a task's stream keeps beyond the event retention: a follower on another node
/// reads a commit's events after the commit, and a commit of more events than the
/// retention (or a follower a few commits behind) must still find them. Reads of the log
/// (`events_after`, resumes) see only the retained ones, as on sled.
pub(crate) const FOLLOW_SLACK: u64 = 256;

/// The task store in Redis.
pub struct RedisStore {
    link: Arc<RedisLink>,
    keys: Keys,
    options: RedisStoreOptions,
    event_retention: u64,
    commit: LuaScript,
    settle: LuaScript,
    forget: redis::Script,
    list: redis::Script,
    listeners: RwLock<Vec<Arc<dyn DurableSteps>>>,
    /// Told of each task's change of state, once Redis answered its write.
    states: crate::Observer,
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
        let keys = Keys::new(&options.prefix, options.shards, options.topology == Topology::Cluster);
        let lease_link = RedisLink::open_on(&options.url, options.topology, 1, "lease keeper")?;
        let leases = Arc::new(lease::Leases::new(lease_link, options.node_id.clone(), options.lease_ttl, keys.clone()));
        Ok(RedisStore {
            link: Arc::new(RedisLink::open_on(&options.url, options.topology, options.connections, "task store")?),
            _keeper: leases.start_keeper()?,
            leases,
            closing: Arc::default(),
            keys,
            options,
            event_retention: DEFAULT_EVENT_RETENTION as u64,
            commit: LuaScript::new(&scripts::commit()),
            settle: LuaScript::new(&scripts::settle()),
            forget: redis::Script::new(scripts::FORGET_SESSION),
            list: redis::Script::new(scripts::LIST),
            listeners: RwLock::default(),
            states: crate::Observer::default(),
        })
    }

    /// [`RedisStore::open`], then one PING: an unreachable Redis is an error naming the
    /// server (never its password).
    pub fn connect(options: RedisStoreOptions) -> Result<Self, StoreError> {
        let store = RedisStore::open(options)?;
        store.ping()?;
        store.check_layout()?;
        Ok(store)
    }

    /// Records the shard count in a new store, or checks it against the one the store was
    /// made with: keys spread over another count would not be found. A store from before
    /// shards (untagged keys, no count recorded) was made with one.
    fn check_layout(&self) -> Result<(), StoreError> {
        let configured = self.keys.shard_count();
        let stored = match self.recorded_layout()? {
            Some(stored) => stored,
            None => self.link.with_conn("record the store's layout", |conn| {
                Ok(redis::Script::new(scripts::RECORD_LAYOUT).key(self.keys.layout()).arg(configured).invoke(conn)?)
            })?,
        };
        match stored == configured {
            true => Ok(()),
            false => Err(StoreError::ShardCount { stored, configured }),
        }
    }

    /// The shard count recorded under this prefix: in this layout's key; on one server,
    /// also in the other layout's, or 1 for untagged data that predates the record.
    fn recorded_layout(&self) -> Result<Option<u16>, StoreError> {
        let get = |key: Vec<u8>| -> Result<Option<u16>, StoreError> {
            self.link.with_conn("read the store's layout", |conn| Ok(redis::cmd("GET").arg(key).query(conn)?))
        };
        if let Some(stored) = get(self.keys.layout())? {
            return Ok(Some(stored));
        }
        if self.options.topology == Topology::Cluster {
            return Ok(None); // A store without tags never ran on a cluster.
        }
        if let Some(stored) = get(self.keys.other_layout())? {
            return Ok(Some(stored));
        }
        let (index, sessions) = (self.keys.untagged("all"), self.keys.untagged("sessions"));
        let untagged_data: u64 = self.link.with_conn("read the store's layout", |conn| {
            Ok(redis::cmd("EXISTS").arg(index).arg(sessions).query(conn)?)
        })?;
        Ok((self.keys.tagged() && untagged_data > 0).then_some(1))
    }

    /// Keeps the last `events` events of each task (at least 1).
    pub fn with_event_retention(mut self, events: usize) -> Self {
        self.event_retention = events.max(1) as u64;
        self
    }

    /// Tells `observer` of every change of a task's state this node writes from now on,
    /// once Redis answered the write (the node's per-state counts; another node's writes
    /// are its own to count).
    pub fn with_state_changes(mut self, observer: Arc<dyn crate::StateChanges>) -> Self {
        self.states = crate::Observer::new(observer);
        self
    }

    /// Writes a session's metadata and appends `appended` (the messages that end at
    /// `session.message_count`) to its stored history, dropping stored messages older
    /// than the last `history_limit` once they are an eighth past it (`scripts.rs`). Not
    /// the node's write of a session (that is a step's, [`crate::Step::session`], or
    /// [`crate::TaskStore::settle_reply`]'s): what `a2ad admin move-to-redis` and the
    /// tests write.
    pub fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError> {
        self.settle_writes(None, Some(crate::SessionWrite { session, appended, history_limit })).map(|_| ())
    }

    /// The task version without decoding the record (one HMGET), with no owner check:
    /// what a writer (`a2ad admin move-to-redis`) compares its new version with.
    pub fn task_version(&self, task_id: &str) -> Result<Option<(u64, TaskState)>, StoreError> {
        let Some(shard) = self.task_shard(Scope::Node, task_id)? else { return Ok(None) };
        let (generation, state): (Option<u64>, Option<String>) =
            self.link.with_conn("read a task version", |conn| {
                Ok(redis::cmd("HMGET").arg(self.keys.task(shard, task_id)).arg("g").arg("s").query(conn)?)
            })?;
        Ok(generation.zip(state.as_deref().and_then(keys::parse_state)))
    }

    pub fn options(&self) -> &RedisStoreOptions {
        &self.options
    }

    /// The push configs in this store, sealed with `key`: every node that shares the store,
    /// and the same push key, reads every config.
    pub fn push_configs(&self, key: crate::SecretKey) -> crate::PushConfigStore {
        let rows = crate::redis::push_rows::RedisRows::new(Arc::clone(&self.link), self.keys.clone());
        crate::PushConfigStore::over(Arc::new(rows), key)
    }

    /// Sets the push queue's stream, which each step's commit adds its push jobs to (the
    /// shard's stream of it: [`RedisStore::queue_keys`]).
    pub fn with_push_stream(mut self, stream: impl Into<String>) -> Self {
        self.options.push_stream = Some(stream.into());
        self
    }

    /// The push queue's keys of each shard, for `options`' base names: the queue the
    /// commits of this store add their jobs to.
    pub fn queue_keys(&self, options: &crate::RedisQueueOptions) -> Vec<crate::QueueKeys> {
        let key = |base: &str, shard| self.keys.queue_key(base, shard);
        self.keys
            .all_shards()
            .map(|shard| crate::QueueKeys {
                stream: key(&options.stream, shard),
                retry_key: key(&options.retry_key, shard),
                dead_stream: key(&options.dead_stream, shard),
            })
            .collect()
    }

    /// How the store reaches Redis (the push queue on it connects the same way).
    pub fn topology(&self) -> Topology {
        self.options.topology
    }

    /// One round trip: whether Redis answers now (readiness).
    pub fn ping(&self) -> Result<(), StoreError> {
        self.link.with_conn("reach the task store", |conn| Ok(redis::cmd("PING").query::<()>(conn)?))
    }

    /// The setting `name` (`CONFIG GET`) of every server that holds the store's data: the
    /// one server, or each primary of the cluster, as (server, value), the value `None`
    /// where the server has no such setting. Fails where CONFIG is disabled (some hosted
    /// Redis services rename it).
    pub fn server_settings(&self, name: &str) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg(name);
        let value_of = |reply: &Value| -> Result<Option<String>, redis::RedisError> {
            let pairs: Vec<(String, String)> = redis::from_redis_value(reply)?;
            Ok(pairs.into_iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value))
        };
        self.link.with_conn("read a server setting", |conn| match conn {
            Conn::Single(single) => {
                let reply: Value = cmd.query(single)?;
                Ok(vec![(crate::redact_url(&self.options.url), value_of(&reply)?)])
            }
            Conn::Cluster(cluster) => {
                let every_primary = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                let Value::Map(per_primary) = cluster.route_command(&cmd, every_primary)? else {
                    return Err(
                        StoreError::Corrupt("CONFIG GET on the cluster: an answer of another shape".into()).into()
                    );
                };
                per_primary
                    .iter()
                    .map(|(primary, reply)| Ok((redis::from_redis_value(primary)?, value_of(reply)?)))
                    .collect()
            }
        })
    }

    /// Tells `listener` of every task step from now on, once it is committed.
    pub fn on_durable(&self, listener: Arc<dyn DurableSteps>) {
        self.listeners.write().unwrap_or_else(|p| p.into_inner()).push(listener);
    }

    /// The listeners that would do something with a step now.
    fn listening(&self) -> Vec<Arc<dyn DurableSteps>> {
        let listeners = self.listeners.read().unwrap_or_else(|p| p.into_inner());
        listeners.iter().filter(|listener| listener.listening()).cloned().collect()
    }

    /// A stored record's JSON, decoded.
    fn decode(json: &[u8]) -> Result<TaskRecord, StoreError> {
        serde_json::from_slice(json).map_err(|e| StoreError::Corrupt(format!("task record: {e}")))
    }

    /// The records of the shard's tasks `ids`, in order, skipping any removed meanwhile
    /// (one pipeline).
    fn records(&self, shard: Shard, ids: &[String]) -> Result<Vec<TaskRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HGET").arg(self.keys.task(shard, id)).arg("r");
        }
        let raw: Vec<Option<Vec<u8>>> = self.link.with_conn("read tasks", |conn| Ok(pipe.query(conn)?))?;
        raw.into_iter().flatten().map(|json| Self::decode(&json)).collect()
    }

    /// The records of `(shard, id)` pairs, in id order (as the other stores give them):
    /// one pipeline per shard.
    fn records_across(&self, ids: Vec<(Shard, String)>) -> Result<Vec<TaskRecord>, StoreError> {
        let count = ids.len();
        let mut by_shard: std::collections::BTreeMap<Shard, Vec<String>> = Default::default();
        for (shard, id) in ids {
            by_shard.entry(shard).or_default().push(id);
        }
        let mut records = Vec::with_capacity(count);
        for (shard, shard_ids) in by_shard {
            records.extend(self.records(shard, &shard_ids)?);
        }
        records.sort_by(|a, b| a.task.id.cmp(&b.task.id));
        Ok(records)
    }

    /// Every shard's task index, as (shard, id, value).
    fn all_entries(&self) -> Result<Vec<(Shard, String, String)>, StoreError> {
        let mut entries = Vec::new();
        for shard in self.keys.all_shards() {
            let key = self.keys.all(shard);
            self.link.with_conn("read the task index", |conn| {
                let mut cursor = 0u64;
                loop {
                    let (next, page): (u64, Vec<(String, String)>) =
                        redis::cmd("HSCAN").arg(&key).arg(cursor).arg("COUNT").arg(500).query(conn)?;
                    entries.extend(page.into_iter().map(|(id, value)| (shard, id, value)));
                    if next == 0 {
                        return Ok(());
                    }
                    cursor = next;
                }
            })?;
        }
        Ok(entries)
    }

    /// The shard that holds task `task_id` for `scope` ([`task_shard_in`]).
    fn task_shard(&self, scope: Scope<'_>, task_id: &str) -> Result<Option<Shard>, StoreError> {
        task_shard_in(&self.keys, &self.link, scope, task_id)
    }

    /// The shard a read of `task_id` in `scope` goes to: known without a round trip where
    /// it can be ([`RedisStore::known_shard`]), else found first (a node-wide read over
    /// several shards: blocking, and never on the request path, which reads with the
    /// caller's scope).
    fn read_shard(&self, scope: Scope<'_>, task_id: &str) -> Result<Option<Shard>, StoreError> {
        match self.known_shard(scope) {
            Some(shard) => Ok(Some(shard)),
            None => self.task_shard(scope, task_id),
        }
    }
}

/// The shard that holds task `task_id` for `scope`: an owner's, without a round trip
/// (another owner's task is not there, and reads as absent); for the node, the one whose
/// task hash exists, looking first where the id points ([`Keys::search_order`]), or
/// `None`. Blocks for a round trip per shard looked at, with more than one shard.
pub(super) fn task_shard_in(
    keys: &Keys,
    link: &RedisLink,
    scope: Scope<'_>,
    task_id: &str,
) -> Result<Option<Shard>, StoreError> {
    match scope {
        Scope::Owner(owner) => Ok(Some(keys.of_owner(owner))),
        Scope::Node if keys.shard_count() == 1 => Ok(Some(Shard(0))),
        Scope::Node => {
            for shard in keys.search_order(task_id) {
                let key = keys.task(shard, task_id);
                let exists: bool =
                    link.with_conn("find a task", |conn| Ok(redis::cmd("EXISTS").arg(key).query(conn)?))?;
                if exists {
                    return Ok(Some(shard));
                }
            }
            Ok(None)
        }
    }
}

/// A session as stored: its metadata's JSON and its messages' JSON, oldest first.
pub(super) fn decode_session(meta: &[u8], messages: &[Vec<u8>]) -> Result<SessionRecord, StoreError> {
    let mut session: SessionRecord =
        serde_json::from_slice(meta).map_err(|e| StoreError::Corrupt(format!("session: {e}")))?;
    let history: Result<Vec<Message>, _> = messages.iter().map(|m| serde_json::from_slice(m)).collect();
    session.history = Arc::new(history.map_err(|e| StoreError::Corrupt(format!("session message: {e}")))?.into());
    Ok(session)
}

impl RedisStore {
    /// The shard of task `task_id` in `scope` without a round trip, where there is one:
    /// an owner's read, or one shard. `None`: a node-wide read over several shards, a
    /// search (off the request path, which reads with the caller's scope).
    fn known_shard(&self, scope: Scope<'_>) -> Option<Shard> {
        match scope {
            Scope::Owner(owner) => Some(self.keys.of_owner(owner)),
            Scope::Node => (self.keys.shard_count() == 1).then_some(Shard(0)),
        }
    }
}

impl TaskStore for RedisStore {
    fn commit(&self, step: crate::Step<'_>) -> crate::StoreFuture<crate::Replaced> {
        let answer = self.commit_async(step.record, step.events, &step.jobs, step.session);
        self.states.on_commit(answer, step.record.state())
    }

    fn read_task(&self, scope: Scope<'_>, task_id: &str) -> crate::StoreFuture<Option<TaskRecord>> {
        match self.read_shard(scope, task_id) {
            Ok(Some(shard)) => self.task_in(shard, scope, task_id),
            Ok(None) => crate::ready(Ok(None)),
            Err(e) => crate::ready(Err(e)),
        }
    }

    fn read_events(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> crate::StoreFuture<Vec<LoggedEvent>> {
        if limit == 0 {
            return crate::ready(Ok(Vec::new()));
        }
        match self.read_shard(scope, task_id) {
            Ok(Some(shard)) => self.events_in(shard, scope, task_id, after, limit),
            Ok(None) => crate::ready(Ok(Vec::new())),
            Err(e) => crate::ready(Err(e)),
        }
    }

    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let (total, mut ids) = self.list_ids(query)?;
        let more = ids.len() > query.page_size;
        ids.truncate(query.page_size);
        let records = self.records(self.keys.of_owner(&query.owner), &ids)?;
        let next_cursor = match more {
            true => records.last().map(|r| crate::Cursor { ts: r.status_millis().max(0), id: r.task.id.clone() }),
            false => None,
        };
        Ok(TaskPage { records, next_cursor, total })
    }

    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        if !states.is_empty() && states.iter().all(|s| s.is_active()) {
            // The sweep's question, answered from the active sets, not a scan of every task.
            let mut ids = Vec::new();
            for shard in self.keys.all_shards() {
                let active: Vec<String> = self.link.with_conn("read the active tasks", |conn| {
                    Ok(redis::cmd("SMEMBERS").arg(self.keys.active(shard)).query(conn)?)
                })?;
                ids.extend(active.into_iter().map(|id| (shard, id)));
            }
            let records = self.records_across(ids)?;
            return Ok(records.into_iter().filter(|r| states.contains(&r.state())).collect());
        }
        let wanted: Vec<String> = states.iter().map(|s| keys::state_code(*s)).collect();
        let ids: Vec<(Shard, String)> = self
            .all_entries()?
            .into_iter()
            .filter(|(_, _, value)| value.split_once(':').is_some_and(|(state, _)| wanted.iter().any(|w| w == state)))
            .map(|(shard, id, _)| (shard, id))
            .collect();
        self.records_across(ids)
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
        meta.map(|meta| decode_session(&meta, &messages)).transpose()
    }

    /// Nothing of ours to flush: a commit is as durable as Redis's persistence once it
    /// returns.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn cluster(&self) -> Option<&dyn crate::Cluster> {
        Some(self)
    }

    /// Nothing on this node's disk.
    fn size_on_disk(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        for (_, task_id, value) in self.all_entries()? {
            if let Some((state, status_millis, owner)) = keys::parse_all_value(&value) {
                visit(TaskEntry { owner, task_id, status_millis, state });
            }
        }
        Ok(())
    }

    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let removed = self.settle_writes(Some(task_id), None)?;
        self.states.removed(removed.as_ref());
        Ok(removed)
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
        let entries = self.all_entries()?;
        let mut counts = StoreCounts { events: 0, sessions: 0, session_messages: 0 };
        for shard in self.keys.all_shards() {
            let contexts: Vec<Vec<u8>> = self.link.with_conn("read the sessions", |conn| {
                Ok(redis::cmd("SMEMBERS").arg(self.keys.sessions(shard)).query(conn)?)
            })?;
            let ids = entries.iter().filter(|(s, _, _)| *s == shard).map(|(_, id, _)| self.keys.events(shard, id));
            counts.events += self.sum_lengths("XLEN", ids, self.event_retention)?;
            let lists = contexts.iter().map(|c| self.keys.messages_of(shard, c));
            counts.session_messages += self.sum_lengths("LLEN", lists, u64::MAX)?;
            counts.sessions += contexts.len() as u64;
        }
        Ok(counts)
    }

    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let removed =
            self.settle_writes(Some(task_id), Some(crate::SessionWrite { session, appended, history_limit }))?;
        self.states.removed(removed.as_ref());
        Ok(removed)
    }
}
