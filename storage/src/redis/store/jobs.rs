//! A step's push jobs as its commit script adds them to the push stream.
//!
//! A job made for one config goes as its JSON. A job for every config of its task
//! ([`PushJob::for_every_config`], what the context actors hand a store that keeps the
//! configs beside the tasks) goes as a template: the script reads the task's config ids
//! (`HKEYS` of its configs' hash) and adds one job per config, so the configs are read in
//! the step's own commit, with no round trip before it and nothing read on the caller's
//! thread. A config stored (and acknowledged) before the step was submitted is seen by
//! the step: the script runs after it. The job's body is the step's event, taken from the
//! script's arguments rather than sent twice.

use super::RedisStore;
use crate::redis::link::ScriptCall;
use crate::{LoggedEvent, PushJob, StoreError, TaskRecord, Topology};

/// A job for every config, as the script fills it in: the JSON before the config id,
/// between it and the body, and after the body; and the `ARGV` index of its event.
struct Template {
    event_arg: usize,
    parts: [String; 3],
}

impl Template {
    /// `job`'s template; its event's JSON is `ARGV[event_arg]`.
    fn of(job: &PushJob, event_arg: usize) -> Result<Self, StoreError> {
        let blank = PushJob { config_id: String::new(), body: String::new(), ..job.clone() };
        let json = crate::redis::push_queue::encode(&blank)?;
        // Two empty strings of the job's own fields: no other string of it can hold an
        // unescaped quote (the task id is one of them).
        let (head, rest) = json.split_once(r#""configId":"""#).ok_or_else(Self::unexpected)?;
        let (middle, tail) = rest.split_once(r#""body":"""#).ok_or_else(Self::unexpected)?;
        let parts = [format!(r#"{head}"configId":"#), format!(r#"{middle}"body":"#), tail.to_owned()];
        Ok(Template { event_arg, parts })
    }

    fn unexpected() -> StoreError {
        StoreError::Corrupt("a push job's JSON has no configId or body field".into())
    }
}

impl RedisStore {
    /// The job part of a commit's arguments (`COMMIT_BODY` in `scripts.rs`): the count and
    /// the jobs made for one config, then the count and the templates of the jobs for every
    /// config. `event_args` holds the `ARGV` index of each of `events`' JSON. Returns the
    /// key of the task's configs when the script must read them (its last key).
    pub(super) fn job_args(
        &self,
        call: &mut ScriptCall,
        record: &TaskRecord,
        events: &[LoggedEvent],
        event_args: &[usize],
        jobs: &[PushJob],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let event_arg = |seq: u64| {
            let at = events.iter().position(|e| e.seq == seq);
            at.map(|at| event_args[at])
                .ok_or_else(|| StoreError::Corrupt(format!("a push job for event {seq}, not in its step")))
        };
        let (each, single): (Vec<&PushJob>, Vec<&PushJob>) = jobs.iter().partition(|j| j.is_for_every_config());
        let in_script = each.is_empty() || self.configs_in_step_slot(record);
        let made = match in_script {
            true => Vec::new(),
            false => self.jobs_of_stored_configs(record, events, &each)?,
        };
        call.arg(single.len() + made.len());
        for job in single.into_iter().chain(&made) {
            call.arg(crate::redis::push_queue::encode(job)?);
        }
        let templates: Vec<Template> = match in_script {
            true => each.iter().map(|job| Template::of(job, event_arg(job.event_seq)?)).collect::<Result<_, _>>()?,
            false => Vec::new(),
        };
        call.arg(templates.len());
        for template in &templates {
            call.arg(template.event_arg).arg(&template.parts[0]).arg(&template.parts[1]).arg(&template.parts[2]);
        }
        Ok((!templates.is_empty()).then(|| self.keys.push_configs(&record.task.id)))
    }

    /// Whether the script of `record`'s step may read its task's configs: their hash is in
    /// the step's hash slot (always for an id the node minted for its owner), or the store
    /// is one server, where a script's keys need not share a slot.
    fn configs_in_step_slot(&self, record: &TaskRecord) -> bool {
        self.options.topology == Topology::Single
            || self.keys.hinted(&record.task.id) == self.keys.of_owner(&record.owner)
    }

    /// The jobs for every config, made here from the config ids as stored: only for a
    /// task on a Redis Cluster whose id does not name its owner's shard (a task moved
    /// from sled), whose configs' hash is in another slot than its step. This read waits
    /// on this thread (ARCHITECTURE.md, "What may block": the one exception left).
    fn jobs_of_stored_configs(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        each: &[&PushJob],
    ) -> Result<Vec<PushJob>, StoreError> {
        let key = self.keys.push_configs(&record.task.id);
        let mut ids: Vec<String> =
            self.link.with_conn("list push configs", |conn| Ok(redis::cmd("HKEYS").arg(&key).query(conn)?))?;
        ids.sort();
        let mut jobs = Vec::with_capacity(each.len() * ids.len());
        for job in each {
            let Some(event) = events.iter().find(|e| e.seq == job.event_seq) else { continue };
            for id in &ids {
                jobs.push(PushJob { config_id: id.clone(), body: event.json.to_string(), ..(*job).clone() });
            }
        }
        Ok(jobs)
    }
}
