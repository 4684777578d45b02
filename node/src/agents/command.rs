//! The `command` agent: any program as an A2A agent, started once per turn.
//!
//! * Started from the configured argv, without a shell, in its own process group, with a
//!   clean environment: `A2A_TASK_ID`, `A2A_CONTEXT_ID`, `A2A_MESSAGE_ID`, `A2A_SKILL`, the
//!   node's variables named in `env-allow`, and the configured `env`.
//! * Input (`input`): `text` writes the message's text to stdin; `json` writes one JSON
//!   object `{"message", "taskId", "contextId", "skill", "history"}`.
//! * Output (`output`): `text` makes each stdout line agent text (a WORKING status
//!   message), and the whole output the final status message and the `output` artifact,
//!   so that every client shows the answer; `jsonl` reads each line as an event (see
//!   docs/agents.md, "The command agent"); a line that is not JSON is agent text.
//! * Exit 0 ends the turn in `end-state`, or in the state a `final` event named; any other
//!   exit is FAILED with a short tail of stderr, with paths and configured secrets removed.
//! * Cancelling sends SIGTERM to the process group, then SIGKILL after `cancel-grace` (the
//!   node's close waits for that: see [`super::process_groups`]). A
//!   turn longer than `timeout`, or stdout past `max-output` bytes (a line without an end
//!   included: it is never buffered past the cap), is stopped the same way, and so are
//!   processes the program leaves in its group when it exits.
//! * Stdin is written while stdout is read, and stderr is drained to its end (logged line
//!   by line, its last 64 KiB kept: see [`super::stderr`]), so no full pipe can stall a
//!   program. Output that is not UTF-8 is read lossily.

use super::process_groups::ProcessGroups;
use super::stderr::{self, Redactor, StderrLog};
use super::AgentEnv;
use a2ad_actors::agent::{Agent, AgentError, AgentEvent, EventSink, TurnEnd, TurnInput};
use a2ad_protocol::{ids, A2aError, Artifact, Message, Part, TaskState};
use futures_util::future::BoxFuture;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// How the program gets its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputMode {
    #[default]
    Text,
    Json,
}

/// How the program's stdout is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputMode {
    #[default]
    Text,
    Jsonl,
}

/// A command agent's settings (its config block, `agents[i].command`, read as is; the
/// config checks `argv` and makes a relative program path absolute).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CommandSettings {
    pub argv: Vec<String>,
    #[serde(default)]
    pub input: InputMode,
    #[serde(default)]
    pub output: OutputMode,
    #[serde(
        default = "super::fields::completed",
        deserialize_with = "super::fields::end_state",
        serialize_with = "super::fields::show_end_state"
    )]
    pub end_state: TaskState,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default = "default_env_allow")]
    pub env_allow: Vec<String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(
        default = "super::fields::default_timeout",
        deserialize_with = "crate::units::duration",
        serialize_with = "crate::units::show_duration"
    )]
    pub timeout: Duration,
    #[serde(default = "default_max_output", deserialize_with = "crate::units::byte_size")]
    pub max_output: usize,
    #[serde(
        default = "default_grace",
        deserialize_with = "crate::units::duration",
        serialize_with = "crate::units::show_duration"
    )]
    pub cancel_grace: Duration,
}

fn default_env_allow() -> Vec<String> {
    vec!["PATH".into(), "LANG".into()]
}

fn default_max_output() -> usize {
    16 * 1024 * 1024
}

fn default_grace() -> Duration {
    Duration::from_secs(5)
}

/// The command agent.
pub struct CommandAgent {
    settings: Arc<CommandSettings>,
    env: Arc<AgentEnv>,
    /// The media types it takes (its `input-modes`); empty takes every supported type.
    accepts: Vec<String>,
}

impl CommandAgent {
    /// One agent per configured command; the settings are shared with every running turn.
    pub fn new(settings: CommandSettings, env: Arc<AgentEnv>, accepts: Vec<String>) -> Self {
        CommandAgent { settings: Arc::new(settings), env, accepts }
    }
}

impl Agent for CommandAgent {
    fn run(&self, input: TurnInput, events: EventSink) -> BoxFuture<'static, Result<TurnEnd, AgentError>> {
        let settings = Arc::clone(&self.settings);
        let env = Arc::clone(&self.env);
        Box::pin(async move {
            let chosen = env.workspace(&input).await?.or_else(|| settings.cwd.clone());
            // `file://` parts are judged against the directory the client or the operator
            // chose, not the private one, which holds nothing of theirs yet.
            let prompt = env.prompt(&input, chosen.clone()).await?;
            let (cwd, private) = match chosen {
                Some(dir) => (dir, false),
                None => (env.private_dir(&input).await?, true),
            };
            let turn = Turn { settings: &settings, env: &env, input: &input, events: &events, prompt, cwd, private };
            let timeout = settings.timeout;
            match tokio::time::timeout(timeout, run_program(&turn)).await {
                Ok(result) => result,
                Err(_) => Err(AgentError(format!("the agent program timed out after {timeout:?}"))),
            }
        })
    }

    fn check_input(&self, message: &Message) -> Result<(), A2aError> {
        self.env.check_input(message, &self.accepts)
    }

    /// Only jsonl output has a `reply` event.
    fn may_reply_only(&self) -> bool {
        self.settings.output == OutputMode::Jsonl
    }
}

