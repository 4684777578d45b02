//! Events and their subscribers.
//!
//! Every change of a task is an event with the task's next sequence number: the task
//! itself when it is created, then status and artifact updates. Events go to the task's
//! event log in the store (with the task's progress writes, so no extra write per event)
//! and to every live subscriber of the running task.
//!
//! A subscriber has a bounded buffer. Publishing never waits: a subscriber whose buffer
//! is full is dropped and told so when its stream ends, and it resumes from the last id
//! it saw. One slot is kept for the final event, so a subscriber that kept up always sees
//! the end of the turn.
//!
//! The stream of a `SendStreamingMessage` ends with its turn. A `SubscribeToTask`
//! subscriber follows the task: past an interrupted end (input-required, auth-required)
//! it waits, as a watcher ([`super::watch`]), for the next turn, and ends only on a
//! terminal state (or when the node stops).

use super::actor::{ContextActor, RunningTurn};
use crate::messages::{Subscribe, Subscription};
use crate::RuntimeError;
use a2ad_protocol::{A2aError, ErrorCode, StreamResponse};
use a2ad_storage::{LoggedEvent, TaskRecord};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::mpsc;

/// One live subscriber of a task.
pub(super) struct Subscriber {
    tx: mpsc::Sender<LoggedEvent>,
    overflowed: Arc<AtomicBool>,
    failure: Arc<OnceLock<A2aError>>,
    /// A `SubscribeToTask` subscriber: it follows the task through later turns until the
    /// task is terminal. The caller of `SendStreamingMessage` (false) follows its turn only.
    pub(super) follows_task: bool,
}

impl Subscriber {
    /// A subscriber with room for `buffer` events plus the final one.
    pub(super) fn new(buffer: usize, initial: Vec<LoggedEvent>, follows_task: bool) -> (Subscriber, Subscription) {
        let (tx, rx) = mpsc::channel(buffer.max(1) + 1);
        let overflowed = Arc::new(AtomicBool::new(false));
        let failure = Arc::new(OnceLock::new());
        let subscription = Subscription {
            initial,
            live: Some(rx),
            overflowed: Arc::clone(&overflowed),
            failure: Arc::clone(&failure),
        };
        (Subscriber { tx, overflowed, failure, follows_task }, subscription)
    }

    /// Whether the stream is still read: false once the client went away.
    pub(super) fn is_open(&self) -> bool {
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

/// Ends every subscriber's stream with `error` instead of a final event: the turn's end
/// could not be made durable, and a stream that just stopped would look like a network
/// cut. The caller sees only the error's message and correlation id; the detail is
/// logged here, once for all of them.
pub(super) fn fail_all(subscribers: Vec<Subscriber>, error: &A2aError) {
    if subscribers.is_empty() {
        return;
    }
    let correlation = error.metadata.get("correlationId").map(String::as_str).unwrap_or("");
    let detail = error.detail.as_deref().unwrap_or(&error.message);
    tracing::error!(
        correlation_id = correlation,
        detail,
        streams = subscribers.len(),
        "a turn's end was not saved; its streams end with an error"
    );
    end_all(subscribers, error);
}

/// Ends every subscriber's stream with `error` as its last item.
pub(super) fn end_all(subscribers: Vec<Subscriber>, error: &A2aError) {
    for subscriber in subscribers {
        let _ = subscriber.failure.set(error.clone());
        // Dropping the sender ends the live events; the stream's tail then sends the error.
    }
}

/// Sends `event` to every subscriber, forgetting those that cannot take it.
pub(super) fn publish(subscribers: &mut Vec<Subscriber>, event: &LoggedEvent, is_final: bool) {
    subscribers.retain(|s| s.offer(event, is_final));
}

impl RunningTurn {
    /// Records a change of the running task as its next event: logged with the next
    /// progress write and sent to every subscriber now.
    pub(super) fn emit(&mut self, event: StreamResponse) {
        self.release_snapshot();
        self.record.last_event_seq += 1;
        let logged = LoggedEvent::encode(self.record.last_event_seq, &event);
        publish(&mut self.subscribers, &logged, false);
        self.unsaved_events.push(logged);
    }
}

impl RunningTurn {
    /// Sends the held-back task snapshot (see [`super::reply`]) to the subscribers, once:
    /// the turn is a task after all.
    pub(super) fn release_snapshot(&mut self) {
        if let Some(held) = self.held_snapshot.take() {
            publish(&mut self.subscribers, &held, false);
        }
    }
}

impl Subscription {
    /// The subscription as one stream, as every binding sends it: the first events, the
    /// live ones, and, for a subscriber dropped for falling behind, a final
    /// SubscriberTooSlow error that names the last event it was given; for a turn whose
    /// end could not be saved, that internal error.
    pub fn into_items(self) -> BoxStream<'static, Result<LoggedEvent, A2aError>> {
        let live = match self.live {
            Some(rx) => stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) }).boxed(),
            None => stream::empty().boxed(),
        };
        let last_sent = Arc::new(AtomicU64::new(0));
        let sent = Arc::clone(&last_sent);
        let events = stream::iter(self.initial).chain(live).map(move |event| {
            sent.store(event.seq, Ordering::Relaxed);
            Ok(event)
        });
        let (overflowed, failure) = (self.overflowed, self.failure);
        let tail = stream::once(async move {
            if let Some(error) = failure.get() {
                return Some(Err(error.clone()));
            }
            overflowed.load(Ordering::Acquire).then(|| {
                let last = last_sent.load(Ordering::Relaxed).to_string();
                Err(A2aError::of(ErrorCode::SubscriberTooSlow).with_meta("lastEventId", last))
            })
        })
        .filter_map(|item| async move { item });
        events.chain(tail).boxed()
    }
}

