//! Showing a task's stream: agent text on stdout, states and tool progress on stderr.
//!
//! stdout gets the agent's words in order: the text of WORKING status messages (one line
//! each), artifact text as it streams (appends joined, a newline when the artifact's last
//! chunk arrives) and the final status message (the answer, or the question of an
//! input-required turn). What an agent mirrors is printed once: an artifact chunk that
//! repeats the status message just printed, and a final message that repeats everything
//! already printed, are skipped. Data parts print as one JSON line.
//!
//! stderr gets the state changes and tool progress (`metadata.a2ad.tool` of an event or
//! of its status message): a spinner line redrawn in place on a terminal, plain lines
//! otherwise (`a2ad: task <id> working`). With `--json` every StreamResponse is printed
//! as one JSON line on stdout and stderr stays quiet.
//!
//! What the node sends is shown without control characters on a terminal (stdout when it
//! is one, the stderr status line always): a node, or an agent's text, cannot move the
//! cursor, rewrite what was shown, set the title or the clipboard with escape sequences.
//! Piped stdout gets the text unchanged.

use super::short_state;
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The state of one rendered stream.
pub struct Renderer {
    json: bool,
    tty: bool,
    /// stdout is a terminal: the agent's text is shown without control characters.
    stdout_tty: bool,
    /// Everything printed to stdout in this turn, without separators.
    streamed: String,
    last_message: Option<String>,
    artifact_open: bool,
    spinner: usize,
    spinner_shown: bool,
    status_line: String,
    /// The task the events are about, once one named it: the status line names it and a
    /// canceled call (Ctrl-C) cancels it.
    pub task_id: Option<String>,
    /// The context of that task, as the node named it.
    pub context_id: Option<String>,
    /// The last state seen (`completed`, `input-required`, ...): it picks the exit code.
    pub state: Option<String>,
    /// The agent answered with a message rather than a task (a complete answer).
    pub answered_with_message: bool,
    /// The artifact parts that link a file (`url`), in arrival order, once each: `call`
    /// saves them (`--save`) or prints their URLs when the stream ends.
    pub files: Vec<Value>,
}

impl Renderer {
    /// A renderer for one call; `json` prints every event as a JSON line (for scripts)
    /// instead of the text, spinner and status line a person reads on a terminal.
    pub fn new(json: bool) -> Self {
        Renderer {
            json,
            tty: std::io::stderr().is_terminal(),
            stdout_tty: std::io::stdout().is_terminal(),
            streamed: String::new(),
            last_message: None,
            artifact_open: false,
            spinner: 0,
            spinner_shown: false,
            status_line: String::new(),
            task_id: None,
            context_id: None,
            state: None,
            answered_with_message: false,
            files: Vec::new(),
        }
    }

    /// Shows one StreamResponse.
    pub fn event(&mut self, event: &Value) {
        if self.json {
            println!("{event}");
        }
        if let Some(task) = event.get("task") {
            self.ids(task);
            self.turn_so_far(task);
            self.set_state(task["status"]["state"].as_str());
        } else if let Some(message) = event.get("message") {
            self.answered_with_message = self.task_id.is_none();
            self.ids(message);
            self.text_line(&parts_text(&message["parts"]));
        } else if let Some(update) = event.get("statusUpdate") {
            self.ids(update);
            self.tool(update.get("metadata"));
            self.tool(update["status"]["message"].get("metadata"));
            self.status_update(update);
        } else if let Some(update) = event.get("artifactUpdate") {
            self.ids(update);
            self.artifact_update(update);
        }
        let _ = std::io::stdout().flush();
    }

    /// Shows a SendMessage result (`{"task": ...}` or `{"message": ...}`): a task's
    /// artifacts, then its status message, as a stream would have shown them.
    pub fn snapshot(&mut self, result: &Value) {
        let Some(task) = result.get("task") else {
            self.event(result);
            return;
        };
        if self.json {
            println!("{result}");
        }
        self.ids(task);
        for artifact in task["artifacts"].as_array().into_iter().flatten() {
            self.keep_files(&artifact["parts"]);
            let text = parts_text(&artifact["parts"]);
            self.text_line(&text);
        }
        let status = json!({"taskId": task["id"], "contextId": task["contextId"], "status": task["status"]});
        self.status_update(&status);
        let _ = std::io::stdout().flush();
    }

    /// A task as a stream's first event: a subscription that joins a turn under way
    /// (`tasks watch`) shows the agent's lines the turn already wrote (its history after
    /// the last user message), so the stream's later lines follow them and the final
    /// answer, which repeats them all, is recognised as already shown. A new task (`call`)
    /// has none.
    fn turn_so_far(&mut self, task: &Value) {
        if !self.streamed.is_empty() {
            return;
        }
        let history = task["history"].as_array().map(Vec::as_slice).unwrap_or_default();
        let turn_start = history.iter().rposition(|m| m["role"] == "ROLE_USER").map_or(0, |i| i + 1);
        for message in &history[turn_start..] {
            let text = parts_text(&message["parts"]);
            self.text_line(&text);
            self.last_message = (!text.is_empty()).then_some(text);
        }
    }

