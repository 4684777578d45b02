//! The sled store's format version, and the one place for compatibility with older
//! formats.
//!
//! The default tree holds `format` → the version (u32, BE) of the layout the store is
//! in. At open ([`run`]), a store without the key (every store from before 2026-12-06)
//! or with an older version is brought up to [`FORMAT_VERSION`] by running each of
//! [`MIGRATIONS`] it has not had, in order, stamping the version after each one; a new
//! store is stamped at once. A store of a newer version is refused
//! ([`StoreError::FormatTooNew`]): this binary would misread it.
//!
//! A change of the on-disk layout adds a migration here (and bumps the version), rather
//! than a branch where the data is read. Every migration is idempotent, so one that a
//! crash cuts short runs again, whole, at the next open.

use super::index::{self, Prefix};
use super::sessions;
use crate::StoreError;

/// The format this a2ad writes and reads: the number of migrations it knows.
pub(crate) const FORMAT_VERSION: u32 = 7;

/// The key of the version, in the default tree.
const FORMAT_KEY: &[u8] = b"format";

/// One migration: it brings a store from version `to - 1` up to `to`.
struct Migration {
    to: u32,
    /// What it did, for the log line.
    what: &'static str,
    run: fn(&Trees<'_>) -> Result<(), StoreError>,
}

/// The store's trees, as a migration sees them.
pub(super) struct Trees<'a> {
    pub db: &'a sled::Db,
    pub tasks: &'a sled::Tree,
    pub sessions: &'a sled::Tree,
}

/// Every migration, oldest first; the last one's `to` is [`FORMAT_VERSION`]. Every store
/// from before the version needs all of them; the one that may refuse a store goes first,
/// so a refused store is left as it was.
const MIGRATIONS: [Migration; 7] = [
    Migration { to: 1, what: "the event-id reservation tree removed", run: retire_reservations },
    Migration { to: 2, what: "session messages rewritten as one chunk per turn", run: message_keys_to_chunks },
    Migration { to: 3, what: "the counters-v1 marker removed", run: remove_counters_marker },
    Migration { to: 4, what: "long values and log records may be stored packed (LZ4)", run: allow_packed_values },
    Migration { to: 5, what: "session chunks may reference their task's messages", run: allow_task_references },
    Migration { to: 6, what: "task indexes and counters moved out of sled, into memory", run: drop_stored_indexes },
    Migration { to: 7, what: "session chunks that referenced their task hold its messages", run: resolve_references },
];

/// Reads the store's version and migrates it to [`FORMAT_VERSION`] (see the module
/// docs). `fresh` is a store sled just created: it is stamped, with nothing to migrate.
/// Runs at open, before anyone reads or writes.
pub(super) fn run(trees: &Trees<'_>, fresh: bool) -> Result<(), StoreError> {
    if fresh {
        return stamp(trees.db, FORMAT_VERSION);
    }
    let found = version(trees.db)?;
    if found > FORMAT_VERSION {
        return Err(StoreError::FormatTooNew { found, known: FORMAT_VERSION });
    }
    for migration in MIGRATIONS.iter().filter(|m| m.to > found) {
        (migration.run)(trees)?;
        stamp(trees.db, migration.to)?;
        tracing::info!(version = migration.to, "store format migrated: {}", migration.what);
    }
    Ok(())
}

/// The stored version; 0 for a store from before the key.
fn version(db: &sled::Db) -> Result<u32, StoreError> {
    match db.get(FORMAT_KEY)? {
        None => Ok(0),
        Some(value) => <[u8; 4]>::try_from(value.as_ref())
            .map(u32::from_be_bytes)
            .map_err(|_| StoreError::Corrupt("the store's format version".into())),
    }
}

/// Writes `version` once what it stands for is durable, so a crash never leaves a
/// version ahead of the data it describes.
fn stamp(db: &sled::Db, version: u32) -> Result<(), StoreError> {
    db.flush()?;
    db.insert(FORMAT_KEY, &version.to_be_bytes())?;
    db.flush()?;
    Ok(())
}

/// 0 → 1, for stores written before 2026-12-06: they kept an `event_reservations` tree,
/// where nodes before 2026-12-02 (whose streams showed events before they were durable)
/// reserved a running task's event ids, so that recovery numbered its FAILED event above
/// any a stream had shown. Nothing reserves now; a reservation is dropped when its task
/// ends, so the tree is empty unless such a node crashed and no later one recovered its
/// tasks. An empty tree is removed; a non-empty one is refused ([`StoreError::Retired`]),
/// since dropping it could give two events one id.
fn retire_reservations(trees: &Trees<'_>) -> Result<(), StoreError> {
    const TREE: &[u8] = b"event_reservations";
    if !trees.db.tree_names().iter().any(|name| name == TREE) {
        return Ok(());
    }
    if !trees.db.open_tree(TREE)?.is_empty() {
        return Err(StoreError::Retired { what: "event-id reservations of interrupted tasks" });
    }
    trees.db.drop_tree(TREE)?;
    Ok(())
}

