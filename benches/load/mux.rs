//! A closed-loop driver for transports that carry many JSON-RPC requests on one
//! connection (WebSocket, stdio, Redis Streams): `slots` loops, each with one request in
//! flight, spread over a few lanes (sockets or pipes). Answers are matched to their
//! request by JSON-RPC id, which is unique per request in a run.

use crate::client::{new_histogram, LoadResult};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How long one request may wait for its answer before its slot gives up (bounded runs).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Requests waiting for their answer, by JSON-RPC id.
#[derive(Clone, Default)]
pub struct Pending(Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>);

impl Pending {
    fn expect(&self, id: u64) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        self.0.lock().expect("pending lock").insert(id, tx);
        rx
    }

    fn forget(&self, id: u64) {
        self.0.lock().expect("pending lock").remove(&id);
    }

    /// Hands one received JSON-RPC response to the request that waits for it (a message
    /// whose id nobody waits for, e.g. a later event of a stream, is dropped).
    pub fn answer(&self, text: String) {
        let id = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v["id"].as_u64());
        let waiter = id.and_then(|id| self.0.lock().expect("pending lock").remove(&id));
        if let Some(waiter) = waiter {
            let _ = waiter.send(text);
        }
    }
}

/// The request text for slot `slot` with JSON-RPC id `id`.
pub type RequestFor = fn(slot: usize, id: u64) -> String;

/// What to send and what every answer must contain.
#[derive(Clone, Copy)]
pub struct Load {
    pub slots: usize,
    pub request_for: RequestFor,
    pub expect: &'static str,
    pub warmup: Duration,
    pub duration: Duration,
}

/// Runs `load.slots` loops over `lanes` (slot `i` uses lane `i % lanes.len()`); the
/// transport's readers feed answers into `pending`.
pub async fn run(load: Load, lanes: Vec<mpsc::UnboundedSender<String>>, pending: Pending) -> LoadResult {
    let measure_from = Instant::now() + load.warmup;
    let deadline = measure_from + load.duration;
    let ids = Arc::new(AtomicU64::new(1));
    let tasks: Vec<_> = (0..load.slots)
        .map(|slot| {
            let lane = lanes[slot % lanes.len()].clone();
            let (pending, ids) = (pending.clone(), Arc::clone(&ids));
            tokio::spawn(slot_loop(load, slot, lane, pending, ids, measure_from, deadline))
        })
        .collect();
    let mut total = LoadResult::sum(tasks, Duration::ZERO).await;
    total.elapsed = Instant::now().min(deadline).saturating_duration_since(measure_from).max(Duration::from_millis(1));
    total
}

async fn slot_loop(
    load: Load,
    slot: usize,
    lane: mpsc::UnboundedSender<String>,
    pending: Pending,
    ids: Arc<AtomicU64>,
    measure_from: Instant,
    deadline: Instant,
) -> (u64, u64, hdrhistogram::Histogram<u64>) {
    let mut hist = new_histogram();
    let (mut requests, mut errors) = (0u64, 0u64);
    while Instant::now() < deadline {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let answer = pending.expect(id);
        let sent = Instant::now();
        if lane.send((load.request_for)(slot, id)).is_err() {
            break;
        }
        let text = tokio::time::timeout(ANSWER_TIMEOUT, answer).await;
        let ok = matches!(&text, Ok(Ok(t)) if t.contains(load.expect));
        if sent >= measure_from {
            requests += 1;
            errors += u64::from(!ok);
            hist.record(sent.elapsed().as_micros() as u64).ok();
        }
        if text.is_err() {
            pending.forget(id);
            break;
        }
    }
    (requests, errors, hist)
}
