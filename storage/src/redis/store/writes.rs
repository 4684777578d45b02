//! The Redis store's writes (each one script call: `scripts.rs`) and the reply parsing
//! its reads share.

use super::keys;
use super::RedisStore;
use crate::redis::link::{Request, ScriptCall};
use crate::redis::push_queue::reply::{parse_entries, Entry};
use crate::{ContextKey, Replaced, StoreFuture};
use crate::{LoggedEvent, PushJob, Scope, SessionWrite, StoreError, TaskQuery, TaskRecord, TaskStoreExt};
use redis::{RedisError, Value};
use std::sync::Arc;

impl RedisStore {
    /// One step in one script (lease check, generation check, snapshot and indexes,
    /// events, the session if any, the push jobs), sent on the pipe's lane of its context;
    /// once Redis answers, the listeners are told.
    pub(super) fn commit_async(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: &[PushJob],
        session: Option<SessionWrite<'_>>,
    ) -> StoreFuture<Replaced> {
        let (call, context) = match self.commit_call(record, events, jobs, session) {
            Ok(prepared) => prepared,
            Err(e) => return crate::ready(Err(e)),
        };
        let lane = self.link.lane_of(&context.storage_key());
        let refusal = Refusal::of(record);
        let wanted = self.options.replica_acks;
        let request = match wanted {
            0 => Request::Script(call),
            _ => Request::Replicated(call, replica_wait(wanted)),
        };
        let reply = self.link.submit_refusable("commit a task step", lane, request, |e| refusal.map(e));
        let listeners = self.listening();
        let told = (!listeners.is_empty()).then(|| (record.clone(), events.to_vec()));
        Box::pin(async move {
            let before = match wanted {
                0 => reply.await?,
                _ => replicas_confirmed(reply.await?, wanted)?,
            };
            let before: Option<String> = redis::from_owned_redis_value(before)
                .map_err(|e| StoreError::Corrupt(format!("a commit's answer: {e}")))?;
            if let Some((record, events)) = told {
                listeners.iter().for_each(|listener| listener.durable(&record, &events));
            }
            Ok(before.as_deref().and_then(keys::parse_state))
        })
    }

    /// The commit script's call for a step, and the step's context. A step that ends its
    /// turn gives the lease back in its script: the lease is no longer renewed from now.
    fn commit_call(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: &[PushJob],
        session: Option<SessionWrite<'_>>,
    ) -> Result<(ScriptCall, ContextKey), StoreError> {
        // The queue's stream of the step's shard: in the step's hash slot.
        let push_stream = match (&self.options.push_stream, jobs.is_empty()) {
            (_, true) => None,
            (Some(stream), false) => Some(self.keys.queue_key(stream, self.keys.of_owner(&record.owner))),
            (None, false) => return Err(StoreError::NoPushQueue(jobs.len())),
        };
        let context = record.context_key();
        let lease = self.keys.lease(&context);
        // The token this node writes the context's steps under: its lease's, or "" when it
        // holds none (then the write is refused if any node holds the lease).
        let token = self.leases.token(&lease);
        // A step out of the active states ends its turn: the lease goes with it.
        let ends_turn = !token.is_empty() && !record.state().is_active();
        let mut call = self.commit.prepare();
        for key in self.keys.of_task(record) {
            call.key(key);
        }
        call.key(&lease);
        for key in self.keys.of_session(&context) {
            call.key(key);
        }
        // No stream: a key of the step's slot all the same (a cluster routes by every key).
        call.key(push_stream.unwrap_or_else(|| self.keys.queue_key("-", self.keys.of_owner(&record.owner))));
        call.arg(&token);
        let event_args = task_args(&mut call, record, events, self.event_retention + super::FOLLOW_SLACK)?;
        session_args(&mut call, session)?;
        let configs = self.job_args(&mut call, record, events, &event_args, jobs)?;
        call.arg(if ends_turn { "1" } else { "0" });
        // The task's configs, when the script reads them: its last key.
        if let Some(configs) = configs {
            call.key(configs);
        }
        if ends_turn {
            self.leases.forget(&lease, &token);
        }
        Ok((call, context))
    }

