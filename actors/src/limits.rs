//! How many turns may run at once, per tenant and on the whole node.
//!
//! A turn takes a [`TurnPermit`] when it starts and gives it back when its `RunningTurn`
//! is dropped, however the turn ends (finished, cancelled, failed, node shutdown).
//!
//! The permit is also where a turn's time is known: its start is counted under the lock
//! the limits take anyway, and its time, when the permit is dropped, goes into
//! [`TurnTimes`] with one atomic add (the admin API's series read both).

use crate::RuntimeError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The counters behind the limits; 0 means no limit.
#[derive(Debug, Default)]
pub struct TurnLimits {
    max_total: usize,
    max_per_tenant: usize,
    running: Mutex<Running>,
    times: TurnTimes,
}

#[derive(Debug, Default)]
struct Running {
    total: usize,
    per_tenant: HashMap<String, usize>,
    /// Turns started since the node started.
    started: u64,
}

/// Buckets of the turn-time histogram: bucket `i` holds the turns of at most
/// [`TurnTimes::upper_ms`]`(i)`, 0.1 ms times 2^(i/4) (19% apart, up to about 20 minutes);
/// the last bucket holds the longer ones.
pub const TURN_TIME_BUCKETS: usize = 96;

/// How long turns took, since the node started: a histogram of fixed buckets, one atomic
/// add per turn. A reader takes two [`TurnTimes::snapshot`]s and asks the difference for
/// its quantiles ([`TurnTimes::quantile_ms`]).
#[derive(Debug)]
pub struct TurnTimes {
    buckets: [AtomicU64; TURN_TIME_BUCKETS],
}

impl Default for TurnTimes {
    fn default() -> Self {
        TurnTimes { buckets: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

impl TurnTimes {
    /// The upper bound of bucket `i`, in milliseconds.
    pub fn upper_ms(i: usize) -> f64 {
        0.1 * 2f64.powf(i as f64 / 4.0)
    }

    fn record(&self, millis: f64) {
        let i = (0..TURN_TIME_BUCKETS - 1).find(|i| millis <= Self::upper_ms(*i)).unwrap_or(TURN_TIME_BUCKETS - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Every bucket's count now.
    pub fn snapshot(&self) -> [u64; TURN_TIME_BUCKETS] {
        std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed))
    }

    /// The `q` quantile (0 to 1) of the turns counted in `counts` (a snapshot, or the
    /// difference of two): the upper bound of the bucket it falls in; `None` without turns.
    pub fn quantile_ms(counts: &[u64; TURN_TIME_BUCKETS], q: f64) -> Option<f64> {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        let i = counts.iter().position(|n| {
            seen += n;
            seen >= rank
        });
        i.map(Self::upper_ms)
    }
}

impl TurnLimits {
    pub fn new(max_total: usize, max_per_tenant: usize) -> Arc<Self> {
        Arc::new(TurnLimits { max_total, max_per_tenant, running: Mutex::default(), times: TurnTimes::default() })
    }

    /// A permit for one more turn of `tenant`, or the limit that refuses it.
    pub fn acquire(self: &Arc<Self>, tenant: &str) -> Result<TurnPermit, RuntimeError> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if self.max_total > 0 && running.total >= self.max_total {
            return Err(RuntimeError::Limit(format!("the node runs its limit of {} turns at once", self.max_total)));
        }
        let mine = running.per_tenant.get(tenant).copied().unwrap_or(0);
        if self.max_per_tenant > 0 && mine >= self.max_per_tenant {
            return Err(RuntimeError::Limit(format!(
                "the tenant runs its limit of {} turns at once",
                self.max_per_tenant
            )));
        }
        running.total += 1;
        running.started += 1;
        *running.per_tenant.entry(tenant.to_owned()).or_insert(0) += 1;
        Ok(TurnPermit { limits: Arc::clone(self), tenant: tenant.to_owned(), since: Instant::now() })
    }

    /// Turns running now.
    pub fn running(&self) -> usize {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// Turns started since the node started.
    pub fn started(&self) -> u64 {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).started
    }

    /// How long the turns that ended took.
    pub fn times(&self) -> &TurnTimes {
        &self.times
    }
}

/// One running turn's place; released on drop, when the turn's time is counted.
#[derive(Debug)]
pub struct TurnPermit {
    limits: Arc<TurnLimits>,
    tenant: String,
    since: Instant,
}

impl Drop for TurnPermit {
    fn drop(&mut self) {
        self.limits.times.record(self.since.elapsed().as_secs_f64() * 1000.0);
        let mut running = self.limits.running.lock().unwrap_or_else(|p| p.into_inner());
        running.total = running.total.saturating_sub(1);
        if let Some(count) = running.per_tenant.get_mut(&self.tenant) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                running.per_tenant.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_count_per_tenant_and_in_total() {
        let limits = TurnLimits::new(3, 2);
        let a1 = limits.acquire("a").unwrap();
        let _a2 = limits.acquire("a").unwrap();
        assert!(limits.acquire("a").unwrap_err().to_string().contains("tenant"));
        let _b1 = limits.acquire("b").unwrap();
        assert!(limits.acquire("b").unwrap_err().to_string().contains("node"));
        drop(a1);
        assert!(limits.acquire("b").is_ok());
        assert_eq!(TurnLimits::new(0, 0).acquire("x").map(|_| ()).ok(), Some(()));
        assert_eq!(limits.started(), 4, "every permit given is a turn started");
    }

    #[test]
    fn turn_time_quantiles_are_the_upper_bound_of_their_bucket() {
        let times = TurnTimes::default();
        assert_eq!(TurnTimes::quantile_ms(&times.snapshot(), 0.5), None);
        let before = times.snapshot();
        for _ in 0..98 {
            times.record(1.0);
        }
        times.record(500.0);
        times.record(1e9);
        let after = times.snapshot();
        let counts: [u64; TURN_TIME_BUCKETS] = std::array::from_fn(|i| after[i] - before[i]);
        let p50 = TurnTimes::quantile_ms(&counts, 0.5).unwrap();
        assert!((1.0..1.2).contains(&p50), "{p50}");
        let p99 = TurnTimes::quantile_ms(&counts, 0.99).unwrap();
        assert!((500.0..600.0).contains(&p99), "{p99}");
        let max = TurnTimes::quantile_ms(&counts, 1.0).unwrap();
        assert_eq!(max, TurnTimes::upper_ms(TURN_TIME_BUCKETS - 1), "past the last bound: the last bucket");
    }
}
