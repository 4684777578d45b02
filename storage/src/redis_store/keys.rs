//! Where each thing lives in Redis, and the small values the indexes hold.
//!
//! Every key starts with the store's prefix (`a2ad:store` by default), so one Redis can
//! hold several clusters' stores, or a store beside the push queue, without a clash.
//! Owner and context parts are the length-prefixed binary segments the sled store keys
//! with ([`crate::Owner::key_prefix`]), so no tenant or principal can forge another's key.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `<p>:task:<id>` | hash | `r` the record JSON, `g` the generation, `s` the state, `o` the owner key, `c` the context key, `l` the last event's seq |
//! | `<p>:ev:<id>` | stream | the task's events, entry id `<seq>-0`, field `e` the event JSON (the retained ones and [`super::FOLLOW_SLACK`] more) |
//! | `<p>:own:<owner>` | sorted set | the owner's task ids by status time (`ListTasks`) |
//! | `<p>:ownm:<owner>` | hash | task id → `<state>:<context id>` (the list filters) |
//! | `<p>:all` | hash | task id → `<state>:<status ms>:<owner JSON>` (recovery, retention, counts) |
//! | `<p>:ctx:<context>` | set | the context's task ids (is its session still used?) |
//! | `<p>:active` | set | the SUBMITTED and WORKING task ids (recovery and the lease sweep) |
//! | `<p>:sess:<context>` | string | the session's metadata JSON |
//! | `<p>:msg:<context>` | list | the session's last messages, oldest first |
//! | `<p>:sessions` | set | every context key with a session (counts) |
//! | `<p>:lease:<context>` | string | `<node>:<epoch>` while a node runs a turn in the context |
//! | `<p>:lease-epoch` | string | the counter lease epochs come from |
//! | `<p>:cancel:<node>` | Pub/Sub channel | cancel requests for the turns a node runs |

use crate::{ContextKey, Owner, TaskRecord};
use a2ad_protocol::TaskState;

/// The key builder of one store.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: Vec<u8>,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Keys { prefix: prefix.as_bytes().to_vec() }
    }

    fn key(&self, kind: &str, rest: &[u8]) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.prefix.len() + kind.len() + rest.len() + 2);
        key.extend_from_slice(&self.prefix);
        key.push(b':');
        key.extend_from_slice(kind.as_bytes());
        if !rest.is_empty() {
            key.push(b':');
            key.extend_from_slice(rest);
        }
        key
    }

    pub fn task(&self, id: &str) -> Vec<u8> {
        self.key("task", id.as_bytes())
    }

    pub fn events(&self, id: &str) -> Vec<u8> {
        self.key("ev", id.as_bytes())
    }

    pub fn owner_index(&self, owner: &Owner) -> Vec<u8> {
        self.key("own", &owner.key_prefix())
    }

    pub fn owner_meta(&self, owner: &Owner) -> Vec<u8> {
        self.key("ownm", &owner.key_prefix())
    }

    pub fn all(&self) -> Vec<u8> {
        self.key("all", b"")
    }

    pub fn context_tasks(&self, context: &ContextKey) -> Vec<u8> {
        self.key("ctx", &context.storage_key())
    }

    pub fn session(&self, context: &ContextKey) -> Vec<u8> {
        self.key("sess", &context.storage_key())
    }

    pub fn messages(&self, context: &ContextKey) -> Vec<u8> {
        self.messages_of(&context.storage_key())
    }

    /// [`Keys::messages`] of a context's storage key, as the sessions set holds it.
    pub fn messages_of(&self, context_storage_key: &[u8]) -> Vec<u8> {
        self.key("msg", context_storage_key)
    }

    /// A context's lease: `<node>:<epoch>` while a node runs a turn in it.
    pub fn lease(&self, context: &ContextKey) -> Vec<u8> {
        self.key("lease", &context.storage_key())
    }

    /// The counter lease epochs come from.
    pub fn lease_epoch(&self) -> Vec<u8> {
        self.key("lease-epoch", b"")
    }

    /// The Pub/Sub channel of a node's cancel requests.
    pub fn cancel_channel(&self, node_id: &str) -> Vec<u8> {
        self.key("cancel", node_id.as_bytes())
    }

    pub fn sessions(&self) -> Vec<u8> {
        self.key("sessions", b"")
    }

    /// The keys of one task, in the order the scripts take them (`TASK_KEYS` of
    /// `scripts.rs`).
    pub fn of_task(&self, record: &TaskRecord) -> [Vec<u8>; 7] {
        [
            self.task(&record.task.id),
            self.events(&record.task.id),
            self.owner_index(&record.owner),
            self.owner_meta(&record.owner),
            self.all(),
            self.context_tasks(&record.context_key()),
            self.active(),
        ]
    }

    /// The ids of the SUBMITTED and WORKING tasks: what the lease sweep looks at, every
    /// lease TTL on every node, without scanning every task.
    pub fn active(&self) -> Vec<u8> {
        self.key("active", b"")
    }

    /// The keys of one session, in the order the scripts take them (`SESSION_KEYS`).
    pub fn of_session(&self, context: &ContextKey) -> [Vec<u8>; 3] {
        [self.session(context), self.messages(context), self.sessions()]
    }
}

/// A state as the indexes hold it: its wire name (`TASK_STATE_WORKING`).
pub(crate) fn state_code(state: TaskState) -> String {
    serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The state a [`state_code`] names.
pub(crate) fn parse_state(code: &str) -> Option<TaskState> {
    serde_json::from_value(serde_json::Value::String(code.to_owned())).ok()
}

/// The owner index's filter value: `<state>:<context id>` (a state has no `:`).
pub(crate) fn owner_meta_value(record: &TaskRecord) -> String {
    format!("{}:{}", state_code(record.state()), record.task.context_id)
}

/// The node-wide index's value: `<state>:<status ms>:<owner JSON>`.
pub(crate) fn all_value(record: &TaskRecord) -> String {
    let owner = serde_json::to_string(&record.owner).unwrap_or_default();
    format!("{}:{}:{owner}", state_code(record.state()), record.status_millis().max(0))
}

/// An [`all_value`] read back: (state, status ms, owner).
pub(crate) fn parse_all_value(value: &str) -> Option<(TaskState, i64, Owner)> {
    let (state, rest) = value.split_once(':')?;
    let (millis, owner) = rest.split_once(':')?;
    Some((parse_state(state)?, millis.parse().ok()?, serde_json::from_str(owner).ok()?))
}
