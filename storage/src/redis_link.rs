//! A few connections to one Redis server, reopened when they break, with every failure
//! turned into a [`StoreError::Redis`] that names the server but never its password.
//!
//! The push queue ([`crate::RedisQueue`]) and the shared task store
//! ([`crate::RedisStore`]) both talk to Redis through one of these. The client is the
//! `redis` crate's synchronous one: every store method already runs on a blocking thread
//! (or is a short call an actor makes, as it makes sled's), so an async client would buy
//! nothing but a runtime hop per command.
//!
//! The server is one Redis, or a Redis Cluster ([`Topology::Cluster`]): then each
//! connection is the crate's cluster connection, which routes every command (a script,
//! a pipeline) to the primary of its first key's hash slot and follows MOVED and ASK
//! redirects. A caller never sees the difference, as long as the keys of one command,
//! script or pipeline share a hash tag (the store's shards: `redis_keys.rs`).

use crate::{RedisFailure, StoreError};
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Cmd, ConnectionLike, RedisError, RedisResult, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How long connecting, and any one command, may take before it fails.
pub(crate) const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A failure inside one use of a connection: Redis's own, or the caller's.
pub(crate) enum Failure {
    Redis(RedisError),
    Store(StoreError),
}

impl From<RedisError> for Failure {
    fn from(e: RedisError) -> Self {
        Failure::Redis(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Store(e)
    }
}

/// What a new connection must set up before it is used (the push queue's consumer group).
type OnConnect = Box<dyn Fn(&mut Conn) -> Result<(), RedisError> + Send + Sync>;

/// Whether the URL names one Redis server or a seed node of a Redis Cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    #[default]
    Single,
    /// The other nodes are found from the seed (`CLUSTER SLOTS`).
    Cluster,
}

/// One open connection: to the server, or to the cluster (one socket per primary).
pub(crate) enum Conn {
    Single(redis::Connection),
    Cluster(ClusterConnection),
}

impl Conn {
    fn set_timeouts(&self, read: Option<Duration>, write: Option<Duration>) -> RedisResult<()> {
        match self {
            Conn::Single(c) => c.set_read_timeout(read).and_then(|()| c.set_write_timeout(write)),
            Conn::Cluster(c) => c.set_read_timeout(read).and_then(|()| c.set_write_timeout(write)),
        }
    }
}

/// Every call goes to the connection it wraps.
impl ConnectionLike for Conn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands(&mut self, cmd: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Conn::Single(c) => c.req_command(cmd),
            Conn::Cluster(c) => c.req_command(cmd),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }

    fn check_connection(&mut self) -> bool {
        match self {
            Conn::Single(c) => c.check_connection(),
            Conn::Cluster(c) => c.check_connection(),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Conn::Single(c) => c.is_open(),
            Conn::Cluster(c) => c.is_open(),
        }
    }
}

/// How connections are made: to one server, or to a cluster from its seed node (the
/// seed's own client is kept for what only one server can do: Pub/Sub).
enum Client {
    Single(redis::Client),
    Cluster { cluster: ClusterClient, seed: redis::Client },
}

/// Connections to one server. Send + Sync; a call takes a free connection, or waits for
/// one, so at most `conns.len()` commands are in flight at once.
pub(crate) struct RedisLink {
    client: Client,
    /// Each open connection with the [`RedisLink::broken`] count it was opened under.
    conns: Vec<Mutex<Option<(Conn, u64)>>>,
    next: AtomicUsize,
    /// How many connections broke so far: one that broke tells every other connection,
    /// opened before, to reopen at its next use, so that a Redis restart costs one failed
    /// call rather than one per pooled connection.
    broken: AtomicU64,
    /// The last call failed for want of a connection (refused, dropped, timed out): the
    /// server is down or unreachable, as far as this link knows.
    down: AtomicBool,
    /// The URL as it may be shown.
    shown_url: String,
    password: Option<String>,
    /// Who is connecting, for messages: "push queue", "task store".
    role: &'static str,
    on_connect: OnConnect,
}

