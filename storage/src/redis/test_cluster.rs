//! A Redis Cluster of a test's own: a few redis-server processes in cluster mode on free
//! loopback ports, each in a temp dir of its own, the 16,384 hash slots split evenly
//! between them (no replicas); killed on drop.
//!
//! The storage tests use it (`redis/test_server.rs`), and so do the end-to-end tests and the load
//! driver, which include this very file (`tests/node/shared_redis.rs`,
//! `benches/load/cluster.rs`), so it needs nothing but std, `libc`, `redis` and `tempfile`.
//!
//! It also starts the one-server harnesses' redis-server ([`start_server`],
//! [`spawn_server`]: `redis/test_server.rs`, `tests/node/redis.rs`), so all of them share one
//! command line and one check that the server answering is the one started. Every
//! redis-server of the harnesses is started by [`spawn_tied`], which ties it to the test
//! process: a server kept in a `static` for the whole run is never dropped, and before, it
//! outlived the run.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long the nodes may take to agree that the cluster is up.
const FORM_TIMEOUT: Duration = Duration::from_secs(20);

/// One primary: its process, client port and cluster bus port.
struct Primary {
    child: Option<Child>,
    port: u16,
    bus_port: u16,
    dir: PathBuf,
}

/// A cluster of primaries; killed on drop.
pub struct RedisCluster {
    primaries: Vec<Primary>,
    binary: PathBuf,
    extra: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.kill();
    }
}

