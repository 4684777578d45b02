//! Delivery slots, so that one slow or dead receiver cannot hold up the others.
//!
//! A delivery needs a free slot on three counts: the node's (`push-concurrency`), its
//! destination's (`push-destination-concurrency`; a destination is the `host:port` of the
//! URL) and its tenant's (`push-tenant-concurrency`). A job whose destination or tenant is
//! full waits in its destination's line (at most as long as the destination's slot count,
//! and all lines together at most the node's), holding no slot; a job that finds even its
//! line full, or its destination's circuit open ([`super::circuit`]), goes back to the
//! queue until later without counting an attempt (a deferral). So a destination that
//! hangs holds at most its own slots and its own line, and the poll keeps finding every
//! other destination's jobs.
//!
//! Pure state over caller-given times, shared with the metrics scrape through
//! [`PushBoard`].

use super::circuit::{Circuit, CircuitSettings, CircuitState, Gate, Reach};
use a2ad_protocol::TaskPushNotificationConfig;
use a2ad_storage::PushJob;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Destinations remembered beyond those in use: idle ones with a closed circuit and no
/// failure are forgotten at once, and when more than this many are remembered the idle
/// ones whose circuit is not open are forgotten too.
const REMEMBERED_DESTINATIONS: usize = 4096;

/// How many deliveries may be in flight at once, per node, destination and tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLimits {
    pub global: usize,
    pub destination: usize,
    pub tenant: usize,
    /// How long a job waits in the queue when its destination's line is full.
    pub busy_wait: Duration,
    pub circuit: CircuitSettings,
}

/// Where a job goes: the `host:port` of its URL, and its config owner's tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub destination: String,
    pub tenant: String,
}

/// A job with the config it is delivered by, read when it was taken from the queue.
#[derive(Debug, Clone)]
pub struct Ready {
    pub job: PushJob,
    pub config: TaskPushNotificationConfig,
    pub route: Route,
    /// This delivery is its destination's half-open probe.
    pub probe: bool,
}

/// A job sent back to the queue, due again at `until_ms`, not counted as an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Deferral {
    pub job: PushJob,
    pub until_ms: i64,
    pub reason: String,
    /// The job's destination (`host:port`), which the log names if the job dies waiting.
    pub destination: String,
}

/// What becomes of a job taken from the queue.
#[derive(Debug)]
pub enum Admission {
    /// It holds its slots now: deliver it.
    Start(Ready),
    /// It waits in its destination's line, holding no slot.
    Wait,
    /// It goes back to the queue.
    Defer(Deferral),
}

#[derive(Debug, Default)]
struct Destination {
    active: usize,
    waiting: VecDeque<Ready>,
    circuit: Circuit,
}

impl Destination {
    fn is_idle(&self) -> bool {
        self.active == 0 && self.waiting.is_empty()
    }
}

/// The slots, lines and circuits of every destination.
#[derive(Debug)]
pub struct Lanes {
    limits: SlotLimits,
    active: usize,
    waiting: usize,
    destinations: HashMap<String, Destination>,
    tenants: HashMap<String, usize>,
    deferred_total: u64,
    circuit_opens_total: u64,
}

impl Lanes {
    pub fn new(limits: SlotLimits) -> Self {
        Lanes {
            limits,
            active: 0,
            waiting: 0,
            destinations: HashMap::new(),
            tenants: HashMap::new(),
            deferred_total: 0,
            circuit_opens_total: 0,
        }
    }

    /// Node-wide slots free.
    pub fn free(&self) -> usize {
        self.limits.global.saturating_sub(self.active)
    }

    /// Decides what becomes of a job taken from the queue at `now_ms`.
    pub fn admit(&mut self, mut ready: Ready, now_ms: i64) -> Admission {
        let key = ready.route.destination.clone();
        let room = self.has_room(&ready.route);
        let dest = self.destinations.entry(key.clone()).or_default();
        match dest.circuit.gate(now_ms) {
            Gate::Shut { until_ms } => {
                let reason = format!("the circuit of {key} is open");
                Admission::Defer(self.deferral(ready, until_ms, reason))
            }
            Gate::Go | Gate::Probe if room => {
                ready.probe = dest.circuit.state() == CircuitState::HalfOpen;
                Admission::Start(self.take_slots(ready))
            }
            Gate::Probe => {
                dest.circuit.probe_abandoned();
                self.wait_or_defer(ready, now_ms)
            }
            Gate::Go | Gate::Hold => self.wait_or_defer(ready, now_ms),
        }
    }

