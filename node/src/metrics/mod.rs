//! Prometheus metrics, written out by hand in the text exposition format (0.0.4).
//!
//! Every label is drawn from a fixed set (bindings, A2A method names, ErrorInfo reasons,
//! task states, limit names), never from the request: task ids and free text never become
//! labels. A scrape is O(1) in the number of tasks:
//!
//! * requests and latency are counted where each binding answers (one hook per binding);
//! * `a2ad_tasks{state}` is seeded once at start-up from the store's state index
//!   ([`Metrics::count_stored_tasks`]), then moved by the store itself: the store is given
//!   the metrics as its [`a2ad_storage::StateChanges`] observer when it is built, and
//!   tells it of every step committed (with the previous state, which the store reads
//!   anyway for its indexes) and every task removed;
//! * push retries and dead letters are counted by [`MeteredQueue`], which wraps the queue;
//! * the gauges (contexts, turns, queue depth, store size) are read at scrape time.

mod metered;
pub mod series;

pub use metered::MeteredQueue;

use a2ad_actors::push::{DestinationGauge, PushBoard, PushGauges};
use a2ad_protocol::{ErrorCode, TaskState};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which binding answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Binding {
    JsonRpc,
    Rest,
    Grpc,
    /// JSON-RPC over WebSocket (`/ws`).
    WebSocket,
    /// JSON-RPC over stdin/stdout (`a2ad stdio`).
    Stdio,
    /// JSON-RPC over Redis Streams.
    Redis,
}

impl Binding {
    const ALL: [Binding; 6] =
        [Binding::JsonRpc, Binding::Rest, Binding::Grpc, Binding::WebSocket, Binding::Stdio, Binding::Redis];

    pub fn label(self) -> &'static str {
        match self {
            Binding::JsonRpc => "jsonrpc",
            Binding::Rest => "rest",
            Binding::Grpc => "grpc",
            Binding::WebSocket => "websocket",
            Binding::Stdio => "stdio",
            Binding::Redis => "redis",
        }
    }
}

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 14] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The limits whose rejections are counted.
const LIMITS: [&str; 4] = ["rate", "turns", "contexts", "body"];

/// The states `a2ad_tasks` reports.
const STATES: [TaskState; 8] = [
    TaskState::Submitted,
    TaskState::Working,
    TaskState::InputRequired,
    TaskState::AuthRequired,
    TaskState::Completed,
    TaskState::Canceled,
    TaskState::Failed,
    TaskState::Rejected,
];

#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

/// The node's counters, shared by every binding.
pub struct Metrics {
    /// `(binding, method, status)` → count.
    requests: Mutex<BTreeMap<(Binding, &'static str, &'static str), u64>>,
    latency: [Histogram; Binding::ALL.len()],
    rejections: [AtomicU64; LIMITS.len()],
    open_streams: AtomicI64,
    tasks: [AtomicI64; STATES.len()],
    /// Times a task entered each state since start (the series' turns completed and
    /// failed): one atomic add beside the gauge's move.
    entered: [AtomicU64; STATES.len()],
    push_retries: AtomicU64,
    push_dead: AtomicI64,
    /// The push worker's destinations, once it runs.
    push_board: std::sync::OnceLock<PushBoard>,
    retention_removed: AtomicU64,
    retention_expired: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: Mutex::default(),
            latency: Default::default(),
            rejections: Default::default(),
            open_streams: AtomicI64::new(0),
            tasks: Default::default(),
            entered: Default::default(),
            push_retries: AtomicU64::new(0),
            push_dead: AtomicI64::new(0),
            push_board: std::sync::OnceLock::new(),
            retention_removed: AtomicU64::new(0),
            retention_expired: AtomicU64::new(0),
        }
    }
}

/// The name a method is counted under: one of the A2A methods, else `unknown`.
pub fn method_label(method: &str) -> &'static str {
    a2ad_protocol::Method::known_name(method).unwrap_or("unknown")
}

/// The status a failed request is counted under: its ErrorInfo reason.
pub fn reason_label(reason: &str) -> &'static str {
    ErrorCode::ALL.iter().map(|c| c.info().reason).find(|r| *r == reason).unwrap_or("UNKNOWN")
}

