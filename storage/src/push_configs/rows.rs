//! Where the push configs' records live: a sled tree of the node's own store, or hashes
//! in the shared Redis store (`store: redis`), so that every node reads every task's
//! configs. [`super::PushConfigStore`] seals and scopes; this only keeps bytes by
//! (task id, config id).
//!
//! In Redis: `<t>:push:<task id>` is a hash, config id → record; `<t>:push-tasks` is the
//! set of the shard's task ids with configs (the start-up sweep of orphans). `<t>` is the
//! tag of the shard the task id names (`redis_keys.rs`), so both keys of a write
//! are in one hash slot.

use super::{key_task_id, record_key, task_prefix};
use crate::redis_keys::Keys;
use crate::redis_link::RedisLink;
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

/// The rows, in sled or in Redis.
#[derive(Clone)]
pub(crate) enum Rows {
    Sled(sled::Tree),
    Redis(Arc<RedisRows>),
}

/// The Redis side: the store's connections and keys.
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

fn too_long() -> StoreError {
    StoreError::Corrupt(format!("refusing to store a push config: the task id is over {} bytes", u16::MAX))
}

impl Rows {
    pub fn put(&self, task_id: &str, id: &str, value: Vec<u8>) -> Result<(), StoreError> {
        match self {
            Rows::Sled(tree) => {
                tree.insert(record_key(task_id, id).ok_or_else(too_long)?, value)?;
            }
            Rows::Redis(r) => r.link.with_conn("store a push config", |conn| {
                let mut pipe = redis::pipe();
                pipe.atomic().hset(r.hash(task_id), id, value).ignore().sadd(r.tasks(task_id), task_id).ignore();
                Ok(pipe.query::<()>(conn)?)
            })?,
        }
        Ok(())
    }

    pub fn get(&self, task_id: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self {
            Rows::Sled(tree) => match record_key(task_id, id) {
                Some(key) => Ok(tree.get(key)?.map(|v| v.to_vec())),
                None => Ok(None),
            },
            Rows::Redis(r) => r.link.with_conn("read a push config", |conn| {
                Ok(redis::cmd("HGET").arg(r.hash(task_id)).arg(id).query(conn)?)
            }),
        }
    }

    /// A task's (config id, record) rows, in id order.
    pub fn list(&self, task_id: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        match self {
            Rows::Sled(tree) => {
                let Some(prefix) = task_prefix(task_id) else { return Ok(Vec::new()) };
                let mut rows = Vec::new();
                for entry in tree.scan_prefix(&prefix) {
                    let (key, value) = entry?;
                    let id = std::str::from_utf8(&key[prefix.len()..])
                        .map_err(|_| StoreError::Corrupt(format!("push config key of task {task_id} is not UTF-8")))?;
                    rows.push((id.to_owned(), value.to_vec()));
                }
                Ok(rows)
            }
            Rows::Redis(r) => {
                let mut rows: Vec<(String, Vec<u8>)> = r.link.with_conn("list push configs", |conn| {
                    Ok(redis::cmd("HGETALL").arg(r.hash(task_id)).query(conn)?)
                })?;
                rows.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                Ok(rows)
            }
        }
    }

    pub fn remove(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        match self {
            Rows::Sled(tree) => match record_key(task_id, id) {
                Some(key) => Ok(tree.remove(key)?.is_some()),
                None => Ok(false),
            },
            Rows::Redis(_) => {
                let current = self.get(task_id, id)?;
                match current {
                    Some(current) => self.remove_if(task_id, id, current),
                    None => Ok(false),
                }
            }
        }
    }

    /// Removes the row only if it still holds `current` (a concurrent write wins).
    pub fn remove_if(&self, task_id: &str, id: &str, current: Vec<u8>) -> Result<bool, StoreError> {
        match self {
            Rows::Sled(tree) => {
                let Some(key) = record_key(task_id, id) else { return Ok(false) };
                Ok(tree.compare_and_swap(key, Some(current), None::<&[u8]>)?.is_ok())
            }
            Rows::Redis(r) => {
                let removed: i64 = r.link.with_conn("remove a push config", |conn| {
                    Ok(r.remove_if
                        .key(r.hash(task_id))
                        .key(r.tasks(task_id))
                        .arg(id)
                        .arg(current)
                        .arg(task_id)
                        .invoke(conn)?)
                })?;
                Ok(removed == 1)
            }
        }
    }

    /// Removes every row of a task; returns how many there were.
    pub fn remove_task(&self, task_id: &str) -> Result<usize, StoreError> {
        match self {
            Rows::Sled(tree) => {
                let Some(prefix) = task_prefix(task_id) else { return Ok(0) };
                let mut batch = sled::Batch::default();
                let mut count = 0;
                for entry in tree.scan_prefix(&prefix) {
                    batch.remove(entry?.0);
                    count += 1;
                }
                if count > 0 {
                    tree.apply_batch(batch)?;
                }
                Ok(count)
            }
            Rows::Redis(r) => r.link.with_conn("remove a task's push configs", |conn| {
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .hlen(r.hash(task_id))
                    .del(r.hash(task_id))
                    .ignore()
                    .srem(r.tasks(task_id), task_id)
                    .ignore();
                let (count,): (usize,) = pipe.query(conn)?;
                Ok(count)
            }),
        }
    }

    /// The ids of the tasks that have rows, each once.
    pub fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        match self {
            Rows::Sled(tree) => {
                let mut ids: Vec<String> = Vec::new();
                for entry in tree.iter().keys() {
                    let key = entry?;
                    let task_id = key_task_id(&key)
                        .ok_or_else(|| StoreError::Corrupt("a push config key has no task id segment".into()))?;
                    if ids.last().map(String::as_str) != Some(task_id) {
                        ids.push(task_id.to_owned());
                    }
                }
                Ok(ids)
            }
            Rows::Redis(r) => {
                let mut ids: Vec<String> = Vec::new();
                for shard in r.keys.all_shards() {
                    let shard_ids: Vec<String> = r.link.with_conn("list the tasks with push configs", |conn| {
                        Ok(redis::cmd("SMEMBERS").arg(r.keys.push_tasks(shard)).query(conn)?)
                    })?;
                    ids.extend(shard_ids);
                }
                ids.sort();
                Ok(ids)
            }
        }
    }
}