    fn ids(&mut self, object: &Value) {
        let task_id = object.get("taskId").or_else(|| object.get("id").filter(|_| object.get("status").is_some()));
        if let Some(id) = task_id.and_then(Value::as_str) {
            self.task_id = Some(id.to_owned());
        }
        if let Some(id) = object.get("contextId").and_then(Value::as_str) {
            self.context_id = Some(id.to_owned());
        }
    }

    fn status_update(&mut self, update: &Value) {
        let state = update["status"]["state"].as_str().unwrap_or("");
        let text = parts_text(&update["status"]["message"]["parts"]);
        if state == "TASK_STATE_WORKING" {
            if !text.is_empty() {
                self.text_line(&text);
                self.last_message = Some(text);
            }
        } else if !text.is_empty() && !same_text(&text, &self.streamed) {
            self.text_line(&text);
        }
        self.set_state(Some(state));
    }

    /// Remembers the parts of `parts` that link a file.
    fn keep_files(&mut self, parts: &Value) {
        for part in parts.as_array().into_iter().flatten() {
            if part.get("url").is_some_and(Value::is_string) && !self.files.contains(part) {
                self.files.push(part.clone());
            }
        }
    }

    fn artifact_update(&mut self, update: &Value) {
        self.keep_files(&update["artifact"]["parts"]);
        let text = parts_text(&update["artifact"]["parts"]);
        if text.is_empty() {
            return; // Only files: named when the call ends, no line of their own here.
        }
        if self.last_message.take().is_some_and(|m| m == text) {
            return; // The status message just printed, mirrored as an artifact.
        }
        let append = update["append"].as_bool().unwrap_or(false);
        if !append && !self.streamed.is_empty() && same_text(&text, &self.streamed) {
            return; // Everything printed so far, again as one artifact (a text-mode program's output).
        }
        let last_chunk = update["lastChunk"].as_bool().unwrap_or(false);
        if !append && self.artifact_open {
            self.out("\n");
        }
        self.out(&text);
        self.streamed.push_str(&text);
        self.artifact_open = !last_chunk;
        if last_chunk && !text.is_empty() {
            self.out("\n");
        }
    }

    fn text_line(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.artifact_open {
            self.out("\n");
            self.artifact_open = false;
        }
        self.out(text);
        self.out("\n");
        self.streamed.push_str(text);
    }

    fn out(&mut self, text: &str) {
        if self.json || text.is_empty() {
            return;
        }
        self.clear_spinner();
        if self.stdout_tty {
            print!("{}", for_terminal(text, true));
        } else {
            print!("{text}");
        }
    }

    fn set_state(&mut self, state: Option<&str>) {
        let Some(state) = state.filter(|s| !s.is_empty()) else { return };
        if self.state.as_deref() == Some(state) {
            return;
        }
        self.state = Some(state.to_owned());
        let task = self.task_id.as_deref().unwrap_or("?");
        self.status(&format!("task {task} {}", short_state(state)));
    }

