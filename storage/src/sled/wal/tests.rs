//! Log tests: order, group commit, checkpoints, rollover, crashes, a failing disk.
//! Every loop is bounded; nothing asserts on timing.

use super::disk::{Disk, OsDisk, SegmentFile};
use super::record::Batch;
use super::*;
use std::fs;
use std::io;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

pub(super) fn payload(i: u64) -> Vec<u8> {
    let mut bytes = format!("record {i} ").into_bytes();
    bytes.resize(100, b'a' + (i % 26) as u8);
    bytes
}

pub(super) fn open(dir: &Path) -> (Wal, Replay) {
    Wal::open(dir, WalOptions::default()).expect("open")
}

pub(super) fn open_small(dir: &Path) -> (Wal, Replay) {
    // 256-byte segments hold two 116-byte records.
    Wal::open(dir, WalOptions::default().segment_size(256)).expect("open")
}

/// Appends and commits records `from..=to`, one commit each (so one sync unit each).
pub(super) async fn write(wal: &Wal, from: u64, to: u64) {
    for i in from..=to {
        let lsn = wal.append(&payload(i)).expect("append");
        assert_eq!(lsn, Lsn(i));
        wal.commit(lsn).await.expect("commit");
    }
}

/// The replay as `(lsn, payload matches payload(lsn))`, checked, returning the LSNs.
pub(super) fn lsns(replay: Replay) -> Vec<u64> {
    replay
        .map(|record| {
            assert_eq!(record.payload, payload(record.lsn.0), "payload of {}", record.lsn);
            record.lsn.0
        })
        .collect()
}

pub(super) fn segment_names(dir: &Path) -> Vec<u64> {
    disk::list_segments(dir).expect("list")
}

/// A closed log of records `1..=n`, each committed on its own (one sync unit each), with
/// default or (`small`) 256-byte segments.
pub(super) async fn committed_log(n: u64, small: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = if small { open_small(dir.path()) } else { open(dir.path()) };
    write(&wal, 1, n).await;
    dir
}

/// The encoded bytes of records `from..=to`, as the writer would put them in one unit.
pub(super) fn encoded(from: u64, to: u64) -> Vec<u8> {
    let mut batch = Batch::default();
    for i in from..=to {
        batch.push(i, &payload(i));
    }
    batch.mark_unit_start();
    batch.prefix((to - from + 1) as usize).to_vec()
}

#[tokio::test]
async fn append_commit_reopen_replays_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, replay) = open(dir.path());
    assert_eq!(replay.len(), 0);
    write(&wal, 1, 20).await;
    assert_eq!(wal.durable_lsn(), Lsn(20));
    drop(wal);
    let (wal, replay) = open(dir.path());
    assert!(replay.torn_tail().is_none());
    assert_eq!(lsns(replay), (1..=20).collect::<Vec<_>>());
    // Appends go on after the replayed records, in the same segment.
    write(&wal, 21, 22).await;
    drop(wal);
    assert_eq!(lsns(open(dir.path()).1), (1..=22).collect::<Vec<_>>());
    assert_eq!(segment_names(dir.path()), vec![1]);
}

#[tokio::test]
async fn close_writes_pending_records_and_refuses_more() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path());
    wal.append(&payload(1)).unwrap();
    wal.close();
    assert!(matches!(wal.append(&payload(2)), Err(WalError::Closed)));
    assert!(matches!(wal.commit(Lsn(1)).await, Ok(())));
    assert_eq!(lsns(open(dir.path()).1), vec![1]);
}

