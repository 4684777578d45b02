//! Retention: terminal tasks are removed once they are older than `retention.max-age` or
//! beyond `retention.max-tasks` per tenant, with their event logs, push configs,
//! artifact files (`<data-dir>/artifacts/<task-id>/`) and private working directories
//! (`<data-dir>/workdirs/<owner>/<task-id>/`); a context's session goes with its
//! last task. Interrupted tasks (input-required, auth-required) that nobody answers for
//! `retention.interrupted-timeout` become CANCELED, with a status message that says so,
//! and are then kept like any terminal task.
//!
//! A background task (the [`Sweeper`]) does it every `sweep-interval`, off the actor
//! threads: the index scan and the removals run on the blocking pool; the expiries go
//! through each context's actor (so an answer that arrives meanwhile wins) and so do the
//! session removals of live contexts (see `ForgetSessions`). A removed task is gone from
//! every index: GetTask, ListTasks, SubscribeToTask and a follow-up message answer
//! TaskNotFound, like for a task that never existed. Once per start, the sweeper also
//! removes artifact and private working directories whose task is gone (a crash between a
//! task's removal and its directory's: see [`remove_orphan_artifact_dirs`] and
//! [`remove_orphan_workdirs`]); push configs whose task is
//! gone are removed at start-up before requests are taken ([`remove_orphan_push_configs`]).

mod orphans;
mod plan;
mod sweep;

pub use orphans::{remove_orphan_artifact_dirs, remove_orphan_push_configs, remove_orphan_workdirs};
pub use plan::{plan, Plan, Planner};
pub use sweep::{SweepReport, Sweeper};

/// The most tasks one sweep removes; the next sweep goes on from there.
pub const MAX_REMOVALS_PER_SWEEP: usize = 10_000;

pub use a2ad_storage::artifact_dir;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn artifact_dirs_stay_inside_the_data_dir() {
        let dir = Path::new("/data");
        assert_eq!(artifact_dir(dir, "0193-abc").unwrap(), Path::new("/data/artifacts/0193-abc"));
        for bad in ["", "..", "a/b", "../x", "a\\b"] {
            assert!(artifact_dir(dir, bad).is_none(), "{bad}");
        }
    }
}
