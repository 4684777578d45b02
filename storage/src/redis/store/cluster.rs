//! The Redis store's [`Cluster`] side: leases (`lease.rs`), followers of a task's events,
//! and cancel requests between nodes.
//!
//! A follower is a thread with a connection of its own, blocked in `XREAD BLOCK` on the
//! task's stream from its cursor: Redis answers it as soon as any node's commit adds an
//! event, so a subscriber on another node sees an event one round trip after its commit,
//! and nobody polls. Every subscriber reads the stream from its own cursor (a broadcast),
//! never through a consumer group, which would split a task's events between nodes.
//!
//! Cancel requests travel by Pub/Sub on `<p>:cancel:<node id>`: the node running the turn
//! is the one subscribed to it. A request sent while that node is not connected is lost;
//! the caller sees the task still running when its wait ends, and the node's lease
//! expiry ends the turn if the node is gone.

use super::writes::events_from;
use super::RedisStore;
use crate::redis::link::{Conn, RedisLink};
use crate::redis::push_queue::reply::parse_read;
use crate::{
    CancelHandler, CancelRequest, Cluster, ContextKey, EventSink, SessionRecord, StoreError, StoreFuture, TurnLease,
};
use redis::Value;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long one follower read blocks before it looks whether it is still wanted.
const FOLLOW_BLOCK: Duration = Duration::from_secs(2);
/// A follower's reads wait at most this long for Redis's answer to a blocking read.
const FOLLOW_READ_TIMEOUT: Duration = Duration::from_secs(FOLLOW_BLOCK.as_secs() + 5);
/// At most this many events per follower read.
const FOLLOW_BATCH: usize = 256;
/// The pause after a failed read, doubled up to [`RETRY_MAX`].
const RETRY_BASE: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);

impl Cluster for RedisStore {
    fn node_id(&self) -> &str {
        self.leases.node_id()
    }

    fn acquire_lease(&self, key: &ContextKey) -> Result<bool, StoreError> {
        self.leases.acquire(key)
    }

    fn begin_turn(
        &self,
        key: &ContextKey,
        history_limit: usize,
        known: Option<&SessionRecord>,
    ) -> StoreFuture<TurnLease> {
        self.leases.begin_turn(&self.link, key, history_limit, known)
    }

    fn release_lease(&self, key: &ContextKey) {
        self.leases.release(&self.link, key);
    }

    fn lease_holder(&self, key: &ContextKey) -> Result<Option<String>, StoreError> {
        crate::block_on_store(self.leases.holder(&self.link, key))
    }

    fn read_lease_holder(&self, key: &ContextKey) -> StoreFuture<Option<String>> {
        self.leases.holder(&self.link, key)
    }

    fn follow(&self, task_id: &str, after: u64, sink: EventSink) -> Result<(), StoreError> {
        let (keys, link, task_id) = (self.keys.clone(), std::sync::Arc::clone(&self.link), task_id.to_owned());
        let closing = std::sync::Arc::clone(&self.closing);
        std::thread::Builder::new()
            .name("a2ad-follow".into())
            .spawn(move || {
                // A task that is gone already: its follower finds it so at its first read.
                let shard = super::task_shard_in(&keys, &link, crate::Scope::Node, &task_id)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| keys.hinted(&task_id));
                let follower = Follower {
                    events_key: keys.events(shard, &task_id),
                    task_key: keys.task(shard, &task_id),
                    link,
                    cursor: after,
                    sink,
                    closing,
                };
                follower.run(None)
            })
            .map(drop)
            .map_err(|e| StoreError::Io(format!("cannot start a task follower: {e}")))
    }

    fn request_cancel(&self, node: &str, request: &CancelRequest) -> Result<(), StoreError> {
        let payload =
            serde_json::to_string(request).map_err(|e| StoreError::Corrupt(format!("cancel request: {e}")))?;
        let channel = self.keys.cancel_channel(node);
        self.link.with_conn("send a cancel request", |conn| {
            Ok(redis::cmd("PUBLISH").arg(channel).arg(payload).query::<i64>(conn)?)
        })?;
        Ok(())
    }

    fn on_cancel_request(&self, handler: CancelHandler) -> Result<(), StoreError> {
        let channel = self.keys.cancel_channel(self.leases.node_id());
        let link = std::sync::Arc::clone(&self.link);
        let closing = std::sync::Arc::clone(&self.closing);
        std::thread::Builder::new()
            .name("a2ad-cancels".into())
            .spawn(move || listen_for_cancels(&link, &channel, &handler, &closing))
            .map(drop)
            .map_err(|e| StoreError::Io(format!("cannot start the cancel listener: {e}")))
    }

    /// The keeper's last round, and the last call of any request, reached Redis.
    fn reachable(&self) -> bool {
        self.leases.reachable() && !self.link.is_down()
    }
}