#[tokio::test]
async fn commit_of_an_unknown_lsn_and_a_too_large_record_fail() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open_small(dir.path());
    assert!(matches!(wal.commit(Lsn(1)).await, Err(WalError::BeyondLog { lsn: 1, last: 0 })));
    assert!(matches!(wal.append(&[0; 241]), Err(WalError::TooLarge { len: 241, max: 240 })));
    assert_eq!(wal.append(&[7; 240]).unwrap(), Lsn(1));
    wal.commit(Lsn(1)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_committers_share_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path());
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let wal = wal.clone();
            tokio::spawn(async move {
                for _ in 0..20 {
                    let lsn = wal.append(&payload(0)).unwrap();
                    wal.commit(lsn).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let stats = wal.stats();
    assert_eq!(stats.waiters_served, 320);
    assert_eq!(stats.records_written, 320);
    assert!(stats.batches <= stats.waiters_served);
    drop(wal);
    let replay = open(dir.path()).1;
    assert_eq!(replay.map(|r| r.lsn.0).collect::<Vec<_>>(), (1..=320).collect::<Vec<_>>());
}

/// Deterministic batching: while the first sync is held, 63 more commits queue up; they
/// are all served by the one next batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_queued_during_a_sync_ride_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let (wal, _) = open_faulty(dir.path(), &faults);
    *faults.hold_syncs.lock().unwrap() = true;
    let first = spawn_commit(&wal);
    wait_until(|| faults.syncs_entered.load(Ordering::SeqCst) == 1);
    let rest: Vec<_> = (0..63).map(|_| spawn_commit(&wal)).collect();
    wait_until(|| wal.shared.lock_queue().waiters.len() == 63);
    faults.release();
    first.await.unwrap().unwrap();
    for commit in rest {
        commit.await.unwrap().unwrap();
    }
    let stats = wal.stats();
    assert_eq!((stats.batches, stats.syncs, stats.waiters_served), (2, 2, 64));
}

fn spawn_commit(wal: &Wal) -> tokio::task::JoinHandle<Result<(), WalError>> {
    let wal = wal.clone();
    tokio::spawn(async move {
        let lsn = wal.append(&payload(0))?;
        wal.commit(lsn).await
    })
}

/// Polls `done` for up to 10 s (bounded; a failure names the wait, not a time).
fn wait_until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "condition never became true");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[tokio::test]
async fn segments_roll_over_without_splitting_records() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open_small(dir.path());
    // One batch of ten records: five segments, one sync each.
    for i in 1..=10 {
        wal.append(&payload(i)).unwrap();
    }
    wal.commit(Lsn(10)).await.unwrap();
    let stats = wal.stats();
    assert_eq!((stats.batches, stats.syncs), (1, 5));
    assert_eq!(segment_names(dir.path()), vec![1, 3, 5, 7, 9]);
    for first in segment_names(dir.path()) {
        let len = fs::metadata(disk::segment_path(dir.path(), first)).unwrap().len();
        assert_eq!(len, 232, "two whole records in segment {first}");
    }
    drop(wal);
    assert_eq!(lsns(open_small(dir.path()).1), (1..=10).collect::<Vec<_>>());
}

#[tokio::test]
async fn checkpoint_deletes_segments_behind_it_and_replay_starts_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open_small(dir.path());
    write(&wal, 1, 10).await;
    assert!(matches!(wal.checkpoint(Lsn(11)), Err(WalError::NotDurable { lsn: 11, durable: 10 })));
    // Segments 1-2 and 3-4 are wholly behind 5; 5-6 still holds 6.
    assert_eq!(wal.checkpoint(Lsn(5)).unwrap(), 2);
    assert_eq!(segment_names(dir.path()), vec![5, 7, 9]);
    assert_eq!(wal.checkpoint(Lsn(3)).unwrap(), 0, "an older checkpoint does nothing");
    assert_eq!(wal.checkpoint_lsn(), Lsn(5));
    drop(wal);
    let (wal, replay) = open_small(dir.path());
    assert_eq!(replay.checkpoint(), Lsn(5));
    assert_eq!(lsns(replay), vec![6, 7, 8, 9, 10]);
    // A checkpoint of everything keeps the active segment; appends go on after it.
    assert_eq!(wal.checkpoint(Lsn(10)).unwrap(), 2);
    assert_eq!(segment_names(dir.path()), vec![9]);
    write(&wal, 11, 11).await;
    drop(wal);
    let replay = open_small(dir.path()).1;
    assert_eq!((replay.checkpoint(), lsns(replay)), (Lsn(10), vec![11]));
}

#[tokio::test]
async fn a_checkpoint_ahead_of_the_log_starts_a_new_segment() {
    let dir = committed_log(3, false).await;
    // As after a repair that cut records the store had already applied.
    disk::store_checkpoint(dir.path(), 7).unwrap();
    let (wal, replay) = open(dir.path());
    assert_eq!(replay.len(), 0);
    write(&wal, 8, 9).await;
    drop(wal);
    assert_eq!(segment_names(dir.path()), vec![1, 8]);
    assert_eq!(lsns(open(dir.path()).1), vec![8, 9]);
}

