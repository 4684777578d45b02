//! The request path's way to Redis: asynchronous, pipelined, shared by every context.
//!
//! A [`RedisPipe`] owns a few multiplexed connections ("lanes") on one thread of its own
//! (`a2ad-redis-io`, a current-thread tokio runtime made for these waits). A caller
//! [`RedisPipe::submit`]s a request and gets a future back at once: the submission is a
//! push on an unbounded channel, so no actor and no HTTP worker ever waits on the
//! network, and requests are sent in the order they were submitted. Each lane writes
//! whatever is queued without waiting for the replies before it (the `redis` crate's
//! multiplexed connection matches the replies to the requests in order), so many
//! contexts' commits share one round trip, as the write-ahead log's group commit shares
//! one `fdatasync`: throughput follows the requests in flight, not the round-trip time.
//!
//! Order: the requests of one lane reach Redis in submission order. A context's requests
//! all go to the lane its key hashes to ([`RedisPipe::lane_of`]), so a context's commit
//! is never overtaken by the next turn's lease. (The scripts' fencing and generation
//! checks refuse a stale write anyway; the order makes refusals rare, not safety.)
//!
//! A connection that fails (dropped, refused, timed out) is dropped by its lane, and the
//! lane's next request opens a new one before it is sent, so requests keep their order
//! across a reconnect, and the first request after an outage already goes through. (The
//! cluster connection also follows MOVED/ASK itself.)

use super::IO_TIMEOUT;
use futures_util::stream::{FuturesUnordered, StreamExt};
use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisResult, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// A Lua script as the pipe sends it: `EVALSHA` by its hash, and `EVAL` with its source
/// when the server does not know it yet (after a restart or a `SCRIPT FLUSH`).
#[derive(Clone)]
pub(crate) struct LuaScript {
    hash: Arc<str>,
    source: Arc<str>,
}

impl LuaScript {
    pub fn new(source: &str) -> Self {
        let hash = redis::Script::new(source).get_hash().to_owned();
        LuaScript { hash: hash.into(), source: source.into() }
    }

    /// A call of this script, keys and arguments to be added.
    pub fn prepare(&self) -> ScriptCall {
        ScriptCall { script: self.clone(), keys: Vec::new(), args: Vec::new() }
    }
}

/// One call of a [`LuaScript`]: what `KEYS` and `ARGV` will hold.
pub(crate) struct ScriptCall {
    script: LuaScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    pub fn key(&mut self, key: impl redis::ToRedisArgs) -> &mut Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    pub fn arg(&mut self, arg: impl redis::ToRedisArgs) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// How many arguments the call has so far: the `ARGV` index (from 1) of the last.
    pub fn arg_count(&self) -> usize {
        self.args.len()
    }

    fn command(&self, name: &str, script: &str) -> Cmd {
        let mut cmd = redis::cmd(name);
        cmd.arg(script).arg(self.keys.len()).arg(&self.keys).arg(&self.args);
        cmd
    }

    fn evalsha(&self) -> Cmd {
        self.command("EVALSHA", &self.script.hash)
    }

    fn eval(&self) -> Cmd {
        self.command("EVAL", &self.script.source)
    }

    /// Runs the call on a synchronous connection (off the request path: a blocking thread).
    pub fn invoke<T: redis::FromRedisValue>(&self, conn: &mut dyn redis::ConnectionLike) -> RedisResult<T> {
        match self.evalsha().query(conn) {
            Err(e) if e.kind() == ErrorKind::NoScriptError => self.eval().query(conn),
            other => other,
        }
    }
}

/// What the pipe sends: a command, a (non-atomic) pipeline, or a script call.
pub(crate) enum Request {
    Cmd(Cmd),
    Pipe(Pipeline),
    Script(ScriptCall),
    /// A script call with a `WAIT` right behind it, both written at once on one
    /// connection, answered as an array of the two replies (an error reply: the first).
    /// `WAIT` counts the replicas that have its connection's writes, so the two are never
    /// parted: after a dropped connection both are sent again together on the new one
    /// (where a `WAIT` alone would count replicas of nothing, and confirm at once). The
    /// script must write even when it finds its work done (the commit's replay does), so
    /// that the `WAIT` on the new connection covers the first write as well.
    Replicated(ScriptCall, Cmd),
}

