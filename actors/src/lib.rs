//! # a2ad-actors
//!
//! The runtime that executes turns.
//!
//! * One [`context::ContextActor`] per context (owner + `contextId`). It owns the session
//!   (history, bound agent, the task it is working on) and runs one turn at a time: a
//!   second message while a turn runs is refused at once with `Task is already working.`.
//! * The [`supervisor::Supervisor`] finds or starts context actors, spreads them over a
//!   pool of arbiters so that different contexts run in parallel, caps how many may live,
//!   and evicts idle ones; an evicted context is rebuilt from storage on its next message.
//! * Agents plug in through the [`agent::Agent`] trait.
//!
//! * [`push::PushWorker`] delivers push notifications from a durable queue.
//!
//! All actor messages are in [`messages`].

pub mod agent;
pub mod context;
mod error;
pub mod feed;
pub mod limits;
pub mod messages;
pub mod push;
pub mod recovery;
mod runtime;
pub mod supervisor;
pub mod workdirs;

pub use error::RuntimeError;
pub use runtime::{Runtime, RuntimeSettings};
