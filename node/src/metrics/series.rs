//! The node's samples over the last hour: a ring of one [`Sample`] per [`INTERVAL`], each
//! the difference of the counters' [`Totals`] between two readings. Kept with the core
//! (`Core::series`); filled and served by the admin API (`crate::admin::series`).

use a2ad_actors::limits::{TurnTimes, TURN_TIME_BUCKETS};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// The time one sample covers.
pub const INTERVAL: Duration = Duration::from_secs(10);
/// Samples kept: an hour, and the one being read.
pub const KEPT: usize = 361;

/// What happened in one interval (counts), and the gauges at its end.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// The interval's end, in milliseconds since the epoch.
    pub at_ms: i64,
    /// Requests answered in the interval, by A2A method (methods with none left out).
    pub requests: BTreeMap<&'static str, u64>,
    pub turns_started: u64,
    pub turns_completed: u64,
    pub turns_failed: u64,
    /// The median and the 99th percentile of the turns that ended in the interval
    /// (the upper bound of a histogram bucket, 19% wide); `None` when none ended.
    pub turn_p50_ms: Option<f64>,
    pub turn_p99_ms: Option<f64>,
    /// Streams open at the interval's end.
    pub open_streams: i64,
    /// Push deliveries made, and deliveries rescheduled after a failure, in the interval.
    pub push_delivered: u64,
    pub push_retries: u64,
    /// Jobs in the dead letters at the interval's end.
    pub dead_letters: i64,
    /// Push jobs waiting at the interval's end; `None` with push off.
    pub queue_depth: Option<usize>,
}

/// The counters' totals since start, as one read of them.
#[derive(Debug, Clone)]
pub struct Totals {
    pub requests: BTreeMap<&'static str, u64>,
    pub turns_started: u64,
    pub turns_completed: u64,
    pub turns_failed: u64,
    pub turn_times: [u64; TURN_TIME_BUCKETS],
    pub push_delivered: u64,
    pub push_retries: u64,
}

/// The gauges read at a sample's end.
#[derive(Debug, Clone, Copy, Default)]
pub struct Levels {
    pub open_streams: i64,
    pub dead_letters: i64,
    pub queue_depth: Option<usize>,
}

/// The ring of samples, newest last.
#[derive(Debug, Default)]
pub struct Series {
    ring: Mutex<Ring>,
}

#[derive(Debug, Default)]
struct Ring {
    samples: VecDeque<Sample>,
    /// The totals at the last sample (or at start), which the next one is counted from.
    last: Option<Totals>,
}

impl Series {
    /// Counts a sample ending at `at_ms` from the totals then; the first call only sets
    /// the baseline.
    pub fn record(&self, at_ms: i64, totals: Totals, levels: Levels) {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(last) = ring.last.take() {
            let sample = difference(at_ms, &last, &totals, levels);
            if ring.samples.len() == KEPT {
                ring.samples.pop_front();
            }
            ring.samples.push_back(sample);
        }
        ring.last = Some(totals);
    }

    /// The samples that end after `since_ms` (all without it), oldest first.
    pub fn since(&self, since_ms: Option<i64>) -> Vec<Sample> {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        ring.samples.iter().filter(|s| since_ms.is_none_or(|t| s.at_ms > t)).cloned().collect()
    }
}

fn difference(at_ms: i64, before: &Totals, now: &Totals, levels: Levels) -> Sample {
    let requests = now
        .requests
        .iter()
        .map(|(method, n)| (*method, n.saturating_sub(before.requests.get(method).copied().unwrap_or(0))))
        .filter(|(_, n)| *n > 0)
        .collect();
    let turn_times: [u64; TURN_TIME_BUCKETS] =
        std::array::from_fn(|i| now.turn_times[i].saturating_sub(before.turn_times[i]));
    Sample {
        at_ms,
        requests,
        turns_started: now.turns_started.saturating_sub(before.turns_started),
        turns_completed: now.turns_completed.saturating_sub(before.turns_completed),
        turns_failed: now.turns_failed.saturating_sub(before.turns_failed),
        turn_p50_ms: TurnTimes::quantile_ms(&turn_times, 0.5),
        turn_p99_ms: TurnTimes::quantile_ms(&turn_times, 0.99),
        open_streams: levels.open_streams,
        push_delivered: now.push_delivered.saturating_sub(before.push_delivered),
        push_retries: now.push_retries.saturating_sub(before.push_retries),
        dead_letters: levels.dead_letters,
        queue_depth: levels.queue_depth,
    }
}
