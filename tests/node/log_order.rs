//! The write-ahead log gives a segment up only once sled's files hold what it covered: a
//! real node under `strace -f`, its log in small files so that a short load fills a few
//! and the checkpointer removes them. Every removal (and any truncation) of a log segment
//! must come after a completed `fsync` of sled's `db` file and of the data dir, made since
//! the previous removal. sled's own `flush` ends in `sync_file_range`, which a power cut
//! can undo; only an `fsync` lets the log go.

use crate::support::{send_params, NodeProcess};
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// One traced system call of the node, in the order strace saw it complete, with the
/// thread that made it.
#[derive(Debug, PartialEq)]
struct Call {
    thread: String,
    traced: Traced,
}

/// What a traced call did.
#[derive(Debug, PartialEq)]
enum Traced {
    /// A completed `fsync`/`fdatasync` of this path.
    Synced(String),
    /// An `unlink`/`unlinkat` or `truncate`/`ftruncate` of this path.
    GivenUp(String),
}

/// The calls of a trace written with `-f -y -qq`: a call split by another thread's
/// (`<unfinished ...>`, then `<... fsync resumed>`) counts where it completes.
fn parse(trace: &str) -> Vec<Call> {
    let mut pending: std::collections::HashMap<&str, String> = std::collections::HashMap::new();
    let mut calls = Vec::new();
    for line in trace.lines() {
        let (pid, rest) = line.split_once(' ').unwrap_or(("", line));
        let rest = rest.trim_start();
        let whole = if let Some(start) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid, start.to_owned());
            continue;
        } else if rest.starts_with("<...") {
            match pending.remove(pid) {
                Some(start) => format!("{start}{}", rest.split_once("resumed>").map_or("", |(_, r)| r)),
                None => continue,
            }
        } else {
            rest.to_owned()
        };
        if !whole.trim_end().ends_with("= 0") {
            continue; // failed calls give nothing up and sync nothing
        }
        let path = || whole.split('<').nth(1).and_then(|p| p.split('>').next()).unwrap_or("").to_owned();
        let quoted = || whole.split('"').nth(1).unwrap_or("").to_owned();
        let traced = if whole.starts_with("fsync(") || whole.starts_with("fdatasync(") {
            Traced::Synced(path())
        } else if whole.starts_with("unlink") || whole.starts_with("truncate(") {
            Traced::GivenUp(quoted())
        } else if whole.starts_with("ftruncate(") {
            Traced::GivenUp(path())
        } else {
            continue;
        };
        calls.push(Call { thread: pid.to_owned(), traced });
    }
    calls
}

/// The log segments given up, each checked against the syncs before it: `Err` names the
/// first one given up with no `fsync` of sled's `db` and of the data dir since the last.
fn check_order(calls: &[Call], data: &Path) -> Result<usize, String> {
    let (db, dir) = (data.join("db"), data.to_owned());
    let segment = |p: &str| Path::new(p).parent() == Some(&data.join("wal")) && p.ends_with(".wal");
    let (mut db_synced, mut dir_synced, mut given_up) = (false, false, 0);
    for (at, call) in calls.iter().enumerate() {
        match &call.traced {
            Traced::Synced(p) if Path::new(p) == db => db_synced = true,
            Traced::Synced(p) if Path::new(p) == dir => dir_synced = true,
            Traced::GivenUp(p) if segment(p) => {
                if !(db_synced && dir_synced) {
                    return Err(format!("{p} was given up before sled's files were fsynced: {calls:?}"));
                }
                given_up += 1;
                // The next checkpoint's segments need a sync of their own. Segments that
                // one checkpoint removes together share its syncs: its thread's next call
                // is another removal (other threads, the group commit's `fdatasync`s
                // among them, may come between).
                let next_of_thread = calls[at + 1..].iter().find(|c| c.thread == call.thread);
                if !matches!(next_of_thread, Some(Call { traced: Traced::GivenUp(_), .. })) {
                    (db_synced, dir_synced) = (false, false);
                }
            }
            _ => {}
        }
    }
    Ok(given_up)
}

