//! Reading the log back: the walk over every segment at open, telling a torn tail (drop
//! it) from corruption (stop), and [`repair`], the way out of the latter.

use super::disk::{io_error, list_segments, load_checkpoint, segment_path, sync_dir, truncate_segment};
use super::record::{decode, peek_lsn, HEADER};
use super::{Cut, Lsn, RepairReport, WalError};
use std::fs;
use std::path::Path;

/// Where the walk stopped early.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    /// Index into [`Walk::firsts`] of the segment with the bad bytes.
    pub index: usize,
    pub offset: u64,
    pub file_len: u64,
    pub reason: &'static str,
    /// True when everything from `offset` on may be the one unsynced write a crash tore:
    /// the last segment, and no later sync unit follows.
    pub tail: bool,
}

/// What the walk found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// First LSNs of every segment listed, in order.
    pub firsts: Vec<u64>,
    /// The last valid record's LSN (0 if none).
    pub last_lsn: u64,
    /// The LSN the last segment expects next, and its valid length: where appends go on.
    pub tail_next: u64,
    pub tail_len: u64,
    pub problem: Option<Problem>,
}

/// Walks every segment in order, checking each record (checksum, dense LSNs, segments
/// that continue each other), and hands each valid record to `on_record`. Stops at the
/// first problem. Only I/O failures are errors here; what a problem means is the
/// caller's decision (open: tail or corrupt; repair: cut).
pub(crate) fn walk(dir: &Path, checkpoint: u64, mut on_record: impl FnMut(u64, &[u8])) -> Result<Walk, WalError> {
    let mut walk = Walk { firsts: list_segments(dir)?, ..Walk::default() };
    let count = walk.firsts.len();
    for index in 0..count {
        let first = walk.firsts[index];
        let path = segment_path(dir, first);
        let data = fs::read(&path).map_err(io_error("read", &path))?;
        let file_len = data.len() as u64;
        // Segments behind the checkpoint may be gone, so a jump is fine up to it.
        if first <= walk.last_lsn || first > walk.last_lsn.max(checkpoint) + 1 {
            let reason = "the segment does not continue the LSN sequence";
            walk.problem = Some(Problem { index, offset: 0, file_len, reason, tail: false });
            return Ok(walk);
        }
        let (expected, end, bad) = scan_segment(&data, first, &mut on_record);
        walk.last_lsn = expected - 1;
        walk.tail_next = expected;
        walk.tail_len = end as u64;
        if let Some(reason) = bad {
            let tail = index + 1 == count && !later_unit_follows(&data, end, expected);
            walk.problem = Some(Problem { index, offset: end as u64, file_len, reason, tail });
            return Ok(walk);
        }
    }
    Ok(walk)
}

/// Decodes the records of one segment from its start. Returns the LSN expected next,
/// the end of the last valid record, and why decoding stopped early, if it did.
fn scan_segment(data: &[u8], first: u64, on_record: &mut impl FnMut(u64, &[u8])) -> (u64, usize, Option<&'static str>) {
    let (mut expected, mut at) = (first, 0);
    loop {
        match decode(data, at) {
            Ok(None) => return (expected, at, None),
            Ok(Some(record)) if record.lsn != expected => return (expected, at, Some("unexpected LSN")),
            Ok(Some(record)) => {
                on_record(record.lsn, &data[record.payload]);
                expected += 1;
                at += record.size;
            }
            Err(reason) => return (expected, at, Some(reason)),
        }
    }
}

/// Whether a valid record that starts a sync unit, with an LSN at or above `expected`,
/// lies anywhere in `data[from..]`. Such a record was written after the unit holding the
/// bad bytes had been synced, so those bytes were durable once: corruption, not a tear.
/// The LSN filter keeps the byte-by-byte search cheap on garbage.
fn later_unit_follows(data: &[u8], from: usize, expected: u64) -> bool {
    let most = ((data.len() - from) / HEADER) as u64;
    (from..data.len().saturating_sub(HEADER - 1)).any(|at| {
        let plausible = peek_lsn(data, at).is_some_and(|lsn| lsn >= expected && lsn - expected <= most);
        plausible && matches!(decode(data, at), Ok(Some(r)) if r.unit_start && r.lsn >= expected)
    })
}

