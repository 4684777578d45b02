//! A stream sends an event only once its commit is durable.
//!
//! A running turn hands its events to its subscribers as it emits them, before they are
//! written (progress is written within a millisecond while someone streams, and made
//! durable by the next group commit: `a2ad_actors::context::turn`). Were they sent on at
//! once, a crash could take back an event a client had seen, and recovery's FAILED event
//! would then reuse its id: one id, two events. So every stream passes through this
//! forwarder, which sends an event only once the task's durable mark
//! ([`Subscription::durable`]) has reached its id, and holds the others meanwhile. It
//! keeps taking the turn's events while it holds them, up to the stream's buffer
//! (`stream-buffer` events, shared `Arc`s), so a subscriber that keeps up is not dropped
//! as too slow because of one slow commit, and one that does not read still costs a
//! bounded number of events.
//!
//! What the forwarder holds when its stream ends (the client went away, or a commit
//! failed and the turn's end gave the stream its error) is dropped unsent.

use a2ad_actors::messages::Subscription;
use a2ad_protocol::A2aError;
use a2ad_storage::LoggedEvent;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, watch};

/// Events taken from the turn per wake-up, at most.
const BATCH: usize = 256;

/// `subscription`, with its events (first and live) sent only once they are durable.
/// Must run inside a tokio runtime (every binding's handler does).
pub fn send_when_durable(mut subscription: Subscription, buffer: usize) -> Subscription {
    let Some(mark) = subscription.durable.take() else { return subscription };
    let held = VecDeque::from(std::mem::take(&mut subscription.initial));
    let from_actor = subscription.live.take();
    // The channel to the client and what is held take what the old forwarder's channel
    // and batch took: a stalled client is dropped after as many events as before.
    let (to_client, live) = mpsc::channel(buffer.clamp(1, BATCH));
    let failure = Arc::clone(&subscription.failure);
    tokio::spawn(forward(Held { events: held, most: buffer.max(1) }, from_actor, to_client, mark, failure));
    subscription.live = Some(live);
    subscription
}

/// Events waiting for their commit, and how many may wait: past it, the forwarder stops
/// taking the turn's events, and a stream that stays that far behind is dropped as too
/// slow.
struct Held {
    events: VecDeque<LoggedEvent>,
    most: usize,
}

impl Held {
    fn room(&self) -> usize {
        self.most.saturating_sub(self.events.len())
    }
}

async fn forward(
    mut held: Held,
    mut from_actor: Option<mpsc::Receiver<LoggedEvent>>,
    to_client: mpsc::Sender<LoggedEvent>,
    mut mark: watch::Receiver<u64>,
    failure: Arc<OnceLock<A2aError>>,
) {
    let mut batch = Vec::new(); // Grown by the first batch: most streams carry a few events.
    loop {
        let durable = *mark.borrow_and_update();
        while held.events.front().is_some_and(|e| e.seq <= durable) {
            let event = held.events.pop_front().expect("looked at");
            if to_client.send(event).await.is_err() {
                return; // The client went away.
            }
        }
        // The turn is done with this stream: all sent, or its end failed (the stream
        // ends with that error, and what is held was never made durable).
        if from_actor.is_none() && (held.events.is_empty() || failure.get().is_some()) {
            return;
        }
        tokio::select! {
            taken = recv_many(&mut from_actor, &mut batch, held.room()), if from_actor.is_some() && held.room() > 0 => {
                if taken == 0 {
                    from_actor = None;
                }
                held.events.extend(batch.drain(..));
            }
            changed = mark.changed(), if !held.events.is_empty() => {
                if changed.is_err() {
                    // The context stopped: nothing held can become durable now.
                    let durable = *mark.borrow();
                    held.events.retain(|e| e.seq <= durable);
                    from_actor = None;
                    if held.events.is_empty() {
                        return;
                    }
                }
            }
            else => return,
        }
    }
}

async fn recv_many(
    from_actor: &mut Option<mpsc::Receiver<LoggedEvent>>,
    batch: &mut Vec<LoggedEvent>,
    room: usize,
) -> usize {
    match from_actor {
        Some(rx) => rx.recv_many(batch, room.min(BATCH)).await,
        None => 0,
    }
}
