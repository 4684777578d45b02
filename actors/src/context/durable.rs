//! What a stream may show: each task's durable mark.
//!
//! Nothing leaves the node before its commit is durable (issue 15, point 1). A running
//! turn still hands its events to its subscribers as it emits them (so a stream is never
//! handed a burst it has no room for), but every [`Subscription`] also carries the task's
//! *durable mark*: the highest event id whose step a group commit has made durable. The
//! node's stream forwarder (`a2ad_node::core::durable_stream`) sends an event only once
//! the mark has reached it, and holds the rest meanwhile.
//!
//! The actor raises the mark when a commit that covers a step resolves: every write of a
//! task's step (the start, each progress write, the end, a cancel or an expiry of an
//! interrupted task, a Message-only reply's settling) is followed by
//! [`DurableMark::advance_when_durable`]. A commit resolves only once everything appended
//! before it is on disk, so a mark never runs ahead of the log. A commit that fails
//! raises nothing: the stream holds what it has, and ends with the error the turn's end
//! gives it.
//!
//! A context keeps one mark per task that has a running turn or watchers
//! ([`DurableMarks`]), so the streams that wait for an interrupted task's next turn
//! ([`super::watch`]) and that turn's own streams follow one mark.
//!
//! [`Subscription`]: crate::messages::Subscription

use a2ad_storage::{GroupCommit, StoreError, Written};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// The highest event id of one task known to be durable.
pub(crate) struct DurableMark(watch::Sender<u64>);

impl DurableMark {
    fn new(durable: u64) -> Arc<Self> {
        Arc::new(DurableMark(watch::Sender::new(durable)))
    }

    /// A receiver for a stream's forwarder.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }

    /// Raises the mark to `seq` (never lowers it: commits may resolve out of order).
    pub(crate) fn advance(&self, seq: u64) {
        self.0.send_if_modified(|mark| {
            let raised = seq > *mark;
            if raised {
                *mark = seq;
            }
            raised
        });
    }

    /// Raises the mark to `seq` once the write of the step that `seq` ends is answered
    /// and a commit covers it.
    pub(crate) async fn advance_after_commit(self: Arc<Self>, written: Written, commit: GroupCommit, seq: u64) {
        if durable(written, &commit).await.is_ok() {
            self.advance(seq);
        }
    }

    /// [`DurableMark::advance_after_commit`], spawned on the current arbiter.
    pub(crate) fn advance_when_durable(self: &Arc<Self>, written: Written, commit: &GroupCommit, seq: u64) {
        actix::spawn(Arc::clone(self).advance_after_commit(written, commit.clone(), seq));
    }

    fn is_followed(&self) -> bool {
        self.0.receiver_count() > 0
    }
}

/// Resolves once `written` is answered and a commit covers it: a step is durable. A
/// write that Redis refused or did not answer is logged here (its caller may be gone).
pub(crate) async fn durable(written: Written, commit: &GroupCommit) -> Result<(), StoreError> {
    if let Err(e) = written.answered().await {
        tracing::error!(error = %e, "a task step could not be written");
        return Err(e);
    }
    commit.commit().await
}

/// The marks of a context's tasks that streams follow, by task id.
#[derive(Default)]
pub(super) struct DurableMarks(HashMap<String, Arc<DurableMark>>);

impl DurableMarks {
    /// The mark of `task_id`: the one its streams already follow, else a new one at
    /// `durable` (what the caller knows is on disk: the stored record's last event).
    pub(super) fn of(&mut self, task_id: &str, durable: u64) -> Arc<DurableMark> {
        match self.0.get(task_id) {
            Some(mark) => Arc::clone(mark),
            None => {
                let mark = DurableMark::new(durable);
                self.0.insert(task_id.to_owned(), Arc::clone(&mark));
                mark
            }
        }
    }

    /// The mark of `task_id`, if a stream follows it.
    pub(super) fn get(&self, task_id: &str) -> Option<&Arc<DurableMark>> {
        self.0.get(task_id)
    }

    /// Forgets the marks no stream follows, but `running`'s (the running turn's task).
    pub(super) fn forget_unfollowed(&mut self, running: Option<&str>) {
        self.0.retain(|task_id, mark| mark.is_followed() || Some(task_id.as_str()) == running);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_only_rises() {
        let mark = DurableMark::new(3);
        let rx = mark.watch();
        mark.advance(5);
        mark.advance(4);
        assert_eq!(*rx.borrow(), 5);
    }

    #[test]
    fn a_context_keeps_the_marks_that_streams_follow() {
        let mut marks = DurableMarks::default();
        let followed = marks.of("a", 2).watch();
        let _ = marks.of("b", 7);
        let _ = marks.of("running", 0);
        marks.forget_unfollowed(Some("running"));
        assert!(marks.get("a").is_some() && marks.get("running").is_some());
        assert!(marks.get("b").is_none(), "nobody follows b");
        assert_eq!(*marks.of("a", 9).watch().borrow(), 2, "an existing mark is not replaced");
        drop(followed);
    }
}
