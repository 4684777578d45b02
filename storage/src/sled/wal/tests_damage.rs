//! Damaged logs: torn tails are dropped, corruption stops open, repair cuts it.

use super::tests::{committed_log, encoded, lsns, open, open_small, segment_names, write};
use super::*;
use std::fs::{self, OpenOptions};
use std::io::Write;

/// One record on disk: 16-byte header + 100-byte payload.
const RECORD: u64 = 116;

fn append_raw(path: &Path, bytes: &[u8]) {
    OpenOptions::new().append(true).open(path).unwrap().write_all(bytes).unwrap();
}

fn overwrite(path: &Path, offset: usize, bytes: &[u8]) {
    let mut data = fs::read(path).unwrap();
    data[offset..offset + bytes.len()].copy_from_slice(bytes);
    fs::write(path, data).unwrap();
}

/// Deterministic garbage (an LCG), never a valid record.
fn garbage(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

#[tokio::test]
async fn torn_tails_are_dropped_and_later_appends_are_clean() {
    let half_record = encoded(4, 4)[..58].to_vec();
    let damages: [(&str, Vec<u8>); 4] = [
        ("garbage", garbage(100)),
        ("half record", half_record),
        ("zero-filled 4 KiB block", vec![0; 4096]),
        ("a few zero bytes", vec![0; 7]),
    ];
    for (name, damage) in damages {
        let dir = committed_log(3, false).await;
        let segment = disk::segment_path(dir.path(), 1);
        append_raw(&segment, &damage);

        let (wal, replay) = open(dir.path());
        let cut = replay.torn_tail().cloned().unwrap_or_else(|| panic!("{name}: no torn tail reported"));
        assert_eq!((cut.offset, cut.dropped_bytes), (3 * RECORD, damage.len() as u64), "{name}");
        assert_eq!(lsns(replay), vec![1, 2, 3], "{name}");
        assert_eq!(fs::metadata(&segment).unwrap().len(), 3 * RECORD, "{name}: truncated");
        write(&wal, 4, 5).await;
        drop(wal);
        let replay = open(dir.path()).1;
        assert!(replay.torn_tail().is_none(), "{name}");
        assert_eq!(lsns(replay), vec![1, 2, 3, 4, 5], "{name}");
    }
}

/// The kernel may write the pages of the last (unsynced) unit back in any order: a hole
/// at its start with its later records intact is still a torn tail, not corruption.
#[tokio::test]
async fn a_hole_inside_the_last_sync_unit_is_a_torn_tail() {
    let dir = committed_log(2, false).await;
    let segment = disk::segment_path(dir.path(), 1);
    append_raw(&segment, &encoded(3, 5));
    overwrite(&segment, 2 * RECORD as usize, &[0; 116]);
    let replay = open(dir.path()).1;
    assert_eq!(replay.torn_tail().map(|cut| cut.reason), Some("zero-filled"));
    assert_eq!(lsns(replay), vec![1, 2]);
}

#[tokio::test]
async fn corruption_in_the_middle_stops_open_and_repair_cuts_it() {
    let dir = committed_log(3, false).await;
    let segment = disk::segment_path(dir.path(), 1);
    overwrite(&segment, RECORD as usize + 40, b"X");

    let err = Wal::open(dir.path(), WalOptions::default()).err().expect("corrupt log must not open");
    assert!(matches!(&err, WalError::Corrupt { offset, reason: "checksum mismatch", .. } if *offset == RECORD));
    assert!(err.to_string().contains("a2ad admin repair"), "{err}");

    let report = Wal::repair(dir.path()).unwrap();
    let cut = report.cut.clone().expect("a cut");
    assert_eq!((cut.segment, cut.offset, cut.dropped_bytes), (segment.clone(), RECORD, 2 * RECORD));
    assert_eq!((report.dropped_bytes, report.last_lsn), (2 * RECORD, Lsn(1)));
    assert_eq!(Wal::repair(dir.path()).unwrap(), RepairReport { last_lsn: Lsn(1), ..Default::default() });

    let (wal, replay) = open(dir.path());
    assert_eq!(lsns(replay), vec![1]);
    write(&wal, 2, 2).await;
    drop(wal);
    assert_eq!(lsns(open(dir.path()).1), vec![1, 2]);
}

#[tokio::test]
async fn a_bad_record_that_is_not_in_the_last_segment_is_corruption() {
    let dir = committed_log(6, true).await;
    // The last record of the first segment: nothing follows it there, but later
    // segments exist, so it was synced before them.
    overwrite(&disk::segment_path(dir.path(), 1), RECORD as usize + 20, b"\xff");
    let err = Wal::open(dir.path(), WalOptions::default().segment_size(256)).err().expect("corrupt");
    assert!(matches!(err, WalError::Corrupt { offset, .. } if offset == RECORD));

    let report = Wal::repair(dir.path()).unwrap();
    assert_eq!(report.removed_segments.len(), 2);
    assert_eq!(report.dropped_bytes, 5 * RECORD);
    assert_eq!(segment_names(dir.path()), vec![1]);
    assert_eq!(lsns(open_small(dir.path()).1), vec![1]);
}

#[tokio::test]
async fn a_missing_segment_is_corruption() {
    let dir = committed_log(6, true).await;
    fs::remove_file(disk::segment_path(dir.path(), 3)).unwrap();
    let err = Wal::open(dir.path(), WalOptions::default()).err().expect("gap");
    assert!(
        matches!(&err, WalError::Corrupt { segment, offset: 0, .. } if *segment == disk::segment_path(dir.path(), 5))
    );
    let report = Wal::repair(dir.path()).unwrap();
    assert_eq!(report.removed_segments, vec![disk::segment_path(dir.path(), 5)]);
    assert_eq!(lsns(open_small(dir.path()).1), vec![1, 2]);
}

#[tokio::test]
async fn a_valid_record_with_a_later_lsn_after_a_bad_one_is_corruption() {
    let dir = committed_log(2, false).await;
    let segment = disk::segment_path(dir.path(), 1);
    // Record 3 lost to garbage, then a unit that starts at 4: it was synced after 3.
    let mut tail = garbage(116);
    tail.extend_from_slice(&encoded(4, 4));
    append_raw(&segment, &tail);
    let err = Wal::open(dir.path(), WalOptions::default()).err().expect("corrupt");
    assert!(matches!(err, WalError::Corrupt { offset, .. } if offset == 2 * RECORD));
}

#[tokio::test]
async fn an_unreadable_checkpoint_stops_open() {
    let dir = committed_log(1, false).await;
    fs::write(dir.path().join(disk::CHECKPOINT_FILE), b"not a checkpoint").unwrap();
    assert!(matches!(Wal::open(dir.path(), WalOptions::default()), Err(WalError::BadCheckpoint { .. })));
    // A crash between writing the temporary file and the rename leaves the old one.
    disk::store_checkpoint(dir.path(), 1).unwrap();
    fs::write(dir.path().join("checkpoint.tmp"), b"half").unwrap();
    let replay = open(dir.path()).1;
    assert_eq!((replay.checkpoint(), replay.len()), (Lsn(1), 0));
    assert!(!dir.path().join("checkpoint.tmp").exists());
}