impl Request {
    /// Sends the request. A script this lane has not sent yet goes as `EVAL` (which loads
    /// it): an `EVALSHA` refused with NOSCRIPT would be sent again after the requests
    /// behind it, out of order.
    async fn run<C: ConnectionLike + Send>(&self, conn: &mut C, first_of_script: bool) -> RedisResult<Value> {
        match self {
            Request::Cmd(cmd) => cmd.query_async(conn).await,
            Request::Pipe(pipe) => pipe.query_async(conn).await,
            Request::Script(call) if first_of_script => call.eval().query_async(conn).await,
            Request::Script(call) => match call.evalsha().query_async(conn).await {
                Err(e) if e.kind() == ErrorKind::NoScriptError => call.eval().query_async(conn).await,
                other => other,
            },
            Request::Replicated(call, wait) => {
                let pair = |script: Cmd| {
                    let mut pipe = redis::pipe();
                    pipe.add_command(script).add_command(wait.clone());
                    pipe
                };
                match first_of_script {
                    true => pair(call.eval()).query_async(conn).await,
                    false => match pair(call.evalsha()).query_async(conn).await {
                        Err(e) if e.kind() == ErrorKind::NoScriptError => pair(call.eval()).query_async(conn).await,
                        other => other,
                    },
                }
            }
        }
    }
}

struct Job {
    request: Request,
    reply: oneshot::Sender<RedisResult<Value>>,
}