    /// A removal and/or a session write, in one script: returns the removed record.
    pub(super) fn settle_writes(
        &self,
        task_id: Option<&str>,
        session: Option<SessionWrite<'_>>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let removed = match task_id {
            Some(id) => self.get_task(Scope::Node, id)?,
            None => None,
        };
        let shard = match (&removed, &session) {
            (Some(record), _) => self.keys.of_owner(&record.owner),
            (None, Some(write)) => self.keys.of_owner(&write.session.key.owner),
            (None, None) => return Ok(None),
        };
        let mut call = self.settle.prepare();
        // The keys of the task as it was read (a task's owner and context never change);
        // without one, unused keys of the same slot (a cluster routes by every key).
        let task_keys = removed.as_ref().map(|r| self.keys.of_task(r));
        for key in task_keys.unwrap_or_else(|| std::array::from_fn(|_| self.keys.queue_key("-", shard).into_bytes())) {
            call.key(key);
        }
        for key in session.iter().flat_map(|s| self.keys.of_session(&s.session.key)) {
            call.key(key);
        }
        call.arg(removed.as_ref().map(|r| r.task.id.as_str()).unwrap_or(""));
        session_args(&mut call, session)?;
        let raw: Option<Vec<u8>> = self.link.with_conn("remove a task", |conn| Ok(call.invoke(conn)?))?;
        raw.map(|json| RedisStore::decode(&json)).transpose()
    }

    /// The total and the ids of one page (plus one when there is a next page).
    pub(super) fn list_ids(&self, query: &TaskQuery) -> Result<(usize, Vec<String>), StoreError> {
        let filter = |value: Option<String>| value.map(|v| format!("={v}")).unwrap_or_default();
        let min = query.status_after_millis.map(|ms| ms.max(0).to_string()).unwrap_or_else(|| "-inf".to_owned());
        let (cursor_ms, cursor_id) = match &query.cursor {
            Some(c) => (c.ts.max(0).to_string(), c.id.clone()),
            None => (String::new(), String::new()),
        };
        let reply: Vec<Value> = self.link.with_conn("list tasks", |conn| {
            Ok(self
                .list
                .key(self.keys.owner_index(&query.owner))
                .key(self.keys.owner_meta(&query.owner))
                .arg(min)
                .arg(filter(query.context_id.clone()))
                .arg(filter(query.state.map(keys::state_code)))
                .arg(cursor_ms)
                .arg(cursor_id)
                .arg(query.page_size)
                .invoke(conn)?)
        })?;
        let mut values = reply.into_iter();
        let total = values.next().and_then(|v| redis::from_redis_value::<usize>(&v).ok()).unwrap_or(0);
        let ids = values.filter_map(|v| redis::from_redis_value::<String>(&v).ok()).collect();
        Ok((total, ids))
    }

    /// The sum of `command` (XLEN, LLEN) over `keys`, each at most `cap`, in one pipeline.
    pub(super) fn sum_lengths(
        &self,
        command: &str,
        keys: impl Iterator<Item = Vec<u8>>,
        cap: u64,
    ) -> Result<u64, StoreError> {
        let mut pipe = redis::pipe();
        let mut any = false;
        for key in keys {
            pipe.cmd(command).arg(key);
            any = true;
        }
        if !any {
            return Ok(0);
        }
        let lengths: Vec<u64> = self.link.with_conn("count the store", |conn| Ok(pipe.query(conn)?))?;
        Ok(lengths.iter().map(|n| (*n).min(cap)).sum())
    }
}

/// The task part of a commit's arguments (`put_task` in `scripts.rs`); returns the
/// `ARGV` index of each event's JSON.
fn task_args(
    call: &mut ScriptCall,
    record: &TaskRecord,
    events: &[LoggedEvent],
    retention: u64,
) -> Result<Vec<usize>, StoreError> {
    let json = serde_json::to_vec(record).map_err(|e| StoreError::Corrupt(format!("task record: {e}")))?;
    call.arg(&record.task.id)
        .arg(json)
        .arg(record.last_event_seq)
        .arg(keys::state_code(record.state()))
        .arg(record.status_millis().max(0))
        .arg(keys::owner_meta_value(record))
        .arg(keys::all_value(record))
        .arg(record.owner.key_prefix())
        .arg(record.context_key().storage_key())
        .arg(retention)
        .arg(events.len());
    let mut at = Vec::with_capacity(events.len());
    for event in events {
        call.arg(event.seq).arg(event.json.as_bytes());
        at.push(call.arg_count());
    }
    Ok(at)
}

