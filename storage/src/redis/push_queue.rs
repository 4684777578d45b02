//! The Redis Streams push queue (`push-queue: redis-streams`), for several nodes sharing
//! one queue.
//!
//! Keys (all configurable, see [`RedisQueueOptions`]):
//! * the stream (`a2ad:push`): one entry per job ready to go, field `job` = the job JSON,
//!   read by the workers of one consumer group;
//! * the retry key (`a2ad:push:retry`): a sorted set of jobs waiting for a retry, member =
//!   the job JSON, score = when it falls due (ms);
//! * the dead stream (`a2ad:push:dead`): jobs after the last attempt or a permanent
//!   refusal, fields `job`, `reason`, `died_ms`.
//!
//! A worker's [`JobQueue::due`] first moves the retries that have fallen due into the
//! stream (one Lua script, so a retry is never lost or doubled between the two), then
//! takes over, with XAUTOCLAIM, entries another worker leased more than the lease timeout
//! ago without settling them (that worker died), then reads new entries with XREADGROUP.
//! Every job it hands out carries its stream entry id in [`PushJob::receipt`]; settling the
//! job acknowledges (XACK) and deletes (XDEL) that entry, atomically with whatever else the
//! settlement writes. A job whose worker dies stays in the group's pending list and is
//! delivered again once the lease expires: at least once, like the sled queue; receivers
//! deduplicate on the job's event id.
//!
//! A node on sled does not XADD a step's jobs itself: they go into its local outbox with
//! the step, and the [`Forwarder`] moves them here once they are durable (`forwarder.rs`).
//! On the shared store (`store: redis`) the step's commit script adds them.
//!
//! **Shards.** The shared store's queue has one set of the keys above per store shard
//! ([`RedisQueueOptions::shards`], named `<key>:<shard tag>`), so a commit script adds its
//! jobs in its own hash slot on a Redis Cluster. A worker reads the shards in turn, each
//! call starting one further on; a job's receipt then names its shard
//! (`<shard>/<entry id>`), so it is settled where it came from. One set of keys (every
//! queue but the shared store's on a cluster) is one shard, with receipts as before.

pub use forwarder::{Forwarder, ForwarderSettings, PUSH_OUTBOX_TREE};
pub use options::{QueueKeys, RedisQueueOptions};

use crate::redis::link::{Conn, Failure, RedisLink};
use crate::{DeadJob, JobQueue, PushJob, StoreError};
use redis::{RedisError, Value};
use reply::{group_info, parse_autoclaim, parse_entries, parse_read, Entry};
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// At most this many XAUTOCLAIM rounds per [`JobQueue::due`] call (each scans up to ten
/// times its COUNT pending entries).
const CLAIM_ROUNDS: usize = 4;

/// Moves the retries due by ARGV[1] (at most ARGV[2]) from the sorted set KEYS[1] into the
/// stream KEYS[2]. Returns how many.
const MOVE_DUE_RETRIES: &str = r"
local jobs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, job in ipairs(jobs) do
  redis.call('XADD', KEYS[2], '*', 'job', job)
  redis.call('ZREM', KEYS[1], job)
end
return #jobs
";

/// Moves the dead entry ARGV[1] of KEYS[1] to the stream KEYS[2] as the job ARGV[2], if it
/// is still there (two operators reviving at once revive it once). Returns 1 or 0.
const REVIVE: &str = r"
if redis.call('XDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('XADD', KEYS[2], '*', 'job', ARGV[2])
  return 1
end
return 0
";

/// The queue over Redis Streams. Send + Sync: one connection behind a mutex, reopened
/// when it breaks.
pub struct RedisQueue {
    options: RedisQueueOptions,
    /// The shards' keys (one set when not sharded).
    shards: Vec<QueueKeys>,
    /// The shard the next [`JobQueue::due`] starts with.
    next_shard: AtomicUsize,
    /// One connection (the worker and the forwarder take turns), with the streams and the
    /// consumer group made sure of on each new one.
    link: RedisLink,
    move_due_retries: redis::Script,
    revive: redis::Script,
}

impl fmt::Debug for RedisQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisQueue").field("options", &self.options).finish_non_exhaustive()
    }
}