/// How a lane connects: to one server, or to a Redis Cluster.
#[derive(Clone)]
pub(crate) enum Target {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// A lane's open connection.
#[derive(Clone)]
enum AsyncConn {
    Single(redis::aio::MultiplexedConnection),
    Cluster(redis::cluster_async::ClusterConnection),
}

impl Target {
    async fn connect(&self) -> RedisResult<AsyncConn> {
        match self {
            Target::Single(client) => {
                let config = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(IO_TIMEOUT)
                    .set_response_timeout(IO_TIMEOUT);
                Ok(AsyncConn::Single(client.get_multiplexed_async_connection_with_config(&config).await?))
            }
            Target::Cluster(client) => Ok(AsyncConn::Cluster(client.get_async_connection().await?)),
        }
    }
}

impl AsyncConn {
    async fn run(&mut self, request: &Request, first_of_script: bool) -> RedisResult<Value> {
        match self {
            AsyncConn::Single(conn) => request.run(conn, first_of_script).await,
            AsyncConn::Cluster(conn) => request.run(conn, first_of_script).await,
        }
    }
}

/// The lanes and the thread that drives them. Dropping the pipe closes the lanes: what is
/// in flight is answered, then the thread ends.
pub(crate) struct RedisPipe {
    lanes: Vec<mpsc::UnboundedSender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for RedisPipe {
    fn drop(&mut self) {
        self.lanes.clear();
        if let Some(thread) = self.thread.take() {
            // Never join from the pipe's own thread (a future dropped there drops nothing
            // that owns the pipe, but be safe).
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

impl RedisPipe {
    /// Starts the thread with `lanes` lanes to `target`; each connects at its first
    /// request (and again after its connection failed to open). `down` is set while the
    /// lanes cannot reach Redis.
    pub fn start(target: Target, lanes: usize, down: Arc<AtomicBool>) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..lanes.max(1)).map(|_| mpsc::unbounded_channel()).unzip();
        let thread = std::thread::Builder::new().name("a2ad-redis-io".into()).spawn(move || {
            runtime.block_on(async move {
                let lanes: Vec<_> = receivers
                    .into_iter()
                    .map(|rx| tokio::spawn(run_lane(target.clone(), rx, Arc::clone(&down))))
                    .collect();
                for lane in lanes {
                    let _ = lane.await;
                }
            })
        })?;
        Ok(RedisPipe { lanes: senders, thread: Some(thread) })
    }

    /// The lane of everything keyed by `key` (a context's storage key, a task id).
    pub fn lane_of(&self, key: &[u8]) -> usize {
        // FNV-1a: stable, cheap, and spreads short keys well enough for a few lanes.
        let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
        (hash % self.lanes.len() as u64) as usize
    }

    /// Sends `request` on `lane` (in submission order), returning at once; the future is
    /// Redis's reply. Never blocks.
    pub fn submit(&self, lane: usize, request: Request) -> impl std::future::Future<Output = RedisResult<Value>> {
        let (reply, answer) = oneshot::channel();
        let sent = self.lanes[lane % self.lanes.len()].send(Job { request, reply }).is_ok();
        async move {
            match sent {
                true => answer.await.unwrap_or_else(|_| Err(closed())),
                false => Err(closed()),
            }
        }
    }
}

fn closed() -> RedisError {
    RedisError::from((ErrorKind::IoError, "the Redis I/O thread has stopped"))
}

/// One lane: takes the jobs in order and sends each as it comes, with every earlier one
/// still in flight.
async fn run_lane(target: Target, mut jobs: mpsc::UnboundedReceiver<Job>, down: Arc<AtomicBool>) {
    let mut conn: Option<AsyncConn> = None;
    // Set by a request whose connection failed: the next request opens another.
    let broken = Arc::new(AtomicBool::new(false));
    let mut in_flight = FuturesUnordered::new();
    // The scripts this lane's connection has been sent (by hash).
    let mut sent_scripts = std::collections::HashSet::<Arc<str>>::new();
    loop {
        tokio::select! {
            biased;
            job = jobs.recv() => {
                let Some(job) = job else { break };
                if broken.swap(false, Ordering::AcqRel) {
                    conn = None;
                    sent_scripts.clear();
                }
                let mut open = match connected(&target, &mut conn).await {
                    Ok(open) => open,
                    Err(e) => {
                        down.store(true, Ordering::Release);
                        let _ = job.reply.send(Err(e));
                        continue;
                    }
                };
                let first_of_script = match &job.request {
                    Request::Script(call) | Request::Replicated(call, _) => {
                        sent_scripts.insert(Arc::clone(&call.script.hash))
                    }
                    _ => false,
                };
                let (down, broken, target) = (Arc::clone(&down), Arc::clone(&broken), target.clone());
                // Pushed in order, and first polled in order: each request enters the
                // connection's queue in submission order.
                in_flight.push(async move {
                    let mut result = open.run(&job.request, first_of_script).await;
                    if result.as_ref().err().is_some_and(is_unreachable) {
                        // The connection died before this request (Redis restarted, say):
                        // once more on a new one. Every request the pipe sends may be sent
                        // twice (a commit already stored is answered as done).
                        broken.store(true, Ordering::Release);
                        if let Ok(mut fresh) = target.connect().await {
                            result = fresh.run(&job.request, true).await;
                        }
                    }
                    let unreachable = result.as_ref().err().is_some_and(is_unreachable);
                    down.store(unreachable, Ordering::Release);
                    if unreachable {
                        broken.store(true, Ordering::Release);
                    }
                    let _ = job.reply.send(result);
                });
            }
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
        }
    }
    while in_flight.next().await.is_some() {}
}

/// Whether `e` says the connection failed (rather than Redis refusing the request).
fn is_unreachable(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || super::no_cluster_node(e)
}

/// The lane's connection (a clone shares it), opened first if need be.
async fn connected(target: &Target, conn: &mut Option<AsyncConn>) -> RedisResult<AsyncConn> {
    if let Some(open) = conn {
        return Ok(open.clone());
    }
    let open = target.connect().await?;
    *conn = Some(open.clone());
    Ok(open)
}
