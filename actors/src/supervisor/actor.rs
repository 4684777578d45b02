//! The supervisor's state.

use super::live::LiveContexts;
use crate::context::ContextActor;
use crate::messages::{SupervisorStats, TryEvict};
use crate::Runtime;
use a2ad_storage::ContextKey;
use actix::prelude::*;
use std::sync::Arc;

/// Keeps the live context actors. There is one per node. A request finds a running
/// context's actor in [`LiveContexts`] without a message here; it asks the supervisor to
/// start the others, and the supervisor alone adds, evicts and bounds them.
pub struct Supervisor {
    pub(super) rt: Arc<Runtime>,
    /// Context actors run on these threads, round-robin, so that contexts run in
    /// parallel while each context stays single-threaded.
    pub(super) arbiters: Vec<Arbiter>,
    pub(super) next_arbiter: usize,
    /// The live contexts, which callers read without a message here
    /// ([`LiveContexts::find`]); only the supervisor adds to them and removes from them.
    pub(super) live: Arc<LiveContexts>,
    pub(super) stats: SupervisorStats,
}

impl Supervisor {
    /// A supervisor with `settings.worker_threads` arbiters of its own.
    pub fn new(rt: Arc<Runtime>) -> Self {
        let threads = rt.settings.worker_threads.max(1);
        Supervisor {
            arbiters: (0..threads).map(|_| Arbiter::new()).collect(),
            rt,
            next_arbiter: 0,
            live: Arc::default(),
            stats: SupervisorStats::default(),
        }
    }

    /// The live contexts, for the callers that route requests ([`LiveContexts::find`]).
    pub fn live_contexts(&self) -> Arc<LiveContexts> {
        Arc::clone(&self.live)
    }

    /// Starts a context actor on the next arbiter.
    pub(super) fn spawn_context(&mut self, key: ContextKey) -> Addr<ContextActor> {
        let arbiter = &self.arbiters[self.next_arbiter % self.arbiters.len()];
        self.next_arbiter = self.next_arbiter.wrapping_add(1);
        let rt = Arc::clone(&self.rt);
        self.stats.started_total += 1;
        ContextActor::start_in_arbiter(&arbiter.handle(), move |_| ContextActor::new(key, rt))
    }

    /// Asks every context that has not been routed to for the idle timeout to stop, and
    /// forgets those that did (or that are already gone).
    fn sweep(&mut self, ctx: &mut Context<Self>) {
        let timeout = self.rt.settings.idle_timeout;
        let candidates: Vec<(ContextKey, Addr<ContextActor>)> = {
            let mut live = self.live.lock();
            live.contexts.retain(|_, live| live.addr.connected());
            self.stats.live_contexts = live.contexts.len();
            let idle = live.contexts.iter().filter(|(_, live)| live.last_routed.elapsed() >= timeout);
            idle.map(|(key, live)| (key.clone(), live.addr.clone())).collect()
        };
        for (key, addr) in candidates {
            let ask = addr.send(TryEvict { min_idle: timeout });
            ctx.spawn(ask.into_actor(self).map(move |stopped, act, _| {
                if matches!(stopped, Ok(true) | Err(_)) {
                    let mut live = act.live.lock();
                    if live.contexts.get(&key).is_some_and(|live| live.addr == addr) {
                        live.contexts.remove(&key);
                        act.stats.evicted_total += 1;
                    }
                }
            }));
        }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Every request passes through here: a roomy mailbox, still bounded.
        ctx.set_mailbox_capacity(4096);
        ctx.run_interval(self.rt.settings.sweep_interval, Self::sweep);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.live.lock().stopping = true;
        for arbiter in &self.arbiters {
            arbiter.stop();
        }
    }
}
