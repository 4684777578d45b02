//! Operator tools that start nothing: `a2ad config check` ([`config_check`]) and
//! `a2ad auth hash-token` / `hash-password` ([`credentials`]), which print the config
//! lines to paste, reading the secret from stdin or a prompt ([`secret_input`]).

pub mod config_check;
pub mod credentials;
mod secret_input;

/// Why a setup command failed. Shown to the operator, one line.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The config file (or an `A2AD_*` variable) was refused; the message names which.
    #[error("invalid configuration: {0}")]
    Config(crate::config::ConfigError),
    /// A check start-up makes (credentials, agent programs, card keys) refused the config.
    #[error(transparent)]
    Startup(#[from] crate::startup::StartupError),
    /// The secret could not be read, or is empty.
    #[error("{0}")]
    Input(String),
    /// The entry the command made is refused by the node's own checks.
    #[error("{0}")]
    Entry(String),
}
