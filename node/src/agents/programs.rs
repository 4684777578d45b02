//! The start-up check of the command agents' programs: each exists, is an executable
//! file, and its `cwd` is a directory. Without it a wrong path is found only at the first
//! call, as a FAILED task whose client may not pass the message on; with it the node does
//! not start, and `a2ad config check` says the same.

use super::{AgentConfig, AgentKind};
use std::path::{Path, PathBuf};

/// The directories `execvp` searches when the program's environment has no `PATH` (the
/// C library's default): a command agent's environment is cleared, so without `PATH` in
/// `env-allow` or `env` this is where a bare program name is looked for.
const DEFAULT_SEARCH_PATH: &str = "/bin:/usr/bin";

/// A command agent that cannot run: `agents[1].command.argv: agent `mine`: program
/// `/opt/x` does not exist`. For the operator, so paths are shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agents[{index}].command.{key}: agent `{agent}`: {cause}")]
pub struct ProgramError {
    /// The entry's place in `agents`.
    pub index: usize,
    /// The entry's id.
    pub agent: String,
    /// `argv` or `cwd`.
    pub key: &'static str,
    pub cause: String,
}

/// Checks every command agent's program and `cwd` (the first bad one is the error).
pub fn check_programs(agents: &[AgentConfig]) -> Result<(), ProgramError> {
    for (index, agent) in agents.iter().enumerate() {
        let AgentKind::Command(settings) = &agent.kind else { continue };
        let failed = |key, cause| ProgramError { index, agent: agent.id.clone(), key, cause };
        let program = settings.argv.first().map(String::as_str).unwrap_or_default();
        let search_path = settings.env.get("PATH").cloned().or_else(|| {
            settings.env_allow.iter().any(|name| name == "PATH").then(|| std::env::var("PATH").ok()).flatten()
        });
        check_program(program, search_path.as_deref().unwrap_or(DEFAULT_SEARCH_PATH))
            .map_err(|cause| failed("argv", cause))?;
        if let Some(cwd) = &settings.cwd {
            match std::fs::metadata(cwd) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Err(failed("cwd", format!("`{}` is not a directory", cwd.display()))),
                Err(e) => return Err(failed("cwd", format!("`{}`: {}", cwd.display(), io_cause(&e)))),
            }
        }
    }
    Ok(())
}

/// One program: a path (with a `/`) is checked as it is, a bare name is looked up in
/// `search_path` as the program's own start would.
fn check_program(program: &str, search_path: &str) -> Result<PathBuf, String> {
    if program.is_empty() {
        return Err("names no program".into());
    }
    if program.contains('/') {
        return executable(Path::new(program)).map(|()| PathBuf::from(program));
    }
    let mut first_refusal = None;
    for dir in std::env::split_paths(search_path).filter(|d| !d.as_os_str().is_empty()) {
        let candidate = dir.join(program);
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(cause) if candidate.exists() => {
                first_refusal.get_or_insert(cause);
            }
            Err(_) => {}
        }
    }
    Err(first_refusal.unwrap_or_else(|| format!("program `{program}` is not found in PATH ({search_path})")))
}

/// Whether `path` is a file this process may execute.
fn executable(path: &Path) -> Result<(), String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("program `{shown}`: {}", io_cause(&e)))?;
    if meta.is_dir() {
        return Err(format!("program `{shown}` is a directory"));
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("program `{shown}` has a NUL byte in its path"))?;
    // SAFETY: `access` reads the NUL-terminated path and touches no memory of ours.
    if unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } != 0 {
        return Err(format!("program `{shown}` is not executable"));
    }
    Ok(())
}

/// An I/O error in the operator's words (`does not exist`, `permission denied`).
fn io_cause(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn programs_are_found_checked_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("agent.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
        let shown = script.display().to_string();
        assert_eq!(check_program(&shown, "/bin"), Err(format!("program `{shown}` is not executable")));
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(check_program(&shown, "/bin").unwrap(), script);
        let in_path = dir.path().display().to_string();
        assert_eq!(check_program("agent.sh", &in_path).unwrap(), script, "a bare name is searched");
        let missing = dir.path().join("gone").display().to_string();
        assert_eq!(check_program(&missing, "/bin"), Err(format!("program `{missing}`: does not exist")));
        assert!(check_program("agent.sh", "/nonexistent").unwrap_err().contains("not found in PATH"));
        assert_eq!(check_program(&in_path, "/bin"), Err(format!("program `{in_path}` is a directory")));
    }
}
