//! Reading a secret: from stdin when it is piped (`printf %s "$TOKEN" | a2ad auth
//! hash-token`), or from a prompt on the terminal with echo off. Never from argv, where
//! `ps` and the shell history would show it.

use super::SetupError;
use std::io::{BufRead, IsTerminal, Read, Write};

/// The longest secret read from a pipe (a JWT-sized token fits many times over).
const MAX_SECRET_BYTES: u64 = 64 * 1024;

/// The secret: a terminal is prompted with `prompt` (twice when `confirm`, and both must
/// match); a pipe is read to its end, less one line end. Empty is refused.
pub(super) fn read_secret(prompt: &str, confirm: bool) -> Result<String, SetupError> {
    let stdin = std::io::stdin();
    let secret = if stdin.is_terminal() {
        let first = prompt_hidden(prompt)?;
        if confirm && prompt_hidden("again: ")? != first {
            return Err(SetupError::Input("the two entries differ".into()));
        }
        first
    } else {
        let mut bytes = Vec::new();
        stdin
            .lock()
            .take(MAX_SECRET_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| SetupError::Input(format!("cannot read stdin: {e}")))?;
        if bytes.len() as u64 > MAX_SECRET_BYTES {
            return Err(SetupError::Input(format!("stdin holds more than {MAX_SECRET_BYTES} bytes")));
        }
        let text = String::from_utf8(bytes).map_err(|_| SetupError::Input("stdin is not UTF-8".into()))?;
        without_line_end(&text).to_owned()
    };
    if secret.is_empty() {
        return Err(SetupError::Input("no secret given (pipe it to stdin, or run on a terminal)".into()));
    }
    Ok(secret)
}

/// One trailing `\n` or `\r\n` off (what `echo` adds), nothing else.
fn without_line_end(text: &str) -> &str {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.strip_suffix('\r').unwrap_or(text)
}

/// Prompts on stderr and reads one line from the terminal with echo off (restored after,
/// also when the read fails).
fn prompt_hidden(prompt: &str) -> Result<String, SetupError> {
    let fd = libc::STDIN_FILENO;
    // SAFETY: termios is plain data; tcgetattr fills it for a terminal fd.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd is stdin, a terminal (checked by the caller); `saved` is valid.
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(SetupError::Input("cannot read the terminal's settings".into()));
    }
    let mut hidden = saved;
    hidden.c_lflag &= !libc::ECHO;
    hidden.c_lflag |= libc::ECHONL;
    // SAFETY: as above, with settings derived from the terminal's own. Echo goes off
    // before the prompt shows, so nothing typed after the prompt is echoed.
    unsafe { libc::tcsetattr(fd, libc::TCSANOW, &hidden) };
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    // SAFETY: restores what tcgetattr returned.
    unsafe { libc::tcsetattr(fd, libc::TCSANOW, &saved) };
    read.map_err(|e| SetupError::Input(format!("cannot read the terminal: {e}")))?;
    Ok(without_line_end(&line).to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_one_line_end_is_removed() {
        assert_eq!(super::without_line_end("s3cret \n"), "s3cret ");
        assert_eq!(super::without_line_end("a\r\n"), "a");
        assert_eq!(super::without_line_end("a\n\n"), "a\n");
    }
}
