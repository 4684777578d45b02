//! Push notifications' storage, whatever the task store: the queue of deliveries
//! ([`queue`]: the [`crate::JobQueue`] trait and the local queue in a sled tree; the
//! Redis Streams queue is `redis/push_queue.rs`), and the push configs, sealed with a
//! node key ([`configs`], [`keyring`]).

pub(crate) mod configs;
pub(crate) mod keyring;
pub(crate) mod queue;
