//! Where each thing of the shared store (`store: redis`) lives in Redis: the key of every
//! task, index, session, lease, push config and push queue stream. The store
//! (`redis/store/`) and the push configs' rows (`redis/push_rows.rs`) both build their
//! keys here; the small values the indexes hold are `redis/store/keys.rs`.
//!
//! **Shards.** The store's keys are spread over `shards` hash tags, `{<prefix>#<n>}` (a
//! store of one shard on one server keeps the layout from before shards: `<t>` is then
//! the prefix alone, and the queue's keys are its configured names). Every
//! key of an owner (its tasks, their event streams, its indexes, its contexts' sessions
//! and leases) carries the tag of the owner's shard, so every script of a step touches
//! keys of one hash slot: legal on a Redis Cluster, where a script must not span slots.
//! What the node looks at across owners (the active set, the task index, the sessions
//! set, the push queue's streams) is kept per shard, beside them. An
//! owner's shard is [`Owner::shard_hash`] mod `shards`; a task id the node mints carries
//! that hash ([`a2ad_protocol::ids::new_task_id`]), so a read by id alone finds the
//! shard without a lookup ([`Keys::hinted`]). One server needs one shard; a cluster
//! spreads its owners over as many shards as it has (`redis.shards`).
//!
//! Every key starts with the tag, whose first part is the store's prefix (`a2ad:store`
//! by default), so one Redis can hold several clusters' stores, or a store beside the push
//! queue, without a clash. Owner and context parts are the length-prefixed binary segments
//! the sled store keys with ([`crate::Owner::key_prefix`]), so no tenant or principal can
//! forge another's key. `<t>` is a shard's tag:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `<t>:task:<id>` | hash | `r` the record JSON, `g` the generation, `s` the state, `o` the owner key, `c` the context key, `l` the last event's seq |
//! | `<t>:ev:<id>` | stream | the task's events, entry id `<seq>-0`, field `e` the event JSON (the retained ones and [`crate::redis::store::FOLLOW_SLACK`] more) |
//! | `<t>:own:<owner>` | sorted set | the owner's task ids by status time (`ListTasks`) |
//! | `<t>:ownm:<owner>` | hash | task id → `<state>:<context id>` (the list filters) |
//! | `<t>:all` | hash | the shard's task ids → `<state>:<status ms>:<owner JSON>` (recovery, retention, counts) |
//! | `<t>:ctx:<context>` | set | the context's task ids (is its session still used?) |
//! | `<t>:active` | set | the shard's SUBMITTED and WORKING task ids (recovery and the lease sweep) |
//! | `<t>:sess:<context>` | string | the session's metadata JSON |
//! | `<t>:msg:<context>` | list | the session's last messages, oldest first (trimmed an eighth past the history limit) |
//! | `<t>:sessions` | set | the shard's context keys with a session (counts) |
//! | `<t>:lease:<context>` | string | `<node>:<grant>` while a node runs a turn in the context |
//! | `<t>:lease-epoch` | string | the grant counter of nodes from before 2026-12-06 (unused since) |
//! | `<t>:push:<task id>` | hash | the task's push configs (shard: [`Keys::hinted`] of the id) |
//! | `<t>:push-tasks` | set | the shard's task ids with push configs |
//! | `<queue stream>:<t>` | stream | the push queue of the shard's steps (and `:retry`, `:dead` likewise) |
//! | `<t0>:shards` | string | the shard count the store was made with (shard 0's tag) |
//! | `<prefix>:cancel:<node>` | Pub/Sub channel | cancel requests for the turns a node runs |

use crate::{ContextKey, Owner, TaskRecord};

/// The most shards a store may have (a task id carries a 16-bit owner hash).
pub const MAX_SHARDS: u16 = 1024;

/// One of the store's shards: an index below its shard count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Shard(pub u16);

/// The key builder of one store.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
    shards: u16,
    /// Whether keys carry their shard's hash tag (see [`Keys::head`]).
    tagged: bool,
}

impl Keys {
    /// The keys under `prefix` over `shards` shards (1 to [`MAX_SHARDS`]); on a Redis
    /// Cluster (`cluster`) or over more than one shard, each with its shard's hash tag.
    pub fn new(prefix: &str, shards: u16, cluster: bool) -> Self {
        let shards = shards.clamp(1, MAX_SHARDS);
        Keys { prefix: prefix.to_owned(), shards, tagged: cluster || shards > 1 }
    }

    /// Whether the keys carry hash tags (else the store is laid out as before shards).
    pub fn tagged(&self) -> bool {
        self.tagged
    }

    /// A key of the layout before shards (one server, one shard): `<prefix>:<kind>`.
    pub fn untagged(&self, kind: &str) -> Vec<u8> {
        format!("{}:{kind}", self.prefix).into_bytes()
    }

    pub fn shard_count(&self) -> u16 {
        self.shards
    }

    /// Every shard, in order.
    pub fn all_shards(&self) -> impl Iterator<Item = Shard> {
        (0..self.shards).map(Shard)
    }

    /// The shard that holds `owner`'s tasks, sessions and leases.
    pub fn of_owner(&self, owner: &Owner) -> Shard {
        Shard(owner.shard_hash() % self.shards)
    }

    /// The shard a task id names: the owner hash a minted id carries; any other id (one
    /// a test or an older node chose) hashes to one. The task is there if the node minted
    /// its id for its owner; a read by id alone looks there first, then in the others.
    pub fn hinted(&self, task_id: &str) -> Shard {
        let hash =
            a2ad_protocol::ids::task_id_hint(task_id).unwrap_or_else(|| crate::model::fold_hash(task_id.as_bytes()));
        Shard(hash % self.shards)
    }

