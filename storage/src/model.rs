//! What the store keeps: tasks with their owner, and sessions.

use a2ad_protocol::{Message, Task, TaskState};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who owns a task or context: a tenant and a principal. With authentication off,
/// everything belongs to [`Owner::anonymous`]; with the node's tenant-wide visibility, to
/// [`Owner::tenant_wide`] owners (the node decides which, once, for each caller).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Owner {
    pub tenant: String,
    pub principal: String,
}

impl Owner {
    /// The single owner of a node without authentication.
    pub fn anonymous() -> Self {
        Owner::default()
    }

    /// The owner of everything a whole tenant shares: the tenant with an empty principal.
    /// No authenticated principal is empty, so it is never one principal's own owner.
    pub fn tenant_wide(tenant: impl Into<String>) -> Self {
        Owner { tenant: tenant.into(), principal: String::new() }
    }

    /// A length-prefixed key prefix, so that no tenant or principal can forge another's.
    pub(crate) fn key_prefix(&self) -> Vec<u8> {
        let mut key = Vec::with_capacity(4 + self.tenant.len() + self.principal.len());
        push_segment(&mut key, &self.tenant);
        push_segment(&mut key, &self.principal);
        key
    }

    /// A 16-bit hash of the owner, the same in every process and version: the shared
    /// store keeps an owner's keys in shard `shard_hash mod shards`, and the task ids minted
    /// for the owner carry it ([`a2ad_protocol::ids::new_task_id`]).
    pub fn shard_hash(&self) -> u16 {
        fold_hash(&self.key_prefix())
    }
}

/// FNV-1a of `bytes`, folded to 16 bits (stable: it names where data lives).
pub(crate) fn fold_hash(bytes: &[u8]) -> u16 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    ((hash >> 16) ^ (hash & 0xffff)) as u16
}

/// Whose records a read by id may return: the one place tenant isolation is enforced.
/// The node core, the actors and push delivery read tasks, their events and their push
/// configs through it, so no caller compares owners itself.
///
/// A stored task or push config is JSON that starts with its owner (`{"owner":{...},`:
/// serde writes `owner`, the first field, first). A store reads that prefix off the raw
/// value and compares it with the caller's, so another owner's record is found absent
/// without being decoded, and answers in about the time of an unknown id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// A caller's read: only this owner's records; another owner's id reads as absent.
    Owner(&'a Owner),
    /// The node's own work across owners: recovery, retention, push delivery, admin.
    Node,
}

/// How a stored record's JSON starts: its owner field.
const OWNER_FIELD: &[u8] = b"{\"owner\":";

impl Scope<'_> {
    /// Whether a record of `owner` is in scope.
    pub fn admits(&self, owner: &Owner) -> bool {
        match self {
            Scope::Owner(wanted) => *wanted == owner,
            Scope::Node => true,
        }
    }

    /// What a record's JSON must start with to be in scope: `{"owner":<owner JSON>`;
    /// `None` for [`Scope::Node`]. Built before the lookup, so that a foreign id and an
    /// unknown one cost the same up to the comparison.
    pub(crate) fn json_prefix(&self) -> Option<Vec<u8>> {
        let Scope::Owner(owner) = self else { return None };
        let mut prefix = OWNER_FIELD.to_vec();
        if serde_json::to_writer(&mut prefix, owner).is_err() {
            // Cannot happen (two strings); an empty prefix matches nothing: fail closed.
            prefix.clear();
        }
        Some(prefix)
    }

    /// Whether the stored `json` is in scope, read off its start (see [`Scope`]);
    /// `prefix` is [`Scope::json_prefix`] (`None`: every owner's). `None` when the value
    /// does not start with an owner field (not written by this code): the caller decodes
    /// it and asks [`Scope::admits`]. JSON objects are self-delimiting, so a prefix match
    /// followed by `,` or `}` is the same owner, never one whose name merely extends it.
    pub(crate) fn admits_json(prefix: Option<&[u8]>, json: &[u8]) -> Option<bool> {
        let Some(prefix) = prefix else { return Some(true) };
        if !json.starts_with(OWNER_FIELD) {
            return None;
        }
        let same = json.starts_with(prefix) && matches!(json.get(prefix.len()), Some(b',' | b'}'));
        Some(same)
    }
}

/// Appends a `u16`-length-prefixed segment.
pub(crate) fn push_segment(key: &mut Vec<u8>, segment: &str) {
    let len = u16::try_from(segment.len()).unwrap_or(u16::MAX);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(&segment.as_bytes()[..usize::from(len)]);
}

/// A context is identified by its owner and its id: two tenants may pick the same id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContextKey {
    pub owner: Owner,
    pub context_id: String,
}

impl ContextKey {
    pub fn new(owner: Owner, context_id: impl Into<String>) -> Self {
        ContextKey { owner, context_id: context_id.into() }
    }

    pub(crate) fn storage_key(&self) -> Vec<u8> {
        context_storage_key(&self.owner, &self.context_id)
    }
}

