//! A context actor on a store shared by several nodes (`store: redis`; see
//! [`a2ad_storage::Cluster`]).
//!
//! * **Leases.** A turn starts only once this node holds the context's lease; another
//!   node's turn refuses it with the usual `Task is already working.`. The lease and the
//!   session come in one round trip (`Cluster::begin_turn`, awaited by
//!   `ContextActor::start_shared_turn` without holding the thread): another node may have
//!   run the last turn, so the stored session is the truth. The turn's end gives the lease
//!   back in its own commit.
//! * **Subscribers.** `SubscribeToTask` follows the task in the store whichever node runs
//!   its turns (this one included), so a subscriber sees every turn of the task, on any
//!   node, as its steps are committed. Commits are durable when they return, so such a
//!   stream waits for no durable mark.
//! * **Cancel.** A task whose turn runs on another node is cancelled there: the request
//!   goes to that node, and the answer waits (at most [`CANCEL_WAIT`]) for the task's
//!   end to reach the store.

use super::actor::ContextActor;
use crate::messages::Subscription;
use crate::{Runtime, RuntimeError};
use a2ad_protocol::{A2aError, Task, TaskState};
use a2ad_storage::{CancelRequest, Cluster, LoggedEvent, Scope, TaskRecord};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a cancel forwarded to another node waits for the task's end.
pub const CANCEL_WAIT: Duration = Duration::from_secs(10);

impl ContextActor {
    /// Gives the context's lease back once the turn's end is written (or failed).
    pub(super) fn give_back_lease(&self) {
        if let Some(cluster) = self.rt.store.cluster() {
            cluster.release_lease(&self.key);
        }
    }

    /// Whether the store is shared (then streams follow it, see the module docs).
    pub(super) fn shared(&self) -> bool {
        self.rt.store.cluster().is_some()
    }

    /// The node that runs `record`'s turn, when it is another node: its context's lease
    /// `holder` (as read), while the task is active.
    pub(super) fn elsewhere(&self, record: &TaskRecord, holder: Option<String>) -> Option<String> {
        let cluster = self.rt.store.cluster()?;
        holder.filter(|node| record.state().is_active() && node != cluster.node_id())
    }
}

/// A subscription that follows `record` in the shared store from its stored generation:
/// `initial` first, then each event any node commits, until the task ends. A subscriber
/// that falls more than `buffer` events behind is dropped as on one node (the final event
/// always has room).
pub(super) fn follow(
    cluster: &dyn Cluster,
    record: &TaskRecord,
    initial: Vec<LoggedEvent>,
    buffer: usize,
) -> Result<Subscription, RuntimeError> {
    let overflowed = Arc::new(AtomicBool::new(false));
    // The first events may reach past `record` (read before them; see `first_events_of`):
    // the stream goes on after the newest, and a task they end is not followed at all.
    let from = initial.last().map_or(record.last_event_seq, |e| e.seq.max(record.last_event_seq));
    if initial.last().is_some_and(ends_task) {
        return Ok(Subscription { initial, live: None, overflowed, failure: Arc::new(OnceLock::new()), durable: None });
    }
    let (tx, rx) = mpsc::channel(buffer.max(1) + 1);
    let flag = Arc::clone(&overflowed);
    let mut next = from + 1;
    let sink = Box::new(move |events: Vec<LoggedEvent>| {
        for event in events {
            let is_final = ends_task(&event);
            // A gap: the stream was trimmed past this follower (it fell far behind). Dropped
            // as too slow, it resumes from its last event, and is told what was skipped.
            if (!is_final && tx.capacity() <= 1) || event.seq != next {
                flag.store(true, Ordering::Release);
                return false;
            }
            next += 1;
            if tx.try_send(event).is_err() || is_final {
                return false;
            }
        }
        !tx.is_closed()
    });
    cluster.follow(&record.task.id, from, sink)?;
    Ok(Subscription { initial, live: Some(rx), overflowed, failure: Arc::new(OnceLock::new()), durable: None })
}

/// Whether `event` puts its task in a terminal state (a `SubscribeToTask` stream ends
/// there; past an interrupted state it waits for the next turn, on any node).
fn ends_task(event: &LoggedEvent) -> bool {
    event.task_state().is_some_and(TaskState::is_terminal)
}

/// Cancels a task whose turn runs on `node`: the request goes there, then the answer
/// waits for the task's end in the store (at most [`CANCEL_WAIT`]) and is the task as
/// stored then.
pub(super) async fn cancel_on(rt: Arc<Runtime>, node: String, record: TaskRecord) -> Result<Task, A2aError> {
    let Some(cluster) = rt.store.cluster() else { return Err(RuntimeError::ContextUnavailable.into()) };
    let (tx, mut ended) = mpsc::channel::<()>(1);
    let sink = Box::new(move |events: Vec<LoggedEvent>| {
        if events.iter().any(ends_task) {
            let _ = tx.try_send(());
            return false;
        }
        !tx.is_closed()
    });
    // Follow first, so that an end that comes at once is not missed.
    cluster.follow(&record.task.id, record.last_event_seq, sink).map_err(RuntimeError::from)?;
    let request = CancelRequest {
        owner: record.owner.clone(),
        context_id: record.task.context_id.clone(),
        task_id: record.task.id.clone(),
    };
    // A PUBLISH on a connection of the store's own, which blocks: on the blocking pool.
    let (store, target) = (Arc::clone(&rt.store), node.clone());
    let sent = tokio::task::spawn_blocking(move || match store.cluster() {
        Some(cluster) => cluster.request_cancel(&target, &request),
        None => Ok(()),
    });
    sent.await.map_err(|_| RuntimeError::ContextUnavailable)?.map_err(RuntimeError::from)?;
    if tokio::time::timeout(CANCEL_WAIT, ended.recv()).await.is_err() {
        tracing::warn!(task_id = %record.task.id, node, "a cancel sent to the node running the turn did not end it in time");
    }
    // Through the seam: the future is Redis's answer, which no thread waits for.
    let read = rt.store.read_task(Scope::Owner(&record.owner), &record.task.id).await.map_err(RuntimeError::from)?;
    let stored = read.ok_or_else(|| RuntimeError::TaskNotFound(record.task.id.clone()))?;
    match stored.state() {
        TaskState::Canceled | TaskState::Submitted | TaskState::Working => Ok(stored.task),
        state => Err(RuntimeError::NotCancelable(stored.task.id, state).into()),
    }
}