impl RedisQueue {
    /// The queue on the server at `options.url`, not connected yet: the first command
    /// connects (and every reconnection creates the stream and the consumer group again
    /// if they are gone, as after a Redis restart that kept no data). Only a URL that is
    /// not a Redis URL fails here. A node opens its queue so, and starts while Redis is
    /// down: its pushes wait in the outbox ([`Forwarder`]).
    pub fn open(options: RedisQueueOptions) -> Result<Self, StoreError> {
        let shards = options.queue_keys();
        let streams: Vec<String> = shards.iter().map(|keys| keys.stream.clone()).collect();
        let group = options.group.clone();
        let link = RedisLink::open_on(&options.url, options.topology, 1, "push queue")?
            .on_connect(move |conn| streams.iter().try_for_each(|stream| create_group(conn, stream, &group)));
        Ok(RedisQueue {
            options,
            shards,
            next_shard: AtomicUsize::new(0),
            link,
            move_due_retries: redis::Script::new(MOVE_DUE_RETRIES),
            revive: redis::Script::new(REVIVE),
        })
    }

    /// [`RedisQueue::open`], then connects (creating the stream and the consumer group if
    /// they do not exist). An unreachable Redis is an error naming the URL (without its
    /// password).
    pub fn connect(options: RedisQueueOptions) -> Result<Self, StoreError> {
        let queue = RedisQueue::open(options)?;
        queue.reach()?;
        Ok(queue)
    }

    /// Connects now unless connected (creating the stream and the group if need be).
    pub fn reach(&self) -> Result<(), StoreError> {
        self.with_conn("connect", |_, _| Ok(()))
    }

    pub fn options(&self) -> &RedisQueueOptions {
        &self.options
    }

