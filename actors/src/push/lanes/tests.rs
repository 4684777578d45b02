use super::*;

const LIMITS: SlotLimits = SlotLimits {
    global: 4,
    destination: 2,
    tenant: 3,
    busy_wait: Duration::from_millis(500),
    circuit: CircuitSettings { failures: 2, open_base: Duration::from_secs(10), open_max: Duration::from_secs(60) },
};

fn ready(seq: u64, destination: &str, tenant: &str) -> Ready {
    let config = TaskPushNotificationConfig {
        tenant: None,
        id: Some("c".into()),
        task_id: Some("t".into()),
        url: format!("http://{destination}/hook"),
        token: None,
        authentication: None,
    };
    Ready {
        job: PushJob::new("t", "c", seq, "{}".into(), seq as i64),
        config,
        route: Route { destination: destination.into(), tenant: tenant.into() },
        probe: false,
    }
}

fn started(a: Admission) -> Ready {
    match a {
        Admission::Start(r) => r,
        other => panic!("expected a start, got {other:?}"),
    }
}

fn deferred(a: Admission) -> Deferral {
    match a {
        Admission::Defer(d) => d,
        other => panic!("expected a deferral, got {other:?}"),
    }
}

#[test]
fn a_full_destination_waits_in_its_own_line_and_others_still_start() {
    let mut lanes = Lanes::new(LIMITS);
    let hung: Vec<Ready> = (1..=2).map(|i| started(lanes.admit(ready(i, "hang:80", "a"), 0))).collect();
    assert!(matches!(lanes.admit(ready(3, "hang:80", "a"), 0), Admission::Wait));
    assert!(matches!(lanes.admit(ready(4, "hang:80", "a"), 0), Admission::Wait));
    let busy = deferred(lanes.admit(ready(5, "hang:80", "a"), 0));
    assert_eq!((busy.until_ms, busy.reason.as_str()), (500, "waiting for a free delivery slot of hang:80"));
    // The node still has two slots, and they go to another destination.
    started(lanes.admit(ready(6, "ok:80", "b"), 0));
    started(lanes.admit(ready(7, "ok:80", "b"), 0));
    assert_eq!(lanes.free(), 0);
    assert!(lanes.next_startable(1).is_none(), "every slot is taken");
    // One hung delivery ends (answered): the first in its line starts in its place.
    assert!(lanes.finish(&hung[0], Some(Reach::Answered), 2).is_empty());
    let next = lanes.next_startable(2).expect("the line moves");
    assert_eq!(next.job.event_seq, 3);
    let g = lanes.gauges(10);
    let hang = g.named.iter().find(|d| d.destination == "hang:80").unwrap();
    assert_eq!((hang.in_flight, hang.waiting, hang.open_circuits), (2, 1, 0));
    assert_eq!(g.deferred_total, 1);
}

#[test]
fn a_tenant_holds_at_most_its_slots() {
    let mut lanes = Lanes::new(LIMITS);
    for (i, dest) in ["a:1", "b:1", "c:1"].iter().enumerate() {
        started(lanes.admit(ready(i as u64, dest, "greedy"), 0));
    }
    assert!(matches!(lanes.admit(ready(9, "d:1", "greedy"), 0), Admission::Wait), "the tenant is at its cap");
    started(lanes.admit(ready(10, "d:1", "modest"), 0));
}

