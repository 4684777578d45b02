//! The live subscribers of a task, and how events reach them.
//!
//! A [`Fanout`] owns a set of [`Subscriber`]s (a running turn's streams, or the watchers
//! of an interrupted task) and is the only way events reach them, as vector's
//! `fanout.rs` owns a component's outputs: the actor decides *what* to send and *when*;
//! the fanout sends it and forgets the subscribers that cannot take it.
//!
//! A subscriber has a bounded buffer. Publishing never waits: a subscriber whose buffer
//! is full is dropped and told so when its stream ends, and it resumes from the last id
//! it saw. One slot is kept for the final event, so a subscriber that kept up always sees
//! the end of the turn.

use super::durable::DurableMark;
use crate::messages::Subscription;
use a2ad_protocol::A2aError;
use a2ad_storage::LoggedEvent;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::mpsc;

/// One live subscriber of a task.
pub(super) struct Subscriber {
    tx: mpsc::Sender<LoggedEvent>,
    overflowed: Arc<AtomicBool>,
    failure: Arc<OnceLock<A2aError>>,
    /// A `SubscribeToTask` subscriber: it follows the task through later turns until the
    /// task is terminal. The caller of `SendStreamingMessage` (false) follows its turn only.
    follows_task: bool,
}

impl Subscriber {
    /// A subscriber with room for `buffer` events plus the final one, whose stream waits
    /// for `mark` (see [`super::durable`]).
    pub(super) fn new(
        buffer: usize,
        initial: Vec<LoggedEvent>,
        follows_task: bool,
        mark: &DurableMark,
    ) -> (Subscriber, Subscription) {
        let (tx, rx) = mpsc::channel(buffer.max(1) + 1);
        let overflowed = Arc::new(AtomicBool::new(false));
        let failure = Arc::new(OnceLock::new());
        let subscription = Subscription {
            initial,
            live: Some(rx),
            overflowed: Arc::clone(&overflowed),
            failure: Arc::clone(&failure),
            durable: Some(mark.watch()),
        };
        (Subscriber { tx, overflowed, failure, follows_task }, subscription)
    }

    /// Whether the stream is still read: false once the client went away.
    fn is_open(&self) -> bool {
        !self.tx.is_closed()
    }

    /// Hands over an event; false means the subscriber is gone (closed, or too slow).
    fn offer(&self, event: &LoggedEvent, is_final: bool) -> bool {
        if !is_final && self.tx.capacity() <= 1 {
            self.overflowed.store(true, Ordering::Release);
            return false;
        }
        self.tx.try_send(event.clone()).is_ok()
    }
}

/// A set of subscribers that get the same events, in the same order.
#[derive(Default)]
pub(super) struct Fanout {
    subscribers: Vec<Subscriber>,
}

impl Fanout {
    /// A fanout of one subscriber.
    pub(super) fn of(subscriber: Subscriber) -> Self {
        Fanout { subscribers: vec![subscriber] }
    }

    pub(super) fn add(&mut self, subscriber: Subscriber) {
        self.subscribers.push(subscriber);
    }

    /// Takes over every subscriber of `other`.
    pub(super) fn extend(&mut self, other: Fanout) {
        self.subscribers.extend(other.subscribers);
    }

    pub(super) fn len(&self) -> usize {
        self.subscribers.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.subscribers.is_empty()
    }

    /// Sends `event` to every subscriber, forgetting those that cannot take it (gone, or
    /// too slow: their streams end with SubscriberTooSlow).
    pub(super) fn publish(&mut self, event: &LoggedEvent) {
        self.offer(event, false);
    }

    /// Sends the final event of a turn: it uses the slot kept for it, so a subscriber
    /// that kept up is never dropped here.
    pub(super) fn publish_final(&mut self, event: &LoggedEvent) {
        self.offer(event, true);
    }

    fn offer(&mut self, event: &LoggedEvent, is_final: bool) {
        self.subscribers.retain(|s| s.offer(event, is_final));
    }

    /// Forgets the subscribers whose client went away.
    pub(super) fn retain_open(&mut self) {
        self.subscribers.retain(Subscriber::is_open);
    }

    /// Keeps only the `SubscribeToTask` subscribers, which follow the task past the end
    /// of its turn ([`super::watch`]); the others' streams end as they are dropped.
    pub(super) fn keep_followers(&mut self) {
        self.subscribers.retain(|s| s.follows_task);
    }

    /// Ends every stream with `error` instead of a final event: the turn's end could not
    /// be made durable, and a stream that just stopped would look like a network cut. The
    /// caller sees only the error's message and correlation id; the detail is logged
    /// here, once for all of them.
    pub(super) fn fail(self, error: &A2aError) {
        if self.is_empty() {
            return;
        }
        let correlation = error.metadata.get("correlationId").map(String::as_str).unwrap_or("");
        let detail = error.detail.as_deref().unwrap_or(&error.message);
        tracing::error!(
            correlation_id = correlation,
            detail,
            streams = self.len(),
            "a turn's end was not saved; its streams end with an error"
        );
        self.end(error);
    }

    /// Ends every stream with `error` as its last item.
    pub(super) fn end(self, error: &A2aError) {
        for subscriber in self.subscribers {
            let _ = subscriber.failure.set(error.clone());
            // Dropping the sender ends the live events; the stream's tail then sends the error.
        }
    }
}
