//! The settings of one agent (`agents[i]` of the config, which parses them).

use super::command::CommandSettings;
use super::echo::EchoSettings;
use super::openai::OpenAiSettings;
use a2ad_protocol::{AgentSkill, TaskState};
use serde::ser::{SerializeMap, Serializer};

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
    Command(CommandSettings),
    OpenAi(OpenAiSettings),
}

/// An agent is written as in the config file: its skill fields, `kind`, and the block
/// named by the kind (`kind: echo` with `echo: {...}`).
impl serde::Serialize for AgentConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("description", &self.description)?;
        map.serialize_entry("tags", &self.tags)?;
        map.serialize_entry("examples", &self.examples)?;
        map.serialize_entry("input-modes", &self.input_modes)?;
        map.serialize_entry("output-modes", &self.output_modes)?;
        match &self.kind {
            AgentKind::Echo(echo) => {
                map.serialize_entry("kind", "echo")?;
                map.serialize_entry("echo", echo)?;
            }
            AgentKind::Command(command) => {
                map.serialize_entry("kind", "command")?;
                map.serialize_entry("command", command)?;
            }
            AgentKind::OpenAi(openai) => {
                map.serialize_entry("kind", "openai")?;
                map.serialize_entry("openai", openai)?;
            }
        }
        map.end()
    }
}

/// `end-state`: `completed` or `input-required`, the only two states an agent may be
/// configured to end in.
pub(crate) fn end_state<'de, D: serde::Deserializer<'de>>(d: D) -> Result<TaskState, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum EndState {
        Completed,
        InputRequired,
    }
    Ok(match <EndState as serde::Deserialize>::deserialize(d)? {
        EndState::Completed => TaskState::Completed,
        EndState::InputRequired => TaskState::InputRequired,
    })
}

/// What `end-state` is unless set.
pub(crate) fn completed() -> TaskState {
    TaskState::Completed
}

/// What a command or openai agent's `timeout` is unless set.
pub(crate) fn default_timeout() -> std::time::Duration {
    std::time::Duration::from_secs(600)
}

/// `end-state` as written (see [`end_state`]).
pub(crate) fn show_end_state<S: Serializer>(state: &TaskState, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match state {
        TaskState::InputRequired => "input-required",
        _ => "completed",
    })
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