    /// Runs `f` on the connection (see [`RedisLink::with_conn`]).
    fn with_conn<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Conn, &Self) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        self.link.with_conn(what, |conn| f(conn, self))
    }

    /// The stream entry's job, with its receipt; `None` (after quarantining the entry in
    /// the dead stream) when it is unreadable, so one bad entry cannot stall the queue.
    fn take_entry(&self, conn: &mut Conn, shard: usize, entry: Entry) -> Result<Option<PushJob>, RedisError> {
        let keys = &self.shards[shard];
        let raw = entry.field("job");
        match raw.map(serde_json::from_str::<PushJob>) {
            Some(Ok(mut job)) => {
                job.receipt = Some(self.receipt(shard, &entry.id));
                Ok(Some(job))
            }
            broken => {
                let reason = match broken {
                    Some(Err(e)) => format!("unreadable job: {e}"),
                    _ => "stream entry without a job field".to_owned(),
                };
                tracing::error!(stream = %keys.stream, entry = %entry.id, %reason, "push queue: moving an unreadable entry to the dead stream");
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .cmd("XADD")
                    .arg(&keys.dead_stream)
                    .arg("*")
                    .arg("raw")
                    .arg(raw.unwrap_or_default())
                    .arg("reason")
                    .arg(reason)
                    .arg("died_ms")
                    .arg(chrono::Utc::now().timestamp_millis())
                    .ignore();
                self.settle_cmds(&mut pipe, keys, &entry.id);
                pipe.query::<()>(conn)?;
                Ok(None)
            }
        }
    }

    /// XACK + XDEL of a settled entry (its id in the shard's stream), appended to `pipe`.
    fn settle_cmds(&self, pipe: &mut redis::Pipeline, keys: &QueueKeys, entry_id: &str) {
        pipe.cmd("XACK").arg(&keys.stream).arg(&self.options.group).arg(entry_id).ignore();
        pipe.cmd("XDEL").arg(&keys.stream).arg(entry_id).ignore();
    }

    /// The receipt of entry `entry_id` of shard `shard`: the entry id when the queue has
    /// one shard, else `<shard>/<entry id>`.
    fn receipt(&self, shard: usize, entry_id: &str) -> String {
        match self.shards.len() {
            1 => entry_id.to_owned(),
            _ => format!("{shard}/{entry_id}"),
        }
    }

    /// The shard and entry id `job` was taken from; `None` for a job without a receipt
    /// (not taken from this queue); an error for a receipt that names no shard of this
    /// queue, which would otherwise be settled nowhere and delivered again.
    fn taken_from<'j>(&self, job: &'j PushJob) -> Result<Option<(usize, &'j str)>, StoreError> {
        let Some(receipt) = job.receipt.as_deref() else { return Ok(None) };
        match self.split_receipt(receipt) {
            Some(taken) => Ok(Some(taken)),
            None => Err(StoreError::Corrupt(format!("push job receipt {receipt:?} names no shard of this queue"))),
        }
    }

    /// A receipt's shard and entry id (`None`: not one of this queue's).
    fn split_receipt<'r>(&self, receipt: &'r str) -> Option<(usize, &'r str)> {
        if self.shards.len() == 1 {
            return Some((0, receipt));
        }
        let (shard, entry_id) = receipt.split_once('/')?;
        shard.parse().ok().filter(|s| *s < self.shards.len()).map(|s| (s, entry_id))
    }

    /// The shard `job` is added to by [`JobQueue::enqueue`] (a job that was not taken from
    /// this queue): a hash of its task id, which spreads them.
    fn shard_of(&self, job: &PushJob) -> usize {
        usize::from(crate::model::fold_hash(job.task_id.as_bytes())) % self.shards.len()
    }

    /// A worker's next jobs, in three steps (see the module docs): retries that fell due
    /// join the stream, abandoned leases are taken over, then new entries are read.
    fn due_on(&self, conn: &mut Conn, shard: usize, now_ms: i64, batch: &mut Batch<'_>) -> Result<(), RedisError> {
        self.requeue_due_retries(conn, shard, now_ms, batch.max)?;
        self.claim_abandoned(conn, shard, batch)?;
        // One skipped as in flight stays pending and comes back through XAUTOCLAIM after
        // the lease.
        if batch.room() > 0 {
            self.read_new(conn, shard, batch)?;
        }
        Ok(())
    }

    /// Retries that have fallen due join the stream (one Lua script: never lost or doubled).
    fn requeue_due_retries(&self, conn: &mut Conn, shard: usize, now_ms: i64, max: usize) -> Result<(), RedisError> {
        let keys = &self.shards[shard];
        let _moved: i64 =
            self.move_due_retries.key(&keys.retry_key).key(&keys.stream).arg(now_ms).arg(max.max(16)).invoke(conn)?;
        Ok(())
    }

    /// Jobs leased longer than the lease timeout ago: their worker died (or, when they are
    /// ours and in flight, is slow; the batch skips those). At most [`CLAIM_ROUNDS`] rounds.
    fn claim_abandoned(&self, conn: &mut Conn, shard: usize, batch: &mut Batch<'_>) -> Result<(), RedisError> {
        let stream = &self.shards[shard].stream;
        let min_idle = u64::try_from(self.options.lease_timeout.as_millis()).unwrap_or(u64::MAX);
        let mut cursor = "0-0".to_owned();
        for _ in 0..CLAIM_ROUNDS {
            let reply: Value = redis::cmd("XAUTOCLAIM")
                .arg(stream)
                .arg(&self.options.group)
                .arg(&self.options.consumer)
                .arg(min_idle)
                .arg(&cursor)
                .arg("COUNT")
                .arg(batch.room())
                .query(conn)?;
            let (next, claimed, gone) = parse_autoclaim(&reply);
            for id in gone {
                // Redis 6.2 reports entries deleted while pending as nil: drop them from
                // the pending list.
                redis::cmd("XACK").arg(stream).arg(&self.options.group).arg(id).query::<()>(conn)?;
            }
            self.take_entries(conn, shard, claimed, batch)?;
            cursor = next;
            if cursor == "0-0" || batch.room() == 0 {
                break;
            }
        }
        Ok(())
    }

    /// New entries of the group (XREADGROUP `>`), as many as the batch has room for.
    fn read_new(&self, conn: &mut Conn, shard: usize, batch: &mut Batch<'_>) -> Result<(), RedisError> {
        let reply: Value = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&self.options.group)
            .arg(&self.options.consumer)
            .arg("COUNT")
            .arg(batch.room())
            .arg("STREAMS")
            .arg(&self.shards[shard].stream)
            .arg(">")
            .query(conn)?;
        self.take_entries(conn, shard, parse_read(&reply), batch)
    }

    /// The jobs of `entries`, offered to the batch.
    fn take_entries(
        &self,
        conn: &mut Conn,
        shard: usize,
        entries: Vec<Entry>,
        batch: &mut Batch<'_>,
    ) -> Result<(), RedisError> {
        for entry in entries {
            if let Some(job) = self.take_entry(conn, shard, entry)? {
                batch.offer(job);
            }
        }
        Ok(())
    }
}

