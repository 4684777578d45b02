//! Does a read of another owner's task id answer like a read of an unknown id?
//!
//! `cargo bench --bench owner_timing -- [--trials N] [--http-trials N]`
//!
//! Two measurements, each over many interleaved pairs (in each pair a foreign id and an
//! unknown id are read in a random order, so drift and cache warmth hit both alike):
//!
//! 1. The store: `SledStore::get_task(Scope::Owner(bob), id)` for ids of alice's tasks
//!    (each with a few KB of history) and for fresh ids; the unscoped read of the same
//!    foreign ids (`Scope::Node`, which decodes the record, as every read did before the
//!    owner check moved into the store) is shown for scale.
//! 2. A node in process over loopback: bob's `GetTask` (JSON-RPC) on alice's ids and on
//!    unknown ids, both answered TaskNotFound.
//!
//! For each it prints the medians, the 90th percentiles, and how often the foreign read
//! of a pair was the slower one: 0.5 is indistinguishable; the finding this answers was
//! 0.26-0.31 (foreign ids 11-15 µs slower on GetTask).

use a2ad::auth::AuthConfig;
use a2ad::config::Config;
use a2ad::startup::Application;
use a2ad_protocol::{ids, Task, TaskState, TaskStatus};
use a2ad_storage::{Owner, Scope, SledStore, TaskRecord, TaskStoreExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    store_timing(value("--trials", 20_000));
    actix_web::rt::System::new().block_on(http_timing(value("--http-trials", 2_000)));
}

/// A tiny xorshift: the order within each pair, without a dependency.
struct Coin(u64);

impl Coin {
    fn flip(&mut self) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 & 1 == 1
    }
}

fn coin() -> Coin {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    Coin(nanos as u64 | 1)
}

/// Times `read` on a foreign and an unknown id per trial, in a random order.
fn pairs(trials: usize, mut read: impl FnMut(bool, usize)) -> (Vec<Duration>, Vec<Duration>) {
    let (mut foreign, mut unknown) = (Vec::with_capacity(trials), Vec::with_capacity(trials));
    let mut coin = coin();
    for trial in 0..trials {
        let order = if coin.flip() { [true, false] } else { [false, true] };
        for is_foreign in order {
            let started = Instant::now();
            read(is_foreign, trial);
            let took = started.elapsed();
            if is_foreign {
                foreign.push(took)
            } else {
                unknown.push(took)
            }
        }
    }
    (foreign, unknown)
}

fn report(what: &str, foreign: &[Duration], unknown: &[Duration]) {
    let slower = foreign.iter().zip(unknown).filter(|(f, u)| f > u).count() as f64 / foreign.len() as f64;
    let quantile = |samples: &[Duration], q: f64| {
        let mut sorted = samples.to_vec();
        sorted.sort();
        sorted[((sorted.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6
    };
    println!(
        "{what}: {} pairs; median foreign {:.2} µs, unknown {:.2} µs; p90 foreign {:.2} µs, unknown {:.2} µs; \
         P(foreign slower) = {slower:.3}",
        foreign.len(),
        quantile(foreign, 0.5),
        quantile(unknown, 0.5),
        quantile(foreign, 0.9),
        quantile(unknown, 0.9),
    );
}

fn owner(principal: &str) -> Owner {
    Owner { tenant: "acme".into(), principal: principal.into() }
}

/// A finished task of `owner` with `turns` messages of history, about 400 bytes each.
fn task(owner: &Owner, turns: usize) -> TaskRecord {
    let history = (0..turns)
        .map(|i| {
            serde_json::from_value(json!({"messageId": ids::new_id(), "role": "ROLE_USER",
                "parts": [{"text": format!("message {i}: {}", "lorem ipsum ".repeat(32))}]}))
            .expect("a message")
        })
        .collect();
    TaskRecord {
        owner: owner.clone(),
        agent: "echo".into(),
        task: Task {
            id: ids::new_id(),
            context_id: ids::new_id(),
            status: TaskStatus { state: TaskState::Completed, message: None, timestamp: None },
            artifacts: vec![],
            history,
            metadata: None,
        },
        last_event_seq: 1,
    }
}

fn store_timing(trials: usize) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = SledStore::open(dir.path()).expect("the store opens");
    let (alice, bob) = (owner("alice"), owner("bob"));
    let foreign: Vec<String> = (0..200)
        .map(|_| {
            let record = task(&alice, 8);
            store.put_task(&record, &[]).expect("written");
            record.task.id
        })
        .collect();
    let unknown: Vec<String> = (0..trials).map(|_| ids::new_id()).collect();
    let read = |scope: Scope<'_>, id: &str| assert!(store.get_task(scope, id).expect("read").is_none());
    // Warm-up, then the measured pairs.
    let _ = pairs(1000, |f, i| read(Scope::Owner(&bob), if f { &foreign[i % 200] } else { &unknown[i] }));
    let (f, u) = pairs(trials, |f, i| read(Scope::Owner(&bob), if f { &foreign[i % 200] } else { &unknown[i] }));
    report("store get_task, owner-scoped", &f, &u);
    let (f, u) = pairs(trials, |is_foreign, i| match is_foreign {
        true => assert!(store.get_task(Scope::Node, &foreign[i % 200]).expect("read").is_some()),
        false => read(Scope::Node, &unknown[i]),
    });
    report("store get_task, decoding (the old path, for scale)", &f, &u);
}

async fn http_timing(trials: usize) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut config = Config::default_node();
    config.listen = "127.0.0.1:0".parse().expect("an address");
    config.grpc_listen = None;
    config.data_dir = dir.path().join("data");
    config.workers = 1;
    config.auth = serde_yaml_ng::from_str::<AuthConfig>(
        "bearer-tokens:\n  - {token: tok-alice, tenant: acme, principal: alice}\n  - {token: tok-bob, tenant: acme, principal: bob}\n",
    )
    .expect("the auth block");
    let app = Application::build(config).await.expect("the node starts");
    let url = app.local_url();
    actix_web::rt::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();
    let call = |token: &'static str, method: &'static str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        client.post(&url).bearer_auth(token).json(&body).send()
    };
    let mut foreign = Vec::new();
    for i in 0..50 {
        let text = format!("task {i}: {}", "lorem ipsum ".repeat(200));
        let message = json!({"messageId": ids::new_id(), "role": "ROLE_USER", "parts": [{"text": text}]});
        let sent: Value = call("tok-alice", "SendMessage", json!({"message": message}))
            .await
            .expect("sent")
            .json()
            .await
            .expect("JSON");
        foreign.push(sent["result"]["task"]["id"].as_str().expect("a task id").to_owned());
    }
    let unknown: Vec<String> = (0..trials + 200).map(|_| ids::new_id()).collect();
    let mut samples = (Vec::new(), Vec::new());
    let mut coin = coin();
    for trial in 0..trials + 200 {
        let order = if coin.flip() { [true, false] } else { [false, true] };
        for is_foreign in order {
            let id = if is_foreign { foreign[trial % foreign.len()].clone() } else { unknown[trial].clone() };
            let started = Instant::now();
            let answer: Value =
                call("tok-bob", "GetTask", json!({"id": id})).await.expect("sent").json().await.expect("JSON");
            let took = started.elapsed();
            assert_eq!(answer["error"]["code"], -32001, "TaskNotFound either way: {answer}");
            // The first 200 pairs warm up.
            if trial >= 200 {
                if is_foreign {
                    samples.0.push(took)
                } else {
                    samples.1.push(took)
                }
            }
        }
    }
    report("GetTask over JSON-RPC (loopback, in process)", &samples.0, &samples.1);
}
