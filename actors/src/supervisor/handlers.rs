//! The messages the supervisor answers.

use super::actor::Supervisor;
use super::live::LiveContext;
use super::Route;
use crate::context::ContextActor;
use crate::messages::{Drain, ForgetSession, ForgetSessions, GetStats, Shutdown, StopAll};
use crate::RuntimeError;
use a2ad_protocol::A2aError;
use actix::prelude::*;
use std::sync::Arc;
use std::time::Instant;

impl Handler<Route> for Supervisor {
    type Result = Result<Addr<ContextActor>, A2aError>;

    fn handle(&mut self, msg: Route, _ctx: &mut Self::Context) -> Self::Result {
        // A handle of its own, so that the lock is held across `spawn_context` (`&mut self`).
        let live = Arc::clone(&self.live);
        let mut live = live.lock();
        // Started by another caller since this one looked.
        if let Some(addr) = live.route_to_running(&msg.key)? {
            return Ok(addr);
        }
        let live_now = live.contexts.len();
        if live_now >= self.rt.settings.max_contexts {
            return Err(RuntimeError::NodeFull(live_now).into());
        }
        let addr = self.spawn_context(msg.key.clone());
        live.contexts.insert(msg.key, LiveContext { addr: addr.clone(), last_routed: Instant::now() });
        self.stats.live_contexts = live.contexts.len();
        Ok(addr)
    }
}

impl Handler<GetStats> for Supervisor {
    type Result = MessageResult<GetStats>;

    fn handle(&mut self, _msg: GetStats, _ctx: &mut Self::Context) -> Self::Result {
        self.stats.live_contexts = self.live.lock().contexts.len();
        MessageResult(self.stats)
    }
}

impl Handler<Drain> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: Drain, _ctx: &mut Self::Context) -> Self::Result {
        self.live.lock().stopping = true;
        let limits = std::sync::Arc::clone(&self.rt.turn_limits);
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + msg.grace;
            while limits.running() > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    }
}

impl Handler<StopAll> for Supervisor {
    type Result = ResponseFuture<()>;

    /// Refuses new routes, ends every running turn honestly and stops every context.
    fn handle(&mut self, _msg: StopAll, _ctx: &mut Self::Context) -> Self::Result {
        let addrs: Vec<Addr<ContextActor>> = {
            let mut live = self.live.lock();
            live.stopping = true;
            live.contexts.drain().map(|(_, live)| live.addr).collect()
        };
        self.stats.live_contexts = 0;
        Box::pin(async move {
            futures_util::future::join_all(addrs.iter().map(|addr| addr.send(Shutdown))).await;
        })
    }
}

impl Handler<ForgetSessions> for Supervisor {
    type Result = ResponseFuture<usize>;

    /// The retention sweep's sessions: a live context forgets its own; the others are
    /// forgotten here on a node's own store (local), and on the blocking pool on a shared
    /// one (a Redis round trip each, which the supervisor, that routes every request, does
    /// not wait on).
    fn handle(&mut self, msg: ForgetSessions, _ctx: &mut Self::Context) -> Self::Result {
        let mut live = Vec::new();
        let mut idle = Vec::new();
        {
            let contexts = &self.live.lock().contexts;
            for key in msg.keys {
                match contexts.get(&key).filter(|l| l.addr.connected()) {
                    Some(context) => live.push(context.addr.clone()),
                    None => idle.push(key),
                }
            }
        }
        let store = Arc::clone(&self.rt.store);
        let forget_idle = move || idle.iter().map(|key| forget_if_unused(store.as_ref(), key)).sum::<usize>();
        let (mut removed, later) = match self.rt.store.cluster() {
            Some(_) => (0, Some(forget_idle)),
            None => (forget_idle(), None),
        };
        Box::pin(async move {
            if let Some(forget_idle) = later {
                removed += tokio::task::spawn_blocking(forget_idle).await.unwrap_or(0);
            }
            for addr in live {
                removed += usize::from(addr.send(ForgetSession).await.unwrap_or(false));
            }
            removed
        })
    }
}

/// Forgets `key`'s session if no task of its context is left; 1 if it did.
fn forget_if_unused(store: &dyn a2ad_storage::TaskStore, key: &a2ad_storage::ContextKey) -> usize {
    match store.forget_session_if_unused(key) {
        Ok(gone) => usize::from(gone),
        Err(e) => {
            tracing::error!(context_id = %key.context_id, error = %e, "could not remove a session");
            0
        }
    }
}