impl RunningTurn {
    /// The running task as a stream's first event, encoded once per event sequence
    /// number: a thousand subscribers joining at once share one encoding.
    fn current_snapshot(&mut self) -> LoggedEvent {
        match &self.snapshot_cache {
            Some(cached) if cached.seq == self.record.last_event_seq => cached.clone(),
            _ => {
                let fresh = snapshot(&self.record, None);
                self.snapshot_cache = Some(fresh.clone());
                fresh
            }
        }
    }
}

/// The task as the first event of a stream, under the id of the latest event it
/// reflects. `note` goes into the task's metadata under `a2ad.resume`.
pub(super) fn snapshot(record: &TaskRecord, note: Option<serde_json::Value>) -> LoggedEvent {
    let mut task = record.task.clone();
    if let Some(note) = note {
        task.metadata.get_or_insert_with(Default::default).insert("a2ad.resume".into(), note);
    }
    LoggedEvent::encode(record.last_event_seq, &StreamResponse::Task(task))
}

/// A status update event of `record`'s current status.
pub(super) fn status_event(record: &TaskRecord) -> StreamResponse {
    StreamResponse::status_of(&record.task)
}

impl ContextActor {
    /// Handles [`Subscribe`]: the first events (snapshot or replay), and live events if the
    /// task is running here.
    pub(super) fn subscribe(&mut self, msg: Subscribe) -> Result<Subscription, A2aError> {
        let buffer = self.rt.settings.stream_buffer;
        if let Some(turn) = self.turn.as_mut().filter(|t| t.record.task.id == msg.task_id) {
            if turn.record.owner != msg.owner {
                return Err(RuntimeError::TaskNotFound(msg.task_id).into());
            }
            // Someone else watches the task now: it is kept, whatever the agent answers.
            turn.reply_allowed = false;
            turn.release_snapshot();
            let initial = match msg.after {
                None => vec![turn.current_snapshot()],
                after => first_events(&self.rt, &turn.record, &turn.unsaved_events, after)?,
            };
            let (subscriber, subscription) = Subscriber::new(buffer, initial, true);
            turn.subscribers.push(subscriber);
            return Ok(subscription);
        }
        let record = self.stored_task(&msg.owner, &msg.task_id)?;
        if record.state().is_terminal() {
            return Err(RuntimeError::SubscribeTerminal(msg.task_id, record.state()).into());
        }
        // Not running: an interrupted task. The stream says where it stands, then waits
        // for the turn that answers it.
        let initial = first_events(&self.rt, &record, &[], msg.after)?;
        let (subscriber, subscription) = Subscriber::new(buffer, initial, true);
        self.watch(msg.task_id, subscriber);
        Ok(subscription)
    }
}

/// What a new subscriber sees first: the task, or (with `after`) every event since, from
/// the log and from the turn's not yet written events. When the log no longer reaches
/// back to `after`, the task snapshot again, noting that events were skipped.
pub(super) fn first_events(
    rt: &crate::Runtime,
    record: &TaskRecord,
    unsaved: &[LoggedEvent],
    after: Option<u64>,
) -> Result<Vec<LoggedEvent>, RuntimeError> {
    let Some(after) = after else {
        return Ok(vec![snapshot(record, None)]);
    };
    let last = record.last_event_seq;
    if after >= last {
        return Ok(Vec::new());
    }
    let mut events = rt.store.events_after(&record.task.id, after, usize::MAX)?;
    let stored_up_to = events.last().map_or(after, |e| e.seq);
    events.extend(unsaved.iter().filter(|e| e.seq > stored_up_to).cloned());
    let contiguous = events.iter().zip(after + 1..).all(|(e, expected)| e.seq == expected);
    if contiguous && events.last().map(|e| e.seq) == Some(last) {
        return Ok(events);
    }
    let oldest = events.first().map_or(last, |e| e.seq);
    let note = json!({"lastEventId": after, "replayed": false, "oldestRetainedEventId": oldest,
        "reason": "events after lastEventId are no longer retained; this is the current task"});
    Ok(vec![snapshot(record, Some(note))])
}
