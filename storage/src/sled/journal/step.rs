//! The payload of one write-ahead log record: one step of the node, encoded compactly.
//!
//! A record is a version byte, then one operation: a tag byte and its fields; a long one
//! is stored packed with LZ4 (`sled/packed.rs`: first byte 2, then the same bytes). Integers
//! are LEB128 varints, byte strings are a varint length and the bytes. The model types
//! (task, session, messages) go in as the same JSON the sled store keeps: they hold
//! free-form `serde_json::Value`s (metadata, data parts) that non-self-describing formats
//! such as postcard or bincode cannot read back, and the events are JSON already (the
//! bytes subscribers get), so JSON blobs in a binary frame are both exact and cheap. A
//! push job is only its config id and due time: its task, event and body are those of
//! the same record, so a job costs a few bytes rather than a second copy of the event.
//!
//! | tag | operation        | fields                                                      |
//! |-----|------------------|-------------------------------------------------------------|
//! | 1   | put task         | task JSON, n × (seq, event JSON), m × (event index, config id, due ms) |
//! | 2   | put session      | session JSON, history limit, n × message JSON               |
//! | 3   | delete task      | task id                                                     |
//! | 4   | forget session   | context key JSON                                            |
//! | 5   | settle reply     | task id, session JSON, history limit, n × message JSON      |
//! | 6   | (retired) reserve event ids | task id, seq: nodes before 2026-12-02 only; refused |
//! | 7   | end a turn       | the fields of tag 1, then those of tag 2                     |

use crate::sled::packed;
use crate::{ContextKey, LoggedEvent, PushJob, SessionRecord, SessionWrite, StoreError, TaskRecord};
use a2ad_protocol::Message;
use std::sync::Arc;

const VERSION: u8 = 1;

/// One step, as replay decodes it (live writes encode from borrowed values instead).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// A task write; with the session write of the same commit when it ends a turn.
    PutTask {
        record: Arc<TaskRecord>,
        /// `record` as JSON: the bytes of the log record, which the store keeps as they are.
        record_json: Arc<[u8]>,
        events: Vec<LoggedEvent>,
        jobs: Vec<PushJob>,
        session: Option<SessionStep>,
    },
    PutSession {
        session: SessionRecord,
        appended: Vec<Message>,
        history_limit: usize,
    },
    DeleteTask {
        task_id: String,
    },
    ForgetSession {
        key: ContextKey,
    },
    SettleReply {
        task_id: String,
        session: SessionRecord,
        appended: Vec<Message>,
        history_limit: usize,
    },
}

impl Step {
    /// The task the step writes or removes, if any.
    pub(crate) fn task_id(&self) -> Option<&str> {
        match self {
            Step::PutTask { record, .. } => Some(&record.task.id),
            Step::DeleteTask { task_id } | Step::SettleReply { task_id, .. } => Some(task_id),
            Step::PutSession { .. } | Step::ForgetSession { .. } => None,
        }
    }
}

/// A decoded session write (the owned form of [`SessionWrite`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SessionStep {
    pub session: SessionRecord,
    pub appended: Vec<Message>,
    pub history_limit: usize,
}

impl SessionStep {
    /// An owned copy of a live session write (the history is shared, not copied).
    pub(crate) fn of(write: SessionWrite<'_>) -> Self {
        SessionStep {
            session: write.session.clone(),
            appended: write.appended.to_vec(),
            history_limit: write.history_limit,
        }
    }

    pub(crate) fn as_write(&self) -> SessionWrite<'_> {
        SessionWrite { session: &self.session, appended: &self.appended, history_limit: self.history_limit }
    }
}

/// Encodes a task write, and the session write of the same commit if any. Every job must
/// be for one of `events` of this task.
/// `record_json` is `record` as JSON ([`record_json`]).
pub(crate) fn encode_put_task(
    record: &TaskRecord,
    record_json: &[u8],
    events: &[LoggedEvent],
    jobs: &[PushJob],
    session: Option<SessionWrite<'_>>,
) -> Result<Vec<u8>, StoreError> {
    let mut out = Writer::new(if session.is_some() { 7 } else { 1 });
    out.bytes(record_json);
    out.varint(events.len() as u64);
    for event in events {
        out.varint(event.seq);
        out.bytes(event.json.as_bytes());
    }
    out.varint(jobs.len() as u64);
    for job in jobs {
        let index = events
            .iter()
            .position(|e| e.seq == job.event_seq && job.task_id == record.task.id)
            .ok_or_else(|| StoreError::Corrupt(format!("push job {} is not for an event of its step", job.id())))?;
        out.varint(index as u64);
        out.bytes(job.config_id.as_bytes());
        out.varint(job.next_attempt_ms.max(0) as u64);
    }
    if let Some(write) = session {
        out.session_fields(write)?;
    }
    Ok(out.finish())
}