#[test]
fn the_rule_catches_a_segment_given_up_before_the_sync() {
    let data = Path::new("/d");
    let trace = "\
1 fsync(7</d/wal/00000000000000000001.wal>) = 0
2 fsync(9</d/db> <unfinished ...>
1 unlinkat(AT_FDCWD, \"/d/wal/00000000000000000001.wal\", 0) = 0
2 <... fsync resumed>) = 0
";
    assert!(check_order(&parse(trace), data).is_err(), "the removal came before the db's fsync completed");
    let trace = "\
2 fsync(9</d/db>) = 0
2 fsync(10</d>) = 0
2 unlinkat(AT_FDCWD, \"/d/wal/00000000000000000001.wal\", 0) = 0
2 unlinkat(AT_FDCWD, \"/d/wal/00000000000000000002.wal\", 0) = 0
2 fdatasync(7</d/wal/00000000000000000004.wal>) = 0
2 ftruncate(11</d/wal/00000000000000000003.wal>, 10) = 0
";
    assert!(check_order(&parse(trace), data).is_err(), "a later truncation needs a sync of its own");
    let ok = "2 fsync(9</d/db>) = 0\n2 fsync(10</d>) = 0\n2 unlink(\"/d/wal/00000000000000000001.wal\") = 0\n";
    assert_eq!(check_order(&parse(ok), data), Ok(1));
    let interleaved = "\
2 fsync(9</d/db>) = 0
2 fsync(10</d>) = 0
2 unlinkat(AT_FDCWD, \"/d/wal/00000000000000000001.wal\", 0) = 0
3 fdatasync(7</d/wal/00000000000000000004.wal>) = 0
2 unlinkat(AT_FDCWD, \"/d/wal/00000000000000000002.wal\", 0) = 0
";
    assert_eq!(check_order(&parse(interleaved), data), Ok(2), "another thread's sync splits no checkpoint");
}

#[actix_web::test]
async fn no_log_segment_is_given_up_before_an_fsync_of_the_sled_files_it_covers() {
    if which("strace").is_none() {
        crate::skip::skip_for_want_of("strace", "A2AD_REQUIRE_STRACE", "apt-get install strace");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let trace = dir.path().join("trace");
    let mut strace = Command::new("strace");
    strace.args(["-f", "-qq", "-y", "--seccomp-bpf", "-o"]).arg(&trace);
    strace.args(["-e", "trace=fsync,fdatasync,unlink,unlinkat,truncate,ftruncate"]);
    // 8MiB segments (the least there is): 80 steps of a 100KiB message fill a few (text
    // that does not pack: the log packs its records).
    strace.env("A2AD_WAL_SEGMENT_SIZE", "8MiB");
    let args = ["--data-dir", data.to_str().unwrap(), "--workers", "1"];
    let node = NodeProcess::start_under(strace, dir.path(), &args);
    let remote = node.app_view();
    for i in 0..80 {
        let text = incompressible(100 * 1024, i);
        let answer = remote.ok("SendMessage", send_params(&text, json!({"contextId": format!("c{i}")}))).await;
        assert_eq!(answer["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    }
    let data_canon = data.canonicalize().unwrap();
    let removed = crate::support::eventually(1200, || async {
        let calls = parse(&std::fs::read_to_string(&trace).unwrap_or_default());
        check_order(&calls, &data_canon).unwrap_or(0) > 0
    })
    .await;
    stop_traced(node);
    let calls = parse(&std::fs::read_to_string(&trace).unwrap());
    let given_up = check_order(&calls, &data_canon).unwrap_or_else(|e| panic!("{e}"));
    assert!(removed && given_up > 0, "the load filled segments that a checkpoint removed: {calls:?}");
}

/// `len` letters and digits that LZ4 cannot shrink (the log packs its records), different
/// for each `seed`.
fn incompressible(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// SIGTERM to the traced node (strace's child), then waits for strace, which exits with it.
fn stop_traced(mut node: NodeProcess) {
    let strace = node.child.id();
    let children = std::fs::read_to_string(format!("/proc/{strace}/task/{strace}/children")).unwrap_or_default();
    for pid in children.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
        // SAFETY: a plain kill(2) of our own child process.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let _ = node.child.wait();
}

/// The program's path on `PATH`, if it is there.
fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}