impl RedisCluster {
    /// `count` primaries started with the server options `extra` (persistence), the slots
    /// assigned, the nodes introduced, once every node says `cluster_state:ok`. Tried
    /// again on fresh ports when a start fails: another process may take a free port
    /// between our probe and redis-server binding it.
    pub fn start(binary: &Path, count: usize, extra: &[&str]) -> Result<RedisCluster, String> {
        let mut last_error = String::new();
        for _ in 0..3 {
            match Self::start_once(binary, count, extra) {
                Ok(cluster) => return Ok(cluster),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    fn start_once(binary: &Path, count: usize, extra: &[&str]) -> Result<RedisCluster, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut cluster = RedisCluster {
            primaries: Vec::new(),
            binary: binary.to_owned(),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            _dir: dir,
        };
        for i in 0..count {
            let node_dir = cluster._dir.path().join(format!("node{i}"));
            std::fs::create_dir_all(&node_dir).map_err(|e| e.to_string())?;
            let (port, bus_port) = (free_port()?, free_port()?);
            cluster.primaries.push(Primary { child: None, port, bus_port, dir: node_dir });
        }
        cluster.spawn_all()?;
        let slots_each = 16_384 / count;
        for (i, primary) in cluster.primaries.iter().enumerate() {
            let first = i * slots_each;
            let last = if i + 1 == count { 16_383 } else { first + slots_each - 1 };
            query::<()>(primary.port, redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(first).arg(last))?;
        }
        for other in &cluster.primaries[1..] {
            let meet = redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(other.port).arg(other.bus_port).clone();
            query::<()>(cluster.primaries[0].port, &meet)?;
        }
        cluster.wait_until_formed()?;
        Ok(cluster)
    }

    /// The URL of the first primary: the seed a client finds the others from.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.primaries[0].port)
    }

    /// Every primary's client port.
    pub fn ports(&self) -> Vec<u16> {
        self.primaries.iter().map(|p| p.port).collect()
    }

    /// Every node's process id (a benchmark pins them to a CPU).
    #[allow(dead_code)] // Only the load driver, which includes this file, uses it.
    pub fn pids(&self) -> Vec<u32> {
        self.primaries.iter().filter_map(|p| p.child.as_ref().map(Child::id)).collect()
    }

    /// SIGKILL of every node: an outage of the whole cluster.
    pub fn kill(&mut self) {
        for primary in &mut self.primaries {
            if let Some(mut child) = primary.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// Starts every node again on its ports and dir (each rejoins from its `nodes.conf`),
    /// once the cluster is up again.
    pub fn restart(&mut self) -> Result<(), String> {
        self.spawn_all()?;
        self.wait_until_formed()
    }

    fn spawn_all(&mut self) -> Result<(), String> {
        for primary in &mut self.primaries {
            let mut command = server_command(&self.binary, primary.port, &primary.dir, &self.extra);
            command.args(["--cluster-enabled", "yes", "--cluster-port", &primary.bus_port.to_string()]).args([
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
            ]);
            let child = spawn_tied(command).map_err(|e| format!("cannot start {}: {e}", self.binary.display()))?;
            primary.child = Some(child);
        }
        for primary in &mut self.primaries {
            if let Some(child) = primary.child.as_mut() {
                wait_until_serving(child, primary.port)?;
            }
        }
        Ok(())
    }

    /// Waits until every node knows every other and says the cluster is up.
    fn wait_until_formed(&self) -> Result<(), String> {
        let deadline = Instant::now() + FORM_TIMEOUT;
        let known = format!("cluster_known_nodes:{}", self.primaries.len());
        loop {
            let formed = self.primaries.iter().all(|p| {
                let info = query::<String>(p.port, redis::cmd("CLUSTER").arg("INFO")).unwrap_or_default();
                info.contains("cluster_state:ok") && info.contains(&known)
            });
            if formed {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("the cluster did not form within {} s", FORM_TIMEOUT.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The redis-server to start: `A2AD_REDIS_SERVER`, else `redis-server` on PATH.
pub fn redis_server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("A2AD_REDIS_SERVER").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
}

/// A redis-server on a free loopback port, keeping its files in `dir`, once it serves
/// ([`spawn_server`]); with its port. Tried on up to three fresh ports: another process
/// may take a free port between our probe and redis-server binding it.
pub fn start_server(binary: &Path, dir: &Path, extra: &[&str]) -> Result<(Child, u16), String> {
    let mut last_error = String::new();
    for _ in 0..3 {
        let port = free_port()?;
        match spawn_server(binary, port, dir, extra) {
            Ok(child) => return Ok((child, port)),
            Err(e) => last_error = e,
        }
    }
    Err(last_error)
}

/// A redis-server on `port` in `dir` with the server options `extra`, once it serves as
/// itself ([`wait_until_serving`]).
pub fn spawn_server(binary: &Path, port: u16, dir: &Path, extra: &[&str]) -> Result<Child, String> {
    let command = server_command(binary, port, dir, extra);
    let mut child = spawn_tied(command).map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    wait_until_serving(&mut child, port)?;
    Ok(child)
}

/// The command line of every test redis-server: loopback only, no RDB snapshots, its files
/// in `dir`, its output dropped, with the server options `extra`.
fn server_command(binary: &Path, port: u16, dir: &Path, extra: &[impl AsRef<std::ffi::OsStr>]) -> Command {
    let mut command = Command::new(binary);
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
        .args(extra)
        .arg("--dir")
        .arg(dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Waits until the redis-server `child` answers on `port`, for 5 s. The answer must be
/// its own (`INFO server` names its process id): when another process took the port
/// first, redis-server exits and whatever holds the port may well answer, even PING (the
/// redis-server of another test).
pub fn wait_until_serving(child: &mut Child, port: u16) -> Result<(), String> {
    let own = format!("process_id:{}\r\n", child.id());
    let deadline = Instant::now() + Duration::from_secs(5);
    let failure = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break format!("redis-server exited with {status} (port {port} taken?)");
        }
        match query::<String>(port, redis::cmd("INFO").arg("server")) {
            Ok(info) if info.contains(&own) => return Ok(()),
            Ok(_) => break format!("port {port} is another server's"),
            Err(_) if Instant::now() >= deadline => {
                break format!("redis-server on port {port} did not answer within 5 s")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    Err(failure)
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// One command to the node on `port`.
fn query<T: redis::FromRedisValue>(port: u16, cmd: &redis::Cmd) -> Result<T, String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
    let mut conn = client.get_connection_with_timeout(Duration::from_millis(500)).map_err(|e| e.to_string())?;
    cmd.query(&mut conn).map_err(|e| format!("port {port}: {e}"))
}

/// A command to start, and where its child goes.
type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Starts `command` so that it is killed when the test process ends, however it ends (a
/// panic, a timeout's SIGKILL): the child asks the kernel for SIGKILL when its parent
/// goes (`PR_SET_PDEATHSIG`). The kernel means the parent *thread*, and a test's thread
/// ends with the test, so every child is started by one thread that lives as long as the
/// process.
pub fn spawn_tied(command: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("test-redis-spawner".into())
            .spawn(move || {
                for (mut command, answer) in incoming {
                    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
                    unsafe {
                        command.pre_exec(|| match libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) {
                            0 => Ok(()),
                            _ => Err(std::io::Error::last_os_error()),
                        });
                    }
                    let _ = answer.send(command.spawn());
                }
            })
            .expect("the spawner thread starts");
        Mutex::new(requests)
    });
    let (answer, child) = mpsc::channel();
    let sent = spawner.lock().unwrap_or_else(|e| e.into_inner()).send((command, answer));
    sent.map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    child.recv().map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}