impl RedisLink {
    /// A link of `pool` connections to the one server at `url`, or to the cluster `url` is
    /// a node of, none open yet: the first call connects. Only a URL that is not a Redis
    /// URL fails here.
    pub fn open_on(url: &str, topology: Topology, pool: usize, role: &'static str) -> Result<Self, StoreError> {
        let shown_url = crate::redact_url(url);
        let invalid =
            |e: RedisError| failure(RedisFailure::InvalidUrl, format!("invalid Redis URL {shown_url}: {e}"), None);
        let seed = redis::Client::open(url).map_err(invalid)?;
        let password = seed.get_connection_info().redis.password.clone().filter(|p| !p.is_empty());
        let client = match topology {
            Topology::Single => Client::Single(seed),
            Topology::Cluster => {
                // Few retries: a cluster that is down answers STORE_UNAVAILABLE soon, as
                // one server does, rather than after the crate's sixteen waits.
                let cluster = ClusterClient::builder(vec![url])
                    .connection_timeout(IO_TIMEOUT)
                    .response_timeout(IO_TIMEOUT)
                    .retries(2)
                    .build()
                    .map_err(invalid)?;
                Client::Cluster { cluster, seed }
            }
        };
        Ok(RedisLink {
            client,
            conns: (0..pool.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            broken: AtomicU64::new(0),
            down: AtomicBool::new(false),
            shown_url,
            password,
            role,
            on_connect: Box::new(|_| Ok(())),
        })
    }

    /// Runs `setup` on every new connection before its first use.
    pub fn on_connect(mut self, setup: impl Fn(&mut Conn) -> Result<(), RedisError> + Send + Sync + 'static) -> Self {
        self.on_connect = Box::new(setup);
        self
    }

    /// Whether the last call failed for want of a connection.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// A connection of the caller's own, outside the pool (a blocking read holds its
    /// connection: a follower of a task's events), with `timeout` on reads.
    pub fn dedicated(&self, timeout: Duration) -> Result<Conn, StoreError> {
        let conn = self.open_connection()?;
        conn.set_timeouts(Some(timeout), Some(IO_TIMEOUT))
            .map_err(|e| self.redis_failure("cannot set the Redis socket timeouts", &e))?;
        Ok(conn)
    }

    /// A connection to one server, outside the pool, for Pub/Sub: the server itself, or
    /// the cluster's seed node (a cluster passes every PUBLISH to all its nodes, so a
    /// subscriber on any one of them hears every channel).
    pub fn dedicated_server(&self) -> Result<redis::Connection, StoreError> {
        let client = match &self.client {
            Client::Single(client) | Client::Cluster { seed: client, .. } => client,
        };
        let conn = client.get_connection_with_timeout(IO_TIMEOUT).map_err(|e| {
            self.redis_failure(&format!("cannot connect to Redis at {} ({})", self.shown_url, self.role), &e)
        })?;
        conn.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| conn.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| self.redis_failure("cannot set the Redis socket timeouts", &e))?;
        Ok(conn)
    }

    /// A new connection with its timeouts and set-up.
    fn open_connection(&self) -> Result<Conn, StoreError> {
        let connect_failed = |e: RedisError| {
            self.redis_failure(&format!("cannot connect to Redis at {} ({})", self.shown_url, self.role), &e)
        };
        let mut conn = match &self.client {
            Client::Single(client) => {
                Conn::Single(client.get_connection_with_timeout(IO_TIMEOUT).map_err(connect_failed)?)
            }
            Client::Cluster { cluster, .. } => Conn::Cluster(cluster.get_connection().map_err(connect_failed)?),
        };
        conn.set_timeouts(Some(IO_TIMEOUT), Some(IO_TIMEOUT))
            .map_err(|e| self.redis_failure("cannot set the Redis socket timeouts", &e))?;
        (self.on_connect)(&mut conn).map_err(|e| {
            self.redis_failure(&format!("Redis at {}: cannot set up the {}", self.shown_url, self.role), &e)
        })?;
        Ok(conn)
    }

