//! Owning a background thread through its handles: the group commit's flusher and the
//! write-ahead log's writer each run on a thread of their own that must stop, after
//! serving what is queued, when the last handle goes (or on an explicit close).

use crate::StoreError;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Held only by handles (never by the thread itself), so that dropping the last handle
/// stops the thread: `close` tells it to finish (sets its queue's `closed` flag and
/// wakes it), then the owner joins it.
pub(crate) struct ThreadOwner {
    close: Box<dyn Fn() + Send + Sync>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The stop flag of a thread that works in rounds (the checkpointer, the push
/// forwarder) and waits on it between them, so that a stop ends the wait at once.
#[derive(Default)]
pub(crate) struct StopSignal {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl StopSignal {
    pub(crate) fn is_set(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits up to `timeout`, less if told to stop; returns whether it was.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let guard = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        if *guard {
            return true;
        }
        let (guard, _) = self.wake.wait_timeout(guard, timeout).unwrap_or_else(|p| p.into_inner());
        *guard
    }

    fn set(&self) {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_all();
    }
}

impl ThreadOwner {
    /// Starts the thread `name` running `body`, which returns once its [`StopSignal`] is
    /// set (by [`ThreadOwner::close_and_join`]). `what` names it in the error.
    pub(crate) fn spawn_stoppable(
        name: &str,
        what: &str,
        body: impl FnOnce(&StopSignal) + Send + 'static,
    ) -> Result<ThreadOwner, StoreError> {
        let stop = Arc::new(StopSignal::default());
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&thread_stop))
            .map_err(|e| StoreError::Io(format!("cannot start the {what}: {e}")))?;
        Ok(ThreadOwner::new(thread, move || stop.set()))
    }

    pub(crate) fn new(thread: JoinHandle<()>, close: impl Fn() + Send + Sync + 'static) -> Self {
        ThreadOwner { close: Box::new(close), thread: Mutex::new(Some(thread)) }
    }

    /// Tells the thread to finish and waits for it; a second call does nothing more.
    pub(crate) fn close_and_join(&self) {
        (self.close)();
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Drop for ThreadOwner {
    fn drop(&mut self) {
        self.close_and_join();
    }
}
