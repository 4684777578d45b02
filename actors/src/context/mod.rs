//! The context actor: one per (owner, `contextId`), one turn at a time.
//!
//! * [`actor`]: its state, and how a session is loaded and saved.
//! * [`handlers`]: the messages it answers ([`crate::messages`]).
//! * [`turn`]: how a turn starts and runs, and how agent events become task state.
//! * [`ending`]: how a turn ends, durably, and who hears of it.
//! * [`stream`]: task events, the event log, and what a stream sees of them.
//! * [`fanout`]: the live subscribers of a task, and how events reach them.
//! * [`durable`]: each task's durable mark, which a stream waits for before it sends.
//! * [`reply`]: a turn answered with a Message only, which leaves no task.
//! * [`watch`]: subscribers that follow an interrupted task until its next turn.
//! * [`cluster`]: leases, streams and cancels on a store shared by several nodes.

mod actor;
mod cluster;
mod durable;
mod ending;
mod fanout;
mod handlers;
mod reply;
mod stream;
mod turn;
mod watch;

pub use actor::ContextActor;
