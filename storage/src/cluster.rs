//! What a store shared by several nodes adds to [`crate::TaskStore`]
//! ([`crate::TaskStore::cluster`]): context leases, so that a context runs one turn at a
//! time across nodes; live events of a task whichever node commits them; and cancel
//! requests to the node that runs a turn. A node's own store (sled, memory) has none of
//! it: one process owns every context there.

use crate::{ContextKey, LoggedEvent, Owner, SessionRecord, StoreError, StoreFuture, TurnLease};
use serde::{Deserialize, Serialize};

/// Takes each batch of a followed task's events, in order; returns false to stop.
pub type EventSink = Box<dyn FnMut(Vec<LoggedEvent>) -> bool + Send>;

/// A request to cancel a task, sent to the node that runs its turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelRequest {
    pub owner: Owner,
    pub context_id: String,
    pub task_id: String,
}

/// Handles the cancel requests other nodes send this one.
pub type CancelHandler = Box<dyn Fn(CancelRequest) + Send + Sync>;

/// The cluster side of a shared store.
pub trait Cluster: Send + Sync {
    /// This node's id in leases and cancel requests (unique per process).
    fn node_id(&self) -> &str;

    /// Takes the context's lease for a turn on this node, or keeps it if this node holds
    /// it already. `Ok(false)`: another node holds it (a turn runs there). While held, the
    /// store renews it on a timer of its own, and every write of the context's steps from
    /// this node is checked against it.
    fn acquire_lease(&self, key: &ContextKey) -> Result<bool, StoreError>;

    /// The request path's start of a turn, in one round trip: takes the context's lease
    /// as [`Cluster::acquire_lease`] does and, once taken, reads the context's session
    /// with its last `history_limit` messages, unless it is `known` (the session this node
    /// holds, as it last wrote or read it): then [`TurnLease::Current`], without the
    /// history. The comparison is of the stored record's bytes, whose last task id is new
    /// at every turn, so a session written since by another node is never taken for it.
    fn begin_turn(
        &self,
        key: &ContextKey,
        history_limit: usize,
        known: Option<&SessionRecord>,
    ) -> StoreFuture<TurnLease>;

    /// Gives the lease back: it is no longer renewed, and is deleted if still ours (a
    /// failure to delete leaves it to expire). Idempotent. Never waits: the delete is
    /// sent after whatever the context's requests sent before it.
    fn release_lease(&self, key: &ContextKey);

    /// The node that holds the context's lease, if any (this one included). Blocks: off
    /// the request path only (recovery); requests use [`Cluster::read_lease_holder`].
    fn lease_holder(&self, key: &ContextKey) -> Result<Option<String>, StoreError>;

    /// The request path's [`Cluster::lease_holder`].
    fn read_lease_holder(&self, key: &ContextKey) -> StoreFuture<Option<String>>;

    /// Follows a task's events after `after` as any node commits them, on a thread of its
    /// own with a connection of its own (both opened there: the call itself never waits) (a blocking read that returns as soon as an event
    /// is committed: no polling), handing each batch to `sink` until it returns false or
    /// the task is removed. The sink is also called with no events every few seconds, so
    /// that it can stop once nobody reads.
    fn follow(&self, task_id: &str, after: u64, sink: EventSink) -> Result<(), StoreError>;

    /// Asks `node` to cancel a task its turn runs (delivered if that node is connected).
    /// Blocks for one round trip: callers run it on a blocking thread.
    fn request_cancel(&self, node: &str, request: &CancelRequest) -> Result<(), StoreError>;

    /// Calls `handler` with each cancel request sent to this node, from a thread of its own.
    fn on_cancel_request(&self, handler: CancelHandler) -> Result<(), StoreError>;

    /// Whether the store answered its last health check (readiness).
    fn reachable(&self) -> bool;
}
