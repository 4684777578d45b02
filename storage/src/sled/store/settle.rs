//! Settling a Message-only reply: the session write and the task removal as one atomic
//! write across the `sessions` and `tasks` trees.
//!
//! A reply's turn stored its task (WORKING) when it started. Writing the session (the
//! user's message and the reply) and removing that task separately would leave a window
//! where a crash keeps both: start-up recovery would then fail a task whose reply the
//! session already holds. One sled transaction over both trees closes it: after a crash,
//! either the session has the reply and the task is gone, or neither happened (and
//! recovery fails the interrupted turn, as for any other).

use super::writes::Atomicity;
use super::SledStore;
use crate::{SessionRecord, StoreError, TaskRecord};
use a2ad_protocol::Message;
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

impl SledStore {
    /// See [`crate::TaskStore::settle_reply`]. Both batches are built before the
    /// transaction (a transaction cannot scan the event log); that is safe because only
    /// the context's actor writes this task and this session.
    pub(super) fn settle_reply_atomically(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let session_writes = self.session_batch(session, appended, history_limit, false)?;
        let mut removal = self.removal_batch(task_id)?;
        if self.atomicity == Atomicity::Log {
            // One log record holds both (see `writes.rs`): no transaction needed. The turns
            // the task held are written as chunks before the turn's writes, which may prune
            // one of them, as in the transaction below.
            if let Some(removal) = removal.as_mut() {
                removal.apply_sessions(self)?;
            }
            session_writes.apply(&self.sessions, self.atomicity)?;
            return removal.map(|removal| removal.apply(self)).transpose();
        }
        let session_batch = session_writes.to_batch();
        let removal_batch = removal.as_ref().map(|removal| removal.batch.to_batch());
        let unreferenced = removal.as_ref().map(|removal| removal.sessions.to_batch());
        let result = (&self.tasks, &self.sessions).transaction(|(tasks, sessions)| {
            if let Some(batch) = &removal_batch {
                tasks.apply_batch(batch)?;
            }
            if let Some(batch) = &unreferenced {
                sessions.apply_batch(batch)?;
            }
            sessions.apply_batch(&session_batch)?;
            Ok::<(), ConflictableTransactionError<()>>(())
        });
        match result {
            Ok(()) => Ok(removal.map(|removal| removal.unindex(self))),
            Err(TransactionError::Storage(e)) => Err(StoreError::Engine(e)),
            Err(TransactionError::Abort(())) => Err(StoreError::Corrupt("the reply's transaction was aborted".into())),
        }
    }
}