/// 1 → 2, for stores written before 2026-12-03: they kept one `h` ‖ context ‖ sequence
/// key per session message, which cost five sled writes a turn; sessions are now one
/// chunk per turn (`sessions.rs`). Each message becomes a one-message chunk without
/// metadata (reads take the session's `m` key then), 1,000 keys a batch.
fn message_keys_to_chunks(trees: &Trees<'_>) -> Result<(), StoreError> {
    let bad_key = || StoreError::Corrupt("session message key".into());
    loop {
        let mut batch = sled::Batch::default();
        let mut in_batch = 0;
        for entry in trees.sessions.scan_prefix([Prefix::SessionMessage as u8]).take(1000) {
            let (key, value) = entry?;
            let rest = &key[1..];
            let (context, seq) = rest.split_at(rest.len().checked_sub(8).ok_or_else(bad_key)?);
            let seq = u64::from_be_bytes(seq.try_into().map_err(|_| bad_key())?);
            // The message's bytes as they are: `{"messages":[` ‖ message JSON ‖ `]}`.
            let mut chunk = br#"{"messages":["#.to_vec();
            chunk.extend_from_slice(&value);
            chunk.extend_from_slice(b"]}");
            batch.insert(sessions::chunk_key(context, seq, 1), chunk);
            batch.remove(key);
            in_batch += 1;
        }
        if in_batch == 0 {
            return Ok(());
        }
        trees.sessions.apply_batch(batch)?;
    }
}

/// 2 → 3: stores from before the format version said that they had task counters with a
/// `v` ‖ `counters-v1` marker, which the version replaces. The counters themselves were
/// built here from the stored indexes until version 6 dropped both (see
/// [`drop_stored_indexes`]), so only the marker goes.
fn remove_counters_marker(trees: &Trees<'_>) -> Result<(), StoreError> {
    trees.tasks.remove(index::key(Prefix::Meta, b"counters-v1"))?;
    Ok(())
}

/// Version 4: values and log records written from now on may be packed (`sled/packed.rs`).
/// Nothing is rewritten, since this version reads both; the stamp is what matters: a2ad
/// before it would misread a packed value, and refuses a store of version 4 instead.
fn allow_packed_values(_: &Trees<'_>) -> Result<(), StoreError> {
    Ok(())
}

/// Version 5: a session chunk written from now on may reference its task's messages
/// instead of holding them (`sessions.rs`). Nothing is rewritten, since this version reads
/// both; a2ad before it would take a reference for a damaged chunk, and refuses a store of
/// version 5 instead.
fn allow_task_references(_: &Trees<'_>) -> Result<(), StoreError> {
    Ok(())
}

/// 5 → 6: the by-time index (`s`), the by-context index (`c`), the active tasks (`a`) and
/// the task counters (`n`) are no longer sled keys: they are built in memory from the task
/// values at open (`task_index.rs`), because each key a step inserted cost more than its
/// bytes (issue 35). Their keys are removed, 1,000 a batch; a2ad before version 6 would
/// find no index, and refuses the store instead.
fn drop_stored_indexes(trees: &Trees<'_>) -> Result<(), StoreError> {
    for prefix in [Prefix::ByTime, Prefix::ByContext, Prefix::Active, Prefix::Counter] {
        loop {
            let mut batch = sled::Batch::default();
            let mut in_batch = 0;
            for key in trees.tasks.scan_prefix([prefix as u8]).keys().take(1000) {
                batch.remove(key?);
                in_batch += 1;
            }
            if in_batch == 0 {
                break;
            }
            trees.tasks.apply_batch(batch)?;
        }
    }
    Ok(())
}

/// 6 → 7: a session turn that its task holds has no chunk, only a line in the task's value
/// (`sessions.rs`, for the same reason as version 6). The chunks that referenced their task
/// (`TASK_REF` in `sessions.rs`) are rewritten holding its messages, as chunks of turns no task
/// holds are. a2ad before version 7 would read a task value that lists turns as damaged,
/// and refuses the store instead.
fn resolve_references(trees: &Trees<'_>) -> Result<(), StoreError> {
    sessions::resolve_task_references(trees.tasks, trees.sessions)
}

#[cfg(test)]
#[path = "migrations_tests.rs"]
pub(super) mod tests;
