//! A few connections to one Redis server, reopened when they break, with every failure
//! turned into a [`StoreError::Redis`] that names the server but never its password.
//!
//! The push queue ([`crate::RedisQueue`]) and the shared task store
//! ([`crate::RedisStore`]) both talk to Redis through one of these, in two ways:
//! * [`RedisLink::submit`]: the request path's calls (a turn's lease and session, its
//!   commits, the reads of a task), handed to the pipe (`link/pipe.rs`), a thread of its
//!   own that keeps up to 4 multiplexed connections ("lanes") and answers each call with a
//!   future: many contexts share each round trip, and no thread of the node waits for one;
//! * [`RedisLink::with_conn`]: the `redis` crate's synchronous connections, for the calls
//!   made off the request path (retention, start-up, the admin commands, the push queue's
//!   workers), each on a blocking thread of its own (ARCHITECTURE.md, "What may block").
//!
//! The server is one Redis, or a Redis Cluster ([`Topology::Cluster`]): then each
//! connection is the crate's cluster connection, which routes every command (a script,
//! a pipeline) to the primary of its first key's hash slot and follows MOVED and ASK
//! redirects. A caller never sees the difference, as long as the keys of one command,
//! script or pipeline share a hash tag (the store's shards: `redis/keys.rs`).

mod pipe;

pub(crate) use pipe::{LuaScript, Request, ScriptCall};

use crate::{RedisFailure, StoreError};
use pipe::RedisPipe;
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Cmd, ConnectionLike, RedisError, RedisResult, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
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
    Cluster(Box<ClusterConnection>),
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
    Cluster { cluster: Box<ClusterClient>, seed: redis::Client },
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
    /// server is down or unreachable, as far as this link knows. Shared with the pipe.
    down: Arc<AtomicBool>,
    /// The request path's asynchronous connections ([`RedisLink::submit`]), started at
    /// the first use: a link used only off the request path never starts its thread.
    pipe: OnceLock<Result<RedisPipe, String>>,
    /// How many multiplexed connections the pipe opens.
    lanes: usize,
    /// The URL as it may be shown.
    shown_url: Arc<str>,
    password: Option<Arc<str>>,
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
        let password = seed.get_connection_info().redis.password.as_deref().filter(|p| !p.is_empty()).map(Arc::from);
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
                Client::Cluster { cluster: Box::new(cluster), seed }
            }
        };
        Ok(RedisLink {
            client,
            conns: (0..pool.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            broken: AtomicU64::new(0),
            down: Arc::default(),
            pipe: OnceLock::new(),
            lanes: pool.clamp(1, 4),
            shown_url: shown_url.into(),
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

    /// The pipe's lane for requests keyed by `key` (a context's, a task's): one key's
    /// requests reach Redis in the order they were submitted.
    pub fn lane_of(&self, key: &[u8]) -> usize {
        self.pipe().map(|pipe| pipe.lane_of(key)).unwrap_or(0)
    }

    /// Sends `request` on the pipe's `lane` and returns at once: the future is Redis's
    /// reply, or a store error naming the server (never its password) and `what` failed.
    /// The request path's only way to Redis: no thread waits for the reply.
    pub fn submit(
        &self,
        what: &'static str,
        lane: usize,
        request: Request,
    ) -> impl std::future::Future<Output = Result<Value, StoreError>> + Send + 'static {
        self.submit_refusable(what, lane, request, Err)
    }

    /// [`RedisLink::submit`], with `refusal` turning an error reply that means something to
    /// the store (a script's refusal) into its store error; it hands back the others.
    pub fn submit_refusable(
        &self,
        what: &'static str,
        lane: usize,
        request: Request,
        refusal: impl FnOnce(RedisError) -> Result<StoreError, RedisError> + Send + 'static,
    ) -> impl std::future::Future<Output = Result<Value, StoreError>> + Send + 'static {
        let sent = self.pipe().map(|pipe| pipe.submit(lane, request));
        let (shown_url, password) = (Arc::clone(&self.shown_url), self.password.clone());
        async move {
            sent?.await.map_err(|e| match refusal(e) {
                Ok(refused) => refused,
                Err(e) => describe(&format!("Redis at {shown_url}: cannot {what}"), &e, password.as_deref()),
            })
        }
    }

    /// The pipe, started at the first call.
    fn pipe(&self) -> Result<&RedisPipe, StoreError> {
        let started = self.pipe.get_or_init(|| {
            let target = match &self.client {
                Client::Single(client) => pipe::Target::Single(client.clone()),
                Client::Cluster { cluster, .. } => pipe::Target::Cluster(cluster.as_ref().clone()),
            };
            RedisPipe::start(target, self.lanes, Arc::clone(&self.down)).map_err(|e| e.to_string())
        });
        started.as_ref().map_err(|e| StoreError::Io(format!("cannot start the Redis I/O thread: {e}")))
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
            Client::Cluster { cluster, .. } => {
                Conn::Cluster(Box::new(cluster.get_connection().map_err(connect_failed)?))
            }
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
        describe(context, e, self.password.as_deref())
    }
}

/// Whether `e` is a Redis Cluster client's way of saying that no node of the cluster
/// answers (all of them down): an outage, as a refused connection is on one server.
pub(crate) fn no_cluster_node(e: &RedisError) -> bool {
    matches!(e.kind(), redis::ErrorKind::ClusterConnectionNotFound | redis::ErrorKind::ClusterDown)
}

/// `e` as a store error of the kind a caller can act on, `password` blanked.
fn describe(context: &str, e: &RedisError, password: Option<&str>) -> StoreError {
    let kind = if e.is_connection_refusal() {
        RedisFailure::Refused
    } else if e.is_timeout() {
        RedisFailure::TimedOut
    } else if e.is_connection_dropped() || e.is_io_error() || no_cluster_node(e) {
        RedisFailure::Dropped
    } else {
        RedisFailure::Command
    };
    failure(kind, format!("{context}: {e}"), password)
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

/// The URL with any password replaced by `***`, for messages and logs.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some(parts) => parts,
        None => return url.to_owned(),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    // `redis+unix:///socket?pass=...` carries the password in the query.
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("pass") || key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}