/// The limit a refusal's reason names, if any (an index in [`LIMITS`]).
fn limit_of(reason: &str) -> Option<usize> {
    let code = match reason {
        "RATE_LIMITED" => ErrorCode::RateLimited,
        "LIMIT_EXCEEDED" => ErrorCode::LimitExceeded,
        "SERVER_BUSY" => ErrorCode::ServerBusy,
        "PAYLOAD_TOO_LARGE" => ErrorCode::PayloadTooLarge,
        _ => return None,
    };
    [ErrorCode::RateLimited, ErrorCode::LimitExceeded, ErrorCode::ServerBusy, ErrorCode::PayloadTooLarge]
        .iter()
        .position(|c| *c == code)
}

impl Metrics {
    /// Counts one answered request; `status` is `ok` or an ErrorInfo reason (a refusal by
    /// a limit is counted as a rejection too).
    pub fn record(&self, binding: Binding, method: &'static str, status: &'static str, elapsed: Duration) {
        if let Some(i) = limit_of(status) {
            self.rejections[i].fetch_add(1, Ordering::Relaxed);
        }
        *self.requests.lock().unwrap_or_else(|p| p.into_inner()).entry((binding, method, status)).or_insert(0) += 1;
        let histogram = &self.latency[binding as usize];
        let seconds = elapsed.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            histogram.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        histogram.count.fetch_add(1, Ordering::Relaxed);
        histogram.sum_micros.fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
    }

    /// A stream opened; it counts as open until the guard is dropped.
    pub fn open_stream(self: &Arc<Self>) -> StreamGuard {
        self.open_streams.fetch_add(1, Ordering::Relaxed);
        StreamGuard(Arc::clone(self))
    }