    /// The shards in the order a read by id alone looks: the hinted one first.
    pub fn search_order(&self, task_id: &str) -> impl Iterator<Item = Shard> {
        let first = self.hinted(task_id);
        std::iter::once(first).chain(self.all_shards().filter(move |s| *s != first))
    }

    /// What a shard's keys start with: its hash tag `{<prefix>#<n>}`; or, for a store
    /// of one shard on one server, the prefix alone, which is how the first Redis stores
    /// were laid out (so that they read on, unchanged).
    pub fn head(&self, shard: Shard) -> String {
        match self.tagged {
            true => format!("{{{}#{}}}", self.prefix, shard.0),
            false => self.prefix.clone(),
        }
    }

    fn key(&self, shard: Shard, kind: &str, rest: &[u8]) -> Vec<u8> {
        let tag = self.head(shard);
        let mut key = Vec::with_capacity(tag.len() + kind.len() + rest.len() + 2);
        key.extend_from_slice(tag.as_bytes());
        key.push(b':');
        key.extend_from_slice(kind.as_bytes());
        if !rest.is_empty() {
            key.push(b':');
            key.extend_from_slice(rest);
        }
        key
    }

    pub fn task(&self, shard: Shard, id: &str) -> Vec<u8> {
        self.key(shard, "task", id.as_bytes())
    }

    pub fn events(&self, shard: Shard, id: &str) -> Vec<u8> {
        self.key(shard, "ev", id.as_bytes())
    }

    pub fn owner_index(&self, owner: &Owner) -> Vec<u8> {
        self.key(self.of_owner(owner), "own", &owner.key_prefix())
    }

    pub fn owner_meta(&self, owner: &Owner) -> Vec<u8> {
        self.key(self.of_owner(owner), "ownm", &owner.key_prefix())
    }

    pub fn all(&self, shard: Shard) -> Vec<u8> {
        self.key(shard, "all", b"")
    }

    pub fn context_tasks(&self, context: &ContextKey) -> Vec<u8> {
        self.key(self.of_owner(&context.owner), "ctx", &context.storage_key())
    }

    pub fn session(&self, context: &ContextKey) -> Vec<u8> {
        self.key(self.of_owner(&context.owner), "sess", &context.storage_key())
    }

    pub fn messages(&self, context: &ContextKey) -> Vec<u8> {
        self.messages_of(self.of_owner(&context.owner), &context.storage_key())
    }

    /// [`Keys::messages`] of a context's storage key, as its shard's sessions set holds it.
    pub fn messages_of(&self, shard: Shard, context_storage_key: &[u8]) -> Vec<u8> {
        self.key(shard, "msg", context_storage_key)
    }

    /// A context's lease: `<node>:<grant>` while a node runs a turn in it (`store/lease.rs`).
    pub fn lease(&self, context: &ContextKey) -> Vec<u8> {
        self.key(self.of_owner(&context.owner), "lease", &context.storage_key())
    }

    /// The shard count the store was made with (in shard 0).
    pub fn layout(&self) -> Vec<u8> {
        self.key(Shard(0), "shards", b"")
    }

    /// Where a store of the other layout (tagged for an untagged one, and the other way
    /// round) records its shard count, on one server.
    pub fn other_layout(&self) -> Vec<u8> {
        match self.tagged {
            true => self.untagged("shards"),
            false => format!("{{{}#0}}:shards", self.prefix).into_bytes(),
        }
    }

    /// The Pub/Sub channel of a node's cancel requests (not a key: no shard).
    pub fn cancel_channel(&self, node_id: &str) -> Vec<u8> {
        format!("{}:cancel:{node_id}", self.prefix).into_bytes()
    }

    pub fn sessions(&self, shard: Shard) -> Vec<u8> {
        self.key(shard, "sessions", b"")
    }

    /// A task's push configs: in the shard its id names, whoever owns it.
    pub fn push_configs(&self, task_id: &str) -> Vec<u8> {
        self.key(self.hinted(task_id), "push", task_id.as_bytes())
    }

    /// The shard's task ids with push configs.
    pub fn push_tasks(&self, shard: Shard) -> Vec<u8> {
        self.key(shard, "push-tasks", b"")
    }

    /// The push queue's key `base` (its stream, retry set or dead stream) of a shard:
    /// `<base>:<tag>`, so that a step's commit script adds its jobs in the step's slot
    /// (`base` itself when keys carry no tag). `base` has no brace (the config says so).
    pub fn queue_key(&self, base: &str, shard: Shard) -> String {
        match self.tagged {
            true => format!("{base}:{}", self.head(shard)),
            false => base.to_owned(),
        }
    }

    /// The keys of one task, in the order the scripts take them (`TASK_KEYS` of
    /// `scripts.rs`).
    pub fn of_task(&self, record: &TaskRecord) -> [Vec<u8>; 7] {
        let shard = self.of_owner(&record.owner);
        [
            self.task(shard, &record.task.id),
            self.events(shard, &record.task.id),
            self.owner_index(&record.owner),
            self.owner_meta(&record.owner),
            self.all(shard),
            self.context_tasks(&record.context_key()),
            self.active(shard),
        ]
    }

    /// The ids of a shard's SUBMITTED and WORKING tasks: what the lease sweep looks at,
    /// every lease TTL on every node, without scanning every task.
    pub fn active(&self, shard: Shard) -> Vec<u8> {
        self.key(shard, "active", b"")
    }

    /// The keys of one session, in the order the scripts take them (`SESSION_KEYS`).
    pub fn of_session(&self, context: &ContextKey) -> [Vec<u8>; 3] {
        [self.session(context), self.messages(context), self.sessions(self.of_owner(&context.owner))]
    }
}
