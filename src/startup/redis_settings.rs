//! What a node checks of the shared store's Redis before it starts (`store: redis`): the
//! settings under which Redis would drop, or lose on a crash, what a node acknowledged.
//!
//! * `maxmemory-policy` other than `noeviction` lets Redis delete keys when memory runs
//!   out: tasks, leases, event logs. Refused, always.
//! * `appendonly no` keeps nothing but snapshots: a Redis crash loses every write since
//!   the last one. Refused unless `redis.allow-weak-persistence`.
//! * `appendfsync everysec` (Redis's default) syncs the log once a second: a crash of
//!   the machine loses up to a second of acknowledged writes; `no` leaves it to the OS.
//!   Refused unless `redis.allow-weak-persistence`.
//!
//! A Redis whose CONFIG command is disabled cannot be checked: the node warns and starts.

use super::StartupError;
use a2ad_storage::RedisStore;

/// Refuses settings that evict keys, and (unless `allow_weak`) those that lose
/// acknowledged writes on a crash; logs what it allowed.
pub(super) fn check(redis: &RedisStore, allow_weak: bool) -> Result<(), StartupError> {
    let read = |name: &str| redis.server_setting(name);
    let (policy, appendonly, appendfsync) = match (read("maxmemory-policy"), read("appendonly"), read("appendfsync")) {
        (Ok(policy), Ok(appendonly), Ok(appendfsync)) => (policy, appendonly, appendfsync),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            tracing::warn!(error = %e, "cannot read the Redis persistence settings (CONFIG GET): they are not checked");
            return Ok(());
        }
    };
    if let Some(policy) = policy.filter(|p| p != "noeviction") {
        return Err(StartupError::SharedStore(format!(
            "maxmemory-policy is {policy}: Redis would delete tasks and leases when its memory runs out; \
             set maxmemory-policy noeviction"
        )));
    }
    let weak = match (appendonly.as_deref(), appendfsync.as_deref()) {
        (Some("yes"), Some("always")) => return Ok(()),
        (Some("yes"), fsync) => format!(
            "appendfsync is {}: a machine crash loses the acknowledged writes of up to the last second; \
             set appendfsync always",
            fsync.unwrap_or("unknown")
        ),
        _ => "appendonly is off: a Redis crash loses every write since its last snapshot; \
              set appendonly yes and appendfsync always"
            .to_owned(),
    };
    if !allow_weak {
        return Err(StartupError::SharedStore(format!(
            "{weak} (or set redis.allow-weak-persistence: true to accept the loss)"
        )));
    }
    tracing::warn!("redis: {weak}; started because redis.allow-weak-persistence is set");
    Ok(())
}
