//! The supervisor: finds, starts, spreads and evicts context actors.

mod actor;
mod handlers;
mod live;

pub use actor::Supervisor;
pub use live::LiveContexts;

use crate::context::ContextActor;
use a2ad_protocol::A2aError;
use a2ad_storage::ContextKey;
use actix::prelude::*;

/// Finds or starts the actor of a context. The one supervisor message not in
/// [`crate::messages`]: its answer names the context actor, and the messages must not
/// depend on the actors that handle them.
#[derive(Message)]
#[rtype(result = "Result<Addr<ContextActor>, A2aError>")]
pub struct Route {
    pub key: ContextKey,
}