/// One turn of the program, and what it needs.
struct Turn<'a> {
    settings: &'a CommandSettings,
    env: &'a AgentEnv,
    input: &'a TurnInput,
    events: &'a EventSink,
    /// The message rendered as text (see [`super::input`]).
    prompt: String,
    /// Where the program runs: the client's workspace, the agent's `cwd`, or the task's
    /// private working directory.
    cwd: PathBuf,
    /// Whether `cwd` is the task's private working directory (in the data dir).
    private: bool,
}

impl Turn<'_> {
    /// Whose stderr the program writes, for the node's log.
    fn stderr_log(&self) -> StderrLog {
        StderrLog {
            task_id: self.input.task_id.clone(),
            context_id: self.input.context_id.clone(),
            agent: self.input.skill.clone(),
            redactor: Redactor::new(&self.settings.env, &self.settings.env_allow),
        }
    }
}

/// Kills the program's process group when the turn ends early (cancel, timeout, node
/// shutdown): SIGTERM now, SIGKILL after the grace period. The group is registered with
/// the node's [`ProcessGroups`] from the start, so the node's close can kill it too.
struct GroupGuard {
    pgid: Option<i32>,
    grace: Duration,
    groups: ProcessGroups,
}

impl GroupGuard {
    fn new(pgid: Option<i32>, grace: Duration, groups: &ProcessGroups) -> Self {
        if let Some(pgid) = pgid {
            groups.started(pgid, grace);
        }
        GroupGuard { pgid, grace, groups: groups.clone() }
    }

