//! Owning a background thread through its handles: the group commit's flusher and the
//! write-ahead log's writer each run on a thread of their own that must stop, after
//! serving what is queued, when the last handle goes (or on an explicit close).

use std::sync::Mutex;
use std::thread::JoinHandle;

/// Held only by handles (never by the thread itself), so that dropping the last handle
/// stops the thread: `close` tells it to finish (sets its queue's `closed` flag and
/// wakes it), then the owner joins it.
pub(crate) struct ThreadOwner {
    close: Box<dyn Fn() + Send + Sync>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl ThreadOwner {
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
