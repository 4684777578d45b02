//! The client side of the binary: `a2ad call`, `a2ad tasks list|get|cancel|watch`,
//! `a2ad card show|verify` ([`card`]).
//!
//! Every command discovers the node's card first and talks to the first interface it can
//! run ([`transport::Endpoint`]: JSON-RPC or HTTP+JSON; gRPC is skipped), with
//! `A2A-Version: 1.0` on every request. Streams are read as they arrive
//! ([`sse::SseStream`]) and shown by [`render::Renderer`]: agent text on stdout, states and
//! tool progress on stderr. The process exit code says how the task ended ([`exit`]). A
//! stream that sends nothing, not even the node's keep-alive comments, for `--idle-timeout`
//! is taken as a dead connection: exit 7 with the `tasks watch` command that resumes it,
//! the task left running.

pub mod args;
pub mod call;
pub mod card;
pub mod files;
pub mod render;
pub mod sse;
pub mod tasks;
pub mod transport;

pub use args::{AuthArgs, CallArgs, TasksCommand};

/// Exit codes of the client commands. Usage errors use clap's 2 as well.
pub mod exit {
    /// The task completed (or the command did what it was asked).
    pub const COMPLETED: i32 = 0;
    /// The task failed.
    pub const FAILED: i32 = 1;
    /// Bad arguments: an invalid URL, an unreadable `--file`, `--data` that is not JSON.
    pub const USAGE: i32 = 2;
    /// The agent needs more input: answer with `--task <id>`.
    pub const INPUT_REQUIRED: i32 = 3;
    /// The agent needs authorization before it goes on.
    pub const AUTH_REQUIRED: i32 = 4;
    /// The agent rejected the task.
    pub const REJECTED: i32 = 5;
    /// The task was canceled (Ctrl-C, or someone else).
    pub const CANCELED: i32 = 6;
    /// The node could not be reached or answered with something that is not A2A.
    pub const TRANSPORT: i32 = 7;
    /// The node refused the request (an A2A error: unauthorized, task not found, ...).
    pub const REFUSED: i32 = 8;

    /// The exit code for a task that ended (or paused) in `state` (a ProtoJSON enum name).
    pub fn for_state(state: &str) -> i32 {
        match state {
            "TASK_STATE_COMPLETED" => COMPLETED,
            "TASK_STATE_INPUT_REQUIRED" => INPUT_REQUIRED,
            "TASK_STATE_AUTH_REQUIRED" => AUTH_REQUIRED,
            "TASK_STATE_REJECTED" => REJECTED,
            "TASK_STATE_CANCELED" => CANCELED,
            "TASK_STATE_FAILED" => FAILED,
            // The stream ended while the task was still running: not an answer.
            _ => TRANSPORT,
        }
    }
}

/// Why a client command failed. The message is shown to the user as is.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Transport(String),
    #[error("the node refused the request: {0}")]
    Refused(String),
    /// A stream sent nothing, not even a keep-alive comment, for this long.
    #[error("the node sent nothing for {}s: the connection looks dead", .0.as_secs_f64())]
    StreamIdle(std::time::Duration),
}

impl ClientError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            ClientError::Usage(_) => exit::USAGE,
            ClientError::Transport(_) | ClientError::StreamIdle(_) => exit::TRANSPORT,
            ClientError::Refused(_) => exit::REFUSED,
        }
    }
}

/// Whether a ProtoJSON state name ends the task or pauses it for the user (the stream
/// ends there either way).
pub fn ends_stream(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
            | "TASK_STATE_INPUT_REQUIRED"
            | "TASK_STATE_AUTH_REQUIRED"
    )
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`, for people.
pub use a2ad_node::admin::stats::short_state;
