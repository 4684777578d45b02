//! Context leases: one turn at a time per context across nodes.
//!
//! A lease is the key `<t>:lease:<context>` holding `<node id>:<epoch>`, set only if
//! absent, with an expiry of `lease_ttl`. The epoch comes from the counter of the
//! context's shard (`<t>:lease-epoch`, in the lease's hash slot, so the grant is one
//! script on a cluster too), so every grant of the lease has a token no earlier grant had:
//! a fencing token.
//! The node keeps the tokens it holds; its keeper thread renews them every third of the
//! TTL (never the agent's loop: a stalled agent does not lose its context, a stalled or
//! dead node does), and every commit of the context's steps from this node passes its
//! token to the commit script, which refuses the write when another token holds the
//! lease. A node that dies mid-turn stops renewing; once the lease expires, whichever node
//! sweeps first marks the turn FAILED (`a2ad_actors::recovery`), and the context runs
//! anywhere again.

use crate::redis_keys::{Keys, Shard};
use crate::redis_link::RedisLink;
use crate::thread_owner::{StopSignal, ThreadOwner};
use crate::{ContextKey, StoreError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Grants the lease KEYS[1] to node ARGV[1] for ARGV[2] ms with the next epoch of the
/// counter KEYS[2], or extends it if that node holds it. Returns the token, or false when
/// another node holds it.
const ACQUIRE: &str = r"
local held = redis.call('GET', KEYS[1])
if held then
  if string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return held
  end
  return false
end
local token = ARGV[1] .. ':' .. redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
return token
";

/// Extends each lease KEYS[i] still held by token ARGV[i+1] to ARGV[1] ms. Returns, per
/// lease, 1 (renewed) or 0 (lost: expired, or granted to another node since). The keys of
/// one call are of one shard (one hash slot).
const RENEW: &str = r"
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[i + 1] then
    redis.call('PEXPIRE', key, ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
";

/// Deletes the lease KEYS[1] if token ARGV[1] still holds it.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// The leases this node holds, and the keeper that renews them.
pub(super) struct Leases {
    link: RedisLink,
    node_id: String,
    ttl: Duration,
    keys: Keys,
    /// Lease key → (token, the lease's shard), for every lease this node holds.
    held: Mutex<HashMap<Vec<u8>, (String, Shard)>>,
    /// The last health check (the keeper's round) reached Redis.
    reachable: AtomicBool,
    acquire: redis::Script,
    renew: redis::Script,
    release: redis::Script,
}

impl Leases {
    pub fn new(link: RedisLink, node_id: String, ttl: Duration, keys: Keys) -> Self {
        Leases {
            link,
            node_id,
            ttl,
            keys,
            held: Mutex::default(),
            reachable: AtomicBool::new(true),
            acquire: redis::Script::new(ACQUIRE),
            renew: redis::Script::new(RENEW),
            release: redis::Script::new(RELEASE),
        }
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn reachable(&self) -> bool {
        self.reachable.load(Ordering::Acquire)
    }

    fn held(&self) -> MutexGuard<'_, HashMap<Vec<u8>, (String, Shard)>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// The token this node holds the lease `key` under ("" for none).
    pub fn token(&self, key: &[u8]) -> String {
        self.held().get(key).map(|(token, _)| token.clone()).unwrap_or_default()
    }

    /// Takes or extends the lease of `context`; false when another node holds it.
    pub fn acquire(&self, context: &ContextKey) -> Result<bool, StoreError> {
        let (key, shard) = (self.keys.lease(context), self.keys.of_owner(&context.owner));
        let epoch = self.keys.lease_epoch(shard);
        let token: Option<String> = self.link.with_conn("take a context lease", |conn| {
            Ok(self.acquire.key(&key).key(&epoch).arg(&self.node_id).arg(self.ttl_ms()).invoke(conn)?)
        })?;
        let Some(token) = token else { return Ok(false) };
        self.held().insert(key, (token, shard));
        Ok(true)
    }

    /// Stops renewing the lease `key`, held under `token`, which a commit just deleted.
    pub fn forget(&self, key: &[u8], token: &str) {
        let mut held = self.held();
        if held.get(key).is_some_and(|(t, _)| t == token) {
            held.remove(key);
        }
    }

    /// Stops renewing the lease `key` and deletes it if this node still holds it.
    pub fn release(&self, key: &[u8]) {
        let Some((token, _)) = self.held().remove(key) else { return };
        let released = self
            .link
            .with_conn("release a context lease", |conn| Ok(self.release.key(key).arg(&token).invoke::<i64>(conn)?));
        if let Err(e) = released {
            tracing::warn!(error = %e, "a context lease could not be released; it expires by itself");
        }
    }

    /// The node id in the lease `key`, if anyone holds it.
    pub fn holder(&self, key: &[u8]) -> Result<Option<String>, StoreError> {
        let token: Option<String> =
            self.link.with_conn("read a context lease", |conn| Ok(redis::cmd("GET").arg(key).query(conn)?))?;
        Ok(token.and_then(|t| t.rsplit_once(':').map(|(node, _)| node.to_owned())))
    }

    /// One keeper round: renews the held leases, one script per shard, forgets the lost
    /// ones, and records whether Redis answered.
    fn renew_all(&self) {
        let mut by_shard: std::collections::BTreeMap<Shard, Vec<(Vec<u8>, String)>> = Default::default();
        for (key, (token, shard)) in self.held().iter() {
            by_shard.entry(*shard).or_default().push((key.clone(), token.clone()));
        }
        if by_shard.is_empty() {
            let pinged =
                self.link.with_conn("reach the context leases", |conn| Ok(redis::cmd("PING").query::<()>(conn)?));
            return self.reached(pinged.map(drop));
        }
        let mut outcome = Ok(());
        for (_, held) in by_shard {
            let renewed = self.link.with_conn("renew the context leases", |conn| {
                let mut call = self.renew.prepare_invoke();
                call.arg(self.ttl_ms());
                for (key, token) in &held {
                    call.key(key).arg(token);
                }
                Ok(call.invoke::<Vec<i64>>(conn)?)
            });
            let lost = renewed.as_ref().map(|kept| held.iter().zip(kept).filter(|(_, kept)| **kept == 0));
            if let Ok(lost) = lost {
                let mut map = self.held();
                for ((key, token), _) in lost {
                    if map.get(key).is_some_and(|(t, _)| t == token) {
                        tracing::warn!(
                            "a context lease was lost (it expired before its renewal); the turn's writes are refused"
                        );
                        map.remove(key);
                    }
                }
            }
            if let Err(e) = renewed {
                outcome = Err(e); // Unreachable if any shard's primary was.
            }
        }
        self.reached(outcome);
    }

    /// Records whether the keeper's last call reached Redis.
    fn reached(&self, call: Result<(), StoreError>) {
        match call {
            Ok(()) => self.reachable.store(true, Ordering::Release),
            Err(e) => {
                self.reachable.store(false, Ordering::Release);
                tracing::warn!(error = %e, "cannot renew the context leases");
            }
        }
    }

    /// Starts the keeper: a round every third of the TTL until the owner is dropped.
    pub fn start_keeper(self: &Arc<Self>) -> Result<ThreadOwner, StoreError> {
        let leases = Arc::clone(self);
        let every = self.ttl / 3;
        ThreadOwner::spawn_stoppable("a2ad-leases", "lease keeper", move |stop: &StopSignal| {
            while !stop.wait(every) {
                leases.renew_all();
            }
        })
    }
}

/// `<host>-<pid>-<random>`: unique per process (a restarted node is a new node, and does
/// not take its old leases for its own), with no `:` (the token's separator).
pub(super) fn new_node_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host: String = host.trim().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}-{}", if host.is_empty() { "a2ad" } else { &host }, std::process::id(), &random[..8])
}
