//! The durable local push queue (`push-queue: local-file`).
//!
//! Jobs live in a tree of the node's sled database, so a job enqueued next to the event
//! that caused it is made durable by the same group-commit flush. Keys:
//! * `j` ‖ due time (ms, BE) ‖ job id → pending job (JSON), in the order they fall due;
//! * `d` ‖ job id → dead job (JSON), after the last attempt or a permanent refusal.
//!
//! A worker takes due jobs with [`PushQueue::due`], skipping the ones it already has in
//! flight, and settles each with [`PushQueue::ack`], [`PushQueue::reschedule`] or
//! [`PushQueue::bury`]. Nothing marks a job as taken on disk: if the process dies
//! mid-delivery the job is still pending and is delivered after the restart. That is the
//! at-least-once promise; receivers deduplicate on the job's event id.
//!
//! [`JobQueue`] is what the delivery worker codes against; this sled queue and the Redis
//! Streams queue implement it.

use crate::StoreError;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// One delivery of one task event to one push config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushJob {
    pub task_id: String,
    pub config_id: String,
    /// The event's sequence number in its task.
    pub event_seq: u64,
    /// The `StreamResponse` to POST, as JSON.
    pub body: String,
    /// Attempts made so far.
    pub attempts: u32,
    pub first_enqueued_ms: i64,
    pub next_attempt_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The HTTP status of the last attempt's response, when there was one: a dead letter
    /// shows it to the operator. Jobs stored before it existed read as `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<u16>,
    /// The `host:port` of the push config's URL at the last attempt, never its path or
    /// query (they may hold a secret): a dead letter says where it was going even after
    /// its config is gone. `None` before the first attempt, and in older jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Where a queue keeps track of the job while it is leased (a Redis stream entry id);
    /// not part of the job.
    #[serde(skip)]
    pub receipt: Option<String>,
}

/// A durable queue of push jobs with retries and dead letters. Methods may block on I/O;
/// async callers run them on a blocking thread.
pub trait JobQueue: Send + Sync + 'static {
    /// Adds jobs.
    fn enqueue(&self, jobs: &[PushJob]) -> Result<(), StoreError>;
    /// Up to `max` jobs due at `now_ms`, leaving out `in_flight` ids. The caller owns them
    /// until it settles each with `ack`, `reschedule` or `bury`.
    fn due(&self, now_ms: i64, max: usize, in_flight: &HashSet<String>) -> Result<Vec<PushJob>, StoreError>;
    /// The job was delivered.
    fn ack(&self, job: &PushJob) -> Result<(), StoreError>;
    /// The job failed and is tried again as `next` (attempts and due time updated).
    fn reschedule(&self, job: &PushJob, next: &PushJob) -> Result<(), StoreError>;
    /// The job goes to the dead letters.
    fn bury(&self, job: &PushJob, reason: &str, now_ms: i64) -> Result<(), StoreError>;
    /// Every dead job.
    fn dead(&self) -> Result<Vec<DeadJob>, StoreError>;
    /// Moves the dead job `id` (or all, with `None`) back to pending, due now, with fresh
    /// attempts. Returns how many.
    fn revive(&self, id: Option<&str>, now_ms: i64) -> Result<usize, StoreError>;
    /// Drops the dead job `id` (or all, with `None`) for good. Returns how many.
    fn purge(&self, id: Option<&str>) -> Result<usize, StoreError>;
    /// Jobs waiting (pending and scheduled retries).
    fn depth(&self) -> Result<usize, StoreError>;
}

/// The config id of a [`PushJob::for_every_config`].
pub const EVERY_CONFIG: &str = "*";

/// The tree of the node's sled database the local queue lives in.
pub const PUSH_QUEUE_TREE: &str = "push_queue";

/// The bytes before the job id in a pending key: `j` and the big-endian due time.
const PENDING_KEY_PREFIX: usize = 1 + 8;

impl PushJob {
    /// A new job, due now.
    pub fn new(task_id: &str, config_id: &str, event_seq: u64, body: String, now_ms: i64) -> Self {
        PushJob {
            task_id: task_id.to_owned(),
            config_id: config_id.to_owned(),
            event_seq,
            body,
            attempts: 0,
            first_enqueued_ms: now_ms,
            next_attempt_ms: now_ms,
            last_error: None,
            last_status: None,
            host: None,
            receipt: None,
        }
    }

    /// A job that stands for one job per push config its task has when its step is
    /// written: what a store that keeps the configs beside the tasks (Redis) takes, so
    /// that it reads the configs inside the step's own commit rather than the caller
    /// reading them first (one round trip per step, on an actor's thread). No config id is
    /// [`EVERY_CONFIG`]: ids are checked to be `A-Z a-z 0-9 _ . : -`. The body is the
    /// step's event of `event_seq`, which the store has at hand.
    pub fn for_every_config(task_id: &str, event_seq: u64, now_ms: i64) -> Self {
        PushJob::new(task_id, EVERY_CONFIG, event_seq, String::new(), now_ms)
    }

    /// Whether this is a [`PushJob::for_every_config`].
    pub fn is_for_every_config(&self) -> bool {
        self.config_id == EVERY_CONFIG
    }

