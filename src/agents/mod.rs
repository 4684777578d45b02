//! The built-in agents, and building the registry from the config.

pub mod command;
pub mod echo;
pub mod input;
pub mod jsonl;
pub mod openai;
pub mod workspace;

use crate::config::{AgentKind, Config};
use a2ad_actors::agent::AgentRegistry;
use std::sync::Arc;

/// What every agent of a node shares: where workspaces may lie, the input rules, and
/// whether thinking text goes out.
#[derive(Debug, Clone, Default)]
pub struct AgentEnv {
    pub roots: workspace::AllowedRoots,
    pub input: input::InputPolicy,
    pub thinking_exposure: bool,
    /// Where artifacts too large to inline go.
    pub artifacts: crate::artifacts::ArtifactStore,
}

impl AgentEnv {
    pub fn from_config(config: &Config) -> Self {
        AgentEnv {
            roots: workspace::AllowedRoots::new(&config.allowed_cwds),
            input: input::InputPolicy {
                text_types: config.input_parts.text_types.clone(),
                media_types: config.input_parts.media_types.clone(),
            },
            thinking_exposure: config.thinking_exposure,
            artifacts: crate::artifacts::ArtifactStore::new(&config.data_dir, config.artifacts.inline_max),
        }
    }
}

/// One agent per configured entry, keyed by its skill id, in config order.
pub fn build_registry(config: &Config) -> AgentRegistry {
    let env = Arc::new(AgentEnv::from_config(config));
    let mut registry = AgentRegistry::default();
    for agent in &config.agents {
        let accepts = agent.input_modes.clone();
        match &agent.kind {
            AgentKind::Echo(settings) => registry.register(&agent.id, Arc::new(echo::EchoAgent::new(settings.clone()))),
            AgentKind::Command(settings) => registry
                .register(&agent.id, Arc::new(command::CommandAgent::new(settings.clone(), Arc::clone(&env), accepts))),
            AgentKind::OpenAi(settings) => registry
                .register(&agent.id, Arc::new(openai::OpenAiAgent::new(settings.clone(), Arc::clone(&env), accepts))),
        }
    }
    registry
}
