//! A request rate per owner (per principal, or per tenant with `tenancy.visibility:
//! tenant`): a token bucket each, refilled at `rate` tokens per second up to `burst`.
//! Over it, the caller gets RateLimited with the seconds to wait.

use crate::rate::TokenBuckets;
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::Owner;

/// Principals with a bucket of their own; past it, new ones share one (see
/// [`TokenBuckets`]): integrator keys can name any number of principals.
const MAX_TRACKED: usize = 100_000;

pub struct RateLimiter {
    rate: f64,
    buckets: TokenBuckets<Owner>,
}

impl RateLimiter {
    /// `None` when `rate` is 0 (no limit).
    pub fn new(rate: f64, burst: u32) -> Option<Self> {
        (rate > 0.0).then(|| RateLimiter { rate, buckets: TokenBuckets::new(rate, burst, MAX_TRACKED) })
    }

    /// Takes a token for `owner`, or says how long to wait for one.
    pub fn admit(&self, owner: &Owner) -> Result<(), A2aError> {
        self.buckets.take(owner).map_err(|wait| {
            A2aError::new(ErrorCode::RateLimited, format!("Too many requests: the limit is {} per second", self.rate))
                .with_meta("retryAfterSeconds", wait.to_string())
        })
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
