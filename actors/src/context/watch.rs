//! Subscribers that follow an interrupted task between its turns.
//!
//! `SubscribeToTask` on an input-required or auth-required task stays open (spec digest
//! §5, decision of 2026-12-01): the stream sends the task, then waits here, in the
//! context's actor, as a *watcher* of that task. When the client answers, the next turn
//! takes the task's watchers as its subscribers (they get its WORKING status, its updates
//! and its end). An end that interrupts the task again gives the followers back to the
//! actor, once that end is durable ([`Rewatch`]); a terminal end, a cancel or a
//! retention expiry closes their streams after the final event. When the node stops,
//! each watcher's stream ends with an error that says so (the task itself is kept and can
//! be followed again after the restart).
//!
//! A context with watchers is not evicted: its actor holds their streams.

use super::actor::ContextActor;
use super::fanout::{Fanout, Subscriber};
use super::stream::first_events;
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::TaskStoreExt;
use a2ad_storage::{LoggedEvent, Written};
use actix::prelude::*;

/// Gives a turn's followers back to their context once the interrupted end of that turn
/// is durable (and was sent to them). `after` is the id of that end's event: anything the
/// task did since is sent to them before they wait again.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Rewatch {
    pub task_id: String,
    pub after: u64,
    pub subscribers: Fanout,
}

impl ContextActor {
    /// Keeps `subscriber` until the next turn of `task_id` (or its cancel or expiry).
    pub(super) fn watch(&mut self, task_id: String, subscriber: Subscriber) {
        self.watch_all(task_id, Fanout::of(subscriber));
    }

    /// Keeps every subscriber of `followers` until the next turn of `task_id`.
    fn watch_all(&mut self, task_id: String, followers: Fanout) {
        self.forget_closed_watchers();
        if !followers.is_empty() {
            self.watchers.entry(task_id).or_default().extend(followers);
        }
    }

    /// Whether some stream still waits here (closed ones are forgotten first).
    pub(super) fn has_watchers(&mut self) -> bool {
        self.forget_closed_watchers();
        !self.watchers.is_empty()
    }

    fn forget_closed_watchers(&mut self) {
        self.watchers.retain(|_, watchers| {
            watchers.retain_open();
            !watchers.is_empty()
        });
        self.marks.forget_unfollowed(self.turn.as_ref().map(|t| t.record.task.id.as_str()));
    }

    /// Removes and returns the watchers of `task_id`.
    pub(super) fn take_watchers(&mut self, task_id: &str) -> Fanout {
        let mut taken = self.watchers.remove(task_id).unwrap_or_default();
        taken.retain_open();
        taken
    }

    /// The task's watchers get `last` (a terminal status: cancel or expiry) once it is
    /// durable, and their streams end; if the commit fails they end with its error.
    ///
    /// The task's mark is raised even when nobody waits here now: followers on their way
    /// back from the turn that interrupted the task ([`Rewatch`], still in the mailbox)
    /// find `last` in the store and hold it until the mark reaches it.
    pub(super) fn close_watchers(&mut self, task_id: &str, last: LoggedEvent, written: Written) {
        let mut subscribers = self.take_watchers(task_id);
        let mark = self.marks.get(task_id).cloned();
        if subscribers.is_empty() {
            if let Some(mark) = mark {
                mark.advance_when_durable(written, &self.rt.commit, last.seq);
            }
            return;
        }
        let commit = self.rt.commit.clone();
        actix::spawn(async move {
            match super::durable::durable(written, &commit).await {
                Ok(()) => {
                    if let Some(mark) = mark {
                        mark.advance(last.seq);
                    }
                    subscribers.publish_final(&last)
                }
                Err(e) => subscribers.fail(&A2aError::from(e)),
            }
        });
    }

    /// The node stops: every watcher's stream ends with an error naming its task, so that
    /// the client knows to subscribe again rather than take the end for the task's.
    pub(super) fn end_watchers_at_shutdown(&mut self) {
        for (task_id, watchers) in std::mem::take(&mut self.watchers) {
            let error = A2aError::new(
                ErrorCode::ServerBusy,
                format!("The node is shutting down; subscribe to task {task_id} again to keep following it"),
            )
            .with_meta("taskId", task_id);
            watchers.end(&error);
        }
    }
}

impl Handler<Rewatch> for ContextActor {
    type Result = ();

    /// Sends the followers what happened since `after` (a quick client may already have
    /// answered), then hands them to the running turn of the task, back to waiting, or,
    /// for a task that ended meanwhile, lets their streams end.
    fn handle(&mut self, msg: Rewatch, _ctx: &mut Self::Context) {
        let Rewatch { task_id, after, mut subscribers } = msg;
        let running = self.turn.as_ref().filter(|t| t.record.task.id == task_id);
        let caught_up = match running {
            Some(turn) => first_events(&self.rt, &turn.record, &turn.unsaved_events, Some(after))
                .map(|events| (events, turn.record.state())),
            None => self
                .rt
                .store
                .get_task(a2ad_storage::Scope::Owner(&self.key.owner), &task_id)
                .map_err(Into::into)
                .and_then(|r| r.ok_or_else(|| crate::RuntimeError::TaskNotFound(task_id.clone())))
                .and_then(|record| first_events(&self.rt, &record, &[], Some(after)).map(|e| (e, record.state()))),
        };
        let (events, state) = match caught_up {
            Ok(caught_up) => caught_up,
            Err(e) => return subscribers.end(&A2aError::from(e)),
        };
        let terminal = state.is_terminal();
        let count = events.len();
        for (i, event) in events.iter().enumerate() {
            match terminal && i + 1 == count {
                true => subscribers.publish_final(event),
                false => subscribers.publish(event),
            }
        }
        if terminal {
            return; // Their streams end here, after the final event.
        }
        match self.turn.as_mut().filter(|t| t.record.task.id == task_id) {
            Some(turn) => turn.subscribers.extend(subscribers),
            None => self.watch_all(task_id, subscribers),
        }
    }
}
