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
use std::collections::BTreeMap;

/// Refuses settings that evict keys, and (unless `allow_weak`) those that lose
/// acknowledged writes on a crash, on any server that holds the store's data (each
/// primary of a cluster); logs what it allowed.
pub(super) fn check(redis: &RedisStore, allow_weak: bool) -> Result<(), StartupError> {
    // Each setting by server: the servers answer each CONFIG GET in an order of their own.
    let read = |name: &str| redis.server_settings(name).map(|values| values.into_iter().collect::<BTreeMap<_, _>>());
    let (policies, appendonly, appendfsync) = match (read("maxmemory-policy"), read("appendonly"), read("appendfsync"))
    {
        (Ok(policy), Ok(appendonly), Ok(appendfsync)) => (policy, appendonly, appendfsync),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            tracing::warn!(error = %e, "cannot read the Redis persistence settings (CONFIG GET): they are not checked");
            return Ok(());
        }
    };
    let many = policies.len() > 1;
    for (server, policy) in policies {
        let on = if many { format!(" on {server}") } else { String::new() };
        let (appendonly, appendfsync) = (appendonly.get(&server).cloned(), appendfsync.get(&server).cloned());
        check_one(&on, policy, appendonly.flatten(), appendfsync.flatten(), allow_weak)?;
    }
    Ok(())
}

/// [`check`] of one server's settings; `on` names the server in messages (" on <host>",
/// or "" for the one server).
fn check_one(
    on: &str,
    policy: Option<String>,
    appendonly: Option<String>,
    appendfsync: Option<String>,
    allow_weak: bool,
) -> Result<(), StartupError> {
    if let Some(policy) = policy.filter(|p| p != "noeviction") {
        return Err(StartupError::SharedStore(format!(
            "maxmemory-policy is {policy}{on}: Redis would delete tasks and leases when its memory runs out; \
             set maxmemory-policy noeviction"
        )));
    }
    let weak = match (appendonly.as_deref(), appendfsync.as_deref()) {
        (Some("yes"), Some("always")) => return Ok(()),
        (Some("yes"), fsync) => format!(
            "appendfsync is {}{on}: a machine crash loses the acknowledged writes of up to the last second; \
             set appendfsync always",
            fsync.unwrap_or("unknown")
        ),
        _ => format!(
            "appendonly is off{on}: a Redis crash loses every write since its last snapshot; \
             set appendonly yes and appendfsync always"
        ),
    };
    if !allow_weak {
        return Err(StartupError::SharedStore(format!(
            "{weak} (or set redis.allow-weak-persistence: true to accept the loss)"
        )));
    }
    tracing::warn!("redis: {weak}; started because redis.allow-weak-persistence is set");
    Ok(())
}
