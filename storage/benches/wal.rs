//! Write-ahead log micro-benchmark: commits per second, bytes and CPU per commit for 1, 16
//! and 64 concurrent committers, each appending a ~600-byte record and awaiting its
//! commit (real `fdatasync`, default 64 MiB segments).
//!
//! ```text
//! nice cargo bench -p a2ad-storage --bench wal
//! WAL_BENCH_SECS=5 WAL_BENCH_DIR=/var/lib/a2ad nice cargo bench -p a2ad-storage --bench wal
//! ```
//!
//! The log lives in a temporary directory under `WAL_BENCH_DIR` (default: the current
//! directory, not `/tmp`, which may be a tmpfs where `fdatasync` costs nothing). Columns:
//! `wal B/commit` is what the log wrote (header included); `io B/commit` is the process's
//! `write_bytes` from `/proc/self/io` (what reached the block layer, in whole pages; the
//! file system's journal, written by its own thread, is not in it); `cpu us/commit` sums
//! every thread's on-CPU time from `/proc/self/task/*/schedstat`.

mod common;

use a2ad_storage::wal::{Wal, WalOptions};
use common::{cpu_nanos, process_write_bytes};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const RECORD_BYTES: usize = 600;

fn main() {
    let secs = std::env::var("WAL_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let base = std::env::var_os("WAL_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    println!("write-ahead log, {RECORD_BYTES}-byte records, fdatasync on, {secs} s per row, in {}", base.display());
    println!(
        "{:>10} {:>10} {:>9} {:>10} {:>8} {:>12} {:>11} {:>13}",
        "committers", "commits", "commits/s", "mean batch", "us/sync", "wal B/commit", "io B/commit", "cpu us/commit"
    );
    for committers in [1, 16, 64] {
        run(committers, Duration::from_secs(secs), &base);
    }
}

fn run(committers: usize, duration: Duration, base: &std::path::Path) {
    let dir = tempfile::tempdir_in(base).expect("temporary directory");
    let (wal, _) = Wal::open(dir.path(), WalOptions::default()).expect("open the log");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime");
    let (io_before, cpu_before) = (process_write_bytes(), cpu_nanos());
    let started = Instant::now();
    let deadline = started + duration;
    let commits: u64 = runtime.block_on(async {
        let tasks: Vec<_> = (0..committers)
            .map(|task| {
                let wal = wal.clone();
                tokio::spawn(async move {
                    let record = record(task);
                    let mut done = 0u64;
                    while Instant::now() < deadline {
                        let lsn = wal.append(&record).expect("append");
                        wal.commit(lsn).await.expect("commit");
                        done += 1;
                    }
                    done
                })
            })
            .collect();
        let mut total = 0;
        for task in tasks {
            total += task.await.expect("committer");
        }
        total
    });
    let elapsed = started.elapsed().as_secs_f64();
    let (io_after, cpu_after) = (process_write_bytes(), cpu_nanos());
    let stats = wal.stats();
    let per_commit = |value: u64| value as f64 / commits.max(1) as f64;
    println!(
        "{:>10} {:>10} {:>9.0} {:>10.1} {:>8.0} {:>12.0} {:>11.0} {:>13.1}",
        committers,
        commits,
        commits as f64 / elapsed,
        stats.waiters_served as f64 / stats.batches.max(1) as f64,
        stats.sync_micros as f64 / stats.syncs.max(1) as f64,
        per_commit(stats.bytes_written),
        per_commit(io_after.saturating_sub(io_before)),
        per_commit(cpu_after.saturating_sub(cpu_before)) / 1000.0,
    );
    wal.close();
}

/// A record shaped like a small JSON commit.
fn record(task: usize) -> Vec<u8> {
    let mut bytes = format!("{{\"task\":\"{task:08}\",\"state\":\"working\",\"parts\":[\"").into_bytes();
    bytes.resize(RECORD_BYTES - 3, b'x');
    bytes.extend_from_slice(b"\"]}");
    bytes
}
