//! The `agents:` list: each entry is a skill on the card and an agent that serves it.

use crate::agents::echo::EchoSettings;
use a2ad_protocol::{ids, AgentSkill, TaskState};
use serde::Deserialize;
use std::time::Duration;

/// One configured agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// The skill id; routing uses it (`message.metadata.skill`).
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub examples: Vec<String>,
    pub input_modes: Vec<String>,
    pub output_modes: Vec<String>,
    pub kind: AgentKind,
}

/// What runs the agent, with its own settings.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentKind {
    Echo(EchoSettings),
}

impl AgentConfig {
    /// The default node: one echo agent.
    pub fn default_echo() -> Self {
        AgentConfig {
            id: "echo".into(),
            name: "Echo".into(),
            description: "Replies with the message it receives, as a message and as an artifact.".into(),
            tags: vec!["echo".into(), "test".into()],
            examples: vec!["Hello, agent!".into()],
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            kind: AgentKind::Echo(EchoSettings::default()),
        }
    }

    /// The card's skill for this agent.
    pub fn skill(&self) -> AgentSkill {
        AgentSkill {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            tags: self.tags.clone(),
            examples: self.examples.clone(),
            input_modes: self.input_modes.clone(),
            output_modes: self.output_modes.clone(),
            security_requirements: Vec::new(),
        }
    }
}

/// The `agents:` list, checked: the default echo agent when absent; never empty; ids
/// unique. Errors name the key.
pub(super) fn build_all(entries: Option<Vec<AgentEntry>>) -> Result<Vec<AgentConfig>, super::ConfigError> {
    let invalid = |key: String, message: String| super::ConfigError::Invalid { key, message };
    let agents = match entries {
        None => vec![AgentConfig::default_echo()],
        Some(entries) if entries.is_empty() => {
            return Err(invalid("agents".into(), "at least one agent is required".into()));
        }
        Some(entries) => entries
            .into_iter()
            .enumerate()
            .map(|(i, entry)| entry.into_config(i).map_err(|(key, message)| invalid(key, message)))
            .collect::<Result<Vec<_>, _>>()?,
    };
    for (i, agent) in agents.iter().enumerate() {
        if agents[..i].iter().any(|earlier| earlier.id == agent.id) {
            return Err(invalid(format!("agents[{i}].id"), format!("`{}` is used twice", agent.id)));
        }
    }
    Ok(agents)
}

/// An entry as written in YAML.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub(super) struct AgentEntry {
    id: String,
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    input_modes: Vec<String>,
    #[serde(default)]
    output_modes: Vec<String>,
    kind: String,
    /// Settings of an `echo` agent.
    echo: Option<EchoEntry>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct EchoEntry {
    #[serde(default)]
    end_state: EchoEndState,
    #[serde(default)]
    chunk_size: usize,
    #[serde(default, deserialize_with = "super::units::duration")]
    chunk_delay: Duration,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum EchoEndState {
    #[default]
    Completed,
    InputRequired,
}

impl AgentEntry {
    /// Checks the entry; errors name the key below `agents[index]`.
    pub(super) fn into_config(self, index: usize) -> Result<AgentConfig, (String, String)> {
        let key = |k: &str| format!("agents[{index}].{k}");
        ids::validate_id("id", &self.id)
            .map_err(|_| (key("id"), "must be 1-128 characters of A-Z a-z 0-9 _ . : -".into()))?;
        let kind = match self.kind.as_str() {
            "echo" => {
                let e = self.echo.unwrap_or_default();
                let end_state = match e.end_state {
                    EchoEndState::Completed => TaskState::Completed,
                    EchoEndState::InputRequired => TaskState::InputRequired,
                };
                AgentKind::Echo(EchoSettings { end_state, chunk_size: e.chunk_size, chunk_delay: e.chunk_delay })
            }
            other => return Err((key("kind"), format!("unknown agent kind `{other}` (known: echo)"))),
        };
        Ok(AgentConfig {
            name: self.name.unwrap_or_else(|| self.id.clone()),
            id: self.id,
            description: self.description,
            tags: self.tags,
            examples: self.examples,
            input_modes: self.input_modes,
            output_modes: self.output_modes,
            kind,
        })
    }
}
