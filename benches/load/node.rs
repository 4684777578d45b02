//! Child processes under test, pinned to CPU 0 (the driver runs on CPU 1).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A server child process; killed on drop.
pub struct Node {
    child: Child,
    pub addr: SocketAddr,
    grpc: Option<SocketAddr>,
    _data: Option<tempfile::TempDir>,
}

impl Node {
    /// `a2ad serve` on 127.0.0.1:0 with a fresh data dir (persistence on).
    pub fn start(bin: &Path, extra: &[&str]) -> Node {
        let data = tempfile::tempdir().expect("temp dir");
        let mut cmd = pinned(bin);
        cmd.arg("serve")
            .args(["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .args(extra);
        Self::spawn(cmd, Some(data))
    }

    /// `a2ad serve` on 127.0.0.1:0 with `config` (YAML) written next to the given data
    /// dir, so that a later node (or `a2ad admin`) can open the same store; one worker
    /// unless `extra` says `--workers`.
    pub fn start_in(bin: &Path, data: &Path, config: &str, extra: &[&str]) -> Node {
        let file = data.with_extension("yml");
        std::fs::write(&file, config).expect("config");
        let mut cmd = pinned(bin);
        let workers = if extra.contains(&"--workers") { &[][..] } else { &["--workers", "1"][..] };
        cmd.arg("serve")
            .args(workers)
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .arg("--config")
            .arg(&file)
            .args(extra);
        Self::spawn(cmd, None)
    }

    /// The bare actix-web baseline (this same executable with `--bare-server`).
    pub fn start_bare() -> Node {
        let mut cmd = pinned(&std::env::current_exe().expect("own path"));
        cmd.arg("--bare-server");
        Self::spawn(cmd, None)
    }

    /// A peer server (`benches/rust-sdk-peer`): a program that serves on 127.0.0.1:0 with
    /// no arguments and names its URL on its first stdout line.
    pub fn start_peer(program: &Path) -> Node {
        Self::spawn(pinned(program), None)
    }

    fn spawn(mut cmd: Command, data: Option<tempfile::TempDir>) -> Node {
        let mut child =
            cmd.env("RUST_LOG", "warn").stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).expect("a URL in the first line");
        let addr = url.trim_start_matches("http://").trim_end_matches('/').parse().expect("host:port");
        let grpc = line.split("gRPC on ").nth(1).and_then(|rest| rest.trim().trim_end_matches(')').parse().ok());
        Node { child, addr, grpc, _data: data }
    }

    /// The gRPC address the node printed.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc.expect("the node runs gRPC")
    }

    /// Resident set size, from /proc.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Node {
    /// CPU time the process has used (user + system), from /proc, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds_of(self.child.id())
    }

    /// The process id (for /proc readings).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the node as an operator would (SIGTERM: requests answered, store flushed),
    /// waiting at most 30 s; the drop then kills whatever is left.
    pub fn stop(mut self) {
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Bytes process `pid` caused to be written to storage (`write_bytes` of /proc/PID/io).
pub fn write_bytes_of(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("write_bytes:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// CPU time process `pid` has used (user + system), from /proc, in seconds.
pub fn cpu_seconds_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is field 3, so
    // utime and stime (fields 14 and 15) are at 11 and 12 here.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|i| fields.get(*i)?.parse::<f64>().ok()).sum();
    ticks / 100.0
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `taskset -c 0 <program>` when there are two CPUs or more, so that the server under
/// test has exactly one core and the load driver another.
pub fn pinned(program: &Path) -> Command {
    pinned_to(program, 0)
}

/// `taskset -c <cpu> <program>` when there are two CPUs or more; else `program` as it is.
pub fn pinned_to(program: &Path, cpu: u8) -> Command {
    // The machine's CPUs, not `available_parallelism`: that counts the driver's own
    // affinity mask, which is one CPU under the documented `taskset -c 1`, and then no
    // server was ever pinned (they all shared CPU 1 with the driver until 2026-12-03).
    // SAFETY: sysconf reads a constant of the system and touches no memory of ours.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if cpus >= 2 && Path::new("/usr/bin/taskset").exists() {
        let mut cmd = Command::new("/usr/bin/taskset");
        cmd.args(["-c", &cpu.to_string()]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

/// Kills a child process when dropped.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
