//! What a run found, kept for `--markdown FILE`: every result line a part prints goes
//! through [`say!`], which prints it and files it under the part that is running, so
//! BENCHMARKS.md's table of current figures is regenerated from one run, not copied by
//! hand.

use std::sync::Mutex;

/// The lines of the run so far, each with the part that printed it.
static LINES: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The part running now (`core` before any other starts).
static PART: Mutex<String> = Mutex::new(String::new());

/// Prints a result line and files it for the markdown table.
macro_rules! say {
    ($($arg:tt)*) => {{
        let line = format!($($arg)*);
        println!("{line}");
        $crate::report::file(line);
    }};
}
pub(crate) use say;

/// Files `line` under the running part (one entry per printed line).
pub fn file(line: String) {
    let part = PART.lock().map(|p| p.clone()).unwrap_or_default();
    if let Ok(mut lines) = LINES.lock() {
        lines.extend(line.lines().filter(|l| !l.trim().is_empty()).map(|l| (part.clone(), l.trim_end().to_owned())));
    }
}

/// The part that runs from now on.
pub fn enter(part: &str) {
    if let Ok(mut current) = PART.lock() {
        *current = part.to_owned();
    }
}

/// The run's lines as BENCHMARKS.md's table: when, on which commit, with which command,
/// then one row per line, grouped by part.
pub fn markdown(command: &str) -> String {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let date = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC");
    let mut out = format!(
        "Measured {date} on `{commit}`, release build, every server pinned to one core:\n\n\
         ```sh\n{command}\n```\n\n| part | result |\n|---|---|\n"
    );
    for (part, line) in LINES.lock().map(|l| l.clone()).unwrap_or_default() {
        let cell = line.replace('|', "\\|").replace('`', "'");
        out.push_str(&format!("| {part} | `{}` |\n", cell.trim()));
    }
    out
}
