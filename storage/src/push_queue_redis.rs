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
//! A node does not XADD a step's jobs itself: they go into its local outbox with the
//! step, and the [`Forwarder`] moves them here once they are durable (`forwarder.rs`).

pub use forwarder::{Forwarder, ForwarderSettings, PUSH_OUTBOX_TREE};
pub use options::{redact_url, RedisQueueOptions};

use crate::redis_link::{Failure, RedisLink};
use crate::{DeadJob, JobQueue, PushJob, StoreError};
use redis::{Connection, RedisError, Value};
use reply::{group_info, parse_autoclaim, parse_entries, parse_read, Entry};
use std::collections::HashSet;
use std::fmt;

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
    /// One connection (the worker and the forwarder take turns), with the stream and the
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
        let (stream, group) = (options.stream.clone(), options.group.clone());
        let link =
            RedisLink::open(&options.url, 1, "push queue")?.on_connect(move |conn| create_group(conn, &stream, &group));
        Ok(RedisQueue {
            options,
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
        f: impl FnOnce(&mut Connection, &Self) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        self.link.with_conn(what, |conn| f(conn, self))
    }

    /// The stream entry's job, with its receipt; `None` (after quarantining the entry in
    /// the dead stream) when it is unreadable, so one bad entry cannot stall the queue.
    fn take_entry(&self, conn: &mut Connection, entry: Entry) -> Result<Option<PushJob>, RedisError> {
        let raw = entry.field("job");
        match raw.map(serde_json::from_str::<PushJob>) {
            Some(Ok(mut job)) => {
                job.receipt = Some(entry.id);
                Ok(Some(job))
            }
            broken => {
                let reason = match broken {
                    Some(Err(e)) => format!("unreadable job: {e}"),
                    _ => "stream entry without a job field".to_owned(),
                };
                tracing::error!(stream = %self.options.stream, entry = %entry.id, %reason, "push queue: moving an unreadable entry to the dead stream");
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .cmd("XADD")
                    .arg(&self.options.dead_stream)
                    .arg("*")
                    .arg("raw")
                    .arg(raw.unwrap_or_default())
                    .arg("reason")
                    .arg(reason)
                    .arg("died_ms")
                    .arg(chrono::Utc::now().timestamp_millis())
                    .ignore();
                self.settle_cmds(&mut pipe, &entry.id);
                pipe.query::<()>(conn)?;
                Ok(None)
            }
        }
    }

    /// XACK + XDEL of a settled entry, appended to `pipe`.
    fn settle_cmds(&self, pipe: &mut redis::Pipeline, receipt: &str) {
        pipe.cmd("XACK").arg(&self.options.stream).arg(&self.options.group).arg(receipt).ignore();
        pipe.cmd("XDEL").arg(&self.options.stream).arg(receipt).ignore();
    }

    /// A worker's next jobs, in three steps (see the module docs): retries that fell due
    /// join the stream, abandoned leases are taken over, then new entries are read.
    fn due_on(
        &self,
        conn: &mut Connection,
        now_ms: i64,
        max: usize,
        in_flight: &HashSet<String>,
    ) -> Result<Vec<PushJob>, RedisError> {
        let mut batch = Batch { max, in_flight, jobs: Vec::new() };
        self.requeue_due_retries(conn, now_ms, max)?;
        self.claim_abandoned(conn, &mut batch)?;
        // One skipped as in flight stays pending and comes back through XAUTOCLAIM after
        // the lease.
        if batch.room() > 0 {
            self.read_new(conn, &mut batch)?;
        }
        Ok(batch.jobs)
    }

    /// Retries that have fallen due join the stream (one Lua script: never lost or doubled).
    fn requeue_due_retries(&self, conn: &mut Connection, now_ms: i64, max: usize) -> Result<(), RedisError> {
        let _moved: i64 = self
            .move_due_retries
            .key(&self.options.retry_key)
            .key(&self.options.stream)
            .arg(now_ms)
            .arg(max.max(16))
            .invoke(conn)?;
        Ok(())
    }

    /// Jobs leased longer than the lease timeout ago: their worker died (or, when they are
    /// ours and in flight, is slow; the batch skips those). At most [`CLAIM_ROUNDS`] rounds.
    fn claim_abandoned(&self, conn: &mut Connection, batch: &mut Batch<'_>) -> Result<(), RedisError> {
        let min_idle = u64::try_from(self.options.lease_timeout.as_millis()).unwrap_or(u64::MAX);
        let mut cursor = "0-0".to_owned();
        for _ in 0..CLAIM_ROUNDS {
            let reply: Value = redis::cmd("XAUTOCLAIM")
                .arg(&self.options.stream)
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
                redis::cmd("XACK").arg(&self.options.stream).arg(&self.options.group).arg(id).query::<()>(conn)?;
            }
            self.take_entries(conn, claimed, batch)?;
            cursor = next;
            if cursor == "0-0" || batch.room() == 0 {
                break;
            }
        }
        Ok(())
    }

    /// New entries of the group (XREADGROUP `>`), as many as the batch has room for.
    fn read_new(&self, conn: &mut Connection, batch: &mut Batch<'_>) -> Result<(), RedisError> {
        let reply: Value = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&self.options.group)
            .arg(&self.options.consumer)
            .arg("COUNT")
            .arg(batch.room())
            .arg("STREAMS")
            .arg(&self.options.stream)
            .arg(">")
            .query(conn)?;
        self.take_entries(conn, parse_read(&reply), batch)
    }

    /// The jobs of `entries`, offered to the batch.
    fn take_entries(
        &self,
        conn: &mut Connection,
        entries: Vec<Entry>,
        batch: &mut Batch<'_>,
    ) -> Result<(), RedisError> {
        for entry in entries {
            if let Some(job) = self.take_entry(conn, entry)? {
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
    /// XADD of every job, in one MULTI.
    fn enqueue(&self, jobs: &[PushJob]) -> Result<(), StoreError> {
        if jobs.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        for job in jobs {
            pipe.cmd("XADD").arg(&self.options.stream).arg("*").arg("job").arg(encode(job)?).ignore();
        }
        self.with_conn("enqueue push jobs", |conn, _| Ok(pipe.query::<()>(conn)?))
    }

    /// Due retries into the stream, then expired leases (XAUTOCLAIM), then new entries
    /// (XREADGROUP), up to `max`, leaving out `in_flight` job ids (or receipts).
    fn due(&self, now_ms: i64, max: usize, in_flight: &HashSet<String>) -> Result<Vec<PushJob>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        self.with_conn("read due push jobs", |conn, q| match q.due_on(conn, now_ms, max, in_flight) {
            // The stream or the group was deleted under us (FLUSHALL, an operator): recreate.
            Err(e) if e.code() == Some("NOGROUP") => {
                create_group(conn, &q.options.stream, &q.options.group)?;
                Ok(q.due_on(conn, now_ms, max, in_flight)?)
            }
            other => Ok(other?),
        })
    }

    /// XACK + XDEL of the job's entry. A job without a receipt was not taken from this
    /// queue, and there is nothing to settle.
    fn ack(&self, job: &PushJob) -> Result<(), StoreError> {
        let Some(receipt) = job.receipt.as_deref() else { return Ok(()) };
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.settle_cmds(&mut pipe, receipt);
        self.with_conn("acknowledge a push job", |conn, _| Ok(pipe.query::<()>(conn)?))
    }

    /// ZADD of `next` at its due time, and XACK + XDEL of the job's entry, in one MULTI.
    fn reschedule(&self, job: &PushJob, next: &PushJob) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("ZADD").arg(&self.options.retry_key).arg(next.next_attempt_ms).arg(encode(next)?).ignore();
        if let Some(receipt) = job.receipt.as_deref() {
            self.settle_cmds(&mut pipe, receipt);
        }
        self.with_conn("reschedule a push job", |conn, _| Ok(pipe.query::<()>(conn)?))
    }

    /// XADD to the dead stream (job, reason, died_ms), and XACK + XDEL of the job's entry,
    /// in one MULTI.
    fn bury(&self, job: &PushJob, reason: &str, now_ms: i64) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("XADD")
            .arg(&self.options.dead_stream)
            .arg("*")
            .arg("job")
            .arg(encode(job)?)
            .arg("reason")
            .arg(reason)
            .arg("died_ms")
            .arg(now_ms)
            .ignore();
        if let Some(receipt) = job.receipt.as_deref() {
            self.settle_cmds(&mut pipe, receipt);
        }
        self.with_conn("bury a push job", |conn, _| Ok(pipe.query::<()>(conn)?))
    }

    /// Every dead job, oldest first (XRANGE of the dead stream). Quarantined unreadable
    /// entries (field `raw`) are left out; `redis-cli XRANGE` shows them.
    fn dead(&self) -> Result<Vec<DeadJob>, StoreError> {
        let entries = self.with_conn("read the dead push jobs", |conn, q| {
            let reply: Value = redis::cmd("XRANGE").arg(&q.options.dead_stream).arg("-").arg("+").query(conn)?;
            Ok(parse_entries(&reply))
        })?;
        Ok(entries.iter().filter_map(|entry| self.dead_job(entry)).collect())
    }

    /// Moves the dead jobs with job id `id` (or every one, with `None`) back to the stream,
    /// due now, with fresh attempts (XDEL + XADD per entry, in one script). Returns how many.
    fn revive(&self, id: Option<&str>, now_ms: i64) -> Result<usize, StoreError> {
        self.with_conn("revive dead push jobs", |conn, q| {
            let reply: Value = redis::cmd("XRANGE").arg(&q.options.dead_stream).arg("-").arg("+").query(conn)?;
            let mut revived = 0;
            for entry in parse_entries(&reply) {
                let Some(dead) = q.dead_job(&entry) else { continue };
                if id.is_some_and(|id| id != dead.job.id() && id != entry.id) {
                    continue;
                }
                let mut fresh = dead.job;
                fresh.attempts = 0;
                fresh.first_enqueued_ms = now_ms;
                fresh.next_attempt_ms = now_ms;
                fresh.last_error = None;
                let moved: i64 = q
                    .revive
                    .key(&q.options.dead_stream)
                    .key(&q.options.stream)
                    .arg(&entry.id)
                    .arg(encode(&fresh)?)
                    .invoke(conn)?;
                revived += usize::try_from(moved).unwrap_or(0);
            }
            Ok(revived)
        })
    }

    /// Drops the dead jobs with job id `id` (or every one, with `None`): XDEL of their
    /// entries in the dead stream. Returns how many.
    fn purge(&self, id: Option<&str>) -> Result<usize, StoreError> {
        self.with_conn("purge dead push jobs", |conn, q| {
            let reply: Value = redis::cmd("XRANGE").arg(&q.options.dead_stream).arg("-").arg("+").query(conn)?;
            let mut entries = Vec::new();
            for entry in parse_entries(&reply) {
                let matches = match id {
                    None => true,
                    Some(id) => id == entry.id || q.dead_job(&entry).is_some_and(|dead| dead.job.id() == id),
                };
                if matches {
                    entries.push(entry.id);
                }
            }
            if entries.is_empty() {
                return Ok(0);
            }
            let removed: i64 = redis::cmd("XDEL").arg(&q.options.dead_stream).arg(&entries).query(conn)?;
            Ok(usize::try_from(removed).unwrap_or(0))
        })
    }

    /// Jobs waiting: the group's pending entries (leased, not settled) plus its lag (entries
    /// not yet delivered, from XINFO GROUPS) plus the scheduled retries (ZCARD). When Redis
    /// cannot tell the lag (before 7.0, or after some deletions) it is taken as XLEN minus
    /// pending: exact as long as only this queue settles entries, since settling deletes
    /// them, so the stream holds exactly the undelivered and the pending entries.
    fn depth(&self) -> Result<usize, StoreError> {
        self.with_conn("measure the push queue", |conn, q| {
            let (groups, len, retries): (Value, u64, u64) = redis::pipe()
                .cmd("XINFO")
                .arg("GROUPS")
                .arg(&q.options.stream)
                .cmd("XLEN")
                .arg(&q.options.stream)
                .cmd("ZCARD")
                .arg(&q.options.retry_key)
                .query(conn)
                .or_else(|e: RedisError| {
                    // No stream (deleted under us): nothing pending or undelivered.
                    if e.code() == Some("ERR") && e.to_string().contains("no such key") {
                        let retries: u64 = redis::cmd("ZCARD").arg(&q.options.retry_key).query(conn)?;
                        Ok((Value::Array(Vec::new()), 0, retries))
                    } else {
                        Err(e)
                    }
                })?;
            let (pending, lag) = group_info(&groups, &q.options.group);
            let undelivered = lag.unwrap_or_else(|| len.saturating_sub(pending));
            Ok(usize::try_from(pending + undelivered + retries).unwrap_or(usize::MAX))
        })
    }
}

impl RedisQueue {
    fn dead_job(&self, entry: &Entry) -> Option<DeadJob> {
        let job = match serde_json::from_str::<PushJob>(entry.field("job")?) {
            Ok(job) => job,
            Err(e) => {
                tracing::warn!(stream = %self.options.dead_stream, entry = %entry.id, error = %e, "unreadable dead push job");
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
fn create_group(conn: &mut Connection, stream: &str, group: &str) -> Result<(), RedisError> {
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
