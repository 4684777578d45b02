//! The record format, and [`Batch`]: encoded records waiting for the disk.
//!
//! ```text
//! offset  size  field
//!      0     4  length of the payload (u32 LE); bit 31 = UNIT_START (see below)
//!      4     4  CRC32 (IEEE, crc32fast) of bytes 0..4 and 8..16+length
//!      8     8  LSN (u64 LE); dense: every record's LSN is the previous one's + 1
//!     16     n  payload
//! ```
//!
//! The checksum covers the length and the LSN as well as the payload, so a flipped bit in
//! any field is caught, not only in the payload.
//!
//! `UNIT_START` marks the first record of each *sync unit*: the bytes one `write` + one
//! `fdatasync` made durable. Only the last unit of the log can be unsynced at a crash, and
//! the kernel may write its pages back in any order, so a hole inside the last unit with
//! valid records after it is a torn tail, not corruption. A valid record that starts a
//! *later* unit proves the unit before it was synced (and acknowledged), so a bad record
//! before it is real corruption.

use std::ops::Range;

/// Bytes before the payload.
pub(crate) const HEADER: usize = 16;
/// Bit 31 of the length field: this record starts a sync unit.
pub(crate) const UNIT_START: u32 = 1 << 31;
/// The largest payload the length field can carry.
pub(crate) const MAX_PAYLOAD: usize = (UNIT_START - 1) as usize;

/// One record read back from a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub lsn: u64,
    /// Where the payload lies in the buffer that was decoded.
    pub payload: Range<usize>,
    /// Header plus payload.
    pub size: usize,
    pub unit_start: bool,
}

/// Why the bytes at an offset are not a record.
pub(crate) type BadReason = &'static str;

fn checksum(record: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&record[0..4]);
    hasher.update(&record[8..]);
    hasher.finalize()
}

fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(bytes)
}

fn read_u64(buf: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// The LSN field of a header starting at `at`, without checking anything (a cheap filter
/// for the scan that looks for later sync units).
pub(crate) fn peek_lsn(buf: &[u8], at: usize) -> Option<u64> {
    (buf.len() >= at + HEADER).then(|| read_u64(buf, at + 8))
}

/// Decodes the record at `buf[at..]`. `Ok(None)` is a clean end (no bytes left).
pub(crate) fn decode(buf: &[u8], at: usize) -> Result<Option<Decoded>, BadReason> {
    let rest = &buf[at.min(buf.len())..];
    if rest.is_empty() {
        return Ok(None);
    }
    if rest.len() < HEADER {
        return Err(if rest.iter().all(|&b| b == 0) { "zero-filled" } else { "truncated header" });
    }
    if rest[..HEADER].iter().all(|&b| b == 0) {
        return Err("zero-filled");
    }
    let field = read_u32(rest, 0);
    let len = (field & !UNIT_START) as usize;
    if rest.len() - HEADER < len {
        return Err("record runs past the end of the segment");
    }
    let size = HEADER + len;
    if checksum(&rest[..size]) != read_u32(rest, 4) {
        return Err("checksum mismatch");
    }
    let payload = at + HEADER..at + size;
    Ok(Some(Decoded { lsn: read_u64(rest, 8), payload, size, unit_start: field & UNIT_START != 0 }))
}

/// Encoded records in LSN order, one buffer, with each record's end offset.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    /// `(lsn, end offset in bytes)` per record.
    records: Vec<(u64, usize)>,
}

impl Batch {
    /// Appends one record. The caller checked `payload.len() <= MAX_PAYLOAD`.
    pub fn push(&mut self, lsn: u64, payload: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&[0; 4]);
        self.bytes.extend_from_slice(&lsn.to_le_bytes());
        self.bytes.extend_from_slice(payload);
        self.seal(start);
        self.records.push((lsn, self.bytes.len()));
    }

    fn seal(&mut self, start: usize) {
        let end = self.records.iter().map(|&(_, end)| end).find(|&end| end > start).unwrap_or(self.bytes.len());
        let crc = checksum(&self.bytes[start..end]);
        self.bytes[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    /// Moves every record of `other` to the end of this batch.
    pub fn extend(&mut self, mut other: Batch) {
        if self.bytes.is_empty() {
            *self = other;
            return;
        }
        let base = self.bytes.len();
        self.bytes.append(&mut other.bytes);
        self.records.extend(other.records.into_iter().map(|(lsn, end)| (lsn, base + end)));
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The LSN of record `index`.
    pub fn lsn(&self, index: usize) -> u64 {
        self.records[index].0
    }

    /// The size in bytes of the first `count` records.
    pub fn prefix_size(&self, count: usize) -> usize {
        count.checked_sub(1).map_or(0, |last| self.records[last].1)
    }

    /// How many leading records fit in `room` bytes (at least one, so that a record always
    /// makes progress into an empty segment).
    pub fn fitting(&self, room: u64) -> usize {
        let fit = self.records.iter().take_while(|&&(_, end)| end as u64 <= room).count();
        fit.max(1).min(self.records.len())
    }

    /// Marks the first record as the start of a sync unit (and re-seals its checksum).
    pub fn mark_unit_start(&mut self) {
        if self.records.is_empty() {
            return;
        }
        let field = read_u32(&self.bytes, 0) | UNIT_START;
        self.bytes[0..4].copy_from_slice(&field.to_le_bytes());
        self.seal(0);
    }

    /// The bytes of the first `count` records.
    pub fn prefix(&self, count: usize) -> &[u8] {
        &self.bytes[..self.prefix_size(count)]
    }

    /// Drops the first `count` records (they are durable).
    pub fn drain_front(&mut self, count: usize) {
        let cut = self.prefix_size(count);
        self.bytes.drain(..cut);
        self.records.drain(..count);
        for record in &mut self.records {
            record.1 -= cut;
        }
    }
}
