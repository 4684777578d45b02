//! The settings of one agent (`agents[i]` of the config, which parses them).

use super::command::CommandSettings;
use super::echo::EchoSettings;
use super::openai::OpenAiSettings;
use a2ad_protocol::AgentSkill;

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