/// The jobs one [`JobQueue::due`] call hands out: at most `max`, none that this worker
/// already has in flight (by job id or by stream entry).
struct Batch<'a> {
    max: usize,
    in_flight: &'a HashSet<String>,
    jobs: Vec<PushJob>,
}

impl Batch<'_> {
    /// How many more jobs the call may hand out (the COUNT of the next read).
    fn room(&self) -> usize {
        self.max.saturating_sub(self.jobs.len())
    }

    /// Keeps `job` unless it is in flight here.
    fn offer(&mut self, job: PushJob) {
        let busy =
            self.in_flight.contains(&job.id()) || job.receipt.as_ref().is_some_and(|r| self.in_flight.contains(r));
        if !busy {
            self.jobs.push(job);
        }
    }
}

impl JobQueue for RedisQueue {
    /// XADD of every job, in one MULTI per shard.
    fn enqueue(&self, jobs: &[PushJob]) -> Result<(), StoreError> {
        for (shard, keys) in self.shards.iter().enumerate() {
            let mut pipe = redis::pipe();
            pipe.atomic();
            let mut any = false;
            for job in jobs.iter().filter(|job| self.shard_of(job) == shard) {
                pipe.cmd("XADD").arg(&keys.stream).arg("*").arg("job").arg(encode(job)?).ignore();
                any = true;
            }
            if any {
                self.with_conn("enqueue push jobs", |conn, _| Ok(pipe.query::<()>(conn)?))?;
            }
        }
        Ok(())
    }

    /// Per shard, from the one after the last call's first: due retries into the stream,
    /// then expired leases (XAUTOCLAIM), then new entries (XREADGROUP), up to `max` in all,
    /// leaving out `in_flight` job ids (or receipts).
    fn due(&self, now_ms: i64, max: usize, in_flight: &HashSet<String>) -> Result<Vec<PushJob>, StoreError> {
        let (mut batch, mut failed) = (Batch { max, in_flight, jobs: Vec::new() }, None);
        let first = self.next_shard.fetch_add(1, Ordering::Relaxed);
        for turn in 0..self.shards.len() {
            if batch.room() == 0 {
                break;
            }
            let shard = (first + turn) % self.shards.len();
            let read =
                self.with_conn("read due push jobs", |conn, q| match q.due_on(conn, shard, now_ms, &mut batch) {
                    // The stream or the group was deleted under us (FLUSHALL, an operator): recreate.
                    Err(e) if e.code() == Some("NOGROUP") => {
                        create_group(conn, &q.shards[shard].stream, &q.options.group)?;
                        Ok(q.due_on(conn, shard, now_ms, &mut batch)?)
                    }
                    other => Ok(other?),
                });
            // A shard on a primary that is down must not hold back the others' jobs, read
            // already (they would wait in the pending list for the lease): they go out, and
            // the failure is the call's only when it brought nothing.
            if let Err(e) = read {
                failed.get_or_insert(e);
            }
        }
        match failed {
            Some(e) if batch.jobs.is_empty() => Err(e),
            _ => Ok(batch.jobs),
        }
    }

    /// XACK + XDEL of the job's entry. A job without a receipt was not taken from this
    /// queue, and there is nothing to settle.
    fn ack(&self, job: &PushJob) -> Result<(), StoreError> {
        let Some((shard, entry_id)) = self.taken_from(job)? else { return Ok(()) };
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.settle_cmds(&mut pipe, &self.shards[shard], entry_id);
        self.with_conn("acknowledge a push job", |conn, _| Ok(pipe.query::<()>(conn)?))
    }