    /// Tool progress from an `a2ad.tool` metadata object: its name and status (or the
    /// whole object when it has neither).
    fn tool(&mut self, metadata: Option<&Value>) {
        let Some(tool) = metadata.and_then(|m| m.get("a2ad")).and_then(|a| a.get("tool")) else { return };
        let name = tool.get("name").and_then(Value::as_str);
        let status = tool.get("status").or_else(|| tool.get("progress")).map(|s| match s {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let line = match (name, status) {
            (Some(name), Some(status)) => format!("tool {name}: {status}"),
            (Some(name), None) => format!("tool {name}"),
            _ => format!("tool {tool}"),
        };
        self.status(&line);
    }

    /// A line on stderr: the spinner's text on a terminal, a plain line otherwise.
    fn status(&mut self, line: &str) {
        if self.json {
            return;
        }
        let line = for_terminal(line, false);
        if self.tty {
            self.status_line = line;
            self.draw_spinner();
        } else {
            eprintln!("a2ad: {line}");
        }
    }

    /// A line on stderr that stays (not the spinner's, which the next state replaces).
    pub fn notice(&mut self, line: &str) {
        if self.json {
            return;
        }
        self.clear_spinner();
        eprintln!("a2ad: {}", for_terminal(line, false));
        if self.tty && !self.status_line.is_empty() {
            self.draw_spinner();
        }
    }

    /// Advances the spinner (a terminal only); called while waiting for events.
    pub fn tick(&mut self) {
        if self.tty && !self.json && !self.status_line.is_empty() {
            self.spinner = (self.spinner + 1) % SPINNER.len();
            self.draw_spinner();
        }
    }

    fn draw_spinner(&mut self) {
        let _ = std::io::stdout().flush();
        eprint!("\r\x1b[2K{} {}", SPINNER[self.spinner], self.status_line);
        self.spinner_shown = true;
    }

    fn clear_spinner(&mut self) {
        if self.spinner_shown {
            eprint!("\r\x1b[2K");
            self.spinner_shown = false;
        }
    }

    /// Ends the output: closes an open artifact line; on a terminal, replaces the spinner
    /// with the final state.
    pub fn finish(&mut self) {
        if self.artifact_open {
            self.out("\n");
            self.artifact_open = false;
        }
        let _ = std::io::stdout().flush();
        if self.tty && !self.json {
            self.clear_spinner();
            if !self.status_line.is_empty() {
                eprintln!("{}", self.status_line);
            }
        }
    }
}

/// The text of a list of parts: text parts as they are, data parts as JSON.
pub fn parts_text(parts: &Value) -> String {
    let Some(parts) = parts.as_array() else { return String::new() };
    let texts: Vec<String> = parts
        .iter()
        .filter_map(|p| match (p.get("text"), p.get("data")) {
            (Some(Value::String(text)), _) => Some(text.clone()),
            (_, Some(data)) => Some(data.to_string()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// `text` without the control characters a terminal acts on (escape sequences, carriage
/// returns, backspaces); newlines and tabs are kept when `lines` is set.
pub(crate) fn for_terminal(text: &str, lines: bool) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' if lines => c,
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// Whether a final message repeats what was streamed (whitespace aside).
fn same_text(a: &str, b: &str) -> bool {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    squash(a) == squash(b)
}

/// A JSON-RPC error object or a `google.rpc.Status` as one line: the message, and the
/// reason when the node gave one.
pub fn error_text(error: &Value) -> String {
    let message = error.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| error.to_string());
    let details = error.get("data").or_else(|| error.get("details")).and_then(Value::as_array);
    let reason = details.and_then(|d| d.iter().find_map(|d| d.get("reason").and_then(Value::as_str)));
    let text = match reason {
        Some(reason) => format!("{message} ({reason})"),
        None => message,
    };
    // Shown on a terminal: what the node wrote may carry no escape sequence.
    for_terminal(&text, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_text_keeps_text_and_data() {
        let parts = json!([{"text": "hi"}, {"raw": "AA=="}, {"data": {"k": 1}}]);
        assert_eq!(parts_text(&parts), "hi\n{\"k\":1}");
    }

    #[test]
    fn a_mirrored_answer_counts_once() {
        let mut r = Renderer::new(false);
        r.tty = false;
        r.event(
            &json!({"artifactUpdate": {"taskId": "t", "artifact": {"parts": [{"text": "hello"}]}, "lastChunk": true}}),
        );
        assert_eq!(r.streamed, "hello");
        let done = json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED", "message": {"parts": [{"text": "hello"}]}}}});
        r.event(&done);
        assert_eq!(r.streamed, "hello", "the final message repeated the artifact");
        assert_eq!(r.state.as_deref(), Some("TASK_STATE_COMPLETED"));
        assert_eq!(r.task_id.as_deref(), Some("t"));
    }

    #[test]
    fn a_text_programs_whole_output_as_artifact_and_final_message_prints_once() {
        let mut r = Renderer::new(false);
        r.tty = false;
        for line in ["one", "two"] {
            let status = json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING", "message": {"parts": [{"text": line}]}}}});
            r.event(&status);
        }
        r.event(&json!({"artifactUpdate": {"taskId": "t", "artifact": {"parts": [{"text": "one\ntwo"}]}, "lastChunk": true}}));
        let done = json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED", "message": {"parts": [{"text": "one\ntwo"}]}}}});
        r.event(&done);
        assert_eq!(r.streamed, "onetwo", "the lines once: not the artifact, not the final message");
    }

    #[test]
    fn a_file_artifact_is_kept_for_the_end_and_prints_no_line() {
        let mut r = Renderer::new(false);
        r.tty = false;
        let file = json!({"url": "http://n/a2a/tasks/t/artifacts/f-r.md", "filename": "r.md"});
        let update = json!({"artifactUpdate": {"taskId": "t", "artifact": {"parts": [file]}}});
        r.event(&update);
        r.event(&update);
        assert_eq!((r.streamed.as_str(), r.artifact_open), ("", false));
        assert_eq!(r.files, [file], "once");
    }

    #[test]
    fn a_message_answer_is_a_complete_answer() {
        let mut r = Renderer::new(false);
        r.tty = false;
        r.event(&json!({"message": {"messageId": "m", "contextId": "c", "parts": [{"text": "hi"}]}}));
        assert!(r.answered_with_message);
        assert_eq!((r.streamed.as_str(), r.state.as_deref()), ("hi", None));
    }

    #[test]
    fn escape_sequences_from_the_node_never_reach_a_terminal() {
        let hostile = "ok\x1b]52;c;Y2xpcA==\x07\x1b[2J\rline\n\tnext\u{9b}31m";
        assert_eq!(for_terminal(hostile, true), "ok ]52;c;Y2xpcA==  [2J line\n\tnext 31m");
        assert_eq!(for_terminal("tool a\nb", false), "tool a b");
    }
}