/// A crash: the directory as the disk holds it at an arbitrary moment (copied while
/// commits run), then the last unit torn at many offsets. Committed records are always
/// there; the rest is a clean prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_keeps_every_committed_record() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path());
    write(&wal, 1, 5).await;
    for i in 6..=9 {
        wal.append(&payload(i)).unwrap();
    }
    let racing = {
        let wal = wal.clone();
        tokio::spawn(async move { wal.commit(Lsn(9)).await })
    };
    let image = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), image.path());
    racing.await.unwrap().unwrap();
    let seen = lsns(open(image.path()).1);
    assert!(seen.len() >= 5 && seen.iter().copied().eq(1..=seen.len() as u64), "{seen:?}");
    drop(wal);

    let segment = disk::segment_path(dir.path(), 1);
    let committed = fs::read(&segment).unwrap();
    let torn = encoded(10, 12);
    for cut in [0, 1, 15, 16, 17, 60, 116, 117, 300, torn.len() - 1, torn.len()] {
        let image = tempfile::tempdir().unwrap();
        let mut bytes = committed.clone();
        bytes.extend_from_slice(&torn[..cut]);
        fs::write(disk::segment_path(image.path(), 1), &bytes).unwrap();
        let replay = open(image.path()).1;
        let whole = (cut / 116) as u64;
        assert_eq!(replay.torn_tail().is_some(), cut % 116 != 0, "cut at {cut}");
        assert_eq!(lsns(replay), (1..=9 + whole).collect::<Vec<_>>(), "cut at {cut}");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The disk fails (ENOSPC mid-write, leaving half the bytes; then a failing fdatasync),
/// every waiter of the failed batches gets the error, and once the disk heals the next
/// commit writes everything, with no garbage left in the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_disk_fails_the_batch_then_heals() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let (wal, _) = open_faulty(dir.path(), &faults);
    write(&wal, 1, 1).await;

    faults.fail_writes.store(true, Ordering::SeqCst);
    let a = wal.append(&payload(2)).unwrap();
    let b = wal.append(&payload(3)).unwrap();
    let (ra, rb) = tokio::join!(wal.commit(a), wal.commit(b));
    for result in [ra, rb] {
        assert!(
            matches!(result, Err(WalError::Io { op: "write", ref source, .. }) if source.raw_os_error() == Some(28))
        );
    }
    faults.fail_writes.store(false, Ordering::SeqCst);
    faults.fail_syncs.store(true, Ordering::SeqCst);
    let c = wal.append(&payload(4)).unwrap();
    assert!(matches!(wal.commit(c).await, Err(WalError::Io { op: "fdatasync", .. })));
    assert_eq!(wal.durable_lsn(), Lsn(1));

    faults.fail_syncs.store(false, Ordering::SeqCst);
    let d = wal.append(&payload(5)).unwrap();
    wal.commit(d).await.unwrap();
    wal.commit(a).await.unwrap();
    let stats = wal.stats();
    assert!(stats.failed_batches >= 2, "{stats:?}");
    assert_eq!(wal.durable_lsn(), Lsn(5));
    drop(wal);
    let len = fs::metadata(disk::segment_path(dir.path(), 1)).unwrap().len();
    assert_eq!(len, 5 * 116, "no half-written bytes left behind");
    let replay = open(dir.path()).1;
    assert!(replay.torn_tail().is_none());
    assert_eq!(lsns(replay), vec![1, 2, 3, 4, 5]);
}

pub(super) fn open_faulty(dir: &Path, faults: &Arc<Faults>) -> (Wal, Replay) {
    let disk = Arc::new(FaultyDisk { faults: Arc::clone(faults) });
    Wal::open(dir, WalOptions::default().disk(disk)).expect("open")
}

/// Switches for [`FaultyDisk`].
#[derive(Default)]
pub(super) struct Faults {
    /// Writes put half their bytes down, then fail with ENOSPC.
    pub fail_writes: AtomicBool,
    /// `fdatasync` fails with EIO.
    pub fail_syncs: AtomicBool,
    /// `fdatasync` waits (at most 10 s) while this is true.
    pub hold_syncs: Mutex<bool>,
    pub released: Condvar,
    pub syncs_entered: AtomicU64,
}

impl Faults {
    fn release(&self) {
        *self.hold_syncs.lock().unwrap() = false;
        self.released.notify_all();
    }
}

pub(super) struct FaultyDisk {
    faults: Arc<Faults>,
}

struct FaultyFile {
    inner: Box<dyn SegmentFile>,
    faults: Arc<Faults>,
}

impl Disk for FaultyDisk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>> {
        Ok(Box::new(FaultyFile { inner: OsDisk.create(path)?, faults: Arc::clone(&self.faults) }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>> {
        Ok(Box::new(FaultyFile { inner: OsDisk.open(path)?, faults: Arc::clone(&self.faults) }))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        OsDisk.sync_dir(dir)
    }
}

impl SegmentFile for FaultyFile {
    fn write_all_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.faults.fail_writes.load(Ordering::SeqCst) {
            self.inner.write_all_at(&buf[..buf.len() / 2], offset)?;
            return Err(io::Error::from_raw_os_error(28));
        }
        self.inner.write_all_at(buf, offset)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.faults.syncs_entered.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut held = self.faults.hold_syncs.lock().unwrap();
        while *held && Instant::now() < deadline {
            held = self.faults.released.wait_timeout(held, Duration::from_millis(50)).unwrap().0;
        }
        drop(held);
        if self.faults.fail_syncs.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(5));
        }
        self.inner.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
}
