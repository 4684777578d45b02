//! The supervisor: finds, starts, spreads and evicts context actors.

mod actor;
mod handlers;

pub use actor::Supervisor;
