//! `GET /admin/v1/series`: the node's rates and latencies over the last hour, one sample
//! per [`INTERVAL`], for the console's charts.
//!
//! Nothing here is on the request path. The facts are the counters the node keeps anyway
//! (requests per method in [`crate::metrics::Metrics`], states entered by the metered
//! store, turns started and turn times in [`a2ad_actors::limits::TurnLimits`], deliveries
//! in the push worker's [`a2ad_actors::push::DeliveryLog`]); a sampler reads their totals
//! every ten seconds and keeps the differences in a ring of [`KEPT`] samples. So an event
//! costs what it cost before (one atomic add, or a count under a lock already taken),
//! watched or not, and the ring is a few hundred kilobytes at most.

use super::AdminError;
use crate::core::Core;
pub use crate::metrics::series::{Levels, Sample, Series, Totals, INTERVAL, KEPT};
use a2ad_protocol::TaskState;
use serde::Serialize;
use std::sync::Arc;

/// The counters' totals now (cheap: a few loads and three short locks).
pub fn totals(core: &Core) -> Totals {
    let (rt, metrics) = (core.runtime(), core.metrics());
    Totals {
        requests: metrics.requests_by_method(),
        turns_started: rt.turn_limits.started(),
        turns_completed: metrics.entered(TaskState::Completed),
        turns_failed: metrics.entered(TaskState::Failed),
        turn_times: rt.turn_limits.times().snapshot(),
        push_delivered: rt.push.as_ref().map_or(0, |p| p.deliveries.delivered()),
        push_retries: metrics.push_retries(),
    }
}

/// Samples the node every [`INTERVAL`] (the baseline at once) until `stop` is cancelled.
/// Started only when the admin API is on: with no operator, nobody could read it.
pub fn start(core: Arc<Core>, stop: tokio_util::sync::CancellationToken) {
    actix::spawn(async move {
        let mut interval = tokio::time::interval(INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = interval.tick() => {}
            }
            let levels = levels(&core).await;
            core.series().record(chrono::Utc::now().timestamp_millis(), totals(&core), levels);
        }
    });
}

/// The gauges now; the queue's depth is read on the blocking pool (it may be on disk or
/// in Redis).
async fn levels(core: &Core) -> Levels {
    let rt = Arc::clone(core.runtime());
    let depth = tokio::task::spawn_blocking(move || rt.push.as_ref().map(|p| p.queue.depth().unwrap_or(0)));
    Levels {
        open_streams: core.metrics().open_streams(),
        dead_letters: core.metrics().dead_letters(),
        queue_depth: depth.await.unwrap_or(None),
    }
}

/// The series document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesDoc {
    pub interval_seconds: u64,
    pub samples: Vec<Sample>,
}

/// `GET /admin/v1/series?since=MS`: the samples ending after `since` (all without it).
pub fn series(core: &Core, pairs: &[(String, String)]) -> Result<SeriesDoc, AdminError> {
    let since = since_of(pairs)?;
    Ok(SeriesDoc { interval_seconds: INTERVAL.as_secs(), samples: core.series().since(since) })
}

/// The query's `since` (milliseconds); another parameter is refused, as on the task list.
fn since_of(pairs: &[(String, String)]) -> Result<Option<i64>, AdminError> {
    let mut since = None;
    for (key, value) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        match key.as_str() {
            "since" => {
                since = Some(value.parse::<i64>().map_err(|_| AdminError::Invalid {
                    field: "since",
                    problem: "must be milliseconds since the epoch".into(),
                })?)
            }
            _ => {
                return Err(AdminError::Invalid {
                    field: "query",
                    problem: format!("has an unknown parameter `{key}`"),
                })
            }
        }
    }
    Ok(since)
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2ad_actors::limits::{TurnTimes, TURN_TIME_BUCKETS};
    use std::collections::BTreeMap;

    fn totals(send: u64, started: u64, fast_turns: u64) -> Totals {
        let mut turn_times = [0; TURN_TIME_BUCKETS];
        turn_times[10] = fast_turns;
        Totals {
            requests: BTreeMap::from([("SendMessage", send), ("GetTask", 4)]),
            turns_started: started,
            turns_completed: started,
            turns_failed: 0,
            turn_times,
            push_delivered: 0,
            push_retries: 0,
        }
    }

    #[test]
    fn a_sample_counts_what_happened_since_the_last_one_and_the_ring_keeps_an_hour() {
        let series = Series::default();
        series.record(0, totals(5, 5, 5), Levels::default());
        assert!(series.since(None).is_empty(), "the first read is the baseline");
        series.record(10_000, totals(8, 7, 7), Levels { open_streams: 2, dead_letters: 1, queue_depth: Some(3) });
        let samples = series.since(None);
        let sample = &samples[0];
        assert_eq!(sample.requests, BTreeMap::from([("SendMessage", 3)]), "methods with none are left out");
        assert_eq!((sample.turns_started, sample.turns_completed, sample.open_streams), (2, 2, 2));
        assert_eq!(sample.turn_p50_ms, Some(TurnTimes::upper_ms(10)));
        assert_eq!(sample.queue_depth, Some(3));
        series.record(20_000, totals(8, 7, 7), Levels::default());
        assert_eq!(series.since(None)[1].turn_p99_ms, None, "no turn ended");
        assert_eq!(series.since(Some(10_000)).len(), 1, "since is exclusive");
        for n in 0..KEPT as i64 + 5 {
            series.record(30_000 + n * 10_000, totals(8, 7, 7), Levels::default());
        }
        let kept = series.since(None);
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept.last().unwrap().at_ms, 30_000 + (KEPT as i64 + 4) * 10_000, "the newest are kept");
    }

    #[test]
    fn the_query_takes_since_only() {
        let pairs = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
        assert_eq!(since_of(&pairs("since", "12")).unwrap(), Some(12));
        assert_eq!(since_of(&pairs("since", "")).unwrap(), None, "empty is absent");
        assert!(matches!(since_of(&pairs("since", "soon")), Err(AdminError::Invalid { field: "since", .. })));
        assert!(matches!(since_of(&pairs("from", "1")), Err(AdminError::Invalid { field: "query", .. })));
    }
}
