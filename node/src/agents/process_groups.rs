//! The process groups of a node's command-agent programs, so that the node's shutdown
//! finishes what a cancel started.
//!
//! A turn that ends early SIGTERMs its program's group and SIGKILLs it after
//! `cancel-grace`, from a detached thread; when the node exits sooner, that thread dies
//! with it and a program that ignores SIGTERM would outlive the node. Every group is
//! registered here while its program may run; [`ProcessGroups::close`] (at the node's
//! close) SIGTERMs the groups not yet stopped and waits, each no longer than its grace,
//! for every group to go, SIGKILLing the ones that do not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often [`ProcessGroups::close`] looks whether the groups are gone.
const CLOSE_POLL: Duration = Duration::from_millis(20);

/// The groups of one node's programs. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct ProcessGroups {
    groups: Arc<Mutex<HashMap<i32, Group>>>,
}

/// One registered group.
#[derive(Debug, Clone, Copy)]
struct Group {
    /// Its agent's `cancel-grace`: how long SIGTERM has before SIGKILL.
    grace: Duration,
    /// When it gets SIGKILL; `None` while its program runs (no SIGTERM sent yet).
    kill_at: Option<Instant>,
}

impl ProcessGroups {
    /// A program started in its own group `pgid`.
    pub fn started(&self, pgid: i32, grace: Duration) {
        self.lock().insert(pgid, Group { grace, kill_at: None });
    }

    /// The program exited and left nothing in its group.
    pub fn finished(&self, pgid: i32) {
        self.lock().remove(&pgid);
    }

    /// SIGTERM to the group now, SIGKILL after the grace (on a thread: this may run from
    /// a drop, outside any runtime). The group stays registered until then, so that
    /// [`ProcessGroups::close`] can do the SIGKILL if the node exits sooner.
    pub fn stop(&self, pgid: i32, grace: Duration) {
        let kill_at = Instant::now() + grace;
        self.lock().insert(pgid, Group { grace, kill_at: Some(kill_at) });
        signal(pgid, libc::SIGTERM);
        let groups = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(grace);
            // A group that is gone makes this a no-op (ESRCH).
            signal(pgid, libc::SIGKILL);
            let mut registered = groups.lock();
            if registered.get(&pgid).is_some_and(|g| g.kill_at == Some(kill_at)) {
                registered.remove(&pgid);
            }
        });
    }

    /// At the node's close: SIGTERMs the groups whose programs still run, then waits for
    /// every group to go, SIGKILLing each one whose grace ran out. Returns within the
    /// longest grace (plus a poll).
    pub async fn close(&self) {
        let now = Instant::now();
        for (pgid, group) in self.lock().iter_mut().filter(|(_, g)| g.kill_at.is_none()) {
            group.kill_at = Some(now + group.grace);
            signal(*pgid, libc::SIGTERM);
        }
        loop {
            let now = Instant::now();
            self.lock().retain(|pgid, group| {
                let alive = exists(*pgid);
                let overdue = group.kill_at.is_none_or(|at| at <= now);
                if alive && overdue {
                    tracing::warn!(pgid, "an agent program outlived its cancel-grace at shutdown: killing it");
                    signal(*pgid, libc::SIGKILL);
                }
                alive && !overdue
            });
            if self.lock().is_empty() {
                return;
            }
            tokio::time::sleep(CLOSE_POLL).await;
        }
    }

    /// The map; a panic elsewhere while it was held leaves it usable.
    fn lock(&self) -> MutexGuard<'_, HashMap<i32, Group>> {
        self.groups.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Sends `sig` to the group `pgid`.
fn signal(pgid: i32, sig: libc::c_int) {
    // SAFETY: killpg only sends a signal to a process group this node created.
    unsafe { libc::killpg(pgid, sig) };
}

/// Whether the group has a process left (signal 0 checks and sends nothing).
pub fn exists(pgid: i32) -> bool {
    // SAFETY: signal 0 sends nothing.
    unsafe { libc::killpg(pgid, 0) == 0 }
}
