//! The live context actors, shared by the supervisor and the callers that route to them.
//!
//! Why shared: every request used to ask the supervisor (one actor, on its own thread)
//! for its context's address: a message to that thread and its answer back, two wake-ups
//! of another thread, for what is almost always a lookup of an actor that is already
//! running. A caller now finds a running actor here under a short lock, as the supervisor
//! would have (the same `stopping` check, the same `last_routed` stamp), and sends the
//! supervisor a [`super::Route`] only to start an actor. So starting, the node's
//! `max-contexts` bound and eviction stay the supervisor's alone, and a context still has
//! one actor at a time. On the core load this took the memory node from 49 to 40-43 µs
//! of server CPU a request, and gRPC from ~6k to ~8.6k requests a second (the benchmarks
//! journal, 2026-12-06 11:20).

use crate::context::ContextActor;
use crate::RuntimeError;
use a2ad_protocol::A2aError;
use a2ad_storage::ContextKey;
use actix::prelude::*;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// The live contexts and whether the node has stopped routing to them.
#[derive(Default)]
pub struct LiveContexts {
    inner: Mutex<Live>,
}

/// What the lock guards.
#[derive(Default)]
pub(super) struct Live {
    pub contexts: HashMap<ContextKey, LiveContext>,
    /// Set at drain and at stop: no request reaches a context from then on.
    pub stopping: bool,
}

pub(super) struct LiveContext {
    pub addr: Addr<ContextActor>,
    pub last_routed: Instant,
}

impl LiveContexts {
    /// The running actor of `key`, stamped as routed to now; `None` if there is none
    /// (the caller asks the supervisor to start one). An error once the node stops routing.
    pub fn find(&self, key: &ContextKey) -> Result<Option<Addr<ContextActor>>, A2aError> {
        self.lock().route_to_running(key)
    }

    /// A poisoned lock still holds a consistent map: no code under it panics midway
    /// through a change.
    pub(super) fn lock(&self) -> MutexGuard<'_, Live> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Live {
    /// The running actor of `key`, stamped as routed to now; an error once the node stops
    /// routing. The one check of both ways to a context: [`LiveContexts::find`] and the
    /// supervisor's [`super::Route`].
    pub fn route_to_running(&mut self, key: &ContextKey) -> Result<Option<Addr<ContextActor>>, A2aError> {
        if self.stopping {
            return Err(RuntimeError::ShuttingDown.into());
        }
        let Some(live) = self.contexts.get_mut(key).filter(|live| live.addr.connected()) else { return Ok(None) };
        live.last_routed = Instant::now();
        Ok(Some(live.addr.clone()))
    }
}
