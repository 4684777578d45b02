//! Events and what a stream sees of them.
//!
//! Every change of a task is an event with the task's next sequence number: the task
//! itself when it is created, then status and artifact updates. Events go to the task's
//! event log in the store (with the task's progress writes, so no extra write per event)
//! and, through a [`super::fanout::Fanout`], to every live subscriber of the running task.
//!
//! The stream of a `SendStreamingMessage` ends with its turn. A `SubscribeToTask`
//! subscriber follows the task: past an interrupted end (input-required, auth-required)
//! it waits, as a watcher ([`super::watch`]), for the next turn, and ends only on a
//! terminal state (or when the node stops).

use crate::messages::Subscription;
use crate::RuntimeError;
use a2ad_protocol::{A2aError, ErrorCode, StreamResponse};
use a2ad_storage::TaskStoreExt;
use a2ad_storage::{LoggedEvent, Scope, TaskRecord};
use futures_util::stream::{self, BoxStream, StreamExt};
use futures_util::FutureExt as _;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

impl Subscription {
    /// The subscription as one stream, as every binding sends it: the first events, the
    /// live ones, and, for a subscriber dropped for falling behind, a final
    /// SubscriberTooSlow error that names the last event it was given; for a turn whose
    /// end could not be saved, that internal error.
    pub fn into_items(self) -> BoxStream<'static, Result<LoggedEvent, A2aError>> {
        self.into_items_until(futures_util::future::pending())
    }

    /// [`Subscription::into_items`], ended early when `stop` resolves: then as a subscriber
    /// that fell behind, with SubscriberTooSlow naming the last event given. The edges
    /// resolve `stop` when the client's socket stops taking events; `stop` is looked at
    /// only when the next item is asked for.
    pub fn into_items_until(
        self,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> BoxStream<'static, Result<LoggedEvent, A2aError>> {
        let live = match self.live {
            Some(rx) => stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) }).boxed(),
            None => stream::empty().boxed(),
        };
        let last_sent = Arc::new(AtomicU64::new(0));
        let sent = Arc::clone(&last_sent);
        let stopped = Arc::new(AtomicBool::new(false));
        let flagged = Arc::clone(&stopped);
        let stop = stop.map(move |()| flagged.store(true, Ordering::Relaxed));
        let events = stream::iter(self.initial).chain(live).take_until(stop).map(move |event| {
            sent.store(event.seq, Ordering::Relaxed);
            Ok(event)
        });
        let (overflowed, failure) = (self.overflowed, self.failure);
        let tail = stream::once(async move {
            if let Some(error) = failure.get() {
                return Some(Err(error.clone()));
            }
            (overflowed.load(Ordering::Acquire) || stopped.load(Ordering::Relaxed)).then(|| {
                let last = last_sent.load(Ordering::Relaxed).to_string();
                Err(A2aError::of(ErrorCode::SubscriberTooSlow).with_meta("lastEventId", last))
            })
        })
        .filter_map(|item| async move { item });
        events.chain(tail).boxed()
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

/// What a new subscriber sees first: the task, or (with `after`) every event since, from
/// the log and from the turn's not yet written events. When the log no longer reaches
/// back to `after`, the task snapshot again, noting that events were skipped.
pub(super) fn first_events(
    rt: &crate::Runtime,
    record: &TaskRecord,
    unsaved: &[LoggedEvent],
    after: Option<u64>,
) -> Result<Vec<LoggedEvent>, RuntimeError> {
    let stored = match log_read_after(record, after) {
        Some(after) => rt.store.events_after(Scope::Owner(&record.owner), &record.task.id, after, usize::MAX)?,
        None => Vec::new(),
    };
    Ok(first_events_of(record, unsaved, after, stored))
}

/// [`first_events`] of a task that is not running here, read through the seam (a shared
/// store's read is the pipe's answer: no thread waits for it).
pub(super) async fn first_events_read(
    rt: &crate::Runtime,
    record: &TaskRecord,
    after: Option<u64>,
) -> Result<Vec<LoggedEvent>, RuntimeError> {
    let stored = match log_read_after(record, after) {
        Some(after) => rt.store.read_events(Scope::Owner(&record.owner), &record.task.id, after, usize::MAX).await?,
        None => Vec::new(),
    };
    Ok(first_events_of(record, &[], after, stored))
}

/// Where [`first_events`] reads the log from: `after`, when events came since.
fn log_read_after(record: &TaskRecord, after: Option<u64>) -> Option<u64> {
    after.filter(|after| *after < record.last_event_seq)
}

/// [`first_events`] once the log's events after `after` (`stored`) are read.
fn first_events_of(
    record: &TaskRecord,
    unsaved: &[LoggedEvent],
    after: Option<u64>,
    mut events: Vec<LoggedEvent>,
) -> Vec<LoggedEvent> {
    let Some(after) = after else {
        return vec![snapshot(record, None)];
    };
    let last = record.last_event_seq;
    if after >= last {
        return Vec::new();
    }
    let stored_up_to = events.last().map_or(after, |e| e.seq);
    events.extend(unsaved.iter().filter(|e| e.seq > stored_up_to).cloned());
    let contiguous = events.iter().zip(after + 1..).all(|(e, expected)| e.seq == expected);
    // Past `last` too: on a shared store the events are read after the record, and a save
    // of the running turn (on any node) can land between the two reads. The follower then
    // goes on from the newest of them ([`super::cluster::follow`]).
    if contiguous && events.last().is_some_and(|e| e.seq >= last) {
        return events;
    }
    let oldest = events.first().map_or(last, |e| e.seq);
    let note = json!({"lastEventId": after, "replayed": false, "oldestRetainedEventId": oldest,
        "reason": "events after lastEventId are no longer retained; this is the current task"});
    vec![snapshot(record, Some(note))]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(last_event_seq: u64) -> TaskRecord {
        TaskRecord { last_event_seq, ..crate::feed::tests::record() }
    }

    fn events(seqs: std::ops::RangeInclusive<u64>) -> Vec<LoggedEvent> {
        seqs.map(|seq| LoggedEvent { seq, json: format!("{{\"n\":{seq}}}").into() }).collect()
    }

    /// A shared store's events are read after its record: a save between the two reads
    /// gives events past the record's last, which are a resume, not a gap.
    #[test]
    fn events_past_a_record_read_before_them_resume_without_a_snapshot() {
        assert_eq!(first_events_of(&record(4), &[], Some(3), events(4..=6)), events(4..=6));
        assert_eq!(first_events_of(&record(4), &[], Some(3), events(4..=4)), events(4..=4));
        let gap = first_events_of(&record(4), &[], Some(2), events(4..=6));
        assert_eq!((gap.len(), gap[0].seq), (1, 4), "a gap is still the snapshot with its note");
        assert!(gap[0].json.contains("a2ad.resume"));
    }
}
