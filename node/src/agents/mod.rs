//! The built-in agents, and building the registry from the config.

pub mod command;
pub mod echo;
mod fields;
pub mod input;
pub mod jsonl;
pub mod openai;
pub mod process_groups;
pub mod programs;
pub mod roots;
mod settings;
pub mod stderr;
pub mod workspace;

pub use settings::{AgentConfig, AgentKind};

use a2ad_actors::agent::{AgentError, AgentRegistry, TurnInput};
use a2ad_protocol::{A2aError, Message};
use std::path::PathBuf;
use std::sync::Arc;

/// What every agent of a node shares: where workspaces may lie, the input rules, and
/// whether thinking text goes out.
#[derive(Debug, Clone, Default)]
pub struct AgentEnv {
    /// The `allowed-cwds`: a message may pick its workspace only inside the caller's
    /// expansion of these.
    pub roots: roots::WorkspacePolicy,
    /// Which input part types reach an agent's prompt, and how.
    pub input: input::InputPolicy,
    /// Whether `thinking` events go out as status metadata (off: private to the node).
    pub thinking_exposure: bool,
    /// Where artifacts too large to inline go.
    pub artifacts: crate::artifacts::ArtifactStore,
    /// The process groups of the command agents' programs, killed at the node's close.
    pub process_groups: process_groups::ProcessGroups,
    /// The node's data dir (absolute): a turn without a working directory runs in a
    /// private one under it ([`a2ad_actors::workdirs`]). Empty (the `Default`): under the
    /// system temp dir.
    pub data_dir: PathBuf,
}

impl AgentEnv {
    /// The context's working directory, checked against the caller's roots; `None` when
    /// the client named none. On the blocking pool: resolving a path is file system work
    /// (a slow or hung mount must not stall the actor thread the turn runs on).
    pub async fn workspace(self: &Arc<Self>, input: &TurnInput) -> Result<Option<PathBuf>, AgentError> {
        let Some(asked) = input.cwd.clone() else { return Ok(None) };
        let (env, owner) = (Arc::clone(self), input.owner.clone());
        tokio::task::spawn_blocking(move || env.roots.for_owner(&owner).resolve_cwd(&asked))
            .await
            .map_err(|_| AgentError("the working directory could not be checked".into()))?
            .map(Some)
            .map_err(|e| AgentError(e.to_string()))
    }

    /// The task's private working directory ([`a2ad_actors::workdirs`]), made if it is
    /// not there yet (`0700`, like every directory the node makes in its data dir), and
    /// canonical. On the blocking pool, like [`AgentEnv::workspace`].
    pub async fn private_dir(&self, input: &TurnInput) -> Result<PathBuf, AgentError> {
        let base = if self.data_dir.as_os_str().is_empty() { std::env::temp_dir() } else { self.data_dir.clone() };
        let dir = a2ad_actors::workdirs::private_dir(&base, &input.owner, &input.task_id).ok_or_else(|| {
            AgentError("the tenant and principal names are too long for a private working directory".into())
        })?;
        let make = move || -> std::io::Result<PathBuf> {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
            dir.canonicalize()
        };
        tokio::task::spawn_blocking(make)
            .await
            .map_err(|_| AgentError("the private working directory could not be made".into()))?
            .map_err(|e| {
                tracing::warn!(task_id = %input.task_id, error = %e, "could not make a private working directory");
                AgentError("the private working directory could not be made".into())
            })
    }

    /// The turn's message as a prompt ([`input::InputPolicy::render`]), on the blocking
    /// pool: `file://` parts are read (within the caller's roots) and hashed (up to 25 MiB),
    /// which must not stall the actor thread the turn runs on.
    pub async fn prompt(self: &Arc<Self>, input: &TurnInput, cwd: Option<PathBuf>) -> Result<String, AgentError> {
        let (env, message, owner) = (Arc::clone(self), input.message.clone(), input.owner.clone());
        let render = move || env.input.render(&message, cwd.as_deref(), &env.roots.for_owner(&owner));
        tokio::task::spawn_blocking(render)
            .await
            .map_err(|_| AgentError("the message could not be read".into()))?
            .map_err(AgentError)
    }

    /// Checks a message before a task exists ([`input::InputPolicy::check`]); where
    /// workspaces are off, a message that names a working directory or a `file://` part
    /// is refused now, with the reason, rather than failing its task.
    pub fn check_input(&self, message: &Message, accepts: &[String]) -> Result<(), A2aError> {
        self.input.check(message, accepts)?;
        if self.roots.is_off() {
            if let Some(refusal) = input::local_path_refusal(message) {
                return Err(A2aError::invalid_params(refusal.to_string()));
            }
        }
        Ok(())
    }
}

/// One agent per configured entry, keyed by its skill id, in config order, all sharing
/// `env` (built once at start-up by [`crate::config::Config::agent_env`], so that every
/// agent applies the same roots, input policy and artifact store; the command agents'
/// programs run in its process groups, which the node kills at its close).
pub fn build_registry(agents: &[AgentConfig], env: AgentEnv) -> AgentRegistry {
    let env = Arc::new(env);
    let mut registry = AgentRegistry::default();
    for agent in agents {
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
