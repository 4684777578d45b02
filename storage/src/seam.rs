//! The request path's seam: what an actor or an HTTP worker asks of the store, answered
//! with a future.
//!
//! Every call returns at once. On a node's own store (sled behind its log, memory) the
//! future is ready when it is returned: those calls never wait on the network, and a
//! sled write is an append to the log's memory, made durable by the group commit that
//! the caller awaits next. On the shared store (Redis) the call is handed to the
//! pipelined connections (`redis/link/pipe.rs`) and the future is Redis's answer, so no
//! thread of the node waits for a round trip (ARCHITECTURE.md, "What may block").

use crate::{LoggedEvent, PushJob, SessionRecord, StoreError, TaskRecord};
use a2ad_protocol::Message;
use a2ad_protocol::TaskState;
use std::future::Future;
use std::pin::Pin;

/// A store call's answer, to be awaited.
pub type StoreFuture<T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'static>>;

/// `result`, as an answer that is ready.
pub fn ready<T: Send + 'static>(result: Result<T, StoreError>) -> StoreFuture<T> {
    Box::pin(std::future::ready(result))
}

/// One step of a task, as [`crate::TaskStore::commit`] writes it: the task with its new
/// events and the push jobs they caused, and, for the step that ends a turn, the
/// context's session, all in one commit.
pub struct Step<'a> {
    pub record: &'a TaskRecord,
    pub events: &'a [LoggedEvent],
    pub jobs: Vec<PushJob>,
    pub session: Option<SessionWrite<'a>>,
}

/// What [`crate::Cluster::begin_turn`] found.
#[derive(Debug)]
pub enum TurnLease {
    /// This node holds the context's lease now; the session as stored (the last turn may
    /// have run on another node), if there is one.
    Taken(Option<SessionRecord>),
    /// This node holds the lease now, and the stored session is the one it offered as
    /// known: what it holds is current.
    Current,
    /// Another node holds it: a turn runs there.
    HeldElsewhere,
}

/// The state a step replaced, as a commit answers it.
pub type Replaced = Option<TaskState>;

/// Waits for `answer` on this thread. For callers off the request path only (a blocking
/// thread, start-up, the offline commands, tests): never on an actor's thread or an HTTP
/// worker's. The store's futures need no runtime of the caller's (the pipe's thread
/// drives Redis), so a parked thread woken by the answer is all it takes.
pub fn block_on_store<T>(mut answer: StoreFuture<T>) -> Result<T, StoreError> {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match answer.as_mut().poll(&mut cx) {
            Poll::Ready(result) => return result,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// A write as its caller holds it: answered already, or in flight. A node's own store
/// answers at once, so its failures stay the caller's to handle on the spot, as before
/// the seam; a write in flight is awaited before anything that depends on it is said.
pub enum Written {
    Done,
    InFlight(StoreFuture<()>),
}

impl Written {
    /// `answer`, polled once: an answer that is ready is taken now (its error returned).
    pub fn of<T: Send + 'static>(mut answer: StoreFuture<T>) -> Result<Written, StoreError> {
        use futures_util::FutureExt;
        match (&mut answer).now_or_never() {
            Some(done) => done.map(|_| Written::Done),
            None => Ok(Written::InFlight(Box::pin(async move { answer.await.map(drop) }))),
        }
    }

    /// Resolves once the write is answered.
    pub async fn answered(self) -> Result<(), StoreError> {
        match self {
            Written::Done => Ok(()),
            Written::InFlight(answer) => answer.await,
        }
    }

    /// Waits for the answer on this thread (off the request path: see [`block_on_store`]).
    pub fn wait(self) -> Result<(), StoreError> {
        block_on_store(Box::pin(self.answered()))
    }

    /// Two holders of one write: the first has its answer; the second learns of it only
    /// once the first was awaited, and of a failure only as [`StoreError::Unavailable`]
    /// with its text (for a holder that needs to know when, not why).
    pub fn split(self) -> (Written, Written) {
        let Written::InFlight(answer) = self else { return (Written::Done, Written::Done) };
        let (tell, told) = tokio::sync::oneshot::channel();
        let first = async move {
            let result = answer.await;
            let _ = tell.send(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
            result
        };
        let second = async move {
            match told.await {
                Ok(result) => result.map_err(StoreError::Unavailable),
                Err(_) => Err(StoreError::Closed),
            }
        };
        (Written::InFlight(Box::pin(first)), Written::InFlight(Box::pin(second)))
    }
}

/// A session write, as a [`Step`] carries it: the session's metadata, the
/// messages appended since the last write, and how many messages the stored history keeps.
#[derive(Debug, Clone, Copy)]
pub struct SessionWrite<'a> {
    pub session: &'a SessionRecord,
    pub appended: &'a [Message],
    pub history_limit: usize,
}
