//! The stored value of a task (`t` ‖ task id): its stamp, its record, and the events of
//! the step that wrote it.
//!
//! Why a step's events ride in the record's value: sled 0.34 copies a key's whole leaf
//! node on every insert, and a leaf holds up to 16 keys, so each kilobyte-sized key a step
//! inserts costs a copy of a leaf full of kilobyte values. An echo turn wrote three (the
//! record and its two task snapshots), and they were most of the store's CPU per turn: raw
//! sled took 121-156 µs a turn for that layout and 57-59 µs for the same bytes as one value
//! (`benches/sled_shapes.rs`, BENCHMARKS.md, issue 15). So the events of the newest step
//! stay in the value, and become keys of their own (`e` ‖ task id ‖ seq) only when the next
//! step replaces the record ([`super::SledStore::put_task_json`]). The common task, new and
//! terminal in one step, is one value; a streamed task writes as many keys as before, one
//! step later.
//!
//! Layout after the 9-byte [`Stamp`]:
//! * `{` …: the record's JSON to the end, no events (every store before 2026-12-04, and a
//!   step whose events were too many or too large to carry: [`carries`]);
//! * [`TAG`] ‖ record length (u32 BE) ‖ record JSON ‖ { seq (u64 BE) ‖ length (u32 BE) ‖
//!   event JSON }*, the events in ascending order;
//! * [`TURNS`] ‖ count (u16 BE) ‖ { first (u64 BE) ‖ count (u32 BE) ‖ from (u32 BE) }*
//!   ‖ either of the above: the session turns whose messages the task's history holds
//!   ([`HeldTurn`], `sessions.rs`), since format 6;
//! * any of these packed with LZ4 (`sled/packed.rs`, first byte 2), when that makes it
//!   shorter: an echo task's body of record and two snapshots shrinks by more than half.

use super::index::Stamp;
use crate::sled::packed;
use crate::StoreError;
use std::borrow::Cow;
use std::ops::Range;

/// The first byte after the stamp of a value that carries events (JSON never starts so).
const TAG: u8 = 1;

/// The first byte of a body that starts with the session turns it holds (neither JSON nor
/// [`TAG`] nor [`packed::LZ4`]).
const TURNS: u8 = 4;

/// The most turns a value lists; the newest are kept (a session's history limit drops
/// older ones first: `sessions.rs`).
const MAX_TURNS: usize = u16::MAX as usize;

/// A session turn whose messages are the end of its task's history as that turn left it:
/// the session holds no copy of them (`sessions.rs`). `first` is the number of the turn's
/// first message in its session, `count` how many it appended, `from` where they start in
/// the task's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeldTurn {
    pub first: u64,
    pub count: u32,
    pub from: u32,
}

/// A step carries at most this many events in its record's value...
const MAX_EVENTS: usize = 8;
/// ...of at most this many bytes in all: a fire-hose step's thousands of events, or one
/// long artifact, go to keys at once, so that no large value is copied twice (sled keeps
/// a value over a quarter segment in a blob file, rewritten whole with each update).
const MAX_EVENT_BYTES: usize = 16 << 10;

/// One event carried in a task's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CarriedEvent<'a> {
    pub seq: u64,
    pub json: &'a [u8],
}

/// A stored task value, split: its body (unpacked when it was stored packed) and where
/// the record and the events lie in it.
#[derive(Debug)]
pub(super) struct TaskValue<'a> {
    body: Cow<'a, [u8]>,
    record: Range<usize>,
    events: Vec<(u64, Range<usize>)>,
    turns: Vec<HeldTurn>,
}

impl TaskValue<'_> {
    /// The record's JSON.
    pub fn record_json(&self) -> &[u8] {
        &self.body[self.record.clone()]
    }

    /// The carried events, in ascending order.
    pub fn events(&self) -> Vec<CarriedEvent<'_>> {
        self.events.iter().map(|(seq, at)| CarriedEvent { seq: *seq, json: &self.body[at.clone()] }).collect()
    }

    /// The session turns the task's history holds, oldest first.
    pub fn turns(&self) -> &[HeldTurn] {
        &self.turns
    }
}

