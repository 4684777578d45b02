//! The `agents:` list: each entry is a skill on the card and an agent that serves it.

pub use crate::agents::{AgentConfig, AgentKind};

use crate::agents::command::CommandSettings;
use crate::agents::echo::EchoSettings;
use crate::agents::openai::OpenAiSettings;
use a2ad_protocol::ids;
use serde::Deserialize;

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

/// `deserialize_with` for `agents`, when a [`super::Config`] is deserialized directly
/// ([`super::Config::load`] takes the key out and reads it with [`read_all`], whose
/// errors name the entry's key).
pub(super) fn entries<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<AgentConfig>, D::Error> {
    Vec::<AgentEntry>::deserialize(d)?
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            entry.into_config(i).map_err(|(key, message)| serde::de::Error::custom(format!("{key}: {message}")))
        })
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

/// An entry as written: the skill fields, `kind`, and the settings block named by the
/// kind, in the agents' own settings types. [`AgentConfig`] holds the block as
/// [`AgentKind`], an enum, which serde cannot read from a tag beside a block named by it.
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
    echo: Option<EchoSettings>,
    /// Settings of a `command` agent.
    command: Option<CommandSettings>,
    /// Settings of an `openai` agent.
    openai: Option<OpenAiSettings>,
}

/// The checks of an openai block that serde's types cannot express.
fn check_openai(settings: &OpenAiSettings, key: impl Fn(&str) -> String) -> Result<(), (String, String)> {
    if !(settings.base_url.starts_with("http://") || settings.base_url.starts_with("https://")) {
        return Err((key("openai.base-url"), "must be an http:// or https:// URL".into()));
    }
    if settings.model.is_empty() {
        return Err((key("openai.model"), "must name a model".into()));
    }
    for reserved in ["model", "messages", "stream", "stream_options"] {
        if settings.options.contains_key(reserved) {
            return Err((key("openai.options"), format!("`{reserved}` is set by the node")));
        }
    }
    Ok(())
}

/// A command block needs a program; a relative path (`examples/agents/x.sh`) means the
/// node's working directory, not the turn's workspace the program is started in, so it
/// is made absolute here.
fn check_command(settings: &mut CommandSettings, key: impl Fn(&str) -> String) -> Result<(), (String, String)> {
    match settings.argv.first_mut() {
        Some(program) if !program.is_empty() => {
            if program.contains('/') && !program.starts_with('/') {
                if let Ok(absolute) = std::path::absolute(&*program) {
                    *program = absolute.to_string_lossy().into_owned();
                }
            }
            Ok(())
        }
        _ => Err((key("command.argv"), "must name the program to run".into())),
    }
}

impl AgentEntry {
    /// Checks the entry; errors name the key below `agents[index]`.
    pub(super) fn into_config(self, index: usize) -> Result<AgentConfig, (String, String)> {
        let key = |k: &str| format!("agents[{index}].{k}");
        ids::validate_id("id", &self.id)
            .map_err(|_| (key("id"), "must be 1-128 characters of A-Z a-z 0-9 _ . : -".into()))?;
        let kind = match self.kind.as_str() {
            "echo" => AgentKind::Echo(self.echo.unwrap_or_default()),
            "command" => {
                let mut settings =
                    self.command.ok_or_else(|| (key("command"), "a command agent needs a command block".into()))?;
                check_command(&mut settings, key)?;
                AgentKind::Command(settings)
            }
            "openai" => {
                let settings =
                    self.openai.ok_or_else(|| (key("openai"), "an openai agent needs an openai block".into()))?;
                check_openai(&settings, key)?;
                AgentKind::OpenAi(settings)
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
    /// agents' programs run in `process_groups`. `authenticated`: the node checks
    /// credentials (then no `allowed-cwds` means no workspaces, not the defaults).
    pub fn agent_env(
        &self,
        process_groups: &crate::agents::process_groups::ProcessGroups,
        authenticated: bool,
    ) -> crate::agents::AgentEnv {
        use crate::agents::{input, roots};
        crate::agents::AgentEnv {
            roots: roots::WorkspacePolicy::new(&self.allowed_cwds, &self.data_dir, authenticated),
            input: input::InputPolicy {
                text_types: self.input_parts.text_types.clone(),
                media_types: self.input_parts.media_types.clone(),
            },
            thinking_exposure: self.thinking_exposure,
            artifacts: crate::artifacts::ArtifactStore::new(
                &self.data_dir,
                self.artifacts.inline_max,
                self.artifact_route_base(),
            ),
            process_groups: process_groups.clone(),
            data_dir: std::path::absolute(&self.data_dir).unwrap_or_else(|_| self.data_dir.clone()),
        }
    }

    /// Where the artifact route lives, `<public-url><rest-prefix>` (`public-url` defaults
    /// to `http://<listen>`, as in the card); `None` with `artifacts.links: file`.
    fn artifact_route_base(&self) -> Option<String> {
        if self.artifacts.links == crate::artifacts::ArtifactLinks::File {
            return None;
        }
        let public_url = self.public_url.clone().unwrap_or_else(|| format!("http://{}", self.listen));
        Some(format!("{public_url}{}", self.rest_prefix))
    }
}