    /// ZADD of `next` at its due time, and XACK + XDEL of the job's entry, in one MULTI
    /// (in the entry's shard; a job without a receipt, in its task's).
    fn reschedule(&self, job: &PushJob, next: &PushJob) -> Result<(), StoreError> {
        let taken = self.taken_from(job)?;
        let keys = &self.shards[taken.map_or_else(|| self.shard_of(job), |(shard, _)| shard)];
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("ZADD").arg(&keys.retry_key).arg(next.next_attempt_ms).arg(encode(next)?).ignore();
        if let Some((_, entry_id)) = taken {
            self.settle_cmds(&mut pipe, keys, entry_id);
        }
        self.with_conn("reschedule a push job", |conn, _| Ok(pipe.query::<()>(conn)?))
    }

    /// XADD to the dead stream (job, reason, died_ms), and XACK + XDEL of the job's entry,
    /// in one MULTI (in the entry's shard, as [`JobQueue::reschedule`]).
    fn bury(&self, job: &PushJob, reason: &str, now_ms: i64) -> Result<(), StoreError> {
        let taken = self.taken_from(job)?;
        let keys = &self.shards[taken.map_or_else(|| self.shard_of(job), |(shard, _)| shard)];
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("XADD")
            .arg(&keys.dead_stream)
            .arg("*")
            .arg("job")
            .arg(encode(job)?)
            .arg("reason")
            .arg(reason)
            .arg("died_ms")
            .arg(now_ms)
            .ignore();
        if let Some((_, entry_id)) = taken {
            self.settle_cmds(&mut pipe, keys, entry_id);
        }
        self.with_conn("bury a push job", |conn, _| Ok(pipe.query::<()>(conn)?))
    }

    /// Every dead job, oldest first (XRANGE of each shard's dead stream). Quarantined
    /// unreadable entries (field `raw`) are left out; `redis-cli XRANGE` shows them.
    fn dead(&self) -> Result<Vec<DeadJob>, StoreError> {
        let mut dead = Vec::new();
        for keys in &self.shards {
            let entries = self.dead_entries(keys)?;
            dead.extend(entries.iter().filter_map(|entry| self.dead_job(keys, entry)));
        }
        dead.sort_by_key(|job| job.died_ms);
        Ok(dead)
    }

    /// Moves the dead jobs with job id `id` (or every one, with `None`) back to their
    /// shard's stream, due now, with fresh attempts (XDEL + XADD per entry, in one
    /// script). Returns how many.
    fn revive(&self, id: Option<&str>, now_ms: i64) -> Result<usize, StoreError> {
        let mut revived = 0;
        for keys in &self.shards {
            for entry in self.dead_entries(keys)? {
                let Some(dead) = self.dead_job(keys, &entry) else { continue };
                if id.is_some_and(|id| id != dead.job.id() && id != entry.id) {
                    continue;
                }
                let mut fresh = dead.job;
                fresh.attempts = 0;
                fresh.first_enqueued_ms = now_ms;
                fresh.next_attempt_ms = now_ms;
                fresh.last_error = None;
                fresh.last_status = None;
                let moved: i64 = self.with_conn("revive dead push jobs", |conn, q| {
                    Ok(q.revive
                        .key(&keys.dead_stream)
                        .key(&keys.stream)
                        .arg(&entry.id)
                        .arg(encode(&fresh)?)
                        .invoke(conn)?)
                })?;
                revived += usize::try_from(moved).unwrap_or(0);
            }
        }
        Ok(revived)
    }

    /// Drops the dead jobs with job id `id` (or every one, with `None`): XDEL of their
    /// entries in the dead streams. Returns how many.
    fn purge(&self, id: Option<&str>) -> Result<usize, StoreError> {
        let mut purged = 0;
        for keys in &self.shards {
            let matching: Vec<String> = self
                .dead_entries(keys)?
                .into_iter()
                .filter(|entry| match id {
                    None => true,
                    Some(id) => id == entry.id || self.dead_job(keys, entry).is_some_and(|dead| dead.job.id() == id),
                })
                .map(|entry| entry.id)
                .collect();
            if matching.is_empty() {
                continue;
            }
            let removed: i64 = self.with_conn("purge dead push jobs", |conn, _| {
                Ok(redis::cmd("XDEL").arg(&keys.dead_stream).arg(&matching).query(conn)?)
            })?;
            purged += usize::try_from(removed).unwrap_or(0);
        }
        Ok(purged)
    }

