//! The sled store's apply of one echo turn's step, as the write-ahead log's flusher runs it
//! after each sync: a new COMPLETED task with its three events, and the session's two new
//! messages, over 64 busy contexts (the `core` load's shape). No log in front: this is the
//! CPU and the bytes that the store itself costs per turn, which the load driver cannot
//! separate from HTTP and the actors.
//!
//! ```text
//! nice cargo bench -p a2ad-storage --bench apply
//! APPLY_BENCH_TURNS=50000 APPLY_BENCH_DIR=/var/lib/a2ad nice cargo bench -p a2ad-storage --bench apply
//! ```
//!
//! The store is flushed durably every 4,000 turns (about the node's one checkpoint a
//! second at its throughput) and once at the end. Columns: `cpu us/turn` sums every
//! thread's on-CPU time (sled's own threads too); `io B/turn` is the process's
//! `write_bytes` (`/proc/self/io`); `disk B` is the store's size after the run.
//!
//! Then the store is opened again, as a node's start-up does: the open builds the task
//! indexes in memory from every task value (`sled/store/task_index.rs`), so its time and
//! the RSS it adds grow with the tasks stored. The RSS includes what sled caches of the
//! values read, so it bounds the index's memory from above.

mod common;

use a2ad_protocol::{Artifact, Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus};
use a2ad_storage::{
    ContextKey, LoggedEvent, Owner, SessionRecord, SessionWrite, SledStore, TaskRecord, TaskStore, TaskStoreExt,
};
use common::{cpu_nanos, process_write_bytes, rss_bytes};
use std::path::PathBuf;
use std::time::Instant;

const CONTEXTS: usize = 64;
const HISTORY_LIMIT: usize = 200;
const FLUSH_EVERY: usize = 4000;

fn main() {
    let turns: usize = std::env::var("APPLY_BENCH_TURNS").ok().and_then(|s| s.parse().ok()).unwrap_or(30_000);
    let base = std::env::var_os("APPLY_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    let dir = tempfile::tempdir_in(&base).expect("temporary directory");
    let store = SledStore::open_behind_log(dir.path()).expect("open the store");
    let mut sessions: Vec<SessionRecord> = (0..CONTEXTS)
        .map(|c| SessionRecord::new(ContextKey::new(Owner::anonymous(), format!("bench-{c}")), "echo"))
        .collect();
    let (io_before, cpu_before) = (process_write_bytes(), cpu_nanos());
    let started = Instant::now();
    for turn in 0..turns {
        let session = &mut sessions[turn % CONTEXTS];
        let (record, events, appended) = echo_turn(&session.key.context_id, turn);
        session.append(&appended, HISTORY_LIMIT);
        session.last_task_id = Some(record.task.id.clone());
        let write = SessionWrite { session, appended: &appended, history_limit: HISTORY_LIMIT };
        store.put_step_with_session(&record, &events, Vec::new(), write).expect("put the turn's step");
        if (turn + 1) % FLUSH_EVERY == 0 {
            store.flush().expect("flush");
        }
    }
    store.flush().expect("flush");
    let elapsed = started.elapsed().as_secs_f64();
    let (io_after, cpu_after) = (process_write_bytes(), cpu_nanos());
    let per_turn = |value: u64| value as f64 / turns as f64;
    println!("sled apply of an echo turn, {CONTEXTS} contexts, history limit {HISTORY_LIMIT}, in {}", base.display());
    println!("{:>8} {:>9} {:>12} {:>10} {:>12}", "turns", "turns/s", "cpu us/turn", "io B/turn", "disk B");
    println!(
        "{:>8} {:>9.0} {:>12.1} {:>10.0} {:>12}",
        turns,
        turns as f64 / elapsed,
        per_turn(cpu_after.saturating_sub(cpu_before)) / 1000.0,
        per_turn(io_after.saturating_sub(io_before)),
        store.size_on_disk().unwrap_or(0),
    );
    drop(store);
    reopen(dir.path(), turns);
}

/// Opens the store again (retrying while sled's background thread still holds the lock of
/// the handle just dropped) and prints what the open cost.
fn reopen(dir: &std::path::Path, tasks: usize) {
    let rss_before = rss_bytes();
    let first_try = Instant::now();
    let (store, elapsed) = loop {
        let started = Instant::now();
        match SledStore::open_behind_log(dir) {
            Ok(store) => break (store, started.elapsed()),
            Err(_) if first_try.elapsed().as_secs() < 10 => std::thread::sleep(std::time::Duration::from_millis(5)),
            Err(e) => panic!("reopen the store: {e}"),
        }
    };
    let added = rss_bytes().saturating_sub(rss_before);
    println!(
        "reopened with {tasks} tasks in {:.0} ms ({:.1} us a task), RSS +{:.1} MiB ({:.0} B a task)",
        elapsed.as_secs_f64() * 1000.0,
        elapsed.as_secs_f64() * 1e6 / tasks as f64,
        added as f64 / f64::from(1 << 20),
        added as f64 / tasks as f64,
    );
    drop(store);
}

/// One turn as the echo agent ends it, with the events a blocking echo send logs (read off
/// a real node's stream): the task snapshot at the start (WORKING, the user's message), the
/// `echo` artifact's update, and the final status carrying the agent's answer.
fn echo_turn(context_id: &str, turn: usize) -> (TaskRecord, Vec<LoggedEvent>, Vec<Message>) {
    let task_id = format!("01a23bf6-fbaf-7032-b4e4-{turn:012x}");
    let text = "hello from the load driver";
    let mut user = Message::agent_text(format!("m-{turn}"), context_id, Some(&task_id), text);
    user.role = a2ad_protocol::Role::User;
    let answer = Message::agent_text(format!("01a23bf6-fbaf-7032-b4e4-a{turn:011x}"), context_id, Some(&task_id), text);
    let mut task: Task = serde_json::from_value(serde_json::json!({
        "id": task_id, "contextId": context_id, "status": {"state": "TASK_STATE_WORKING"},
    }))
    .expect("a task");
    task.history = vec![user.clone()];
    let started = LoggedEvent::encode(1, &StreamResponse::Task(task.clone()));
    let artifact: Artifact =
        serde_json::from_value(serde_json::json!({"artifactId": "echo", "name": "echo", "parts": [{"text": text}]}))
            .expect("an artifact");
    let update = TaskArtifactUpdateEvent {
        task_id: task_id.clone(),
        context_id: context_id.to_owned(),
        artifact: artifact.clone(),
        append: false,
        last_chunk: true,
        metadata: None,
    };
    let artifact_event = LoggedEvent::encode(2, &StreamResponse::ArtifactUpdate(update));
    task.artifacts = vec![artifact];
    task.history.push(answer.clone());
    task.status = TaskStatus::now(TaskState::Completed, Some(answer.clone()));
    let completed = LoggedEvent::encode(3, &StreamResponse::status_of(&task));
    let record = TaskRecord { owner: Owner::anonymous(), agent: "echo".into(), task, last_event_seq: 3 };
    (record, vec![started, artifact_event, completed], vec![user, answer])
}