/// Whether a step's `events` (seq, JSON) go in its record's value rather than to keys.
pub(super) fn carries<'a>(events: impl ExactSizeIterator<Item = &'a [u8]>) -> bool {
    events.len() <= MAX_EVENTS && events.map(<[u8]>::len).sum::<usize>() <= MAX_EVENT_BYTES
}

/// The value for `record_json` stored under `stamp`, carrying `events` and listing
/// `turns` (at most the newest [`MAX_TURNS`]); its body packed when that makes it shorter
/// (`sled/packed.rs`).
pub(super) fn encode(stamp: Stamp, record_json: &[u8], events: &[CarriedEvent<'_>], turns: &[HeldTurn]) -> Vec<u8> {
    let event_bytes: usize = events.iter().map(|e| 12 + e.json.len()).sum();
    let turns = &turns[turns.len().saturating_sub(MAX_TURNS)..];
    let mut body = Vec::with_capacity(8 + 16 * turns.len() + record_json.len() + event_bytes);
    if !turns.is_empty() {
        body.push(TURNS);
        body.extend_from_slice(&u16::try_from(turns.len()).unwrap_or(u16::MAX).to_be_bytes());
        for turn in turns {
            body.extend_from_slice(&turn.first.to_be_bytes());
            body.extend_from_slice(&turn.count.to_be_bytes());
            body.extend_from_slice(&turn.from.to_be_bytes());
        }
    }
    if events.is_empty() {
        body.extend_from_slice(record_json);
    } else {
        body.push(TAG);
        body.extend_from_slice(&length(record_json.len()).to_be_bytes());
        body.extend_from_slice(record_json);
        for event in events {
            body.extend_from_slice(&event.seq.to_be_bytes());
            body.extend_from_slice(&length(event.json.len()).to_be_bytes());
            body.extend_from_slice(event.json);
        }
    }
    let body = packed::pack(body);
    let mut value = Vec::with_capacity(Stamp::LEN + body.len());
    value.extend_from_slice(&stamp.encode());
    value.extend_from_slice(&body);
    value
}

/// Splits a stored value (stamp included) into its record's JSON and its events.
pub(super) fn parse(value: &[u8]) -> Result<TaskValue<'_>, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("task value: {what}"));
    let body = value.get(Stamp::LEN..).ok_or_else(|| corrupt("shorter than its stamp"))?;
    let body = packed::unpack(body, "task value")?;
    let mut at = 0;
    let turns = parse_turns(&body, &mut at).ok_or_else(|| corrupt("turns cut short"))?;
    if body.get(at) != Some(&TAG) {
        return Ok(TaskValue { record: at..body.len(), body, events: Vec::new(), turns });
    }
    at += 1;
    let record = span(&body, &mut at, 4).and_then(|len| span(&body, &mut at, read_len(&body[len])));
    let record = record.ok_or_else(|| corrupt("record cut short"))?;
    let mut events = Vec::new();
    while at < body.len() {
        let seq = span(&body, &mut at, 8).ok_or_else(|| corrupt("event cut short"))?;
        let json = span(&body, &mut at, 4)
            .and_then(|len| span(&body, &mut at, read_len(&body[len])))
            .ok_or_else(|| corrupt("event cut short"))?;
        events.push((u64::from_be_bytes(body[seq].try_into().unwrap_or_default()), json));
    }
    Ok(TaskValue { body, record, events, turns })
}

/// The turns a body starts with, if it does (moving `at` past them); `None` when cut short.
fn parse_turns(body: &[u8], at: &mut usize) -> Option<Vec<HeldTurn>> {
    if body.first() != Some(&TURNS) {
        return Some(Vec::new());
    }
    *at = 1;
    let count = usize::from(u16::from_be_bytes(body[span(body, at, 2)?].try_into().ok()?));
    let mut turns = Vec::with_capacity(count);
    for _ in 0..count {
        let first = u64::from_be_bytes(body[span(body, at, 8)?].try_into().ok()?);
        let count = u32::from_be_bytes(body[span(body, at, 4)?].try_into().ok()?);
        let from = u32::from_be_bytes(body[span(body, at, 4)?].try_into().ok()?);
        turns.push(HeldTurn { first, count, from });
    }
    Some(turns)
}

