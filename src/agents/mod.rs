//! The built-in agents, and building the registry from the config.

pub mod command;
pub mod echo;

use crate::config::{AgentConfig, AgentKind};
use a2ad_actors::agent::AgentRegistry;
use std::sync::Arc;

/// One agent per configured entry, keyed by its skill id, in config order.
pub fn build_registry(agents: &[AgentConfig]) -> AgentRegistry {
    let mut registry = AgentRegistry::default();
    for agent in agents {
        match &agent.kind {
            AgentKind::Echo(settings) => registry.register(&agent.id, Arc::new(echo::EchoAgent::new(settings.clone()))),
            AgentKind::Command(settings) => {
                registry.register(&agent.id, Arc::new(command::CommandAgent::new(settings.clone())))
            }
        }
    }
    registry
}