    /// After the program exited: processes it left in its group (started in the
    /// background) are stopped now, like a cancelled turn's, since the turn that owned
    /// them is over and they may hold its stderr open; with none left there is nothing
    /// to signal.
    fn stop_leftovers(&mut self) {
        let Some(pgid) = self.pgid.take() else { return };
        if super::process_groups::exists(pgid) {
            tracing::debug!("the agent program left processes in its group: stopping them");
            self.groups.stop(pgid, self.grace);
        } else {
            self.groups.finished(pgid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            self.groups.stop(pgid, self.grace);
        }
    }
}

async fn run_program(turn: &Turn<'_>) -> Result<TurnEnd, AgentError> {
    let (settings, input) = (turn.settings, turn.input);
    // The config refuses an empty argv; settings built in code get an error, not a panic.
    let (program, args) =
        settings.argv.split_first().ok_or_else(|| AgentError("the agent has no program to run".into()))?;
    let mut command = tokio::process::Command::new(program);
    command.args(args).env_clear();
    for name in &settings.env_allow {
        if let Ok(value) = std::env::var(name) {
            command.env(name, value);
        }
    }
    command
        .envs(&settings.env)
        .env("A2A_TASK_ID", &input.task_id)
        .env("A2A_CONTEXT_ID", &input.context_id)
        .env("A2A_MESSAGE_ID", &input.message.message_id)
        .env("A2A_SKILL", &input.skill)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        // Not kill_on_drop: that would SIGKILL the program right after the guard's SIGTERM,
        // leaving it no `cancel-grace` to clean up. The guard stops the whole group.
        .kill_on_drop(false);
    command.current_dir(&turn.cwd);
    if let Some(mask) = crate::private_files::inherited_umask() {
        // The node's own files are private (umask 077); the program's are not the node's.
        // SAFETY: umask is async-signal-safe and touches no memory; nothing else runs
        // between fork and exec here.
        unsafe {
            command.pre_exec(move || {
                libc::umask(mask);
                Ok(())
            });
        }
    }
    let mut child = command.spawn().map_err(|e| {
        // The operator learns why (a relative argv[0] and the node's working directory are
        // the usual cause); the client gets no path.
        tracing::warn!(program = %program, cwd = ?turn.cwd, error = %e, "the agent program could not be started");
        AgentError("the agent program could not be started".into())
    })?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let mut guard = GroupGuard::new(pgid, settings.cancel_grace, &turn.env.process_groups);
    let stderr = child.stderr.take().map(|err| tokio::spawn(stderr::drain(err, turn.stderr_log())));
    let stdout = child.stdout.take().ok_or_else(|| AgentError("the agent program has no output".into()))?;
    let output = feed_and_read(turn, child.stdin.take(), stdout).await?;
    let status = child.wait().await.map_err(|_| AgentError("the agent program could not be waited for".into()))?;
    guard.stop_leftovers();
    // A process that left the group (setsid) may still hold stderr: wait no longer than
    // the stop of the group takes.
    let tail = match stderr {
        Some(task) => {
            let waited = tokio::time::timeout(settings.cancel_grace + Duration::from_secs(1), task).await;
            waited.ok().and_then(Result::ok).unwrap_or_else(|| stderr::NO_ERROR_OUTPUT.to_owned())
        }
        None => stderr::NO_ERROR_OUTPUT.to_owned(),
    };
    if !status.success() {
        let code = status.code().map_or("a signal".to_owned(), |c| format!("status {c}"));
        return Err(AgentError(format!("the agent program exited with {code}: {tail}")));
    }
    match output.end {
        Some(end) => Ok(end),
        None => text_answer(turn, output.text).await,
    }
}

/// The end of a turn whose program named none: `end-state`, with a text-mode program's
/// whole output as the status message and as the `output` artifact, so that a client that
/// shows only the final status (a blocking send, most SDK examples) or only the artifacts
/// shows the answer. The lines are in the history already, one message each.
async fn text_answer(turn: &Turn<'_>, text: String) -> Result<TurnEnd, AgentError> {
    let state = turn.settings.end_state;
    if text.is_empty() {
        return Ok(TurnEnd::new(state, None));
    }
    let artifact = Artifact {
        artifact_id: "output".into(),
        name: Some("output".into()),
        description: None,
        parts: vec![Part::text(text.clone())],
        metadata: None,
        extensions: Vec::new(),
    };
    turn.events.send(AgentEvent::Artifact { artifact, append: false, last_chunk: true }).await?;
    let input = turn.input;
    let message = Message::agent_text(ids::new_id(), &input.context_id, Some(&input.task_id), &text);
    Ok(TurnEnd { repeats_history: true, ..TurnEnd::new(state, Some(message)) })
}

fn stdin_payload(mode: InputMode, input: &TurnInput, prompt: &str) -> String {
    match mode {
        InputMode::Text => prompt.to_owned(),
        InputMode::Json => json!({
            "prompt": prompt,
            "message": input.message,
            "taskId": input.task_id,
            "contextId": input.context_id,
            "skill": input.skill,
            "history": &*input.history,
        })
        .to_string(),
    }
}

/// Writes the input while reading the output: a program that writes much before it reads
/// all of a large input would otherwise block on a full stdout pipe while the node blocks
/// on a full stdin pipe. Stdin is closed once written (or when the output ends first).
async fn feed_and_read(
    turn: &Turn<'_>,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: tokio::process::ChildStdout,
) -> Result<Output, AgentError> {
    let payload = stdin_payload(turn.settings.input, turn.input, &turn.prompt);
    let writing = async move {
        if let Some(mut stdin) = stdin {
            // A program that does not read its input is fine: ignore a broken pipe.
            let _ = stdin.write_all(payload.as_bytes()).await;
        }
    };
    let reading = read_output(turn, stdout);
    tokio::pin!(reading);
    tokio::select! {
        result = &mut reading => result,
        () = writing => reading.await,
    }
}

/// What a program's stdout came to.
struct Output {
    /// The turn's end, if a jsonl `final` (or `reply`) event named one.
    end: Option<TurnEnd>,
    /// Text mode: the whole output, lines joined with `\n` (at most `max-output`).
    text: String,
}

/// Reads stdout line by line into events. Past `max-output` bytes the program is stopped.
async fn read_output(turn: &Turn<'_>, stdout: tokio::process::ChildStdout) -> Result<Output, AgentError> {
    let (settings, events) = (turn.settings, turn.events);
    let mut stdout = BufReader::new(stdout);
    let mut seen = 0usize;
    let (mut end, mut text) = (None, String::new());
    let mut reader = super::jsonl::JsonlReader::new(turn.env, turn.input, events, Some(&turn.cwd), turn.private);
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        // Never more than the cap (and one byte to notice it): a line without an end
        // cannot make the node buffer without bound.
        let room = u64::try_from(settings.max_output.saturating_sub(seen)).unwrap_or(u64::MAX).saturating_add(1);
        let read = (&mut stdout)
            .take(room)
            .read_until(b'\n', &mut bytes)
            .await
            .map_err(|_| AgentError("could not read the agent's output".into()))?;
        if read == 0 {
            break;
        }
        seen = seen.saturating_add(read);
        if seen > settings.max_output {
            return Err(AgentError(format!("the agent program wrote more than {} bytes", settings.max_output)));
        }
        let line = String::from_utf8_lossy(without_line_end(&bytes)).into_owned();
        match settings.output {
            OutputMode::Text => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&line);
                events.send(AgentEvent::Text(line)).await?;
            }
            OutputMode::Jsonl => {
                if let Some(ending) = reader.line(&line).await? {
                    end = Some(ending);
                }
            }
        }
    }
    Ok(Output { end, text })
}

/// A line without its `\n` or `\r\n`.
fn without_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}
