//! Push configs in the shared Redis store ([`ConfigRows`] for `store: redis`), so that
//! every node reads every task's configs.
//!
//! `<t>:push:<task id>` is a hash, config id → record; `<t>:push-tasks` is the set of the
//! shard's task ids with configs (the start-up sweep of orphans). `<t>` is the tag of the
//! shard the task id names (`keys.rs`), so both keys of a write are in one hash slot.

use crate::push::configs::ConfigRows;
use crate::redis::keys::Keys;
use crate::redis::link::RedisLink;
use crate::StoreError;
use std::sync::Arc;

/// Deletes field ARGV[1] of KEYS[1] only if it still holds ARGV[2]; forgets the task in
/// KEYS[2] (member ARGV[3]) once its hash is empty. Returns 1 if it deleted.
const REMOVE_IF: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[3])
end
return 1
";

/// The rows: the store's connections and keys.
pub(crate) struct RedisRows {
    link: Arc<RedisLink>,
    keys: Keys,
    remove_if: redis::Script,
}

impl RedisRows {
    pub(crate) fn new(link: Arc<RedisLink>, keys: Keys) -> Self {
        RedisRows { link, keys, remove_if: redis::Script::new(REMOVE_IF) }
    }

    fn hash(&self, task_id: &str) -> Vec<u8> {
        self.keys.push_configs(task_id)
    }

    /// The set of task ids with configs of the shard `task_id` names.
    fn tasks(&self, task_id: &str) -> Vec<u8> {
        self.keys.push_tasks(self.keys.hinted(task_id))
    }
}

impl ConfigRows for RedisRows {
    fn put(&self, task_id: &str, id: &str, value: Vec<u8>) -> Result<(), StoreError> {
        self.link.with_conn("store a push config", |conn| {
            let mut pipe = redis::pipe();
            pipe.atomic().hset(self.hash(task_id), id, value).ignore().sadd(self.tasks(task_id), task_id).ignore();
            Ok(pipe.query::<()>(conn)?)
        })
    }

    fn get(&self, task_id: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.link.with_conn("read a push config", |conn| {
            Ok(redis::cmd("HGET").arg(self.hash(task_id)).arg(id).query(conn)?)
        })
    }

    fn list(&self, task_id: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut rows: Vec<(String, Vec<u8>)> = self
            .link
            .with_conn("list push configs", |conn| Ok(redis::cmd("HGETALL").arg(self.hash(task_id)).query(conn)?))?;
        rows.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Ok(rows)
    }

    fn remove_if(&self, task_id: &str, id: &str, current: Vec<u8>) -> Result<bool, StoreError> {
        let removed: i64 = self.link.with_conn("remove a push config", |conn| {
            Ok(self
                .remove_if
                .key(self.hash(task_id))
                .key(self.tasks(task_id))
                .arg(id)
                .arg(current)
                .arg(task_id)
                .invoke(conn)?)
        })?;
        Ok(removed == 1)
    }

    fn remove_task(&self, task_id: &str) -> Result<usize, StoreError> {
        self.link.with_conn("remove a task's push configs", |conn| {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .hlen(self.hash(task_id))
                .del(self.hash(task_id))
                .ignore()
                .srem(self.tasks(task_id), task_id)
                .ignore();
            let (count,): (usize,) = pipe.query(conn)?;
            Ok(count)
        })
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = Vec::new();
        for shard in self.keys.all_shards() {
            let shard_ids: Vec<String> = self.link.with_conn("list the tasks with push configs", |conn| {
                Ok(redis::cmd("SMEMBERS").arg(self.keys.push_tasks(shard)).query(conn)?)
            })?;
            ids.extend(shard_ids);
        }
        ids.sort();
        Ok(ids)
    }
}