    /// Jobs waiting, summed over the shards: each group's pending entries (leased, not
    /// settled) plus its lag (entries not yet delivered, from XINFO GROUPS) plus the
    /// scheduled retries (ZCARD). When Redis cannot tell the lag (before 7.0, or after
    /// some deletions) it is taken as XLEN minus pending: exact as long as only this queue
    /// settles entries, since settling deletes them, so the stream holds exactly the
    /// undelivered and the pending entries.
    fn depth(&self) -> Result<usize, StoreError> {
        let mut depth = 0usize;
        for keys in &self.shards {
            depth =
                depth.saturating_add(self.with_conn("measure the push queue", |conn, q| q.shard_depth(conn, keys))?);
        }
        Ok(depth)
    }
}

impl RedisQueue {
    /// The entries of a shard's dead stream, oldest first.
    fn dead_entries(&self, keys: &QueueKeys) -> Result<Vec<Entry>, StoreError> {
        self.with_conn("read the dead push jobs", |conn, _| {
            let reply: Value = redis::cmd("XRANGE").arg(&keys.dead_stream).arg("-").arg("+").query(conn)?;
            Ok(parse_entries(&reply))
        })
    }

    /// One shard's part of [`JobQueue::depth`].
    fn shard_depth(&self, conn: &mut Conn, keys: &QueueKeys) -> Result<usize, Failure> {
        let (groups, len, retries): (Value, u64, u64) = redis::pipe()
            .cmd("XINFO")
            .arg("GROUPS")
            .arg(&keys.stream)
            .cmd("XLEN")
            .arg(&keys.stream)
            .cmd("ZCARD")
            .arg(&keys.retry_key)
            .query(conn)
            .or_else(|e: RedisError| {
                // No stream (deleted under us): nothing pending or undelivered.
                if e.code() == Some("ERR") && e.to_string().contains("no such key") {
                    let retries: u64 = redis::cmd("ZCARD").arg(&keys.retry_key).query(conn)?;
                    Ok((Value::Array(Vec::new()), 0, retries))
                } else {
                    Err(e)
                }
            })?;
        let (pending, lag) = group_info(&groups, &self.options.group);
        let undelivered = lag.unwrap_or_else(|| len.saturating_sub(pending));
        Ok(usize::try_from(pending + undelivered + retries).unwrap_or(usize::MAX))
    }

    fn dead_job(&self, keys: &QueueKeys, entry: &Entry) -> Option<DeadJob> {
        let job = match serde_json::from_str::<PushJob>(entry.field("job")?) {
            Ok(job) => job,
            Err(e) => {
                tracing::warn!(stream = %keys.dead_stream, entry = %entry.id, error = %e, "unreadable dead push job");
                return None;
            }
        };
        Some(DeadJob {
            job,
            reason: entry.field("reason").unwrap_or_default().to_owned(),
            died_ms: entry.field("died_ms").and_then(|v| v.parse().ok()).unwrap_or(0),
        })
    }
}

/// XGROUP CREATE ... 0 MKSTREAM; an existing group is fine. From the stream's start, not
/// `$`: settled entries are deleted, so whatever the stream holds is a job not yet
/// delivered, and a group recreated after it was lost (a FLUSHALL, a Redis that kept the
/// stream but not the group) must still deliver the jobs forwarded meanwhile.
fn create_group(conn: &mut Conn, stream: &str, group: &str) -> Result<(), RedisError> {
    let created: Result<(), RedisError> =
        redis::cmd("XGROUP").arg("CREATE").arg(stream).arg(group).arg("0").arg("MKSTREAM").query(conn);
    match created {
        Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
        other => other,
    }
}

pub(crate) fn encode(job: &PushJob) -> Result<String, StoreError> {
    serde_json::to_string(job).map_err(|e| StoreError::Corrupt(format!("push job: {e}")))
}

mod forwarder;
mod options;
pub(crate) mod reply;
#[cfg(test)]
mod tests;