/// owner ‖ context id: the storage key of [`ContextKey`] `{owner, context_id}`, for callers
/// that hold the two apart (a task record's) and need no `ContextKey` of their own.
pub(crate) fn context_storage_key(owner: &Owner, context_id: &str) -> Vec<u8> {
    let mut key = owner.key_prefix();
    push_segment(&mut key, context_id);
    key
}

/// A task as stored: the wire task plus who owns it and which agent runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub owner: Owner,
    /// The skill id of the agent bound to the task's context.
    pub agent: String,
    pub task: Task,
    /// The sequence number of the task's latest event (0: none yet). Every event a task
    /// emits gets the next number; SSE `id:` fields and `Last-Event-ID` use them. It is
    /// also the task's generation, which a write may not lower. Keep it the LAST field:
    /// the sled store reads it off the end of the stored JSON.
    #[serde(default)]
    pub last_event_seq: u64,
}

/// One event of a task's event log: a `StreamResponse`, encoded once as JSON and shared
/// by the store and every subscriber.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    pub seq: u64,
    /// The `StreamResponse` as JSON (HTTP+JSON form, no JSON-RPC envelope).
    pub json: Arc<str>,
}

impl LoggedEvent {
    /// Encodes `event` under `seq`.
    pub fn encode(seq: u64, event: &a2ad_protocol::StreamResponse) -> Self {
        let json = serde_json::to_string(event).expect("a stream response always encodes");
        LoggedEvent { seq, json: json.into() }
    }

    /// The task state the event puts its task in: a task snapshot's or a status update's
    /// (`None` for an artifact update or a message). Decodes the event.
    pub fn task_state(&self) -> Option<TaskState> {
        match serde_json::from_str::<a2ad_protocol::StreamResponse>(&self.json).ok()? {
            a2ad_protocol::StreamResponse::Task(task) => Some(task.status.state),
            a2ad_protocol::StreamResponse::StatusUpdate(update) => Some(update.status.state),
            _ => None,
        }
    }
}

impl TaskRecord {
    pub fn state(&self) -> TaskState {
        self.task.status.state
    }

    /// The status time in milliseconds, the sort key of `ListTasks`.
    pub fn status_millis(&self) -> i64 {
        self.task.status.timestamp.map(|t| t.timestamp_millis()).unwrap_or(0)
    }

    pub fn context_key(&self) -> ContextKey {
        ContextKey::new(self.owner.clone(), self.task.context_id.clone())
    }
}

/// A session's recent messages, oldest first.
pub type History = std::collections::VecDeque<Message>;

/// A context's conversation, as its actor rebuilds it after eviction or restart.
///
/// The metadata is one small record; a turn's new messages are stored apart from it and
/// from the earlier turns' (in sled, one chunk key per turn), so that a turn appends its
/// few messages instead of rewriting the whole conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub key: ContextKey,
    /// The skill id of the agent the context is bound to (its first agent).
    pub agent: String,
    /// The context's most recent task.
    pub last_task_id: Option<String>,
    /// How many messages were ever appended: the sequence number of the next one.
    pub message_count: u64,
    /// The working directory the context is bound to (`message.metadata.a2ad.cwd` of its
    /// first message), as the client sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The most recent messages, oldest first. Shared with the running turn's agent
    /// without copying; not part of the metadata record.
    #[serde(skip)]
    pub history: Arc<History>,
}

impl SessionRecord {
    /// A new, empty session bound to `agent`.
    pub fn new(key: ContextKey, agent: impl Into<String>) -> Self {
        SessionRecord {
            key,
            agent: agent.into(),
            last_task_id: None,
            message_count: 0,
            cwd: None,
            history: Arc::default(),
        }
    }

    /// Appends messages, keeping at most `limit` in memory. A ring buffer: a full
    /// history drops its oldest messages without moving the rest (a `Vec`'s `drain`
    /// moved all 200 of a busy context's messages on every turn).
    pub fn append(&mut self, messages: &[Message], limit: usize) {
        let history = Arc::make_mut(&mut self.history);
        history.extend(messages.iter().cloned());
        let excess = history.len().saturating_sub(limit);
        history.drain(..excess);
        self.message_count += messages.len() as u64;
    }
}

/// A `ListTasks` query over one owner's tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskQuery {
    pub owner: Owner,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    /// Keeps tasks whose status time is at or after this many milliseconds.
    pub status_after_millis: Option<i64>,
    pub page_size: usize,
    /// Start strictly after this (status time, task id), in descending order.
    pub cursor: Option<crate::Cursor>,
}

/// One page of tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    pub records: Vec<TaskRecord>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<crate::Cursor>,
    /// How many tasks match the filters, across all pages.
    pub total: usize,
}

/// A task as the by-time index knows it: enough to count states and decide retention
/// without reading (or decoding) the task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEntry {
    pub owner: Owner,
    pub task_id: String,
    /// The status time, in milliseconds.
    pub status_millis: i64,
    pub state: TaskState,
}

/// What a store holds, for `a2ad admin stats` and the metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreCounts {
    /// Event-log entries across every task.
    pub events: u64,
    /// Contexts with a stored session.
    pub sessions: u64,
    /// Session messages stored.
    pub session_messages: u64,
}