    /// Unique per (task, event, config); also what receivers deduplicate on.
    pub fn id(&self) -> String {
        format!("{}:{}:{}", self.task_id, self.event_seq, self.config_id)
    }

    /// The stable event id sent to receivers: task id and event sequence.
    pub fn event_id(&self) -> String {
        format!("{}:{}", self.task_id, self.event_seq)
    }

    fn pending_key(&self) -> Vec<u8> {
        let mut key = Vec::with_capacity(PENDING_KEY_PREFIX + 64);
        key.push(b'j');
        key.extend_from_slice(&u64::try_from(self.next_attempt_ms).unwrap_or(0).to_be_bytes());
        key.extend_from_slice(self.id().as_bytes());
        key
    }
}

/// A job that will not be tried again unless an operator revives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadJob {
    pub job: PushJob,
    pub reason: String,
    pub died_ms: i64,
}

fn dead_key(id: &str) -> Vec<u8> {
    let mut key = vec![b'd'];
    key.extend_from_slice(id.as_bytes());
    key
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|e| StoreError::Corrupt(format!("push job: {e}")))
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(format!("push job: {e}")))
}

/// The queue over one sled tree.
#[derive(Clone)]
pub struct PushQueue {
    tree: sled::Tree,
}

impl PushQueue {
    pub fn new(tree: sled::Tree) -> Self {
        PushQueue { tree }
    }
}