    /// Requests answered since start, by A2A method (every binding and status summed):
    /// the admin status's counters, from which the console draws rates.
    pub fn requests_by_method(&self) -> BTreeMap<&'static str, u64> {
        let mut by_method = BTreeMap::new();
        for ((_, method, _), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            *by_method.entry(*method).or_insert(0) += n;
        }
        by_method
    }

    /// Streams open now.
    pub fn open_streams(&self) -> i64 {
        self.open_streams.load(Ordering::Relaxed)
    }

    /// Push jobs in the dead letters now (as the gauge counts them).
    pub fn dead_letters(&self) -> i64 {
        self.push_dead.load(Ordering::Relaxed)
    }

    /// Counts what a retention sweep removed and expired.
    pub fn retention_swept(&self, removed: usize, expired: usize) {
        self.retention_removed.fetch_add(removed as u64, Ordering::Relaxed);
        self.retention_expired.fetch_add(expired as u64, Ordering::Relaxed);
    }

    fn move_task(&self, from: Option<TaskState>, to: TaskState) {
        if from == Some(to) {
            return;
        }
        if let Some(i) = from.and_then(|s| STATES.iter().position(|x| *x == s)) {
            self.tasks[i].fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(i) = STATES.iter().position(|x| *x == to) {
            self.tasks[i].fetch_add(1, Ordering::Relaxed);
            self.entered[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Times a task entered `state` since start.
    pub fn entered(&self, state: TaskState) -> u64 {
        STATES.iter().position(|x| *x == state).map_or(0, |i| self.entered[i].load(Ordering::Relaxed))
    }

    /// Push deliveries rescheduled after a failure, since start.
    pub fn push_retries(&self) -> u64 {
        self.push_retries.load(Ordering::Relaxed)
    }

    /// The exposition, with the scrape-time gauges in `gauges`.
    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::with_capacity(4096);
        header(&mut out, "a2ad_requests_total", "counter", "Requests answered, by A2A method, binding and status.");
        for ((binding, method, status), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let binding = binding.label();
            let _ = writeln!(
                out,
                "a2ad_requests_total{{method=\"{method}\",binding=\"{binding}\",status=\"{status}\"}} {n}"
            );
        }
        let name = "a2ad_request_duration_seconds";
        header(&mut out, name, "histogram", "Time to answer a request (to the first byte of a stream).");
        for binding in Binding::ALL {
            let h = &self.latency[binding as usize];
            let label = binding.label();
            let mut cumulative = 0;
            for (bound, count) in BUCKETS.iter().zip(&h.buckets) {
                cumulative += count.load(Ordering::Relaxed);
                let _ = writeln!(out, "{name}_bucket{{binding=\"{label}\",le=\"{bound}\"}} {cumulative}");
            }
            let count = h.count.load(Ordering::Relaxed);
            let sum = h.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(out, "{name}_bucket{{binding=\"{label}\",le=\"+Inf\"}} {count}");
            let _ = writeln!(out, "{name}_sum{{binding=\"{label}\"}} {sum}");
            let _ = writeln!(out, "{name}_count{{binding=\"{label}\"}} {count}");
        }
        gauge(&mut out, "a2ad_live_contexts", "Context actors alive.", gauges.live_contexts);
        gauge(&mut out, "a2ad_running_turns", "Turns running.", gauges.running_turns);
        gauge(
            &mut out,
            "a2ad_open_streams",
            "Streams open (SSE, gRPC and the other transports).",
            self.open_streams.load(Ordering::Relaxed),
        );
        header(&mut out, "a2ad_tasks", "gauge", "Stored tasks, by state.");
        for (state, n) in STATES.iter().zip(&self.tasks) {
            let _ = writeln!(out, "a2ad_tasks{{state=\"{}\"}} {}", state_label(*state), n.load(Ordering::Relaxed));
        }
        let depth = gauges.push_queue_depth.unwrap_or(0);
        gauge(&mut out, "a2ad_push_queue_depth", "Push jobs waiting (pending and retries).", depth);
        if let Some(outbox) = gauges.push_outbox_depth {
            let help = "Push jobs in the local outbox, not yet moved to the Redis queue.";
            gauge(&mut out, "a2ad_push_outbox_depth", help, outbox);
        }
        header(&mut out, "a2ad_push_retries_total", "counter", "Push deliveries rescheduled after a failure.");
        let _ = writeln!(out, "a2ad_push_retries_total {}", self.push_retries.load(Ordering::Relaxed));
        let dead = self.push_dead.load(Ordering::Relaxed);
        gauge(&mut out, "a2ad_push_dead_letters", "Push jobs in the dead letters.", dead);
        if let Some(board) = self.push_board.get() {
            render_push_destinations(&mut out, &board.gauges(PUSH_DESTINATIONS_NAMED));
        }
        if let Some(bytes) = gauges.store_size_bytes {
            gauge(&mut out, "a2ad_store_size_bytes", "Bytes the task store occupies on disk.", bytes);
        }
        let removed = self.retention_removed.load(Ordering::Relaxed);
        header(&mut out, "a2ad_retention_removed_total", "counter", "Tasks removed by retention.");
        let _ = writeln!(out, "a2ad_retention_removed_total {removed}");
        let expired = self.retention_expired.load(Ordering::Relaxed);
        header(&mut out, "a2ad_retention_expired_total", "counter", "Interrupted tasks canceled after their timeout.");
        let _ = writeln!(out, "a2ad_retention_expired_total {expired}");
        header(&mut out, "a2ad_auth_password_checks_total", "counter", "PBKDF2 verifications of Basic passwords run.");
        let _ = writeln!(out, "a2ad_auth_password_checks_total {}", gauges.password_checks);
        let help = "Authentications refused by auth.throttle (failures used up, password checks busy).";
        header(&mut out, "a2ad_auth_throttled_total", "counter", help);
        let _ = writeln!(out, "a2ad_auth_throttled_total {}", gauges.auth_throttled);
        header(&mut out, "a2ad_rejections_total", "counter", "Requests refused by a limit.");
        for (limit, n) in LIMITS.iter().zip(&self.rejections) {
            let _ = writeln!(out, "a2ad_rejections_total{{limit=\"{limit}\"}} {}", n.load(Ordering::Relaxed));
        }
        out
    }
}

/// How many push destinations the metrics name; the rest are summed as `other`.
pub const PUSH_DESTINATIONS_NAMED: usize = 20;

impl Metrics {
    /// Shows the push worker's destinations from now on (called once, at start-up).
    pub fn watch_push(&self, board: PushBoard) {
        let _ = self.push_board.set(board);
    }
}

/// A per-destination series: its name, its help and how to read it.
type DestinationSeries = (&'static str, &'static str, fn(&DestinationGauge) -> usize);

/// The per-destination push gauges: the [`PUSH_DESTINATIONS_NAMED`] busiest destinations
/// (open circuits first) by `host:port`, and the rest as `destination="other"`, so the
/// label's values stay bounded however many receivers there are.
fn render_push_destinations(out: &mut String, gauges: &PushGauges) {
    let rows: Vec<&DestinationGauge> = gauges.named.iter().chain(std::iter::once(&gauges.other)).collect();
    let series: [DestinationSeries; 3] = [
        ("a2ad_push_destination_in_flight", "Push deliveries in flight, by destination.", |g| g.in_flight),
        ("a2ad_push_destination_waiting", "Push jobs waiting for a destination's slot.", |g| g.waiting),
        ("a2ad_push_destination_circuit_open", "Open (or half-open) destination circuits.", |g| g.open_circuits),
    ];
    for (name, help, value) in series {
        header(out, name, "gauge", help);
        for row in &rows {
            let _ = writeln!(out, "{name}{{destination=\"{}\"}} {}", label_value(&row.destination), value(row));
        }
    }
    header(out, "a2ad_push_deferred_total", "counter", "Push jobs put back without an attempt (busy or open).");
    let _ = writeln!(out, "a2ad_push_deferred_total {}", gauges.deferred_total);
    header(out, "a2ad_push_circuit_opens_total", "counter", "Times a push destination's circuit opened.");
    let _ = writeln!(out, "a2ad_push_circuit_opens_total {}", gauges.circuit_opens_total);
}

/// A label value in the exposition format: `\`, `"` and newlines escaped.
fn label_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// What a scrape reads from the rest of the node.
#[derive(Debug, Default)]
pub struct Gauges {
    pub live_contexts: usize,
    pub running_turns: usize,
    pub push_queue_depth: Option<usize>,
    /// With the Redis queue only (see [`a2ad_storage::Forwarder`]).
    pub push_outbox_depth: Option<usize>,
    pub store_size_bytes: Option<u64>,
    /// PBKDF2 verifications run ([`crate::auth::Authenticator::password_checks_run`]).
    pub password_checks: u64,
    /// Authentications refused by `auth.throttle` ([`crate::auth::Authenticator::throttled`]).
    pub auth_throttled: u64,
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn gauge(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    header(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

fn state_label(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::InputRequired => "input_required",
        TaskState::AuthRequired => "auth_required",
        TaskState::Completed => "completed",
        TaskState::Canceled => "canceled",
        TaskState::Failed => "failed",
        TaskState::Rejected => "rejected",
        _ => "unspecified",
    }
}

/// Keeps a stream counted as open.
pub struct StreamGuard(Arc<Metrics>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether `given` is the `Authorization` header for `token` (compared in constant time).
pub fn token_matches(token: &str, given: Option<&str>) -> bool {
    let Some(given) = given.and_then(|v| v.strip_prefix("Bearer ")) else {
        return false;
    };
    let (a, b) = (token.as_bytes(), given.trim().as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_destinations_render_by_name_then_other_with_labels_escaped() {
        let row = |destination: &str, in_flight, waiting, open_circuits| DestinationGauge {
            destination: destination.into(),
            in_flight,
            waiting,
            open_circuits,
        };
        let gauges = PushGauges {
            named: vec![row("hooks.example:443", 8, 3, 1), row("odd\"name\\:80", 1, 0, 0)],
            other: row("other", 5, 2, 4),
            deferred_total: 17,
            circuit_opens_total: 6,
        };
        let mut out = String::new();
        render_push_destinations(&mut out, &gauges);
        for line in [
            "a2ad_push_destination_in_flight{destination=\"hooks.example:443\"} 8",
            "a2ad_push_destination_in_flight{destination=\"odd\\\"name\\\\:80\"} 1",
            "a2ad_push_destination_in_flight{destination=\"other\"} 5",
            "a2ad_push_destination_waiting{destination=\"hooks.example:443\"} 3",
            "a2ad_push_destination_circuit_open{destination=\"other\"} 4",
            "a2ad_push_deferred_total 17",
            "a2ad_push_circuit_opens_total 6",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
    }
}
