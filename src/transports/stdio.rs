//! JSON-RPC on stdin and stdout (`a2ad stdio`), for embedding a node as a subprocess.
//!
//! The node's core starts as for `a2ad serve` (same config, store and agents) but without
//! any listener. Each line on stdin is one JSON-RPC request (blank lines are skipped; a
//! line longer than `body-limit` is answered with PAYLOAD_TOO_LARGE); requests are handled
//! concurrently (at most [`MAX_IN_FLIGHT`], then stdin is not read until one finishes).
//! Each answer is one line on stdout, a streaming method one line per frame (with the
//! event's `eventId`, see [`super::message_text`]); lines are
//! written whole by one writer, so they never interleave, and answers carry their
//! request's id. Logs go to stderr only.
//!
//! The caller is whoever could start the process: with authentication off, the anonymous
//! owner (as every caller of such a node); with it on, tenant `local` and principal
//! `uid:<uid>` of the process, since no credential travels on a pipe (with
//! `tenancy.visibility: tenant`, the tenant `local` alone, as for any caller).
//!
//! End of stdin (or SIGTERM / SIGINT) is a clean shutdown: the requests already read are
//! answered (waiting at most `shutdown-grace`), then running turns get the grace period and
//! are ended honestly, streams get their final line, and the store is flushed.

use crate::core::Core;
use crate::metrics::Binding;
use crate::rpc::{self, RpcMeta, RpcOutcome};
use a2ad_protocol::jsonrpc::error_body;
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::Owner;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// Requests answered at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// Lines waiting for stdout.
const OUTPUT_QUEUE: usize = 256;

/// The owner of requests read from stdin (see the module docs), made from the process's
/// identity as every caller's is ([`Core::owner_of`]).
pub fn local_owner(core: &Core) -> Owner {
    if !core.auth().enabled() {
        return core.owner_of(Owner::anonymous());
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    core.owner_of(Owner { tenant: "local".into(), principal: format!("uid:{uid}") })
}

/// The requests of one input, and the writer of their answers.
pub struct Session {
    core: Arc<Core>,
    owner: Owner,
    lines: mpsc::Sender<String>,
    in_flight: Arc<Semaphore>,
    writer: tokio::task::JoinHandle<()>,
}

impl Session {
    /// Starts the writer on `output`.
    pub fn start<W: AsyncWrite + Unpin + 'static>(core: Arc<Core>, owner: Owner, output: W) -> Session {
        let (lines, queued) = mpsc::channel(OUTPUT_QUEUE);
        let writer = actix_web::rt::spawn(write_lines(queued, output));
        Session { core, owner, lines, in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)), writer }
    }

    /// Reads requests until the end of `input`, answering each in its own task.
    pub async fn read_all<R: AsyncRead + Unpin>(&self, input: R, max_line: usize) -> std::io::Result<()> {
        let mut input = BufReader::new(input);
        loop {
            let request = match next_line(&mut input, max_line).await? {
                Line::Eof => return Ok(()),
                Line::TooLong => {
                    let error = A2aError::of(ErrorCode::PayloadTooLarge);
                    crate::core::report(&error);
                    let body = error_body(&serde_json::Value::Null, &error);
                    let _ = self.lines.send(String::from_utf8_lossy(&body).into_owned()).await;
                    continue;
                }
                Line::Text(text) if text.iter().all(u8::is_ascii_whitespace) => continue,
                Line::Text(text) => text,
            };
            let Ok(permit) = Arc::clone(&self.in_flight).acquire_owned().await else { return Ok(()) };
            let answering = (Arc::clone(&self.core), self.owner.clone(), self.lines.clone());
            actix_web::rt::spawn(answer(answering, request, permit));
        }
    }

    /// Resolves when no request is being answered.
    pub async fn idle(&self) {
        let all = u32::try_from(MAX_IN_FLIGHT).unwrap_or(u32::MAX);
        let _ = self.in_flight.acquire_many(all).await;
    }

    /// Waits for the answers in flight, then for the writer to flush them.
    pub async fn finish(self) {
        self.idle().await;
        drop(self.lines);
        let _ = self.writer.await;
    }
}

/// Answers one request: one line, or one per stream frame.
async fn answer(
    (core, owner, lines): (Arc<Core>, Owner, mpsc::Sender<String>),
    request: Vec<u8>,
    _permit: OwnedSemaphorePermit,
) {
    let started = Instant::now();
    let answer = rpc::handle_bytes(&core, &owner, &request, &RpcMeta::default()).await;
    super::record_answer(&core, Binding::Stdio, &answer, started);
    match answer.outcome {
        RpcOutcome::Single(body) => {
            let _ = lines.send(String::from_utf8_lossy(&body).into_owned()).await;
        }
        // A notification: JSON-RPC writes no line for it.
        RpcOutcome::Silent => {}
        RpcOutcome::Stream(stream) => {
            let _open = core.metrics().open_stream();
            let mut frames = stream.frames();
            while let Some(frame) = frames.next().await {
                if lines.send(super::message_text(frame)).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes each line whole, then a newline, and flushes when nothing else is queued.
async fn write_lines<W: AsyncWrite + Unpin>(mut queued: mpsc::Receiver<String>, mut output: W) {
    while let Some(line) = queued.recv().await {
        let written = async {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            if queued.is_empty() {
                output.flush().await?;
            }
            Ok::<(), std::io::Error>(())
        };
        if let Err(e) = written.await {
            tracing::error!(error = %e, "cannot write stdout: answers are dropped");
            // Keep draining so that the answering tasks are not blocked.
            while queued.recv().await.is_some() {}
            return;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), output.flush()).await;
}

/// One line of input.
enum Line {
    Text(Vec<u8>),
    /// Longer than the limit; its bytes were skipped up to the newline.
    TooLong,
    Eof,
}

/// Reads one line of at most `max` bytes (without its newline).
async fn next_line<R: AsyncBufRead + Unpin>(input: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Eof,
                (false, false) => Line::Text(line),
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = newline.map_or(available.len(), |i| i + 1);
        input.consume(used);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Text(line) });
        }
    }
}