/// The next `n` bytes of `body` from `at`, moving `at` past them.
fn span(body: &[u8], at: &mut usize, n: usize) -> Option<Range<usize>> {
    let end = at.checked_add(n).filter(|&end| end <= body.len())?;
    let range = *at..end;
    *at = end;
    Some(range)
}

fn read_len(bytes: &[u8]) -> usize {
    u32::from_be_bytes(bytes.try_into().unwrap_or_default()) as usize
}

/// A length as stored: a record or event over 4 GiB is not something a step holds (the
/// request body limit is far below), so saturating cannot be reached in practice and
/// `parse` would then report the value as cut short rather than misread it.
fn length(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAMP: Stamp = Stamp { millis: 1000, state: 3 };

    #[test]
    fn a_value_without_events_is_the_stamp_and_the_json_as_before() {
        let value = encode(STAMP, b"{\"a\":1}", &[], &[]);
        assert_eq!(&value[Stamp::LEN..], b"{\"a\":1}", "readable by every older build");
        let parsed = parse(&value).unwrap();
        assert_eq!((parsed.record_json(), parsed.events().len()), (&b"{\"a\":1}"[..], 0));
    }

    #[test]
    fn events_round_trip_in_order() {
        let events = [CarriedEvent { seq: 4, json: b"{\"e\":4}" }, CarriedEvent { seq: 5, json: b"" }];
        let value = encode(STAMP, b"{\"a\":1}", &events, &[]);
        assert_eq!(Stamp::decode(&value), Some(STAMP));
        let parsed = parse(&value).unwrap();
        assert_eq!(parsed.record_json(), b"{\"a\":1}");
        assert_eq!(parsed.events(), events);
    }

    #[test]
    fn a_long_body_is_stored_packed_and_reads_the_same() {
        let record = format!("{{\"task\":\"{}\"}}", "history ".repeat(100));
        let event = format!("{{\"snapshot\":\"{}\"}}", "history ".repeat(100));
        let events = [CarriedEvent { seq: 7, json: event.as_bytes() }];
        let value = encode(STAMP, record.as_bytes(), &events, &[]);
        assert_eq!(value[Stamp::LEN], crate::sled::packed::LZ4);
        assert!(value.len() * 4 < record.len() + event.len(), "{} bytes", value.len());
        assert_eq!(Stamp::decode(&value), Some(STAMP));
        let parsed = parse(&value).unwrap();
        assert_eq!((parsed.record_json(), parsed.events()), (record.as_bytes(), events.to_vec()));
    }

    #[test]
    fn a_value_cut_short_is_corrupt_not_misread() {
        let value = encode(STAMP, b"{\"a\":1}", &[CarriedEvent { seq: 4, json: b"{\"e\":4}" }], &[]);
        for cut in [Stamp::LEN + 3, Stamp::LEN + 8, value.len() - 1] {
            let err = parse(&value[..cut]).unwrap_err();
            assert!(matches!(err, StoreError::Corrupt(ref m) if m.contains("cut short")), "{cut}: {err:?}");
        }
        assert!(parse(&value[..4]).is_err(), "shorter than a stamp");
    }

    #[test]
    fn turns_round_trip_before_the_record_and_events_and_are_checked_for_length() {
        let turns = [HeldTurn { first: 0, count: 2, from: 0 }, HeldTurn { first: 7, count: 2, from: 2 }];
        let events = [CarriedEvent { seq: 4, json: b"{\"e\":4}" }];
        for events in [&events[..], &[]] {
            let value = encode(STAMP, b"{\"a\":1}", events, &turns);
            let parsed = parse(&value).unwrap();
            assert_eq!(parsed.record_json(), b"{\"a\":1}");
            assert_eq!((parsed.events(), parsed.turns()), (events.to_vec(), &turns[..]));
            let err = parse(&value[..Stamp::LEN + 20]).unwrap_err();
            assert!(matches!(err, StoreError::Corrupt(ref m) if m.contains("cut short")), "{err:?}");
        }
    }

    #[test]
    fn only_a_few_small_events_are_carried() {
        let small = [b"{}".as_slice(); 8];
        assert!(carries(small.iter().copied()));
        assert!(!carries([b"{}".as_slice(); 9].iter().copied()), "too many");
        let large = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(!carries([large.as_slice()].iter().copied()), "too large");
    }
}