/// A session flag, then the session part (`put_session` in `scripts.rs`) if there is one.
fn session_args(call: &mut ScriptCall, session: Option<SessionWrite<'_>>) -> Result<(), StoreError> {
    let Some(write) = session else {
        call.arg("0");
        return Ok(());
    };
    let encode_error = |e: serde_json::Error| StoreError::Corrupt(format!("session: {e}"));
    call.arg("1")
        .arg(serde_json::to_vec(write.session).map_err(encode_error)?)
        .arg(write.session.key.storage_key())
        .arg(write.history_limit)
        .arg(write.appended.len())
        // The session's first write adds it to the shard's set of sessions; later ones
        // need not (one command less per turn).
        .arg(if write.session.message_count as usize <= write.appended.len() { "1" } else { "0" });
    for message in write.appended {
        call.arg(serde_json::to_vec(message).map_err(encode_error)?);
    }
    Ok(())
}

/// With `replica-acks`, the `WAIT` sent right behind a commit, on its connection
/// ([`Request::Replicated`]): Redis answers it once `wanted` replicas have the
/// connection's writes so far, the commit's included (at most [`REPLICA_WAIT`]). The
/// lane's later requests queue behind it: the cost is one replication round trip per step
/// per lane (docs/cluster.md).
fn replica_wait(wanted: u32) -> redis::Cmd {
    let mut wait = redis::cmd("WAIT");
    wait.arg(wanted).arg(REPLICA_WAIT.as_millis() as u64);
    wait
}

/// The commit's reply out of a [`Request::Replicated`]'s, once its `WAIT` counted
/// `wanted` replicas; fewer is a failed step, which the caller must not acknowledge.
fn replicas_confirmed(reply: Value, wanted: u32) -> Result<Value, StoreError> {
    let unexpected = || StoreError::Corrupt("a replicated commit's answer is not two replies".into());
    let Value::Array(replies) = reply else { return Err(unexpected()) };
    let [commit, confirmed]: [Value; 2] = replies.try_into().map_err(|_| unexpected())?;
    let confirmed: u32 =
        redis::from_owned_redis_value(confirmed).map_err(|e| StoreError::Corrupt(format!("WAIT's answer: {e}")))?;
    match confirmed >= wanted {
        true => Ok(commit),
        false => Err(StoreError::Redis {
            kind: crate::RedisFailure::TimedOut,
            message: format!("only {confirmed} of {wanted} replicas confirmed a step in time"),
        }),
    }
}

/// How long a step waits for its replicas' confirmation (`redis.replica-acks`).
const REPLICA_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a commit's refusal names: the task, its context and the generation offered.
struct Refusal {
    task_id: String,
    context_id: String,
    offered: u64,
}

impl Refusal {
    fn of(record: &TaskRecord) -> Self {
        Refusal {
            task_id: record.task.id.clone(),
            context_id: record.task.context_id.clone(),
            offered: record.last_event_seq,
        }
    }

    /// A script's refusal as the store error it stands for; anything else stays Redis's.
    fn map(self, e: RedisError) -> Result<StoreError, RedisError> {
        match e.code() {
            Some("A2AD_CONFLICT") => Ok(StoreError::Conflict {
                task_id: self.task_id,
                stored: e.detail().and_then(|d| d.trim().parse().ok()).unwrap_or(0),
                offered: self.offered,
            }),
            Some("A2AD_LEASE") => Ok(StoreError::LeaseLost { context_id: self.context_id }),
            _ => Err(e),
        }
    }
}

/// XRANGE's entries as logged events.
pub(super) fn parse_events(entries: Value) -> Result<Vec<LoggedEvent>, StoreError> {
    Ok(events_from(parse_entries(&entries)))
}

/// Stream entries as logged events (an entry of another shape is skipped).
pub(super) fn events_from(entries: Vec<Entry>) -> Vec<LoggedEvent> {
    entries
        .into_iter()
        .filter_map(|entry| {
            let seq = entry.id.split_once('-').and_then(|(seq, _)| seq.parse().ok())?;
            Some(LoggedEvent { seq, json: Arc::from(entry.field("e")?) })
        })
        .collect()
}
