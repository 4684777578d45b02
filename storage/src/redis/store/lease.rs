//! Context leases: one turn at a time per context across nodes.
//!
//! A lease is the key `<t>:lease:<context>` holding `<node id>:<grant>`, set only if
//! absent, with an expiry of `lease_ttl`. The grant is 64 random bits the node draws for
//! each grant, so every grant of the lease has a token no earlier grant had (a fencing
//! token), and a free lease is taken with one `SET NX`. (Until 2026-12-06 the grant was
//! an epoch from a counter of the shard, `<t>:lease-epoch`: two more commands per turn. A
//! node of then still reads today's tokens as any other node's, and the other way round.)
//! The node keeps the tokens it holds; its keeper thread renews them every third of the
//! TTL (never the agent's loop: a stalled agent does not lose its context, a stalled or
//! dead node does), and every commit of the context's steps from this node passes its
//! token to the commit script, which refuses the write when another token holds the
//! lease. A node that dies mid-turn stops renewing; once the lease expires, whichever node
//! sweeps first marks the turn FAILED (`a2ad_actors::recovery`), and the context runs
//! anywhere again.

use crate::redis::keys::{Keys, Shard};
use crate::redis::link::{LuaScript, RedisLink, Request};
use crate::thread_owner::{StopSignal, ThreadOwner};
use crate::{ContextKey, SessionRecord, StoreError};
use crate::{StoreFuture, TurnLease};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Grants the lease KEYS[1] to node ARGV[1] for ARGV[2] ms under the token `fresh` (the
/// node's id, `:`, a new grant), or extends it if that node holds it. Returns the token,
/// or false when another node holds it. A free lease (the usual case: a turn's last
/// commit gives it back) costs one command.
const ACQUIRE_FN: &str = r"
local function acquire(fresh)
  if redis.call('SET', KEYS[1], fresh, 'NX', 'PX', ARGV[2]) then
    return fresh
  end
  local held = redis.call('GET', KEYS[1])
  if held and string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return held
  end
  return false
end
";

/// [`ACQUIRE_FN`] alone (ARGV[3]: the fresh token): the token, or false.
const ACQUIRE_BODY: &str = "return acquire(ARGV[3])";

/// The start of a turn in one round trip: [`ACQUIRE_FN`] (ARGV[5]: the fresh token), then,
/// with the lease taken, the session KEYS[2] and its last ARGV[3] messages from the list
/// KEYS[3]. Returns false when another node holds the lease, else {token, session or
/// false, messages...}, or {token, '='} when the stored session is ARGV[4] byte for byte: the session the
/// node holds is current, and its history is not sent again (an echo context's 200
/// messages were most of a turn's bytes and parsing, BENCHMARKS.md).
const BEGIN_TURN_BODY: &str = r"
local token = acquire(ARGV[5])
if not token then
  return false
end
local meta = redis.call('GET', KEYS[2])
if meta and ARGV[4] ~= '' and meta == ARGV[4] then
  return {token, '='}
end
local out = {token, meta or false}
local limit = tonumber(ARGV[3])
if meta and limit > 0 then
  local messages = redis.call('LRANGE', KEYS[3], -limit, -1)
  for i = 1, #messages do
    out[#out + 1] = messages[i]
  end
end
return out
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
    /// Lease key → the grant, for every lease this node holds, and those the keeper found
    /// lost while their turn may still run (until it ends: [`Leases::release`],
    /// [`Leases::forget`], or the context is leased anew).
    held: Mutex<HashMap<Vec<u8>, Grant>>,
    /// The last health check (the keeper's round) reached Redis.
    reachable: AtomicBool,
    acquire: redis::Script,
    begin_turn: LuaScript,
    renew: redis::Script,
    release: LuaScript,
}

/// One grant of a lease to this node.
struct Grant {
    token: String,
    shard: Shard,
    /// The keeper found it expired before its renewal: no longer renewed or released.
    lost: bool,
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
            acquire: redis::Script::new(&format!("{ACQUIRE_FN}{ACQUIRE_BODY}")),
            begin_turn: LuaScript::new(&format!("{ACQUIRE_FN}{BEGIN_TURN_BODY}")),
            renew: redis::Script::new(RENEW),
            release: LuaScript::new(RELEASE),
        }
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn reachable(&self) -> bool {
        self.reachable.load(Ordering::Acquire)
    }

    fn held(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Grant>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a grant of the lease `key` (replacing a lost one).
    fn granted(&self, key: Vec<u8>, token: String, shard: Shard) {
        self.held().insert(key, Grant { token, shard, lost: false });
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// A token for a new grant: this node's id and 64 random bits (thread-local CSPRNG),
    /// which no earlier grant of any lease had (a repeat is a 2^-64 chance per pair).
    fn fresh_token(&self) -> String {
        // A v4 UUID fixes its version bits in the first half and its variant bits in the
        // second, at different places: their XOR has all 64 bits random.
        let (high, low) = uuid::Uuid::new_v4().as_u64_pair();
        format!("{}:{:016x}", self.node_id, high ^ low)
    }

    /// The token this node holds the lease `key` under, or held it under until the keeper
    /// found it lost ("" for neither).
    pub fn token(&self, key: &[u8]) -> String {
        self.held().get(key).map(|grant| grant.token.clone()).unwrap_or_default()
    }

    /// Takes or extends the lease of `context`; false when another node holds it.
    pub fn acquire(&self, context: &ContextKey) -> Result<bool, StoreError> {
        let (key, shard) = (self.keys.lease(context), self.keys.of_owner(&context.owner));
        let token: Option<String> = self.link.with_conn("take a context lease", |conn| {
            Ok(self.acquire.key(&key).arg(&self.node_id).arg(self.ttl_ms()).arg(self.fresh_token()).invoke(conn)?)
        })?;
        let Some(token) = token else { return Ok(false) };
        self.granted(key, token, shard);
        Ok(true)
    }

    /// Stops renewing the lease `key`, held under `token`, which a commit just deleted.
    pub fn forget(&self, key: &[u8], token: &str) {
        let mut held = self.held();
        if held.get(key).is_some_and(|grant| grant.token == token) {
            held.remove(key);
        }
    }

    /// Takes the lease of `context` and reads its session, in one script sent on `link`'s
    /// pipe (the request path: [`crate::Cluster::begin_turn`]).
    pub fn begin_turn(
        self: &Arc<Self>,
        link: &RedisLink,
        context: &ContextKey,
        limit: usize,
        known: Option<&SessionRecord>,
    ) -> StoreFuture<TurnLease> {
        let known = match known.map(serde_json::to_vec).transpose() {
            Ok(known) => known.unwrap_or_default(),
            Err(e) => return crate::ready(Err(StoreError::Corrupt(format!("session: {e}")))),
        };
        let (key, shard) = (self.keys.lease(context), self.keys.of_owner(&context.owner));
        let mut call = self.begin_turn.prepare();
        call.key(&key).key(self.keys.session(context)).key(self.keys.messages(context));
        call.arg(&self.node_id).arg(self.ttl_ms()).arg(limit).arg(known).arg(self.fresh_token());
        let lane = link.lane_of(&context.storage_key());
        let reply = link.submit("take a context lease", lane, Request::Script(call));
        let leases = Arc::clone(self);
        Box::pin(async move {
            let Some(mut parts) = redis::from_owned_redis_value::<Option<Vec<Option<Vec<u8>>>>>(reply.await?)
                .map_err(|e| StoreError::Corrupt(format!("the start of a turn: {e}")))?
            else {
                return Ok(TurnLease::HeldElsewhere);
            };
            let (token, meta) = match parts.len() >= 2 {
                true => (parts.remove(0), parts.remove(0)),
                false => return Err(StoreError::Corrupt("the start of a turn: a short answer".into())),
            };
            let token = String::from_utf8(token.unwrap_or_default())
                .map_err(|_| StoreError::Corrupt("a context lease's token is not text".into()))?;
            leases.granted(key, token, shard);
            let Some(meta) = meta else { return Ok(TurnLease::Taken(None)) };
            if meta == b"=" {
                return Ok(TurnLease::Current);
            }
            let messages: Vec<Vec<u8>> = parts.into_iter().flatten().collect();
            Ok(TurnLease::Taken(Some(super::decode_session(&meta, &messages)?)))
        })
    }

    /// Stops renewing the lease `key` and deletes it if this node still holds it, sent on
    /// `link`'s pipe without waiting: a delete that fails leaves the lease to expire.
    pub fn release(&self, link: &RedisLink, context: &ContextKey) {
        let key = self.keys.lease(context);
        let Some(Grant { token, lost: false, .. }) = self.held().remove(&key) else {
            return; // None held, or lost: another node's, or nobody's, to delete.
        };
        let mut call = self.release.prepare();
        call.key(&key).arg(&token);
        let lane = link.lane_of(&context.storage_key());
        drop(link.submit("release a context lease", lane, Request::Script(call)));
    }

    /// The node id in the lease of `context`, if anyone holds it (asked on `link`'s pipe).
    pub fn holder(&self, link: &RedisLink, context: &ContextKey) -> StoreFuture<Option<String>> {
        let (key, lane) = (self.keys.lease(context), link.lane_of(&context.storage_key()));
        let reply = link.submit("read a context lease", lane, Request::Cmd(redis::cmd("GET").arg(key).to_owned()));
        Box::pin(async move {
            let token: Option<String> = redis::from_owned_redis_value(reply.await?)
                .map_err(|e| StoreError::Corrupt(format!("a context lease: {e}")))?;
            Ok(token.and_then(|t| t.rsplit_once(':').map(|(node, _)| node.to_owned())))
        })
    }

    /// One keeper round: renews the held leases, one script per shard, forgets the lost
    /// ones, and records whether Redis answered.
    fn renew_all(&self) {
        let mut by_shard: std::collections::BTreeMap<Shard, Vec<(Vec<u8>, String)>> = Default::default();
        for (key, Grant { token, shard, .. }) in self.held().iter().filter(|(_, grant)| !grant.lost) {
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
                    // Kept, lost: the turn's commits carry its token, and the commit
                    // script refuses them (`LeaseLost`); with no token they would pass as
                    // writes without a lease whenever no other node held the lease.
                    if let Some(grant) = map.get_mut(key).filter(|grant| grant.token == *token) {
                        tracing::warn!(
                            "a context lease was lost (it expired before its renewal); the turn's writes are refused"
                        );
                        grant.lost = true;
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
