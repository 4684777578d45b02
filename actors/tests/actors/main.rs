//! The actor core tested without sockets: context actors, the supervisor, recovery and
//! the push worker over an in-memory store, driven by a scripted agent (see `support`).
//! One test binary, so that the suite links once.

mod push;
mod push_isolation;
mod recovery;
mod streams;
mod supervisor;
mod support;
mod turns;
mod watch;
