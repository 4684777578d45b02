//! The client commands' arguments (clap), shared by `call` and `tasks`.

use super::ClientError;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// The default `--idle-timeout`: well above the node's `stream-keep-alive` (15 s by
/// default), so a live but quiet stream never trips it.
pub const DEFAULT_IDLE_TIMEOUT: &str = "120s";

/// `--idle-timeout`: a duration (`90s`, `5m`, plain seconds); `0` means none.
fn idle_timeout(text: &str) -> Result<Duration, String> {
    a2ad_node::units::parse_duration(text)
}

/// Credentials sent with every request. Flags win over the environment.
#[derive(Args, Clone, Default)]
pub struct AuthArgs {
    /// A bearer token (or JWT): `Authorization: Bearer <token>`.
    #[arg(long, env = "A2AD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// An API key, sent as `X-Api-Key`.
    #[arg(long, env = "A2AD_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// HTTP Basic credentials, `user:password`.
    #[arg(long, env = "A2AD_BASIC", hide_env_values = true)]
    pub basic: Option<String>,
}

impl AuthArgs {
    /// The headers these credentials add.
    pub fn headers(&self) -> Result<Vec<(&'static str, String)>, ClientError> {
        let mut headers = Vec::new();
        if let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) {
            headers.push(("Authorization", format!("Bearer {token}")));
        }
        if let Some(basic) = self.basic.as_deref().filter(|b| !b.is_empty()) {
            if !basic.contains(':') {
                return Err(ClientError::Usage("--basic takes user:password".into()));
            }
            if headers.iter().any(|(name, _)| *name == "Authorization") {
                return Err(ClientError::Usage("use either --token or --basic, not both".into()));
            }
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(basic);
            headers.push(("Authorization", format!("Basic {encoded}")));
        }
        if let Some(key) = self.api_key.as_deref().filter(|k| !k.is_empty()) {
            headers.push(("X-Api-Key", key.to_owned()));
        }
        Ok(headers)
    }
}

/// `a2ad call URL TEXT`.
#[derive(Args)]
pub struct CallArgs {
    /// The node's base URL (the card is fetched from its well-known path) or the card's URL.
    pub url: String,
    /// The message text.
    pub text: String,
    /// Continue this context (a contextId from an earlier call).
    #[arg(long)]
    pub context: Option<String>,
    /// Answer this task (one waiting for input).
    #[arg(long)]
    pub task: Option<String>,
    /// Route a new context to this skill (message.metadata.skill).
    #[arg(long)]
    pub skill: Option<String>,
    /// Attach a file (repeatable): a raw part with its file name and a media type guessed
    /// from the extension.
    #[arg(long)]
    pub file: Vec<PathBuf>,
    /// Attach a JSON value as a data part (repeatable).
    #[arg(long)]
    pub data: Vec<String>,
    /// Have the node POST the task's updates to this webhook
    /// (`configuration.taskPushNotificationConfig.url`; the node needs `push-notifications`).
    #[arg(long, value_name = "URL")]
    pub push_url: Option<String>,
    /// The token the node sends with each push (`X-A2A-Notification-Token`), so the
    /// receiver can tell its deliveries from forged ones. Needs `--push-url`.
    #[arg(long, value_name = "TOKEN", requires = "push_url")]
    pub push_token: Option<String>,
    /// Print each StreamResponse as one JSON line on stdout instead of the text.
    #[arg(long)]
    pub json: bool,
    /// Save the artifact files the answer links into this directory (each is named on
    /// stderr); without it their URLs are printed.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Give up on a stream that sends nothing (not even a keep-alive) for this long: the
    /// connection is taken as dead, the task is left running (exit 7). `0`: wait forever.
    #[arg(long, value_parser = idle_timeout, default_value = DEFAULT_IDLE_TIMEOUT)]
    pub idle_timeout: Duration,
    #[command(flatten)]
    pub auth: AuthArgs,
}

/// `a2ad tasks ...`.
#[derive(Subcommand)]
pub enum TasksCommand {
    /// List the caller's tasks, newest first, under a header: id, state, agent, age, context.
    List {
        url: String,
        /// Only the tasks of this context.
        #[arg(long)]
        context: Option<String>,
        /// Only tasks in this state: submitted, working, input-required, auth-required,
        /// completed, failed, canceled or rejected.
        #[arg(long)]
        state: Option<String>,
        /// At most this many tasks.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print the ListTasks response as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        auth: AuthArgs,
    },
    /// Print one task as JSON.
    Get {
        url: String,
        id: String,
        /// At most this many history messages.
        #[arg(long)]
        history: Option<u32>,
        #[command(flatten)]
        auth: AuthArgs,
    },
    /// Cancel a task; prints its state afterwards.
    Cancel {
        url: String,
        id: String,
        #[command(flatten)]
        auth: AuthArgs,
    },
    /// Follow a task's events until it ends or pauses (SubscribeToTask); exits like `call`.
    Watch {
        url: String,
        id: String,
        /// Print each StreamResponse as one JSON line.
        #[arg(long)]
        json: bool,
        /// As for `call`: give up on a stream silent this long (exit 7); `0`: never.
        #[arg(long, value_parser = idle_timeout, default_value = DEFAULT_IDLE_TIMEOUT)]
        idle_timeout: Duration,
        #[command(flatten)]
        auth: AuthArgs,
    },
}
