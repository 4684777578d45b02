//! A stream reserves the event ids it shows before showing them.
//!
//! A running turn hands its progress events to subscribers as it emits them, before it
//! stores them (progress is saved at intervals, and made durable with the next commit).
//! A crash then loses events a client has seen, and recovery's FAILED event would take
//! one of their ids: one id, two events. So every stream passes through a forwarder that,
//! before it sends events up to seq `n`, has the store reserve the ids up to `n + AHEAD`
//! durably ([`TaskStore::reserve_event_seq`] and a group commit, shared with every other
//! request waiting); recovery numbers its FAILED event above the reservation. One
//! reservation covers `AHEAD` events, so a busy stream pays one commit per `AHEAD`
//! events. A reservation the disk refuses ends the stream with STORE_UNAVAILABLE.
//!
//! [`TaskStore::reserve_event_seq`]: a2ad_storage::TaskStore::reserve_event_seq

use a2ad_actors::messages::Subscription;
use a2ad_actors::Runtime;
use a2ad_protocol::A2aError;
use a2ad_storage::LoggedEvent;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Ids reserved past the highest one about to be sent.
const AHEAD: u64 = 64;
/// Events forwarded per look at the reservation, at most.
const BATCH: usize = 256;

/// `subscription`, with its events (first and live) sent only once their ids are
/// reserved. Must run inside a tokio runtime (every binding's handler does).
pub(super) fn reserved(mut subscription: Subscription, task_id: String, rt: Arc<Runtime>) -> Subscription {
    let first = std::mem::take(&mut subscription.initial);
    let from_actor = subscription.live.take();
    let (to_client, live) = mpsc::channel(rt.settings.stream_buffer.max(1));
    let failure = Arc::clone(&subscription.failure);
    tokio::spawn(async move {
        if let Err(e) = forward(first, from_actor, &to_client, &task_id, &rt).await {
            let _ = failure.set(e);
        }
    });
    subscription.live = Some(live);
    subscription
}

async fn forward(
    mut batch: Vec<LoggedEvent>,
    mut from_actor: Option<mpsc::Receiver<LoggedEvent>>,
    to_client: &mpsc::Sender<LoggedEvent>,
    task_id: &str,
    rt: &Runtime,
) -> Result<(), A2aError> {
    let mut reserved = 0;
    loop {
        let top = batch.iter().map(|e| e.seq).max().unwrap_or(0);
        if top > reserved {
            let want = top + AHEAD;
            if rt.store.reserve_event_seq(task_id, want)? {
                rt.commit.commit().await?;
            }
            reserved = want;
        }
        for event in batch.drain(..) {
            if to_client.send(event).await.is_err() {
                return Ok(());
            }
        }
        let Some(rx) = from_actor.as_mut() else { return Ok(()) };
        if rx.recv_many(&mut batch, BATCH).await == 0 {
            return Ok(());
        }
    }
}
