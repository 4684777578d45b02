//! Authentication under attack: [`Authenticator::authenticate`] with failed attempts
//! limited and password checks bounded (the `auth.throttle` block, [`ThrottleConfig`]).
//!
//! * A client address (IPv6: its /64, what one host is usually given) that has used up
//!   its failures is refused with RATE_LIMITED (`retryAfterSeconds`: 429 and
//!   `Retry-After`) BEFORE any credential it sends is checked, so refused guesses learn
//!   nothing and cost nothing; only failures take from the bucket, so a client that
//!   authenticates is never slowed. For HTTP Basic the user name has a bucket too,
//!   across addresses, known user or not (unknown ones pay the same dummy PBKDF2).
//! * PBKDF2 runs on the blocking pool, never on an async worker, and at most
//!   `password-checks` at once: an attempt that finds them all busy is refused with
//!   RATE_LIMITED (retry after 1 s) instead of queueing, so guessing can take that many
//!   cores at most, whatever the number of clients.
//! * A verified Basic credential is remembered (`basic_cache.rs`), so a user's later
//!   requests cost a hash lookup, not PBKDF2.

use super::basic_cache::VerifiedCache;
use super::config::sha256;
use super::password::PasswordHash;
use super::{AuthError, Authenticator, RequestCredentials, ThrottleConfig};
use crate::rate::TokenBuckets;
use a2ad_storage::Owner;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Semaphore;

/// Where a request came from, as the failure limits count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientAddr {
    /// An IPv4 address, or the /64 of an IPv6 one (IPv4-mapped IPv6 is IPv4).
    Ip(IpAddr),
    /// A client without a network address of its own (the Unix socket, the Redis
    /// transport): such clients share one bucket.
    Local,
}

impl ClientAddr {
    /// The client at `ip`.
    pub fn ip(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientAddr::Ip(IpAddr::V4(v4)),
                None => {
                    let mut octets = v6.octets();
                    octets[8..].fill(0);
                    ClientAddr::Ip(IpAddr::V6(octets.into()))
                }
            },
            v4 => ClientAddr::Ip(v4),
        }
    }

    /// The client at a connection's peer address; [`ClientAddr::Local`] without one.
    pub fn peer(addr: Option<SocketAddr>) -> Self {
        addr.map_or(ClientAddr::Local, |a| ClientAddr::ip(a.ip()))
    }
}

/// The limits and the counters of [`Authenticator::authenticate`].
pub(super) struct Throttle {
    clients: Option<TokenBuckets<ClientAddr>>,
    users: Option<TokenBuckets<[u8; 32]>>,
    checks: Semaphore,
    cache: Option<VerifiedCache>,
    /// PBKDF2 verifications run (the metric `a2ad_auth_password_checks_total`).
    password_runs: AtomicU64,
    /// Attempts refused by a limit (the metric `a2ad_auth_throttled_total`).
    throttled: AtomicU64,
}

/// A bucket refilled at `per_minute`, or none when that is 0.
fn buckets<K: std::hash::Hash + Eq + Clone>(per_minute: f64, burst: u32, capacity: usize) -> Option<TokenBuckets<K>> {
    (per_minute > 0.0).then(|| TokenBuckets::new(per_minute / 60.0, burst, capacity))
}

impl Throttle {
    pub(super) fn new(config: &ThrottleConfig) -> Self {
        let clients = buckets(config.failures_per_minute, config.failure_burst, config.tracked_clients);
        let users = match clients {
            Some(_) => buckets(config.user_failures_per_minute, config.user_failure_burst, config.tracked_clients),
            None => None,
        };
        Throttle {
            clients,
            users,
            checks: Semaphore::new(config.password_checks.max(1)),
            cache: VerifiedCache::new(config.basic_cache, config.basic_cache_size),
            password_runs: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
        }
    }

    fn refused(&self, retry_after_seconds: u64) -> AuthError {
        self.throttled.fetch_add(1, Ordering::Relaxed);
        AuthError::TooManyFailures { retry_after_seconds }
    }

    /// Refuses `client` (and `user`) when its failures are used up.
    fn admit(&self, client: &ClientAddr, user: Option<&[u8; 32]>) -> Result<(), AuthError> {
        if let Some(wait) = self.clients.as_ref().and_then(|b| b.check(client).err()) {
            return Err(self.refused(wait));
        }
        if let Some(wait) = user.zip(self.users.as_ref()).and_then(|(u, b)| b.check(u).err()) {
            return Err(self.refused(wait));
        }
        Ok(())
    }

