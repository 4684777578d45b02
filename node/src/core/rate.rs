//! A request rate per principal: a token bucket each, refilled at `rate` tokens per
//! second up to `burst`. Over it, the caller gets RateLimited with the seconds to wait.

use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::Owner;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Buckets past this many are pruned of the full (idle) ones.
const PRUNE_AT: usize = 10_000;

pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<Owner, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// `None` when `rate` is 0 (no limit).
    pub fn new(rate: f64, burst: u32) -> Option<Self> {
        (rate > 0.0).then(|| RateLimiter { rate, burst: f64::from(burst.max(1)), buckets: Mutex::default() })
    }

    /// Takes a token for `owner`, or says how long to wait for one.
    pub fn admit(&self, owner: &Owner) -> Result<(), A2aError> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > PRUNE_AT {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
        }
        let bucket = buckets.entry(owner.clone()).or_insert(Bucket { tokens: self.burst, at: now });
        bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * self.rate).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - bucket.tokens) / self.rate).ceil().max(1.0) as u64;
        Err(A2aError::new(ErrorCode::RateLimited, format!("Too many requests: the limit is {} per second", self.rate))
            .with_meta("retryAfterSeconds", wait.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_refusal_then_per_owner_buckets() {
        let limiter = RateLimiter::new(1.0, 3).unwrap();
        let alice = Owner { tenant: "t".into(), principal: "alice".into() };
        for _ in 0..3 {
            limiter.admit(&alice).unwrap();
        }
        let refused = limiter.admit(&alice).unwrap_err();
        assert_eq!(refused.code, ErrorCode::RateLimited);
        assert_eq!(refused.metadata["retryAfterSeconds"], "1");
        limiter.admit(&Owner { tenant: "t".into(), principal: "bob".into() }).unwrap();
        assert!(RateLimiter::new(0.0, 5).is_none());
    }
}