impl JobQueue for PushQueue {
    /// Adds jobs, atomically. One job is one insert: a `sled::Batch` would cost two log
    /// buffer writes that wait for the disk (see `sled/store/writes.rs`).
    fn enqueue(&self, jobs: &[PushJob]) -> Result<(), StoreError> {
        if let [job] = jobs {
            self.tree.insert(job.pending_key(), encode(job)?)?;
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for job in jobs {
            batch.insert(job.pending_key(), encode(job)?);
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Up to `max` jobs due at `now_ms`, earliest first, leaving out `in_flight` ids.
    ///
    /// In-flight jobs sit at the head of the range until they settle, so they are skipped
    /// by the id in their key (`j` + due time + id) without decoding their bodies.
    fn due(&self, now_ms: i64, max: usize, in_flight: &HashSet<String>) -> Result<Vec<PushJob>, StoreError> {
        let mut end = vec![b'j'];
        end.extend_from_slice(&u64::try_from(now_ms).unwrap_or(0).saturating_add(1).to_be_bytes());
        let mut out = Vec::new();
        for entry in self.tree.range(vec![b'j']..end) {
            let (key, value) = entry?;
            let id_in_key = key.get(PENDING_KEY_PREFIX..).and_then(|id| std::str::from_utf8(id).ok());
            if id_in_key.is_some_and(|id| in_flight.contains(id)) {
                continue;
            }
            out.push(decode(&value)?);
            if out.len() >= max {
                break;
            }
        }
        Ok(out)
    }

    /// The job was delivered.
    fn ack(&self, job: &PushJob) -> Result<(), StoreError> {
        self.tree.remove(job.pending_key())?;
        Ok(())
    }

    /// The job failed and will be tried again as `next` (its attempts and due time
    /// updated by the caller).
    fn reschedule(&self, job: &PushJob, next: &PushJob) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        batch.remove(job.pending_key());
        batch.insert(next.pending_key(), encode(next)?);
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// The job goes to the dead letters.
    fn bury(&self, job: &PushJob, reason: &str, now_ms: i64) -> Result<(), StoreError> {
        let dead = DeadJob { job: job.clone(), reason: reason.to_owned(), died_ms: now_ms };
        let mut batch = sled::Batch::default();
        batch.remove(job.pending_key());
        batch.insert(dead_key(&job.id()), encode(&dead)?);
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Every dead job, by id.
    fn dead(&self) -> Result<Vec<DeadJob>, StoreError> {
        self.tree.scan_prefix([b'd']).map(|entry| decode(&entry?.1)).collect()
    }

    /// Moves dead jobs back to pending, due now, with fresh attempts: the one with `id`,
    /// or all with `None`. Returns how many.
    fn revive(&self, id: Option<&str>, now_ms: i64) -> Result<usize, StoreError> {
        let dead: Vec<DeadJob> = match id {
            Some(id) => self.tree.get(dead_key(id))?.map(|v| decode(&v)).transpose()?.into_iter().collect(),
            None => self.dead()?,
        };
        let mut batch = sled::Batch::default();
        for DeadJob { job, .. } in &dead {
            let mut fresh = job.clone();
            fresh.attempts = 0;
            fresh.first_enqueued_ms = now_ms;
            fresh.next_attempt_ms = now_ms;
            batch.remove(dead_key(&job.id()));
            batch.insert(fresh.pending_key(), encode(&fresh)?);
        }
        self.tree.apply_batch(batch)?;
        Ok(dead.len())
    }

    fn purge(&self, id: Option<&str>) -> Result<usize, StoreError> {
        let keys: Vec<sled::IVec> = match id {
            Some(id) => self.tree.get(dead_key(id))?.map(|_| dead_key(id).into()).into_iter().collect(),
            None => self.tree.scan_prefix([b'd']).keys().collect::<Result<_, _>>()?,
        };
        let mut batch = sled::Batch::default();
        for key in &keys {
            batch.remove(key);
        }
        self.tree.apply_batch(batch)?;
        Ok(keys.len())
    }

    fn depth(&self) -> Result<usize, StoreError> {
        Ok(self.tree.scan_prefix([b'j']).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> (tempfile::TempDir, sled::Db, PushQueue) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let queue = PushQueue::new(db.open_tree("push_queue").unwrap());
        (dir, db, queue)
    }

    #[test]
    fn jobs_fall_due_in_order_and_settle() {
        let (_dir, _db, q) = queue();
        let a = PushJob::new("t1", "c1", 1, "{}".into(), 1000);
        let mut b = PushJob::new("t1", "c1", 2, "{}".into(), 1000);
        b.next_attempt_ms = 5000;
        q.enqueue(&[b.clone(), a.clone()]).unwrap();
        assert_eq!(q.due(2000, 10, &HashSet::new()).unwrap(), vec![a.clone()], "b is not due yet");
        let leased: HashSet<String> = [a.id()].into();
        assert!(q.due(2000, 10, &leased).unwrap().is_empty(), "in-flight jobs are skipped");
        let mut later = a.clone();
        later.attempts = 1;
        later.next_attempt_ms = 3000;
        q.reschedule(&a, &later).unwrap();
        assert_eq!(q.due(6000, 10, &HashSet::new()).unwrap(), vec![later.clone(), b.clone()]);
        q.ack(&later).unwrap();
        q.bury(&b, "HTTP 404", 7000).unwrap();
        assert_eq!(q.depth().unwrap(), 0);
        let dead = q.dead().unwrap();
        assert_eq!((dead.len(), dead[0].reason.as_str()), (1, "HTTP 404"));
        assert_eq!(q.revive(Some(&b.id()), 8000).unwrap(), 1);
        let revived = q.due(8000, 10, &HashSet::new()).unwrap();
        assert_eq!((revived.len(), revived[0].attempts), (1, 0));
        assert!(q.dead().unwrap().is_empty());
        assert_eq!(b.event_id(), "t1:2");
    }

    #[test]
    fn purge_drops_one_dead_job_or_all_and_leaves_pending_ones() {
        let (_dir, _db, q) = queue();
        let jobs: Vec<PushJob> = (1..=3).map(|seq| PushJob::new("t1", "c1", seq, "{}".into(), 1000)).collect();
        q.enqueue(&jobs).unwrap();
        q.bury(&jobs[0], "HTTP 500", 2000).unwrap();
        q.bury(&jobs[1], "HTTP 500", 2000).unwrap();
        assert_eq!(q.purge(Some("t1:9:c1")).unwrap(), 0, "an unknown id purges nothing");
        assert_eq!(q.purge(Some(&jobs[0].id())).unwrap(), 1);
        assert_eq!(q.dead().unwrap().len(), 1);
        assert_eq!(q.purge(None).unwrap(), 1);
        assert!(q.dead().unwrap().is_empty());
        assert_eq!(q.depth().unwrap(), 1, "the pending job stays");
    }

    #[test]
    fn a_dead_job_keeps_its_last_status_and_host_and_older_jobs_still_read() {
        let (_dir, _db, q) = queue();
        let mut job = PushJob::new("t1", "c1", 1, "{}".into(), 1000);
        q.enqueue(std::slice::from_ref(&job)).unwrap();
        job.last_status = Some(404);
        job.host = Some("hooks.example:443".into());
        q.bury(&job, "HTTP 404", 2000).unwrap();
        let dead = &q.dead().unwrap()[0];
        assert_eq!((dead.job.last_status, dead.job.host.as_deref()), (Some(404), Some("hooks.example:443")));
        // A job written before these fields existed.
        let old = r#"{"job":{"taskId":"t","configId":"c","eventSeq":2,"body":"{}","attempts":8,
            "firstEnqueuedMs":1,"nextAttemptMs":2,"lastError":"HTTP 503"},"reason":"gave up","diedMs":3}"#;
        let old: DeadJob = decode(old.as_bytes()).unwrap();
        assert_eq!((old.job.last_status, old.job.host), (None, None));
    }

    #[test]
    fn pending_jobs_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let job = PushJob::new("t", "c", 7, "{\"task\":{}}".into(), 10);
        {
            let db = sled::open(dir.path()).unwrap();
            PushQueue::new(db.open_tree("push_queue").unwrap()).enqueue(std::slice::from_ref(&job)).unwrap();
            db.flush().unwrap();
        }
        // sled releases its lock from a background thread: retry the reopen briefly.
        let db = (0..250)
            .find_map(|_| {
                let opened = sled::open(dir.path()).ok();
                if opened.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                opened
            })
            .expect("the queue reopens");
        let q = PushQueue::new(db.open_tree("push_queue").unwrap());
        assert_eq!(q.due(10, 5, &HashSet::new()).unwrap(), vec![job]);
    }
}