#[test]
fn repeated_failures_open_the_circuit_its_jobs_wait_in_the_queue_then_one_probe_goes() {
    let mut lanes = Lanes::new(LIMITS);
    let a = started(lanes.admit(ready(1, "down:80", "t"), 0));
    let b = started(lanes.admit(ready(2, "down:80", "t"), 0));
    assert!(matches!(lanes.admit(ready(3, "down:80", "t"), 0), Admission::Wait));
    assert!(lanes.finish(&a, Some(Reach::Failed), 100).is_empty());
    // The second failure in a row opens it: the line goes back to the queue until then.
    let flushed = lanes.finish(&b, Some(Reach::Failed), 200);
    assert_eq!(flushed.len(), 1);
    assert_eq!((flushed[0].job.event_seq, flushed[0].until_ms), (3, 10_200));
    assert_eq!(flushed[0].reason, "the circuit of down:80 is open");
    assert_eq!(lanes.free(), 4, "an open circuit holds no slot");
    let shut = deferred(lanes.admit(ready(4, "down:80", "t"), 5_000));
    assert_eq!(shut.until_ms, 10_200);
    started(lanes.admit(ready(5, "up:80", "t"), 5_000));
    let g = lanes.gauges(10);
    assert_eq!(g.circuit_opens_total, 1);
    assert_eq!(g.named[0].destination, "down:80", "open circuits come first");
    // Half-open: one probe, the rest wait for it.
    let probe = started(lanes.admit(ready(6, "down:80", "t"), 10_200));
    assert!(probe.probe);
    assert!(matches!(lanes.admit(ready(7, "down:80", "t"), 10_201), Admission::Wait));
    assert!(lanes.next_startable(10_202).is_none(), "the probe is still out");
    // The probe fails: open again, twice as long, and the waiting job is deferred.
    let flushed = lanes.finish(&probe, Some(Reach::Failed), 11_000);
    assert_eq!(flushed.iter().map(|d| (d.job.event_seq, d.until_ms)).collect::<Vec<_>>(), vec![(7, 31_000)]);
    // The next probe succeeds: closed, and its line flows again.
    let probe = started(lanes.admit(ready(8, "down:80", "t"), 31_000));
    assert!(matches!(lanes.admit(ready(9, "down:80", "t"), 31_001), Admission::Wait));
    assert!(lanes.finish(&probe, Some(Reach::Answered), 31_050).is_empty());
    let next = lanes.next_startable(31_051).expect("closed again");
    assert_eq!((next.job.event_seq, next.probe), (9, false));
}

#[test]
fn a_probe_that_never_tried_is_replaced() {
    let mut lanes = Lanes::new(LIMITS);
    for i in 0..2 {
        let r = started(lanes.admit(ready(i, "x:1", "t"), 0));
        lanes.finish(&r, Some(Reach::Failed), 0);
    }
    let probe = started(lanes.admit(ready(5, "x:1", "t"), 10_000));
    assert!(matches!(lanes.admit(ready(6, "x:1", "t"), 10_000), Admission::Wait));
    lanes.finish(&probe, None, 10_001);
    let next = lanes.next_startable(10_002).expect("another probe");
    assert!(next.probe);
}

#[test]
fn gauges_name_the_busiest_and_sum_the_rest() {
    let limits = SlotLimits { global: 100, tenant: 100, ..LIMITS };
    let mut lanes = Lanes::new(limits);
    for (dest, n) in [("a:1", 1), ("b:1", 2), ("c:1", 2), ("d:1", 1)] {
        for i in 0..n {
            started(lanes.admit(ready(i, dest, "t"), 0));
        }
    }
    let g = lanes.gauges(2);
    let names: Vec<&str> = g.named.iter().map(|d| d.destination.as_str()).collect();
    assert_eq!(names, ["b:1", "c:1"]);
    assert_eq!((g.other.destination.as_str(), g.other.in_flight), ("other", 2));
}

#[test]
fn destinations_are_host_and_port() {
    assert_eq!(destination_of("http://127.0.0.1:9/hook?x=1"), "127.0.0.1:9");
    assert_eq!(destination_of("https://Hooks.Example.com/a"), "hooks.example.com:443");
    assert_eq!(destination_of("http://hooks.example.com#f"), "hooks.example.com:80");
    assert_eq!(destination_of("http://[::1]:8080/"), "[::1]:8080");
    assert_eq!(destination_of("https://[2001:db8::1]/"), "[2001:db8::1]:443");
    assert_eq!(destination_of("http://u:p@h.example:81/"), "h.example:81");
}
