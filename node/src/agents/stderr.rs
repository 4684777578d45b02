//! A command agent program's stderr: drained to its end so no full pipe stalls the
//! program, logged line by line to the node's log (under the task, context and agent, up
//! to [`STDERR_LOG_BYTES`] a turn), and its end kept for a failed turn's status message.
//! Both are redacted the same way: paths become `<path>`, configured secrets and values
//! after a credential marker (`token=…`, `Bearer …`) become `<redacted>`.

use std::collections::BTreeMap;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// The most stderr kept for the failure message (only its end is shown).
const STDERR_TAIL: usize = 64 * 1024;

/// The most stderr logged per turn: a chatty or looping program cannot flood the node's
/// log. Past it one line says so; the rest is still drained (and its end kept).
pub const STDERR_LOG_BYTES: usize = 16 * 1024;

/// The longest line logged as one record; a longer one is logged in pieces.
const STDERR_LINE_BYTES: u64 = 2048;

/// What a failure message says of a program that wrote nothing to stderr (or whose
/// stderr stayed open past the turn).
pub(super) const NO_ERROR_OUTPUT: &str = "no error output";

/// The log target of stderr lines, so that an operator can quiet them
/// (`log-level: info,a2ad::agent::stderr=warn`).
pub const STDERR_TARGET: &str = "a2ad::agent::stderr";

/// Whose stderr this is, for the log, and the secrets to remove from it.
pub(super) struct StderrLog {
    pub task_id: String,
    pub context_id: String,
    pub agent: String,
    pub redactor: Redactor,
}

/// Reads stderr to its end: each line is logged (redacted, up to [`STDERR_LOG_BYTES`]),
/// and the end of it (the last [`STDERR_TAIL`] bytes read, of which the last few lines
/// are shown) is returned redacted for a failure message: it shows how the program
/// ended, not how it began.
pub(super) async fn drain(stderr: tokio::process::ChildStderr, log: StderrLog) -> String {
    let mut reader = BufReader::new(stderr);
    let (mut tail, mut line, mut logged) = (Vec::new(), Vec::new(), 0usize);
    loop {
        line.clear();
        match (&mut reader).take(STDERR_LINE_BYTES).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        tail.extend_from_slice(&line);
        if tail.len() > 2 * STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
        if logged < STDERR_LOG_BYTES {
            logged += line.len();
            log.line(&line, logged >= STDERR_LOG_BYTES);
        }
    }
    let keep_from = tail.len().saturating_sub(STDERR_TAIL);
    log.redactor.tail(&String::from_utf8_lossy(&tail[keep_from..]))
}

impl StderrLog {
    /// Logs one line; `last` says the turn's budget is spent after it.
    fn line(&self, bytes: &[u8], last: bool) {
        let text = String::from_utf8_lossy(bytes);
        // Control characters (a carriage return, terminal escapes) could forge or hide
        // records in a plain-text log: each is shown as U+FFFD.
        let printable: String = text
            .trim_end_matches(['\n', '\r'])
            .chars()
            .map(|c| if c.is_control() && c != '\t' { '\u{fffd}' } else { c })
            .collect();
        let line = self.redactor.line(&printable);
        let (task_id, context_id, agent) = (&self.task_id, &self.context_id, &self.agent);
        tracing::info!(target: STDERR_TARGET, %task_id, %context_id, %agent, %line, "agent stderr");
        if last {
            let limit = STDERR_LOG_BYTES;
            tracing::info!(target: STDERR_TARGET, %task_id, %context_id, %agent, limit, "agent stderr: the turn's log budget is spent, the rest is not logged");
        }
    }
}

/// Words that mark the next value as a credential (`token=…`, `password: …`, `Bearer …`).
const SECRET_MARKERS: &[&str] =
    &["token", "secret", "password", "passwd", "apikey", "api_key", "api-key", "bearer", "authorization", "credential"];