/// A task record as the log and the sled store keep it.
pub(crate) fn record_json(record: &TaskRecord) -> Result<Arc<[u8]>, StoreError> {
    serde_json::to_vec(record).map(Arc::from).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Encodes a session write (`settle` names the reply task the same write removes).
pub(crate) fn encode_session(
    settle: Option<&str>,
    session: &SessionRecord,
    appended: &[Message],
    history_limit: usize,
) -> Result<Vec<u8>, StoreError> {
    let mut out = Writer::new(if settle.is_some() { 5 } else { 2 });
    if let Some(task_id) = settle {
        out.bytes(task_id.as_bytes());
    }
    out.session_fields(SessionWrite { session, appended, history_limit })?;
    Ok(out.finish())
}

pub(crate) fn encode_delete_task(task_id: &str) -> Vec<u8> {
    let mut out = Writer::new(3);
    out.bytes(task_id.as_bytes());
    out.finish()
}

/// A tag-6 record, as nodes before 2026-12-02 wrote them (for the test of its refusal).
#[cfg(test)]
pub(crate) fn encode_reserve(task_id: &str, seq: u64) -> Vec<u8> {
    let mut out = Writer::new(6);
    out.bytes(task_id.as_bytes());
    out.varint(seq);
    out.finish()
}

pub(crate) fn encode_forget_session(key: &ContextKey) -> Result<Vec<u8>, StoreError> {
    let mut out = Writer::new(4);
    out.json(key)?;
    Ok(out.finish())
}

/// Decodes a record's payload. A payload that passed the log's CRC and still does not
/// decode is a bug or a newer format: it is `Corrupt`, never skipped. A retired
/// operation (tag 6) is [`StoreError::Retired`], never skipped either.
pub(crate) fn decode(payload: &[u8]) -> Result<Step, StoreError> {
    let payload = packed::unpack(payload, "write-ahead log record")?;
    let mut r = Reader(&payload);
    if r.byte()? != VERSION {
        return Err(bad("unknown record version"));
    }
    let step = match r.byte()? {
        1 => decode_put_task(&mut r, false)?,
        7 => decode_put_task(&mut r, true)?,
        2 => {
            let (session, history_limit, appended) = decode_session(&mut r)?;
            Step::PutSession { session, appended, history_limit }
        }
        3 => Step::DeleteTask { task_id: r.string()? },
        4 => Step::ForgetSession { key: r.json()? },
        5 => {
            let task_id = r.string()?;
            let (session, history_limit, appended) = decode_session(&mut r)?;
            Step::SettleReply { task_id, session, appended, history_limit }
        }
        // An event-id reservation: only a2ad before 2026-12-06 knows what to do with it.
        6 => return Err(StoreError::Retired { what: "event-id reservation records in its write-ahead log" }),
        _ => return Err(bad("unknown operation")),
    };
    if !r.0.is_empty() {
        return Err(bad("trailing bytes"));
    }
    Ok(step)
}

fn decode_put_task(r: &mut Reader<'_>, with_session: bool) -> Result<Step, StoreError> {
    let record_json = r.bytes()?;
    let record: TaskRecord = serde_json::from_slice(record_json).map_err(|e| bad(&format!("JSON: {e}")))?;
    let record_json = Arc::from(record_json);
    let mut events = Vec::new();
    for _ in 0..r.count()? {
        let seq = r.varint()?;
        events.push(LoggedEvent { seq, json: r.string()?.into() });
    }
    let mut jobs = Vec::new();
    for _ in 0..r.count()? {
        let index = usize::try_from(r.varint()?).map_err(|_| bad("job index"))?;
        let event = events.get(index).ok_or_else(|| bad("job index"))?;
        let config_id = r.string()?;
        let due = i64::try_from(r.varint()?).map_err(|_| bad("job due time"))?;
        jobs.push(PushJob::new(&record.task.id, &config_id, event.seq, event.json.to_string(), due));
    }
    let session = match with_session {
        true => {
            let (session, history_limit, appended) = decode_session(r)?;
            Some(SessionStep { session, appended, history_limit })
        }
        false => None,
    };
    Ok(Step::PutTask { record: Arc::new(record), record_json, events, jobs, session })
}

fn decode_session(r: &mut Reader<'_>) -> Result<(SessionRecord, usize, Vec<Message>), StoreError> {
    let session: SessionRecord = r.json()?;
    let limit = usize::try_from(r.varint()?).map_err(|_| bad("history limit"))?;
    let mut appended = Vec::new();
    for _ in 0..r.count()? {
        appended.push(r.json()?);
    }
    Ok((session, limit, appended))
}

fn bad(what: &str) -> StoreError {
    StoreError::Corrupt(format!("write-ahead log record: {what}"))
}

struct Writer(Vec<u8>);

impl Writer {
    fn new(tag: u8) -> Self {
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(&[VERSION, tag]);
        Writer(out)
    }

    /// The record's payload, packed when that makes it shorter (`sled/packed.rs`).
    fn finish(self) -> Vec<u8> {
        packed::pack(self.0)
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    /// A session write: session JSON, history limit, n × message JSON.
    fn session_fields(&mut self, write: SessionWrite<'_>) -> Result<(), StoreError> {
        self.json(write.session)?;
        self.varint(write.history_limit as u64);
        self.varint(write.appended.len() as u64);
        for message in write.appended {
            self.json(message)?;
        }
        Ok(())
    }

    /// A JSON blob (length-prefixed, like any byte string).
    fn json<T: serde::Serialize>(&mut self, value: &T) -> Result<(), StoreError> {
        let json = serde_json::to_vec(value).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.bytes(&json);
        Ok(())
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, StoreError> {
        let (&first, rest) = self.0.split_first().ok_or_else(|| bad("truncated"))?;
        self.0 = rest;
        Ok(first)
    }

    fn varint(&mut self) -> Result<u64, StoreError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(bad("varint too long"))
    }

    /// A repeat count, bounded by the bytes left (each item takes at least one).
    fn count(&mut self) -> Result<usize, StoreError> {
        let n = self.varint()?;
        usize::try_from(n).ok().filter(|&n| n <= self.0.len()).ok_or_else(|| bad("count"))
    }

    fn bytes(&mut self) -> Result<&[u8], StoreError> {
        let len = usize::try_from(self.varint()?).map_err(|_| bad("length"))?;
        if len > self.0.len() {
            return Err(bad("truncated"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn string(&mut self) -> Result<String, StoreError> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| bad("text is not UTF-8"))
    }

    fn json<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, StoreError> {
        serde_json::from_slice(self.bytes()?).map_err(|e| bad(&format!("JSON: {e}")))
    }
}