    /// A delivery ended: frees its slots and records how it reached its destination
    /// (`None`: it never tried, its config was gone or unreadable). When this opens the
    /// destination's circuit, its line goes back to the queue: those deferrals are
    /// returned.
    pub fn finish(&mut self, ready: &Ready, reach: Option<Reach>, now_ms: i64) -> Vec<Deferral> {
        let route = &ready.route;
        self.active = self.active.saturating_sub(1);
        if let Some(n) = self.tenants.get_mut(&route.tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.tenants.remove(&route.tenant);
            }
        }
        let Some(dest) = self.destinations.get_mut(&route.destination) else { return Vec::new() };
        dest.active = dest.active.saturating_sub(1);
        let opened = match reach {
            Some(reach) => dest.circuit.record(reach, ready.probe, now_ms, &self.limits.circuit),
            None if ready.probe => {
                dest.circuit.probe_abandoned();
                None
            }
            None => None,
        };
        let flushed: Vec<Ready> = match opened {
            Some(_) => dest.waiting.drain(..).collect(),
            None => Vec::new(),
        };
        if dest.is_idle() && dest.circuit.is_pristine() {
            self.destinations.remove(&route.destination);
        }
        self.forget_idle(now_ms);
        self.waiting -= flushed.len();
        self.circuit_opens_total += u64::from(opened.is_some());
        let reason = format!("the circuit of {} is open", route.destination);
        let until_ms = opened.unwrap_or(now_ms);
        flushed.into_iter().map(|r| self.deferral(r, until_ms, reason.clone())).collect()
    }

    /// A waiting job that may start now, with its slots taken: the one whose job has
    /// waited longest, among the destinations whose line is not empty.
    pub fn next_startable(&mut self, now_ms: i64) -> Option<Ready> {
        let mut lines: Vec<(i64, String)> = self
            .destinations
            .iter()
            .filter_map(|(key, d)| d.waiting.front().map(|r| (r.job.next_attempt_ms, key.clone())))
            .collect();
        lines.sort();
        for (_, key) in lines {
            let Some(route) = self.destinations[&key].waiting.front().map(|r| r.route.clone()) else { continue };
            if !self.has_room(&route) {
                continue;
            }
            let dest = self.destinations.get_mut(&key)?;
            let probe = match dest.circuit.gate(now_ms) {
                Gate::Go => false,
                Gate::Probe => true,
                Gate::Hold | Gate::Shut { .. } => continue,
            };
            let mut ready = dest.waiting.pop_front()?;
            self.waiting -= 1;
            ready.probe = probe;
            return Some(self.take_slots(ready));
        }
        None
    }

    fn has_room(&self, route: &Route) -> bool {
        let dest_active = self.destinations.get(&route.destination).map_or(0, |d| d.active);
        let tenant_active = self.tenants.get(&route.tenant).copied().unwrap_or(0);
        self.active < self.limits.global && dest_active < self.limits.destination && tenant_active < self.limits.tenant
    }

    fn take_slots(&mut self, ready: Ready) -> Ready {
        self.active += 1;
        *self.tenants.entry(ready.route.tenant.clone()).or_default() += 1;
        self.destinations.entry(ready.route.destination.clone()).or_default().active += 1;
        ready
    }

    fn wait_or_defer(&mut self, ready: Ready, now_ms: i64) -> Admission {
        let limit = self.limits.destination;
        let room_overall = self.waiting < self.limits.global;
        let dest = self.destinations.entry(ready.route.destination.clone()).or_default();
        if room_overall && dest.waiting.len() < limit {
            dest.waiting.push_back(ready);
            self.waiting += 1;
            return Admission::Wait;
        }
        if dest.is_idle() && dest.circuit.is_pristine() {
            self.destinations.remove(&ready.route.destination);
        }
        let until_ms = now_ms.saturating_add(self.limits.busy_wait.as_millis() as i64);
        let reason = format!("waiting for a free delivery slot of {}", ready.route.destination);
        Admission::Defer(self.deferral(ready, until_ms, reason))
    }

    fn deferral(&mut self, ready: Ready, until_ms: i64, reason: String) -> Deferral {
        self.deferred_total += 1;
        Deferral { job: ready.job, until_ms, reason, destination: ready.route.destination }
    }

    /// Keeps the map of destinations bounded (see [`REMEMBERED_DESTINATIONS`]).
    fn forget_idle(&mut self, now_ms: i64) {
        if self.destinations.len() > REMEMBERED_DESTINATIONS {
            self.destinations.retain(|_, d| !d.is_idle() || d.circuit.is_open_after(now_ms));
        }
    }

    /// The busiest `top` destinations (open circuits first), and the rest summed up.
    pub fn gauges(&self, top: usize) -> PushGauges {
        let mut named: Vec<DestinationGauge> = self
            .destinations
            .iter()
            .map(|(key, d)| DestinationGauge {
                destination: key.clone(),
                in_flight: d.active,
                waiting: d.waiting.len(),
                open_circuits: usize::from(d.circuit.state() != CircuitState::Closed),
            })
            .filter(|g| g.in_flight + g.waiting + g.open_circuits > 0)
            .collect();
        named.sort_by(|a, b| {
            (b.open_circuits, b.in_flight + b.waiting, &a.destination).cmp(&(
                a.open_circuits,
                a.in_flight + a.waiting,
                &b.destination,
            ))
        });
        let rest = named.split_off(top.min(named.len()));
        let other = rest.iter().fold(DestinationGauge { destination: "other".into(), ..Default::default() }, |o, g| {
            DestinationGauge {
                in_flight: o.in_flight + g.in_flight,
                waiting: o.waiting + g.waiting,
                open_circuits: o.open_circuits + g.open_circuits,
                ..o
            }
        });
        PushGauges { named, other, deferred_total: self.deferred_total, circuit_opens_total: self.circuit_opens_total }
    }
}