/// What is removed from a program's stderr before anyone sees it: the values of its
/// configured `env` entries and of allowlisted variables whose name looks secret, any
/// value that follows a credential marker, and paths.
pub(super) struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of one agent: its configured `env` values, and the node's values of
    /// the `env_allow` variables whose names look secret (read now, at the turn's start).
    pub(super) fn new(env: &BTreeMap<String, String>, env_allow: &[String]) -> Self {
        let inherited = env_allow.iter().filter(|name| looks_secret(name)).filter_map(|name| std::env::var(name).ok());
        let secrets = env.values().cloned().chain(inherited).filter(|v| v.len() >= 4).collect();
        Redactor { secrets }
    }

    /// The last few lines of stderr, redacted, for a failed turn's status message.
    pub(super) fn tail(&self, stderr: &str) -> String {
        let text: String = stderr.trim().chars().rev().take(300).collect::<Vec<_>>().into_iter().rev().collect();
        let lines: Vec<String> = text.lines().map(|line| self.line(line)).collect();
        let cleaned = lines.join("\n");
        if cleaned.trim().is_empty() {
            NO_ERROR_OUTPUT.into()
        } else {
            cleaned
        }
    }

    /// One line with configured secrets, marked credentials and paths removed.
    pub(super) fn line(&self, line: &str) -> String {
        let mut text = line.to_owned();
        for secret in &self.secrets {
            text = text.replace(secret.as_str(), "<redacted>");
        }
        sanitize_words(&text)
    }
}

/// One stderr line with paths shown as `<path>` and marked credentials as `<redacted>`.
fn sanitize_words(line: &str) -> String {
    let mut words = Vec::new();
    let mut redact_next = false;
    for word in line.split(' ') {
        let lower = word.to_ascii_lowercase();
        let marker = SECRET_MARKERS.iter().find(|m| lower.contains(*m));
        let scheme = lower == "bearer" || lower == "basic";
        let shown = if redact_next && !word.is_empty() && !scheme {
            redact_next = false;
            "<redacted>".to_owned()
        } else if let (Some(_), Some((key, _))) = (marker, word.split_once(['=', ':'])) {
            let rest = &word[key.len() + 1..];
            redact_next = rest.is_empty();
            if rest.is_empty() {
                word.to_owned()
            } else {
                format!("{key}{}<redacted>", &word[key.len()..=key.len()])
            }
        } else if word.contains('/') || word.contains('\\') {
            "<path>".to_owned()
        } else {
            redact_next = redact_next || scheme;
            word.to_owned()
        };
        words.push(shown);
    }
    words.join(" ")
}

/// Whether a variable's name says it holds a credential (`OPENAI_API_KEY`, `DB_PASSWORD`).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASS", "AUTH", "CREDENTIAL"].iter().any(|m| upper.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_loses_paths_and_secrets() {
        let redactor = Redactor { secrets: vec!["s3cr3t-value".into()] };
        let tail = redactor.tail("error: cannot open /home/me/data.txt with s3cr3t-value");
        assert_eq!(tail, "error: cannot open <path> with <redacted>");
        assert_eq!(redactor.line("using s3cr3t-value at /tmp/x"), "using <redacted> at <path>");
        let redactor = Redactor { secrets: Vec::new() };
        assert_eq!(redactor.tail("  "), NO_ERROR_OUTPUT);
        let tail = redactor.tail("boom token=abc password: hunter2\nAuthorization: Bearer xyz at C:\\x");
        assert_eq!(tail, "boom token=<redacted> password: <redacted>\nAuthorization: Bearer <redacted> at <path>");
        assert_eq!(redactor.tail("no tokens here, a key idea"), "no tokens here, a key idea");
    }

    #[test]
    fn the_secrets_are_the_configured_env_values() {
        let env = BTreeMap::from([("TOKEN".to_owned(), "s3cr3t-value".to_owned()), ("N".to_owned(), "ab".to_owned())]);
        let redactor = Redactor::new(&env, &[]);
        assert_eq!(redactor.secrets, vec!["s3cr3t-value".to_owned()], "values shorter than 4 are left");
    }
}
