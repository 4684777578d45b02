//! What sled itself costs per echo turn, by the shape of the keys a turn writes: raw sled
//! trees (no a2ad code, no JSON), the same key order and value sizes as the store's apply
//! (`benches/apply.rs`), so that a layout can be judged before it is built.
//!
//! ```text
//! nice cargo bench -p a2ad-storage --bench sled_shapes
//! ```
//!
//! Every shape writes, per turn, the two index keys of a new task (by time, by context:
//! 1-byte values) over 64 contexts, and the session's metadata (150 bytes); then:
//! * `store`: the task record (1,300 B) and two events (700 B each), a key each, and one
//!   500-byte session chunk with, past 100 turns a context, the removal of the oldest
//!   (the layout of `sled/store/`);
//! * `store-split`: the same, the record and events in a tree of their own (10-13% less
//!   CPU here, but built into the store, commit `e7515f7`, it gained nothing measurable:
//!   `apply.rs` and the core load within noise, callgrind 10% more instructions; so it
//!   was reverted, BENCHMARKS.md, issue 15, 2026-12-04);
//! * `one-value`: the record and events as one 2,700-byte value;
//! * `small-value`: one 300-byte value instead (the record as a pointer would be);
//! * `no-values`: no record, no events (the indexes and the session alone);
//! * `message-keys`: as `no-values`, with the session as one key per 250-byte message and
//!   two removals a turn (the layout before 2026-12-03).
//!
//! sled is flushed every 4,000 turns and at the end; figures as in `apply.rs`.

mod common;

use common::{cpu_nanos, process_write_bytes};
use std::time::Instant;

const TURNS: usize = 30_000;
const CONTEXTS: usize = 64;
const SHAPES: [&str; 6] = ["store", "store-split", "one-value", "small-value", "no-values", "message-keys"];

fn main() {
    println!("raw sled, {TURNS} echo turns over {CONTEXTS} contexts, by key shape");
    println!("{:>13} {:>9} {:>12} {:>10} {:>12}", "shape", "turns/s", "cpu us/turn", "io B/turn", "disk B");
    for shape in SHAPES {
        run(shape);
    }
}

fn run(shape: &str) {
    let dir = tempfile::tempdir_in(".").expect("temporary directory");
    let db = sled::Config::new()
        .path(dir.path())
        .mode(sled::Mode::HighThroughput)
        .cache_capacity(64 << 20)
        .segment_size(512 * 1024)
        .flush_every_ms(Some(500))
        .open()
        .expect("open sled");
    let tasks = db.open_tree("tasks").expect("tree");
    let values = if shape == "store-split" { db.open_tree("values").expect("tree") } else { tasks.clone() };
    let sessions = db.open_tree("sessions").expect("tree");
    let (cpu_before, io_before) = (cpu_nanos(), process_write_bytes());
    let started = Instant::now();
    for turn in 0..TURNS {
        let id = format!("01a23bf6-fbaf-7032-b4e4-{turn:012x}");
        let context = turn % CONTEXTS;
        let put = |tree: &sled::Tree, key: Vec<u8>, len: usize| tree.insert(key, vec![b'x'; len]).map(drop);
        let time = (turn as u64).to_be_bytes();
        put(&tasks, [b"s".as_slice(), b"anonymous", &time, id.as_bytes()].concat(), 1).expect("insert");
        put(&tasks, [format!("c{context}").as_bytes(), &time, id.as_bytes()].concat(), 1).expect("insert");
        match shape {
            "store" | "store-split" => {
                for seq in [1u64, 2] {
                    put(&values, [b"e", id.as_bytes(), &seq.to_be_bytes()].concat(), 700).expect("insert");
                }
                put(&values, [b"t", id.as_bytes()].concat(), 1300).expect("insert");
            }
            "one-value" => put(&values, [b"t", id.as_bytes()].concat(), 2700).expect("insert"),
            "small-value" => put(&values, [b"t", id.as_bytes()].concat(), 300).expect("insert"),
            _ => {}
        }
        let turn_of_context = (turn / CONTEXTS) as u64;
        let (messages, size) = if shape == "message-keys" { (2, 250) } else { (1, 500) };
        for n in 0..messages {
            let seq = turn_of_context * messages + n;
            put(&sessions, [format!("h{context}").as_bytes(), &seq.to_be_bytes()].concat(), size).expect("insert");
            if let Some(expired) = seq.checked_sub(100 * messages) {
                sessions.remove([format!("h{context}").as_bytes(), &expired.to_be_bytes()].concat()).expect("remove");
            }
        }
        put(&sessions, format!("m{context}").into_bytes(), 150).expect("insert");
        if (turn + 1) % 4000 == 0 {
            db.flush().expect("flush");
        }
    }
    db.flush().expect("flush");
    let elapsed = started.elapsed().as_secs_f64();
    let per_turn = |value: u64| value as f64 / TURNS as f64;
    println!(
        "{:>13} {:>9.0} {:>12.1} {:>10.0} {:>12}",
        shape,
        TURNS as f64 / elapsed,
        per_turn(cpu_nanos().saturating_sub(cpu_before)) / 1000.0,
        per_turn(process_write_bytes().saturating_sub(io_before)),
        db.size_on_disk().unwrap_or(0),
    );
}
