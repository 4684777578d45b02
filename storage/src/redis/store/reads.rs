//! The reads the request path makes once a task's shard is known: one command or one
//! pipeline each, scoped by the owner key stored beside the task, so that another owner's
//! task reads as absent without its record being decoded.

use super::{writes, RedisStore, FOLLOW_SLACK};
use crate::redis::keys::Shard;
use crate::redis::link::Request;
use crate::{LoggedEvent, Scope, StoreError, TaskRecord};
use redis::Value;

impl RedisStore {
    /// Task `task_id` of `shard` if it is in `scope` (one HMGET on the pipe): the read that
    /// both [`TaskStore::read_task`] and [`crate::TaskStoreExt::get_task`] make once the shard is known.
    pub(super) fn task_in(
        &self,
        shard: Shard,
        scope: Scope<'_>,
        task_id: &str,
    ) -> crate::StoreFuture<Option<TaskRecord>> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.keys.task(shard, task_id)).arg("o").arg("r");
        let reply = self.link.submit("read a task", self.link.lane_of(task_id.as_bytes()), Request::Cmd(cmd));
        let wanted = wanted_owner(scope);
        Box::pin(async move {
            let (owner, json): (Option<Vec<u8>>, Option<Vec<u8>>) = redis::from_owned_redis_value(reply.await?)
                .map_err(|e| StoreError::Corrupt(format!("a task read: {e}")))?;
            match (admits(&wanted, owner.as_deref()), json) {
                (true, Some(json)) => Ok(Some(Self::decode(&json)?)),
                _ => Ok(None),
            }
        })
    }

    /// The retained events after `after` of task `task_id` of `shard`, at most `limit`, if
    /// it is in `scope` (one pipeline: its owner, last seq and stream), for both
    /// [`TaskStore::read_events`] and [`crate::TaskStoreExt::events_after`].
    pub(super) fn events_in(
        &self,
        shard: Shard,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> crate::StoreFuture<Vec<LoggedEvent>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET").arg(self.keys.task(shard, task_id)).arg("o").arg("l");
        let start = format!("{}-0", after.saturating_add(1));
        // The stream keeps FOLLOW_SLACK events more than the retention (for followers):
        // read past them, and keep only the retained ones.
        let count = limit.saturating_add(FOLLOW_SLACK as usize).min(i64::MAX as usize);
        pipe.cmd("XRANGE").arg(self.keys.events(shard, task_id)).arg(start).arg("+").arg("COUNT").arg(count);
        let reply = self.link.submit("read task events", self.link.lane_of(task_id.as_bytes()), Request::Pipe(pipe));
        let (wanted, retention) = (wanted_owner(scope), self.event_retention);
        Box::pin(async move {
            let ((owner, last), entries): ((Option<Vec<u8>>, Option<u64>), Value) =
                redis::from_owned_redis_value(reply.await?)
                    .map_err(|e| StoreError::Corrupt(format!("a read of task events: {e}")))?;
            match admits(&wanted, owner.as_deref()) {
                true => retained_events(entries, last, retention, limit),
                false => Ok(Vec::new()),
            }
        })
    }
}

/// The events of a [`RedisStore::events_in`] answer that the retention keeps, at most
/// `limit`.
fn retained_events(
    entries: Value,
    last: Option<u64>,
    retention: u64,
    limit: usize,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let oldest_retained = last.unwrap_or(0).saturating_sub(retention);
    let events = writes::parse_events(entries)?.into_iter().filter(|e| e.seq > oldest_retained);
    Ok(events.take(limit).collect())
}

/// The owner key a read of `scope` must find beside the task (`None`: the node's read).
fn wanted_owner(scope: Scope<'_>) -> Option<Vec<u8>> {
    match scope {
        Scope::Owner(owner) => Some(owner.key_prefix()),
        Scope::Node => None,
    }
}

/// Whether the stored owner key `stored` is in the scope `wanted` stands for.
fn admits(wanted: &Option<Vec<u8>>, stored: Option<&[u8]>) -> bool {
    match wanted {
        None => true,
        Some(wanted) => stored == Some(wanted.as_slice()),
    }
}
