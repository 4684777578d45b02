//! The node's live feed of task changes: what the admin API's `GET /admin/v1/feed` and
//! the console's live pages follow, across every tenant.
//!
//! It is fed from the write-ahead log: each task step, once durable, offers its events
//! here, in log order, with the task's owner, agent and state
//! ([`a2ad_storage::DurableSteps`], on the log's flusher thread: an offer never blocks).
//! So the feed, like a task's streams, shows nothing a crash could take back. Nobody
//! watching, an offer is one atomic load
//! and nothing else: no event is copied, no lock taken, so the A2A hot path pays nothing
//! for a console that is closed. With watchers, each event is one `Arc` sent over a
//! bounded broadcast channel; a watcher that falls more than [`FEED_CAPACITY`] events
//! behind is told how many it missed (its next read is `Lagged`) and reloads.

use a2ad_protocol::TaskState;
use a2ad_storage::{LoggedEvent, TaskRecord};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::broadcast;

/// Events a watcher may fall behind before it is told it lagged.
pub const FEED_CAPACITY: usize = 1024;

/// One task change on the feed.
#[derive(Debug, Clone)]
pub struct FeedItem {
    pub tenant: String,
    pub principal: String,
    pub task_id: String,
    pub context_id: String,
    /// The skill id of the task's agent.
    pub agent: String,
    /// The task's state after this step.
    pub state: TaskState,
    /// The event's sequence number in its task.
    pub seq: u64,
    /// The `StreamResponse` as JSON, shared with the store and the task's subscribers.
    pub event: Arc<str>,
}

/// The feed: a broadcast channel and how many watch it.
pub struct NodeFeed {
    watchers: AtomicUsize,
    tx: broadcast::Sender<Arc<FeedItem>>,
}

impl Default for NodeFeed {
    fn default() -> Self {
        NodeFeed { watchers: AtomicUsize::new(0), tx: broadcast::Sender::new(FEED_CAPACITY) }
    }
}

impl NodeFeed {
    /// Starts watching: the feed carries events from now on until the watch is dropped.
    pub fn watch(self: &Arc<Self>) -> FeedWatch {
        let rx = self.tx.subscribe();
        self.watchers.fetch_add(1, Ordering::AcqRel);
        FeedWatch { rx, feed: Arc::clone(self) }
    }

    /// How many watch the feed now.
    pub fn watchers(&self) -> usize {
        self.watchers.load(Ordering::Acquire)
    }

    /// Offers the events of a durable step. Nobody watching, this is one atomic load.
    fn offer(&self, record: &TaskRecord, events: &[LoggedEvent]) {
        if self.watchers.load(Ordering::Acquire) == 0 {
            return;
        }
        for event in events {
            let item = FeedItem {
                tenant: record.owner.tenant.clone(),
                principal: record.owner.principal.clone(),
                task_id: record.task.id.clone(),
                context_id: record.task.context_id.clone(),
                agent: record.agent.clone(),
                state: record.task.status.state,
                seq: event.seq,
                event: Arc::clone(&event.json),
            };
            // No receiver left (the last watch is being dropped): nothing to do.
            let _ = self.tx.send(Arc::new(item));
        }
    }
}

impl a2ad_storage::DurableSteps for NodeFeed {
    fn durable(&self, record: &TaskRecord, events: &[LoggedEvent]) {
        self.offer(record, events);
    }

    fn listening(&self) -> bool {
        self.watchers() > 0
    }
}

/// One watcher of the feed; dropping it stops the feed's work when it was the last.
pub struct FeedWatch {
    rx: broadcast::Receiver<Arc<FeedItem>>,
    feed: Arc<NodeFeed>,
}

/// What a watcher reads next.
pub enum FeedRead {
    Item(Arc<FeedItem>),
    /// The watcher fell behind and missed this many events.
    Lagged(u64),
    /// The feed is gone (the node stops).
    Closed,
}

impl FeedWatch {
    /// The next change, waiting for it.
    pub async fn next(&mut self) -> FeedRead {
        match self.rx.recv().await {
            Ok(item) => FeedRead::Item(item),
            Err(broadcast::error::RecvError::Lagged(n)) => FeedRead::Lagged(n),
            Err(broadcast::error::RecvError::Closed) => FeedRead::Closed,
        }
    }
}

impl Drop for FeedWatch {
    fn drop(&mut self) {
        self.feed.watchers.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use a2ad_protocol::{StreamResponse, Task, TaskStatus};
    use a2ad_storage::Owner;

    /// Task `t1` of context `c1`, WORKING, at event 1 (the stream tests' record too).
    pub(crate) fn record() -> TaskRecord {
        let task = Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus::now(TaskState::Working, None),
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        };
        TaskRecord { owner: Owner::anonymous(), agent: "echo".into(), task, last_event_seq: 1 }
    }

    fn event(seq: u64) -> LoggedEvent {
        LoggedEvent::encode(seq, &StreamResponse::Task(record().task))
    }

    #[tokio::test]
    async fn a_watcher_gets_each_stored_event_in_order_and_nobody_watching_costs_nothing() {
        let feed = Arc::new(NodeFeed::default());
        feed.offer(&record(), &[event(1)]);
        assert_eq!(feed.tx.len(), 0, "with no watcher nothing is queued");
        let mut watch = feed.watch();
        feed.offer(&record(), &[event(2), event(3)]);
        for seq in [2, 3] {
            let FeedRead::Item(item) = watch.next().await else { panic!("an item") };
            assert_eq!((item.seq, item.task_id.as_str(), item.state), (seq, "t1", TaskState::Working));
        }
        drop(watch);
        assert_eq!(feed.watchers(), 0);
    }

    #[tokio::test]
    async fn a_watcher_that_falls_behind_is_told_how_much_it_missed() {
        let feed = Arc::new(NodeFeed::default());
        let mut watch = feed.watch();
        let events: Vec<LoggedEvent> = (1..=FEED_CAPACITY as u64 + 5).map(event).collect();
        feed.offer(&record(), &events);
        assert!(matches!(watch.next().await, FeedRead::Lagged(5)));
    }
}
