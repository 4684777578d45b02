//! The `agents:` list: each entry is a skill on the card and an agent that serves it.

pub use crate::agents::{AgentConfig, AgentKind};

use crate::agents::command::{CommandSettings, InputMode, OutputMode};
use crate::agents::echo::EchoSettings;
use crate::agents::openai::OpenAiSettings;
use a2ad_protocol::{ids, TaskState};
use serde::Deserialize;
use std::time::Duration;

/// The `agents:` list as written (`None`: the key is absent), read into the agents'
/// own settings. Errors name the key (`agents[0].kind`).
pub(super) fn read_all(written: Option<serde_yaml_ng::Value>) -> Result<Vec<AgentConfig>, super::ConfigError> {
    /// The list under its key, so that a bad entry's path starts with `agents`.
    #[derive(Deserialize)]
    struct Written {
        agents: Option<Vec<AgentEntry>>,
    }
    let Some(written) = written else { return Ok(vec![AgentConfig::default_echo()]) };
    let mut wrapper = serde_yaml_ng::Mapping::new();
    wrapper.insert("agents".into(), written);
    let Written { agents } = super::deserialize_named(serde_yaml_ng::Value::Mapping(wrapper))?;
    let Some(entries) = agents else { return Ok(vec![AgentConfig::default_echo()]) };
    entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| entry.into_config(i).map_err(|(key, message)| super::ConfigError::Invalid { key, message }))
        .collect()
}

/// The list checked in place: never empty, ids unique.
pub(super) fn check_all(agents: &[AgentConfig]) -> Result<(), super::ConfigError> {
    let invalid = |key: String, message: String| super::ConfigError::Invalid { key, message };
    if agents.is_empty() {
        return Err(invalid("agents".into(), "at least one agent is required".into()));
    }
    for (i, agent) in agents.iter().enumerate() {
        if agents[..i].iter().any(|earlier| earlier.id == agent.id) {
            return Err(invalid(format!("agents[{i}].id"), format!("`{}` is used twice", agent.id)));
        }
    }
    Ok(())
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
    /// Settings of a `command` agent.
    command: Option<CommandEntry>,
    /// Settings of an `openai` agent.
    openai: Option<OpenAiEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct OpenAiEntry {
    base_url: String,
    model: String,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    system_prompt: Option<String>,
    #[serde(default)]
    options: serde_json::Map<String, serde_json::Value>,
    #[serde(default = "default_timeout", deserialize_with = "super::units::duration")]
    timeout: Duration,
}

impl OpenAiEntry {
    fn into_settings(self, key: impl Fn(&str) -> String) -> Result<OpenAiSettings, (String, String)> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err((key("openai.base-url"), "must be an http:// or https:// URL".into()));
        }
        if self.model.is_empty() {
            return Err((key("openai.model"), "must name a model".into()));
        }
        for reserved in ["model", "messages", "stream", "stream_options"] {
            if self.options.contains_key(reserved) {
                return Err((key("openai.options"), format!("`{reserved}` is set by the node")));
            }
        }
        Ok(OpenAiSettings {
            base_url: self.base_url,
            model: self.model,
            api_key_env: self.api_key_env,
            system_prompt: self.system_prompt,
            options: self.options,
            timeout: self.timeout,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct CommandEntry {
    argv: Vec<String>,
    #[serde(default)]
    input: CommandInput,
    #[serde(default)]
    output: CommandOutput,
    #[serde(default)]
    end_state: CommandEndState,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    #[serde(default = "default_env_allow")]
    env_allow: Vec<String>,
    #[serde(default)]
    cwd: Option<std::path::PathBuf>,
    #[serde(default = "default_timeout", deserialize_with = "super::units::duration")]
    timeout: Duration,
    #[serde(default = "default_max_output", deserialize_with = "super::units::byte_size")]
    max_output: usize,
    #[serde(default = "default_grace", deserialize_with = "super::units::duration")]
    cancel_grace: Duration,
}

fn default_env_allow() -> Vec<String> {
    vec!["PATH".into(), "LANG".into()]
}

fn default_timeout() -> Duration {
    Duration::from_secs(600)
}

fn default_max_output() -> usize {
    16 * 1024 * 1024
}

fn default_grace() -> Duration {
    Duration::from_secs(5)
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum CommandInput {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum CommandOutput {
    #[default]
    Text,
    Jsonl,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum CommandEndState {
    #[default]
    Completed,
    InputRequired,
}

impl CommandEntry {
    fn into_settings(self, key: impl Fn(&str) -> String) -> Result<CommandSettings, (String, String)> {
        let mut argv = self.argv;
        match argv.first_mut() {
            Some(program) if !program.is_empty() => {
                // A relative path (`examples/agents/x.sh`) means the node's working
                // directory, not the turn's workspace the program is started in.
                if program.contains('/') && !program.starts_with('/') {
                    if let Ok(absolute) = std::path::absolute(&*program) {
                        *program = absolute.to_string_lossy().into_owned();
                    }
                }
            }
            _ => return Err((key("command.argv"), "must name the program to run".into())),
        }
        Ok(CommandSettings {
            argv,
            input: match self.input {
                CommandInput::Text => InputMode::Text,
                CommandInput::Json => InputMode::Json,
            },
            output: match self.output {
                CommandOutput::Text => OutputMode::Text,
                CommandOutput::Jsonl => OutputMode::Jsonl,
            },
            end_state: match self.end_state {
                CommandEndState::Completed => TaskState::Completed,
                CommandEndState::InputRequired => TaskState::InputRequired,
            },
            env: self.env,
            env_allow: self.env_allow,
            cwd: self.cwd,
            timeout: self.timeout,
            max_output: self.max_output,
            cancel_grace: self.cancel_grace,
        })
    }
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
            "command" => {
                let entry =
                    self.command.ok_or_else(|| (key("command"), "a command agent needs a command block".into()))?;
                AgentKind::Command(entry.into_settings(key)?)
            }
            "openai" => {
                let entry =
                    self.openai.ok_or_else(|| (key("openai"), "an openai agent needs an openai block".into()))?;
                AgentKind::OpenAi(entry.into_settings(key)?)
            }
            other => return Err((key("kind"), format!("unknown agent kind `{other}` (known: echo, command, openai)"))),
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

impl super::Config {
    /// What every agent of the node shares ([`crate::agents::AgentEnv`]), from the
    /// `allowed-cwds`, `input-parts`, `thinking-exposure` and `artifacts` keys; the command
    /// agents' programs run in `process_groups`.
    pub fn agent_env(&self, process_groups: &crate::agents::process_groups::ProcessGroups) -> crate::agents::AgentEnv {
        use crate::agents::{input, workspace};
        crate::agents::AgentEnv {
            roots: workspace::AllowedRoots::new(&self.allowed_cwds, &self.data_dir),
            input: input::InputPolicy {
                text_types: self.input_parts.text_types.clone(),
                media_types: self.input_parts.media_types.clone(),
            },
            thinking_exposure: self.thinking_exposure,
            artifacts: crate::artifacts::ArtifactStore::new(&self.data_dir, self.artifacts.inline_max),
            process_groups: process_groups.clone(),
        }
    }
}
