//! A task's event log in the sled store: the events its record's value carries (the
//! newest step's, `task_value.rs`) and, before them, one key each (`e` ‖ task id ‖ seq,
//! the last `event_retention` of them, each packed when long: `sled/packed.rs`).

use super::index::{self, Prefix};
use super::task_value::{self, CarriedEvent};
use super::writes::Writes;
use super::SledStore;
use crate::sled::packed;
use crate::{LoggedEvent, Scope, StoreError};

impl SledStore {
    /// Adds to `batch` what a step's `events` change in the log, given the events the
    /// stored value carries (`previous`), and returns the events the new value carries.
    ///
    /// A step without events keeps the carried ones. Otherwise the carried events become
    /// keys, unless the step itself carries them (its replay, when the step was applied
    /// whole before a crash), and the step's events are carried when [`task_value::carries`]
    /// takes them, else written as keys. Either way the events past retention go.
    pub(super) fn event_writes<'a>(
        &self,
        task_id: &str,
        previous: &[CarriedEvent<'a>],
        events: &'a [LoggedEvent],
        batch: &mut Writes,
    ) -> Vec<CarriedEvent<'a>> {
        let Some(newest) = events.iter().map(|e| e.seq).max() else {
            return previous.to_vec();
        };
        let retained = |seq: u64| seq.saturating_add(self.event_retention) > newest;
        for event in previous {
            if retained(event.seq) && !events.iter().any(|e| e.seq == event.seq) {
                batch.insert(index::event_key(task_id, event.seq), packed::pack(event.json.to_vec()));
            }
        }
        let carry = task_value::carries(events.iter().map(|e| e.json.as_bytes()));
        let mut carried = Vec::new();
        for event in events {
            match carry {
                true if retained(event.seq) => {
                    carried.push(CarriedEvent { seq: event.seq, json: event.json.as_bytes() })
                }
                true => {}
                false => {
                    batch.insert(index::event_key(task_id, event.seq), packed::pack(event.json.as_bytes().to_vec()))
                }
            }
            if let Some(expired) = event.seq.checked_sub(self.event_retention) {
                batch.remove(index::event_key(task_id, expired));
            }
        }
        carried
    }

    /// The events of `task_id` after `after`, at most `limit`: its keys, then what its
    /// value carries past the last of them (a step a crash cut short can leave an event
    /// both carried and a key until its replay; it is read once).
    pub(super) fn events_of(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let value = match scope {
            Scope::Node => self.tasks.get(index::key(Prefix::Task, task_id.as_bytes()))?,
            _ => match self.scoped_task_bytes(scope, task_id)? {
                Some(value) => Some(value),
                None => return Ok(Vec::new()),
            },
        };
        let mut out = self.event_keys_after(task_id, after, limit)?;
        let Some(value) = value else { return Ok(out) };
        let from = out.last().map_or(after, |e| e.seq);
        let value = task_value::parse(&value)?;
        for event in value.events().into_iter().filter(|e| e.seq > from) {
            if out.len() >= limit {
                break;
            }
            out.push(LoggedEvent { seq: event.seq, json: utf8(event.json)?.into() });
        }
        Ok(out)
    }

    fn event_keys_after(&self, task_id: &str, after: u64, limit: usize) -> Result<Vec<LoggedEvent>, StoreError> {
        let start = index::event_key(task_id, after.saturating_add(1));
        let prefix = index::event_prefix(task_id);
        let mut out = Vec::new();
        for entry in self.tasks.range(start..).take(limit) {
            let (key, value) = entry?;
            if !key.starts_with(&prefix) {
                break;
            }
            let seq = u64::from_be_bytes(
                key[prefix.len()..].try_into().map_err(|_| StoreError::Corrupt("event key".into()))?,
            );
            out.push(LoggedEvent { seq, json: utf8(&packed::unpack(&value, "event")?)?.into() });
        }
        Ok(out)
    }

    /// How many events the task values carry (for `a2ad admin stats`: added to the keys).
    pub(super) fn carried_event_count(&self) -> Result<u64, StoreError> {
        let mut n = 0;
        for entry in self.tasks.scan_prefix([Prefix::Task as u8]) {
            let (_, value) = entry?;
            n += task_value::parse(&value)?.events().len() as u64;
        }
        Ok(n)
    }
}

fn utf8(json: &[u8]) -> Result<&str, StoreError> {
    std::str::from_utf8(json).map_err(|_| StoreError::Corrupt("event is not UTF-8".into()))
}