/// One follower's state (see the module docs).
struct Follower {
    /// Where a lost connection is opened again.
    link: std::sync::Arc<RedisLink>,
    events_key: Vec<u8>,
    task_key: Vec<u8>,
    cursor: u64,
    sink: EventSink,
    closing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Follower {
    /// Reads until the sink stops, opening its connection (again) whenever it has none.
    fn run(mut self, conn: Option<Conn>) {
        // A thread of its own: no signal interrupts its reads (see `SignalsHeld`).
        let _signals = crate::redis::link::SignalsHeld::block();
        let mut conn = conn;
        let mut pause = RETRY_BASE;
        while !self.closing.load(Ordering::Acquire) {
            let read = match conn.as_mut() {
                Some(c) => self.read(c),
                None => self.link.dedicated(FOLLOW_READ_TIMEOUT).map(|c| conn = Some(c)).map(|()| Some(Vec::new())),
            };
            let keep_going = match read {
                Ok(Some(events)) if !events.is_empty() => {
                    pause = RETRY_BASE;
                    self.cursor = events.last().map_or(self.cursor, |e| e.seq);
                    (self.sink)(events)
                }
                // Nothing within the block: still wanted?
                Ok(Some(_)) => (self.sink)(Vec::new()),
                // The task is gone (removed by retention or an operator).
                Ok(None) => false,
                Err(_) => {
                    conn = None;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(RETRY_MAX);
                    (self.sink)(Vec::new())
                }
            };
            if !keep_going {
                return;
            }
        }
    }

    /// One blocking read from the cursor; `None` when the task no longer exists.
    fn read(&self, conn: &mut Conn) -> Result<Option<Vec<crate::LoggedEvent>>, StoreError> {
        let reply: Value = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(FOLLOW_BATCH)
            .arg("BLOCK")
            .arg(u64::try_from(FOLLOW_BLOCK.as_millis()).unwrap_or(2000))
            .arg("STREAMS")
            .arg(&self.events_key)
            .arg(format!("{}-0", self.cursor))
            .query(conn)
            .map_err(|e| self.link.redis_failure("follow a task", &e))?;
        let events = events_from(parse_read(&reply));
        let exists = |conn: &mut Conn| redis::cmd("EXISTS").arg(&self.task_key).query::<bool>(conn);
        if events.is_empty() && !exists(conn).map_err(|e| self.link.redis_failure("follow a task", &e))? {
            return Ok(None);
        }
        Ok(Some(events))
    }
}

/// The cancel listener's loop: subscribed to this node's channel, reconnecting with
/// backoff, until the store closes.
fn listen_for_cancels(
    link: &RedisLink,
    channel: &[u8],
    handler: &CancelHandler,
    closing: &std::sync::atomic::AtomicBool,
) {
    let _signals = crate::redis::link::SignalsHeld::block();
    let mut pause = RETRY_BASE;
    while !closing.load(Ordering::Acquire) {
        let Ok(mut conn) = link.dedicated_server() else {
            std::thread::sleep(pause);
            pause = (pause * 2).min(RETRY_MAX);
            continue;
        };
        let mut pubsub = conn.as_pubsub();
        // Reads then time out every second, so that a closing store is noticed.
        if pubsub.subscribe(channel).is_err() || pubsub.set_read_timeout(Some(Duration::from_secs(1))).is_err() {
            // Refused (an ACL, a dropped connection): wait as for a failed connect.
            std::thread::sleep(pause);
            pause = (pause * 2).min(RETRY_MAX);
            continue;
        }
        pause = RETRY_BASE;
        while !closing.load(Ordering::Acquire) {
            match pubsub.get_message() {
                Ok(message) => match serde_json::from_slice::<CancelRequest>(message.get_payload_bytes()) {
                    Ok(request) => handler(request),
                    Err(e) => tracing::warn!(error = %e, "an unreadable cancel request was ignored"),
                },
                Err(e) if e.is_timeout() => {}
                Err(_) => break,
            }
        }
    }
}
