//! One destination's circuit breaker: after `failures` deliveries in a row that could not
//! reach it (timeouts, network errors, 408, 429, 5xx), it opens, and the destination's
//! jobs wait in the queue, holding no delivery slot, until it half-opens: then one
//! delivery (the probe) goes; its success closes the circuit, its failure opens it again
//! for twice as long (at most `open_max`).
//!
//! Pure state over caller-given times, so its behaviour is tested without sockets or
//! clocks.

use std::time::Duration;

/// When a circuit opens and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitSettings {
    /// Consecutive failed deliveries that open the circuit.
    pub failures: u32,
    /// How long it stays open the first time; each re-open after a failed probe doubles it.
    pub open_base: Duration,
    /// The longest it stays open.
    pub open_max: Duration,
}

/// How a delivery went, as the circuit sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The destination answered (any 2xx, or a final 4xx: the receiver is there).
    Answered,
    /// It did not (timeout, network error, 408, 429, 5xx).
    Failed,
}

/// Whether a delivery to the destination may start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Closed circuit: go.
    Go,
    /// Half-open: this delivery is the probe.
    Probe,
    /// Half-open with its probe still out: wait for it.
    Hold,
    /// Open until this time (ms since the epoch).
    Shut { until_ms: i64 },
}

/// What state a circuit is in (for metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    Closed,
    Open,
    HalfOpen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Open { until_ms: i64 },
    HalfOpen { probing: bool },
}

/// One destination's breaker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circuit {
    state: State,
    /// Failures in a row while closed.
    failures: u32,
    /// Times it opened since it was last closed by a success.
    trips: u32,
}

impl Default for Circuit {
    fn default() -> Self {
        Circuit { state: State::Closed, failures: 0, trips: 0 }
    }
}

impl Circuit {
    /// May a delivery start at `now_ms`? An open circuit whose time is up half-opens here,
    /// and the caller's delivery becomes its probe.
    pub fn gate(&mut self, now_ms: i64) -> Gate {
        match self.state {
            State::Closed => Gate::Go,
            State::Open { until_ms } if now_ms < until_ms => Gate::Shut { until_ms },
            State::Open { .. } | State::HalfOpen { probing: false } => {
                self.state = State::HalfOpen { probing: true };
                Gate::Probe
            }
            State::HalfOpen { probing: true } => Gate::Hold,
        }
    }

    /// Records how a delivery went. Returns the time the circuit stays open until, when
    /// this result opened it. A success always closes it (also one that started before
    /// it opened); a failure of a delivery that started before it opened changes nothing.
    pub fn record(&mut self, reach: Reach, was_probe: bool, now_ms: i64, settings: &CircuitSettings) -> Option<i64> {
        match (reach, self.state) {
            (Reach::Answered, _) => {
                *self = Circuit::default();
                None
            }
            (Reach::Failed, State::Closed) => {
                self.failures += 1;
                (self.failures >= settings.failures.max(1)).then(|| self.open(now_ms, settings))
            }
            (Reach::Failed, State::HalfOpen { .. }) if was_probe => Some(self.open(now_ms, settings)),
            (Reach::Failed, _) => None,
        }
    }

    /// The probe ended without reaching the destination either way (its config was gone
    /// or unreadable): the next delivery probes instead.
    pub fn probe_abandoned(&mut self) {
        if self.state == (State::HalfOpen { probing: true }) {
            self.state = State::HalfOpen { probing: false };
        }
    }

