use super::*;
use crate::redact_url;
use crate::redis::test_server::{redis, redis_with, RedisServer};
use crate::RedisFailure;
use std::time::{Duration, Instant};

fn queue(server: &RedisServer, consumer: &str, lease: Duration) -> RedisQueue {
    RedisQueue::connect(RedisQueueOptions {
        url: server.url(),
        consumer: consumer.to_owned(),
        lease_timeout: lease,
        ..RedisQueueOptions::default()
    })
    .unwrap()
}

fn none() -> HashSet<String> {
    HashSet::new()
}

fn unleased(mut job: PushJob) -> PushJob {
    job.receipt = None;
    job
}

#[test]
fn enqueue_due_ack_round_trip() {
    let Some(server) = redis() else { return };
    let q = queue(&server, "w1", Duration::from_secs(30));
    let a = PushJob::new("t1", "c1", 1, "{\"task\":{}}".into(), 1000);
    let b = PushJob::new("t1", "c1", 2, "{}".into(), 1000);
    q.enqueue(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(q.depth().unwrap(), 2);

    let leased: HashSet<String> = [a.id()].into();
    let got = q.due(1000, 10, &leased).unwrap();
    assert_eq!(got.into_iter().map(unleased).collect::<Vec<_>>(), vec![b.clone()], "in-flight ids are skipped");
    // `a` was skipped: it stays pending (and comes back after the lease).
    assert_eq!(q.depth().unwrap(), 2);

    let c = PushJob::new("t2", "c1", 1, "{}".into(), 1000);
    q.enqueue(std::slice::from_ref(&c)).unwrap();
    let got = q.due(1000, 10, &none()).unwrap();
    assert_eq!(got.len(), 1, "nothing is handed out twice within the lease");
    assert!(got[0].receipt.is_some(), "a leased job carries its stream entry id");
    assert_eq!(unleased(got[0].clone()), c);
    q.ack(&got[0]).unwrap();
    assert_eq!(q.depth().unwrap(), 2);
    assert!(q.due(1000, 10, &none()).unwrap().is_empty());
    assert!(q.dead().unwrap().is_empty());
}

#[test]
fn rescheduled_jobs_fall_due_at_their_time() {
    let Some(server) = redis() else { return };
    let q = queue(&server, "w1", Duration::from_secs(30));
    let job = PushJob::new("t1", "c1", 1, "{}".into(), 1000);
    q.enqueue(std::slice::from_ref(&job)).unwrap();
    let taken = q.due(1000, 10, &none()).unwrap().remove(0);

    let mut next = unleased(taken.clone());
    next.attempts = 1;
    next.next_attempt_ms = 5000;
    next.last_error = Some("HTTP 503".into());
    q.reschedule(&taken, &next).unwrap();
    assert_eq!(q.depth().unwrap(), 1, "the scheduled retry counts");
    assert!(q.due(4999, 10, &none()).unwrap().is_empty(), "not due before its time");

    let again = q.due(5000, 10, &none()).unwrap();
    assert_eq!(again.iter().cloned().map(unleased).collect::<Vec<_>>(), vec![next]);
    assert_ne!(again[0].receipt, taken.receipt, "a retry is a new stream entry");
    q.ack(&again[0]).unwrap();
    assert_eq!(q.depth().unwrap(), 0);
    assert!(q.due(10_000, 10, &none()).unwrap().is_empty());
}

#[test]
fn buried_jobs_are_dead_until_revived() {
    let Some(server) = redis() else { return };
    let q = queue(&server, "w1", Duration::from_secs(30));
    let a = PushJob::new("t1", "c1", 1, "{}".into(), 1000);
    let b = PushJob::new("t1", "c1", 2, "{}".into(), 1000);
    q.enqueue(&[a.clone(), b.clone()]).unwrap();
    let mut taken = q.due(1000, 10, &none()).unwrap();
    assert_eq!(taken.len(), 2);
    q.bury(&taken.remove(0), "HTTP 404", 7000).unwrap();
    let mut last = taken.remove(0);
    (last.last_status, last.host) = (Some(410), Some("hooks.example:443".into()));
    q.bury(&last, "HTTP 410", 7001).unwrap();
    assert_eq!(q.depth().unwrap(), 0);

    let dead = q.dead().unwrap();
    assert_eq!(dead.len(), 2);
    assert_eq!((&dead[0].job, dead[0].reason.as_str(), dead[0].died_ms), (&a, "HTTP 404", 7000));
    assert_eq!((dead[1].job.last_status, dead[1].job.host.as_deref()), (Some(410), Some("hooks.example:443")));
    assert_eq!(q.revive(Some("no-such-job"), 8000).unwrap(), 0);
    assert_eq!(q.revive(Some(&b.id()), 8000).unwrap(), 1);
    assert_eq!(q.dead().unwrap().len(), 1);

    let revived = q.due(8000, 10, &none()).unwrap();
    assert_eq!(revived.len(), 1);
    assert_eq!(revived[0].id(), b.id());
    assert_eq!((revived[0].attempts, revived[0].first_enqueued_ms, revived[0].next_attempt_ms), (0, 8000, 8000));
    q.ack(&revived[0]).unwrap();

    assert_eq!(q.revive(None, 9000).unwrap(), 1);
    assert!(q.dead().unwrap().is_empty());
    assert_eq!(q.due(9000, 10, &none()).unwrap()[0].id(), a.id());
}

#[test]
fn purge_drops_dead_jobs_for_good() {
    let Some(server) = redis() else { return };
    let q = queue(&server, "w1", Duration::from_secs(30));
    let jobs: Vec<PushJob> = (1..=3).map(|seq| PushJob::new("t1", "c1", seq, "{}".into(), 1000)).collect();
    q.enqueue(&jobs).unwrap();
    for job in q.due(1000, 10, &none()).unwrap() {
        q.bury(&job, "HTTP 404", 7000).unwrap();
    }
    assert_eq!(q.purge(Some("no-such-job")).unwrap(), 0);
    assert_eq!(q.purge(Some(&jobs[0].id())).unwrap(), 1);
    assert_eq!(q.dead().unwrap().len(), 2);
    assert_eq!(q.purge(None).unwrap(), 2);
    assert!(q.dead().unwrap().is_empty());
    assert_eq!(q.revive(None, 8000).unwrap(), 0, "nothing left to revive");
}

#[test]
fn a_dead_workers_job_is_reclaimed_after_the_lease() {
    let Some(server) = redis() else { return };
    let lease = Duration::from_millis(200);
    let a = queue(&server, "worker-a", lease);
    let b = queue(&server, "worker-b", lease);
    let job = PushJob::new("t1", "c1", 1, "{}".into(), 1000);
    b.enqueue(std::slice::from_ref(&job)).unwrap();

    let taken = a.due(1000, 10, &none()).unwrap();
    assert_eq!(taken.len(), 1);
    let leased_at = Instant::now();
    drop(a); // worker A dies without settling the job

    assert!(b.due(1000, 10, &none()).unwrap().is_empty(), "B must not take a job A still holds");
    assert_eq!(b.depth().unwrap(), 1, "A's job is still pending");
    std::thread::sleep(lease.saturating_sub(leased_at.elapsed()) + Duration::from_millis(100));

    let reclaimed = b.due(1000, 10, &none()).unwrap();
    assert_eq!(reclaimed.len(), 1, "B reclaims A's job once the lease has expired");
    assert_eq!(reclaimed[0].receipt, taken[0].receipt, "the same stream entry");
    assert_eq!(unleased(reclaimed[0].clone()), job);
    b.ack(&reclaimed[0]).unwrap();
    assert_eq!(b.depth().unwrap(), 0);
    std::thread::sleep(lease + Duration::from_millis(50));
    assert!(b.due(1000, 10, &none()).unwrap().is_empty(), "an acknowledged job is not reclaimed");
}

#[test]
fn an_unreachable_redis_is_a_clear_error_without_the_password() {
    let err = RedisQueue::connect(RedisQueueOptions {
        url: "redis://:secretpw@127.0.0.1:1/".into(),
        ..RedisQueueOptions::default()
    })
    .unwrap_err();
    assert!(matches!(err, StoreError::Redis { kind: RedisFailure::Refused, .. }), "{err:?}");
    let err = err.to_string();
    assert!(err.contains("cannot connect to Redis at redis://:***@127.0.0.1:1/"), "{err}");
    assert!(!err.contains("secretpw"), "{err}");
}

#[test]
fn urls_are_shown_without_passwords() {
    assert_eq!(redact_url("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
    assert_eq!(redact_url("redis://user:pw@host:6379/0"), "redis://user:***@host:6379/0");
    assert_eq!(redact_url("redis://:p@ss@host"), "redis://:***@host");
    assert_eq!(redact_url("redis+unix:///run/redis.sock?db=1&pass=pw"), "redis+unix:///run/redis.sock?db=1&pass=***");
    let options = RedisQueueOptions { url: "redis://:pw123@h/".into(), ..RedisQueueOptions::default() };
    assert!(!format!("{options:?}").contains("pw123"));
    assert!(options.consumer.ends_with(&format!("-{}", std::process::id())));
}

mod forwarder;