    /// Client addresses with a bucket of their own.
    #[cfg(test)]
    pub(super) fn tracked_clients(&self) -> Option<usize> {
        self.clients.as_ref().map(TokenBuckets::tracked)
    }

    /// Counts a failed attempt against `client` (and `user`).
    fn failed(&self, client: &ClientAddr, user: Option<&[u8; 32]>) {
        if let Some(buckets) = &self.clients {
            let _ = buckets.take(client);
        }
        if let Some((user, buckets)) = user.zip(self.users.as_ref()) {
            let _ = buckets.take(user);
        }
    }
}

/// A Basic attempt that needs its password checked.
pub(super) struct PasswordAttempt {
    pub(super) user: Vec<u8>,
    pub(super) password: Vec<u8>,
    /// The configured user's index and hash; `None`: an unknown user, checked against
    /// the dummy hash so that it costs the same.
    pub(super) found: Option<(usize, PasswordHash)>,
}

/// What checking the credentials found: an answer, or a password still to verify.
pub(super) enum Check {
    Done(Result<Owner, AuthError>),
    Password(PasswordAttempt),
}

/// Whether a failure was a wrong credential (a guess), which the limits count; a
/// missing or malformed one costs nothing and reveals nothing.
fn is_guess(error: &AuthError) -> bool {
    matches!(error, AuthError::Invalid | AuthError::Jwt(_) | AuthError::PlatformUserRequired)
}

impl Authenticator {
    /// Checks one request's credentials from `client` (see the module docs): the owner,
    /// or why not — [`AuthError::TooManyFailures`] and [`AuthError::PasswordChecksBusy`]
    /// are RATE_LIMITED ([`AuthError::rate_limited`]), the rest 401.
    pub async fn authenticate(&self, credentials: &RequestCredentials, client: ClientAddr) -> Result<Owner, AuthError> {
        let present = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.trim().is_empty());
        if present(&credentials.authorization) || present(&credentials.api_key) {
            self.throttle.admit(&client, None)?;
        }
        match self.classify(credentials, chrono::Utc::now().timestamp()) {
            Check::Done(result) => {
                if let Err(e) = &result {
                    if is_guess(e) {
                        self.throttle.failed(&client, None);
                    }
                }
                result
            }
            Check::Password(attempt) => self.check_password(attempt, client).await,
        }
    }

    /// A Basic attempt: the user's limit, the cache, then PBKDF2 on the blocking pool
    /// under the password-check semaphore.
    async fn check_password(&self, attempt: PasswordAttempt, client: ClientAddr) -> Result<Owner, AuthError> {
        let throttle = &self.throttle;
        let user_key = sha256(&attempt.user);
        throttle.admit(&client, Some(&user_key))?;
        if let Some(index) = throttle.cache.as_ref().and_then(|c| c.get(&attempt.user, &attempt.password)) {
            return Ok(self.basic_users[index].owner.clone());
        }
        let Ok(_permit) = throttle.checks.try_acquire() else {
            throttle.throttled.fetch_add(1, Ordering::Relaxed);
            return Err(AuthError::PasswordChecksBusy);
        };
        throttle.password_runs.fetch_add(1, Ordering::Relaxed);
        let PasswordAttempt { user, password, found } = attempt;
        let dummy = self.basic_dummy.clone();
        let verified = tokio::task::spawn_blocking(move || {
            let ok = match &found {
                Some((index, hash)) => hash.verify(&password).then_some(*index),
                None => {
                    let _ = dummy.verify(&password);
                    None
                }
            };
            (ok, password)
        })
        .await;
        let Ok((Some(index), password)) = verified else {
            throttle.failed(&client, Some(&user_key));
            return Err(AuthError::Invalid);
        };
        if let Some(cache) = &throttle.cache {
            cache.insert(&user, &password, index);
        }
        Ok(self.basic_users[index].owner.clone())
    }

    /// PBKDF2 verifications run since start-up.
    pub fn password_checks_run(&self) -> u64 {
        self.throttle.password_runs.load(Ordering::Relaxed)
    }

    /// Attempts refused by `auth.throttle` since start-up.
    pub fn throttled(&self) -> u64 {
        self.throttle.throttled.load(Ordering::Relaxed)
    }
}