    /// The state, for metrics.
    pub fn state(&self) -> CircuitState {
        match self.state {
            State::Closed => CircuitState::Closed,
            State::Open { .. } => CircuitState::Open,
            State::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }

    /// Closed with no failure counted: nothing worth remembering.
    pub fn is_pristine(&self) -> bool {
        *self == Circuit::default()
    }

    /// Open, and due to half-open only after `now_ms`: worth remembering.
    pub fn is_open_after(&self, now_ms: i64) -> bool {
        matches!(self.state, State::Open { until_ms } if until_ms > now_ms)
    }

    fn open(&mut self, now_ms: i64, settings: &CircuitSettings) -> i64 {
        self.trips = self.trips.saturating_add(1);
        let wait = settings.open_base.saturating_mul(1u32 << (self.trips - 1).min(20)).min(settings.open_max);
        let until_ms = now_ms.saturating_add(wait.as_millis() as i64);
        self.state = State::Open { until_ms };
        self.failures = 0;
        until_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: CircuitSettings =
        CircuitSettings { failures: 3, open_base: Duration::from_secs(10), open_max: Duration::from_secs(25) };

    fn fail(c: &mut Circuit, probe: bool, now: i64) -> Option<i64> {
        c.record(Reach::Failed, probe, now, &SETTINGS)
    }

    #[test]
    fn opens_after_consecutive_failures_and_an_answer_resets_the_count() {
        let mut c = Circuit::default();
        assert_eq!((fail(&mut c, false, 0), fail(&mut c, false, 0)), (None, None));
        assert_eq!(c.record(Reach::Answered, false, 0, &SETTINGS), None, "a 4xx or 2xx answer resets");
        assert_eq!((fail(&mut c, false, 1), fail(&mut c, false, 2)), (None, None));
        assert_eq!(c.gate(2), Gate::Go);
        assert_eq!(fail(&mut c, false, 3), Some(10_003), "the third failure in a row opens it");
        assert_eq!(c.state(), CircuitState::Open);
        assert_eq!(c.gate(5_000), Gate::Shut { until_ms: 10_003 });
        assert_eq!(fail(&mut c, false, 5_000), None, "a late failure of an older delivery changes nothing");
        assert_eq!(c.gate(9_999), Gate::Shut { until_ms: 10_003 });
    }

    #[test]
    fn half_opens_for_one_probe_whose_failure_reopens_for_longer() {
        let mut c = Circuit::default();
        (0..3).for_each(|_| {
            fail(&mut c, false, 0);
        });
        assert_eq!(c.gate(10_000), Gate::Probe, "time is up: one probe");
        assert_eq!(c.state(), CircuitState::HalfOpen);
        assert_eq!(c.gate(10_001), Gate::Hold, "only one probe at a time");
        assert_eq!(fail(&mut c, false, 10_002), None, "only the probe's failure counts");
        c.probe_abandoned();
        assert_eq!(c.gate(10_003), Gate::Probe, "a probe that reached nobody is replaced");
        assert_eq!(fail(&mut c, true, 12_000), Some(32_000), "a failed probe reopens it, twice as long");
        assert_eq!(c.gate(31_999), Gate::Shut { until_ms: 32_000 });
        assert_eq!(c.gate(32_000), Gate::Probe);
        assert_eq!(fail(&mut c, true, 40_000), Some(65_000), "at most open_max");
        assert!(c.is_open_after(64_999) && !c.is_open_after(65_000));
    }

    #[test]
    fn a_successful_probe_closes_it() {
        let mut c = Circuit::default();
        (0..3).for_each(|_| {
            fail(&mut c, false, 0);
        });
        assert_eq!(c.gate(10_000), Gate::Probe);
        assert_eq!(c.record(Reach::Answered, true, 10_050, &SETTINGS), None);
        assert_eq!((c.state(), c.gate(10_051)), (CircuitState::Closed, Gate::Go));
        assert!(c.is_pristine());
        c.probe_abandoned();
        assert_eq!(c.gate(10_052), Gate::Go, "nothing to abandon when closed");
        // Closed again from scratch: it takes `failures` more to open, for open_base.
        assert_eq!((fail(&mut c, false, 11_000), fail(&mut c, false, 11_000)), (None, None));
        assert_eq!(fail(&mut c, false, 11_000), Some(21_000));
    }
}
