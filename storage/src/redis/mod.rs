//! The shared store (`store: redis`): every node of a cluster points at one Redis (or a
//! Redis Cluster) and answers for every task.
//!
//! * [`store`]: [`crate::RedisStore`], tasks, indexes, event logs, sessions and the
//!   contexts' fenced leases, each write one Lua script;
//! * [`link`]: the connections, the blocking ones for calls off the request path and the
//!   pipelined lanes (`link/pipe.rs`) that the request path's futures ride on;
//! * [`keys`]: the key layout and its hash tags (shards);
//! * [`push_queue`]: the push queue on Redis Streams, with the outbox that feeds it;
//! * [`push_rows`]: where push configs live in Redis;
//! * `test_server`, `test_cluster`: real redis-server processes for the tests.

pub(crate) mod keys;
pub(crate) mod link;
pub(crate) mod push_queue;
pub(crate) mod push_rows;
pub(crate) mod store;
#[cfg(test)]
pub(crate) mod test_cluster;
#[cfg(test)]
pub(crate) mod test_server;
