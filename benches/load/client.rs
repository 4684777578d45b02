//! A lean HTTP/1.1 keep-alive load client: N connections, each sending the same POST in a
//! loop and timing every response. Lean on purpose, so that on one core the client is
//! not the bottleneck of the comparison.

use hdrhistogram::Histogram;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// What one run measured.
pub struct LoadResult {
    pub requests: u64,
    pub errors: u64,
    pub elapsed: Duration,
    pub latency_us: Histogram<u64>,
}

impl LoadResult {
    /// Adds up the loops' `(requests, errors, latencies)` once they end, as one result
    /// measured over `elapsed`.
    pub async fn sum(loops: Vec<tokio::task::JoinHandle<(u64, u64, Histogram<u64>)>>, elapsed: Duration) -> Self {
        let mut total = LoadResult { requests: 0, errors: 0, elapsed, latency_us: new_histogram() };
        for task in loops {
            let (requests, errors, hist) = task.await.expect("load loop");
            total.requests += requests;
            total.errors += errors;
            total.latency_us.add(hist).expect("same bounds");
        }
        total
    }

    pub fn throughput(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    pub fn summary(&self, label: &str) -> String {
        format!(
            "{label:<28} {:>9.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  ({} requests, {} errors)",
            self.throughput(),
            self.latency_us.value_at_quantile(0.50) as f64 / 1000.0,
            self.latency_us.value_at_quantile(0.99) as f64 / 1000.0,
            self.requests,
            self.errors
        )
    }
}

/// Builds the request bytes for connection `conn` (bodies may differ per connection).
pub type BodyFor = fn(conn: usize, seq: u64) -> String;

/// Runs `connections` loops against `addr` for `duration` (after `warmup`), or until
/// `max_requests` in total. `expect` must appear in every response body.
pub async fn run(
    target: Target,
    connections: usize,
    warmup: Duration,
    duration: Duration,
    max_requests: u64,
) -> LoadResult {
    let start = Instant::now();
    let measure_from = start + warmup;
    let deadline = measure_from + duration;
    let per_conn = max_requests.div_ceil(connections as u64);
    let tasks: Vec<_> = (0..connections)
        .map(|conn| tokio::spawn(connection_loop(target, conn, measure_from, deadline, per_conn)))
        .collect();
    let mut total = LoadResult::sum(tasks, Duration::ZERO).await;
    total.elapsed = Instant::now().min(deadline).saturating_duration_since(measure_from).max(Duration::from_millis(1));
    total
}

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds")
}

/// Where the load goes and what it sends: a POST of `body_for(conn, seq)` to `path`,
/// whose response must contain `expect`.
#[derive(Clone, Copy)]
pub struct Target {
    pub addr: SocketAddr,
    pub path: &'static str,
    pub body_for: BodyFor,
    pub expect: &'static str,
    /// The `A2A-Version` header to send, if any. a2ad takes a request without one; a
    /// server that reads its absence as 0.3, as the spec says (the Rust SDK), needs "1.0".
    pub a2a_version: Option<&'static str>,
}

async fn connection_loop(
    target: Target,
    conn: usize,
    measure_from: Instant,
    deadline: Instant,
    max_requests: u64,
) -> (u64, u64, Histogram<u64>) {
    let Target { addr, path, body_for, expect, a2a_version } = target;
    let mut hist = new_histogram();
    let (mut requests, mut errors) = (0u64, 0u64);
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).ok();
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut seq = 0u64;
    while Instant::now() < deadline && requests < max_requests {
        let body = body_for(conn, seq);
        seq += 1;
        let sent = Instant::now();
        post_versioned(&mut stream, path, a2a_version, &body).await.expect("write");
        let ok = read_response(&mut stream, &mut buf).await.is_some_and(|text| text.contains(expect));
        if sent >= measure_from {
            requests += 1;
            errors += u64::from(!ok);
            hist.record(sent.elapsed().as_micros() as u64).ok();
        }
    }
    (requests, errors, hist)
}

/// Reads one response; returns its body as text (None on a non-200 or a broken stream).
/// Handles `Content-Length` bodies and chunked ones (SSE streams, read to their end; the
/// text then still has the chunk framing, which is fine for counting and matching).
pub async fn read_response<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> Option<String> {
    let (head, body) = read_message(stream, buf).await?;
    head.starts_with("http/1.1 200").then_some(body)
}

/// Reads one HTTP/1.1 message (a request or a response): its head, lowercased, and body.
pub async fn read_message<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> Option<(String, String)> {
    buf.clear();
    let mut chunk = [0u8; 16384];
    let header_end = loop {
        if let Some(pos) = find(buf, b"\r\n\r\n") {
            break pos + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    let length: Option<usize> =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok());
    let chunked = head.contains("transfer-encoding: chunked");
    let complete = |buf: &[u8]| match length {
        Some(length) => buf.len() >= header_end + length,
        None if chunked => buf.len() >= header_end + 5 && buf.ends_with(b"0\r\n\r\n"),
        None => true,
    };
    while !complete(buf) {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, String::from_utf8_lossy(&buf[header_end..]).into_owned()))
}

/// Writes a JSON POST to `/`.
pub async fn post(stream: &mut TcpStream, body: &str) -> std::io::Result<()> {
    post_to(stream, "/", body).await
}

/// Writes a JSON POST to `path`.
pub async fn post_to<S: AsyncWrite + Unpin>(stream: &mut S, path: &str, body: &str) -> std::io::Result<()> {
    post_versioned(stream, path, None, body).await
}

/// Writes a JSON POST to `path`, with an `A2A-Version` header when `a2a_version` is given.
pub async fn post_versioned<S: AsyncWrite + Unpin>(
    stream: &mut S,
    path: &str,
    a2a_version: Option<&str>,
    body: &str,
) -> std::io::Result<()> {
    let version = a2a_version.map(|v| format!("A2A-Version: {v}\r\n")).unwrap_or_default();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n{version}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