/// Segments wholly behind `checkpoint`: all their records are applied elsewhere. The
/// last segment is never among them (appends go there).
pub(crate) fn behind(firsts: &[u64], checkpoint: u64) -> Vec<u64> {
    firsts.windows(2).filter(|pair| pair[1] <= checkpoint + 1).map(|pair| pair[0]).collect()
}

/// Removes segments, then makes the removal durable with one directory `fsync`.
pub(crate) fn remove_segments(dir: &Path, firsts: &[u64]) -> Result<(), WalError> {
    if firsts.is_empty() {
        return Ok(());
    }
    for &first in firsts {
        let path = segment_path(dir, first);
        fs::remove_file(&path).map_err(io_error("remove", &path))?;
    }
    sync_dir(dir).map_err(io_error("fsync", dir))
}

/// Open-time handling of a walk's problem: corruption is an error naming the way out; a
/// torn tail is cut off (durably, so that later appends start clean) with a warning.
pub(crate) fn settle_tail(dir: &Path, walk: &Walk) -> Result<Option<Cut>, WalError> {
    let Some(problem) = &walk.problem else { return Ok(None) };
    let segment = segment_path(dir, walk.firsts[problem.index]);
    if !problem.tail {
        return Err(WalError::Corrupt { segment, offset: problem.offset, reason: problem.reason });
    }
    let dropped_bytes = problem.file_len - problem.offset;
    tracing::warn!(
        segment = %segment.display(),
        offset = problem.offset,
        dropped_bytes,
        reason = problem.reason,
        "write-ahead log: dropping a torn tail (a write the last crash interrupted; never acknowledged)"
    );
    truncate_segment(&segment, problem.offset)?;
    Ok(Some(Cut { segment, offset: problem.offset, dropped_bytes, reason: problem.reason }))
}

/// Cuts the log at its first bad record, whatever follows: truncates that segment there
/// (removes it when nothing valid precedes the cut) and removes every later segment. The
/// records from the cut on are lost; the report says how much was dropped. Run it only
/// while no [`super::Wal`] has the directory open.
pub(crate) fn repair(dir: &Path) -> Result<RepairReport, WalError> {
    let checkpoint = load_checkpoint(dir)?;
    let walk = walk(dir, checkpoint, |_, _| {})?;
    let mut report = RepairReport { last_lsn: Lsn(walk.last_lsn.max(checkpoint)), ..RepairReport::default() };
    let Some(problem) = walk.problem else { return Ok(report) };
    let segment = segment_path(dir, walk.firsts[problem.index]);
    let mut removed = walk.firsts[problem.index + 1..].to_vec();
    if problem.offset == 0 {
        removed.insert(0, walk.firsts[problem.index]);
    }
    for &first in &removed {
        let path = segment_path(dir, first);
        report.dropped_bytes += fs::metadata(&path).map_err(io_error("stat", &path))?.len();
        report.removed_segments.push(path);
    }
    if problem.offset > 0 {
        truncate_segment(&segment, problem.offset)?;
        report.dropped_bytes += problem.file_len - problem.offset;
    }
    remove_segments(dir, &removed)?;
    tracing::warn!(
        segment = %segment.display(),
        offset = problem.offset,
        dropped_bytes = report.dropped_bytes,
        removed_segments = removed.len(),
        "write-ahead log repaired: cut at the first bad record"
    );
    let dropped_here = problem.file_len - problem.offset;
    report.cut = Some(Cut { segment, offset: problem.offset, dropped_bytes: dropped_here, reason: problem.reason });
    Ok(report)
}