    /// A free connection slot, else the next one in turn (waiting for it).
    fn slot(&self) -> MutexGuard<'_, Option<(Conn, u64)>> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let count = self.conns.len();
        for i in 0..count {
            if let Ok(guard) = self.conns[(start + i) % count].try_lock() {
                return guard;
            }
        }
        let slot = &self.conns[start % count];
        match slot.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                // A panic mid-command may have left a reply unread: start afresh.
                let mut guard = poisoned.into_inner();
                *guard = None;
                slot.clear_poison();
                guard
            }
        }
    }

    /// Runs `f` on a connection (opened first if need be); a broken connection is dropped,
    /// and the next call on its slot opens another.
    pub fn with_conn<T>(&self, what: &str, f: impl FnOnce(&mut Conn) -> Result<T, Failure>) -> Result<T, StoreError> {
        let _signals = SignalsHeld::block();
        let mut guard = self.slot();
        let broken = self.broken.load(Ordering::Acquire);
        if !guard.as_ref().is_some_and(|(c, opened)| c.is_open() && *opened == broken) {
            let opened = self.open_connection().inspect_err(|_| self.down.store(true, Ordering::Release))?;
            *guard = Some((opened, broken));
        }
        let (conn, _) = guard.as_mut().expect("the connection was just opened");
        match f(conn) {
            Ok(value) => {
                self.down.store(false, Ordering::Release);
                Ok(value)
            }
            Err(Failure::Store(e)) => Err(e),
            Err(Failure::Redis(e)) => {
                if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() || !conn.is_open() {
                    *guard = None;
                    self.broken.fetch_add(1, Ordering::AcqRel);
                    self.down.store(true, Ordering::Release);
                }
                Err(self.redis_failure(&format!("Redis at {}: cannot {what}", self.shown_url), &e))
            }
        }
    }

    /// `e` as a store error of the kind a caller can act on, password blanked.
    pub fn redis_failure(&self, context: &str, e: &RedisError) -> StoreError {
        let kind = if e.is_connection_refusal() {
            RedisFailure::Refused
        } else if e.is_timeout() {
            RedisFailure::TimedOut
        } else if e.is_connection_dropped() {
            RedisFailure::Dropped
        } else {
            RedisFailure::Command
        };
        failure(kind, format!("{context}: {e}"), self.password.as_deref())
    }
}

/// The asynchronous signals, held back from the calling thread while it talks to Redis.
///
/// Linux does not restart a socket read that has a timeout (`SO_RCVTIMEO`) when a signal
/// interrupts it, whatever `SA_RESTART` says: it fails with EINTR. A node's threads get
/// signals all the time (SIGCHLD each time a command agent's program exits), and a
/// command whose reply read fails so has run, or not, with its reply lost. Blocked here,
/// a signal goes to another thread of the process (they are process-wide), or waits
/// until the call is over.
pub(crate) struct SignalsHeld(Option<libc::sigset_t>);

impl SignalsHeld {
    const ASYNC: [libc::c_int; 11] = [
        libc::SIGCHLD,
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGPIPE,
        libc::SIGALRM,
        libc::SIGWINCH,
        libc::SIGURG,
    ];

    /// Blocks them in this thread until dropped (then the previous mask comes back).
    pub(crate) fn block() -> Self {
        // SAFETY: sigemptyset/sigaddset fill a local set; pthread_sigmask changes only
        // this thread's mask and writes the old one into a local.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in Self::ASYNC {
                libc::sigaddset(&mut set, signal);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            match libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) {
                0 => SignalsHeld(Some(old)),
                _ => SignalsHeld(None),
            }
        }
    }
}

impl Drop for SignalsHeld {
    fn drop(&mut self) {
        if let Some(old) = self.0.take() {
            // SAFETY: restores this thread's own mask as it was.
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            }
        }
    }
}

/// A Redis failure as a store error; the password, should a message ever echo it, is
/// blanked.
pub(crate) fn failure(kind: RedisFailure, message: String, password: Option<&str>) -> StoreError {
    let message = match password {
        Some(password) => message.replace(password, "***"),
        None => message,
    };
    StoreError::Redis { kind, message }
}
