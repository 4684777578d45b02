//! Token buckets by key, in bounded memory: the request rate per principal
//! (`core::rate`) and the failed authentications per client address and per user name
//! (`auth::throttle`) are both this.
//!
//! Each key has a bucket refilled at `rate` tokens per second up to `burst`. A key not
//! seen before starts full, so a bucket that has refilled holds nothing worth keeping:
//! once the table holds `capacity` keys, the full buckets are dropped (at most once a
//! second, so a table full of busy keys is not scanned on every call). Keys that still
//! find no room share one overflow bucket: many keys (a botnet's addresses, invented
//! principals) then cost one entry, and are limited together rather than not at all.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a full table is swept for idle buckets, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Token buckets keyed by `K`.
pub struct TokenBuckets<K> {
    rate: f64,
    burst: f64,
    capacity: usize,
    table: Mutex<Table<K>>,
}

struct Table<K> {
    buckets: HashMap<K, Bucket>,
    /// Shared by the keys that found the table full.
    overflow: Bucket,
    swept_at: Instant,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens at `now`, refilled since the last look.
    fn refill(&mut self, now: Instant, rate: f64, burst: f64) -> f64 {
        self.tokens = (self.tokens + now.saturating_duration_since(self.at).as_secs_f64() * rate).min(burst);
        self.at = now;
        self.tokens
    }
}

impl<K: Hash + Eq + Clone> TokenBuckets<K> {
    /// `rate` tokens per second (above 0), up to `burst` (at least 1), for at most
    /// `capacity` keys (at least 1) before the overflow bucket.
    pub fn new(rate: f64, burst: u32, capacity: usize) -> Self {
        let now = Instant::now();
        let burst = f64::from(burst.max(1));
        TokenBuckets {
            rate,
            burst,
            capacity: capacity.max(1),
            table: Mutex::new(Table {
                buckets: HashMap::new(),
                overflow: Bucket { tokens: burst, at: now },
                swept_at: now,
            }),
        }
    }

    /// Takes a token for `key`, or says how many whole seconds until one is there.
    pub fn take(&self, key: &K) -> Result<(), u64> {
        self.with_bucket(key, true, |bucket, rate| match bucket.tokens >= 1.0 {
            true => {
                bucket.tokens -= 1.0;
                Ok(())
            }
            false => Err(seconds_until_one(bucket.tokens, rate)),
        })
    }

    /// Whether `key` has a token now (nothing is taken, and an unseen key is not added),
    /// or the seconds until it has one.
    pub fn check(&self, key: &K) -> Result<(), u64> {
        self.with_bucket(key, false, |bucket, rate| match bucket.tokens >= 1.0 {
            true => Ok(()),
            false => Err(seconds_until_one(bucket.tokens, rate)),
        })
    }

    /// How many keys have a bucket of their own (for tests and bounds).
    pub fn tracked(&self) -> usize {
        self.lock().buckets.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<K>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on `key`'s bucket, refilled to now. An unseen key gets a bucket when
    /// `add`, and is answered from a full one otherwise; in a full table, it gets the
    /// overflow bucket either way (`check` must answer as `take` would).
    fn with_bucket<T>(&self, key: &K, add: bool, f: impl FnOnce(&mut Bucket, f64) -> T) -> T {
        let now = Instant::now();
        let (rate, burst) = (self.rate, self.burst);
        let mut table = self.lock();
        let table = &mut *table;
        if let Some(bucket) = table.buckets.get_mut(key) {
            bucket.refill(now, rate, burst);
            return f(bucket, rate);
        }
        if table.buckets.len() >= self.capacity && now.saturating_duration_since(table.swept_at) >= SWEEP_EVERY {
            table.swept_at = now;
            table.buckets.retain(|_, b| b.refill(now, rate, burst) < burst);
        }
        if table.buckets.len() < self.capacity {
            if !add {
                return f(&mut Bucket { tokens: burst, at: now }, rate);
            }
            let bucket = table.buckets.entry(key.clone()).or_insert(Bucket { tokens: burst, at: now });
            return f(bucket, rate);
        }
        table.overflow.refill(now, rate, burst);
        f(&mut table.overflow, rate)
    }
}

/// Whole seconds (at least 1) until a bucket at `tokens` holds one.
fn seconds_until_one(tokens: f64, rate: f64) -> u64 {
    ((1.0 - tokens) / rate).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_a_wait_per_key() {
        let buckets = TokenBuckets::new(1.0, 3, 10);
        for _ in 0..3 {
            buckets.take(&"a").unwrap();
        }
        assert_eq!(buckets.take(&"a"), Err(1));
        assert_eq!(buckets.check(&"a"), Err(1));
        assert_eq!(buckets.check(&"b"), Ok(()));
        assert_eq!(buckets.tracked(), 1, "a check adds no key");
        buckets.take(&"b").unwrap();
    }

    #[test]
    fn past_capacity_new_keys_share_the_overflow_bucket() {
        let buckets = TokenBuckets::new(0.001, 2, 3);
        for key in 0..3 {
            buckets.take(&key).unwrap();
        }
        // The table is full of buckets that are not full: the next keys share one.
        buckets.take(&100).unwrap();
        buckets.take(&101).unwrap();
        assert!(buckets.take(&102).is_err(), "the overflow bucket is spent");
        assert_eq!(buckets.tracked(), 3, "memory stays bounded");
        buckets.take(&0).unwrap();
    }
}
