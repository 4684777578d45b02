//! Verified HTTP Basic credentials, remembered for a short time so that a user does not
//! pay a PBKDF2 verification (about 100 ms of CPU at 600,000 iterations) per request.
//!
//! An entry is keyed by HMAC-SHA256, under a random per-process key, of the user name
//! and password (length-prefixed): the password is never kept, and the key cannot be
//! recomputed outside the process. It holds the index of the user it verified as and
//! when it expires. The cache is bounded: when full, expired entries go first, then the
//! one that expires soonest. A lookup happens only after the failure limits admitted the
//! attempt, so the cache is no way around them.

use ring::hmac;
use ring::rand::SystemRandom;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct VerifiedCache {
    key: hmac::Key,
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

#[derive(Clone, Copy)]
struct Entry {
    user: usize,
    expires: Instant,
}

impl VerifiedCache {
    /// `None` when `ttl` or `capacity` is 0 (no cache), or the random source fails.
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Option<Self> {
        if ttl.is_zero() || capacity == 0 {
            return None;
        }
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new()).ok()?;
        Some(VerifiedCache { key, ttl, capacity, entries: Mutex::default() })
    }

    fn digest(&self, user: &[u8], password: &[u8]) -> [u8; 32] {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(&(user.len() as u64).to_be_bytes());
        context.update(user);
        context.update(password);
        let mut out = [0u8; 32];
        out.copy_from_slice(context.sign().as_ref());
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The user index `user:password` verified as, if that was less than the TTL ago.
    pub(crate) fn get(&self, user: &[u8], password: &[u8]) -> Option<usize> {
        let digest = self.digest(user, password);
        let now = Instant::now();
        let mut entries = self.lock();
        match entries.get(&digest) {
            Some(entry) if entry.expires > now => Some(entry.user),
            Some(_) => {
                entries.remove(&digest);
                None
            }
            None => None,
        }
    }

    /// Remembers that `user:password` verified as user index `index`.
    pub(crate) fn insert(&self, user: &[u8], password: &[u8], index: usize) {
        let digest = self.digest(user, password);
        let now = Instant::now();
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&digest) {
            entries.retain(|_, e| e.expires > now);
            if entries.len() >= self.capacity {
                if let Some(soonest) = entries.iter().min_by_key(|(_, e)| e.expires).map(|(k, _)| *k) {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(digest, Entry { user: index, expires: now + self.ttl });
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_verified_credentials_within_bounds() {
        let cache = VerifiedCache::new(Duration::from_secs(60), 2).unwrap();
        cache.insert(b"alice", b"pw", 0);
        assert_eq!(cache.get(b"alice", b"pw"), Some(0));
        assert_eq!(cache.get(b"alice", b"pW"), None);
        // The user and password are length-prefixed: "alic" + "epw" is another credential.
        assert_eq!(cache.get(b"alic", b"epw"), None);
        cache.insert(b"bob", b"1", 1);
        cache.insert(b"carol", b"2", 2);
        assert_eq!(cache.len(), 2, "bounded");
        assert_eq!(cache.get(b"carol", b"2"), Some(2));
        assert!(VerifiedCache::new(Duration::ZERO, 10).is_none());
    }

    #[test]
    fn entries_expire() {
        let cache = VerifiedCache::new(Duration::from_millis(1), 4).unwrap();
        cache.insert(b"alice", b"pw", 0);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(cache.get(b"alice", b"pw"), None);
        assert_eq!(cache.len(), 0);
    }
}