/// One destination's delivery state, for metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationGauge {
    /// `host:port`, or `other`.
    pub destination: String,
    pub in_flight: usize,
    pub waiting: usize,
    /// 1 when its circuit is open or half-open (for `other`: how many are).
    pub open_circuits: usize,
}

/// What the metrics show of delivery: the busiest destinations by name, the rest as one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushGauges {
    pub named: Vec<DestinationGauge>,
    pub other: DestinationGauge,
    /// Jobs sent back to the queue without an attempt (busy destination, open circuit).
    pub deferred_total: u64,
    /// Times a destination's circuit opened.
    pub circuit_opens_total: u64,
}

/// The worker's [`Lanes`], shared with whoever reads them (the metrics scrape).
#[derive(Debug, Clone)]
pub struct PushBoard(Arc<Mutex<Lanes>>);

impl PushBoard {
    pub fn new(limits: SlotLimits) -> Self {
        PushBoard(Arc::new(Mutex::new(Lanes::new(limits))))
    }

    /// Runs `f` on the lanes. The lock is only ever held for a step of bookkeeping; a
    /// panic inside one leaves counts that are still usable, so poisoning is ignored.
    pub fn with<T>(&self, f: impl FnOnce(&mut Lanes) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// See [`Lanes::gauges`].
    pub fn gauges(&self, top: usize) -> PushGauges {
        self.with(|lanes| lanes.gauges(top))
    }
}

/// The `host:port` a webhook URL connects to (the port from the scheme when the URL has
/// none), lowercased; its path, query and any userinfo are left out.
pub fn destination_of(url: &str) -> String {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_ascii_lowercase();
    let has_port = match host_port.rfind(']') {
        Some(close) => host_port[close..].contains(':'),
        None => host_port.contains(':'),
    };
    if has_port {
        return host_port;
    }
    let port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    format!("{host_port}:{port}")
}

#[cfg(test)]
mod tests;
