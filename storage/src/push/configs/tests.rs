//! The push-config store: round trips, ordering, sealing at rest, damage.

use super::*;
use crate::{SledStore, TaskStore};
use a2ad_protocol::AuthenticationInfo;
use std::path::Path;

const TOKEN_SECRET: &str = "tok-SECRET-123";
const CRED_SECRET: &str = "cred-SECRET-456";
const URL: &str = "https://hooks.example.com/SENTINEL-URL-789";

fn owner() -> Owner {
    Owner { tenant: "acme".into(), principal: "alice".into() }
}

fn config(task: &str, id: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        tenant: Some("acme".into()),
        id: Some(id.into()),
        task_id: Some(task.into()),
        url: URL.into(),
        token: Some(format!("{TOKEN_SECRET}-{task}-{id}")),
        authentication: Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: Some(format!("{CRED_SECRET}-{task}-{id}")),
        }),
    }
}

fn open(dir: &Path) -> (SledStore, PushConfigStore) {
    let store = crate::sled::store::open_retrying(dir);
    let key = SecretKey::load_or_create(dir).unwrap();
    let configs = PushConfigStore::new(store.tree("push_configs").unwrap(), key);
    (store, configs)
}

#[test]
fn reads_and_deletes_are_scoped_to_the_owner() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    let stranger = Owner { tenant: "acme".into(), principal: "alice2".into() };
    configs.put(&owner(), &config("t1", "c1")).unwrap();
    let alice = owner();
    assert!(configs.get(Scope::Owner(&alice), "t1", "c1").unwrap().is_some());
    assert!(configs.get(Scope::Owner(&stranger), "t1", "c1").unwrap().is_none(), "reads as unknown");
    assert!(configs.list(Scope::Owner(&stranger), "t1").unwrap().is_empty());
    assert_eq!(configs.list(Scope::Owner(&alice), "t1").unwrap().len(), 1);
    assert!(!configs.delete(Scope::Owner(&stranger), "t1", "c1").unwrap(), "another owner's is left alone");
    assert!(configs.get(Scope::Node, "t1", "c1").unwrap().is_some());
    assert!(configs.delete(Scope::Owner(&alice), "t1", "c1").unwrap());
    assert!(configs.get(Scope::Node, "t1", "c1").unwrap().is_none());
}

fn ids(list: &[StoredPushConfig]) -> Vec<&str> {
    list.iter().map(|s| s.config.id.as_deref().unwrap()).collect()
}

fn key_error(e: StoreError) -> String {
    match e {
        StoreError::Key(msg) => msg,
        other => panic!("expected a key error, got {other:?}"),
    }
}

#[test]
fn put_get_list_delete_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    let c = config("t1", "c1");
    configs.put(&owner(), &c).unwrap();
    let got = configs.get(Scope::Node, "t1", "c1").unwrap().unwrap();
    assert_eq!(got, StoredPushConfig { owner: owner(), config: c.clone() });
    assert_eq!(configs.list(Scope::Node, "t1").unwrap(), vec![got]);
    assert!(configs.get(Scope::Node, "t1", "c2").unwrap().is_none());
    assert!(configs.get(Scope::Node, "t2", "c1").unwrap().is_none());
    assert!(configs.delete(Scope::Node, "t1", "c1").unwrap());
    assert!(configs.get(Scope::Node, "t1", "c1").unwrap().is_none());
    assert!(configs.list(Scope::Node, "t1").unwrap().is_empty());
}

#[test]
fn configs_without_secrets_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    let mut bare = config("t1", "bare");
    bare.token = None;
    bare.authentication = None;
    bare.tenant = None;
    let mut scheme_only = config("t1", "scheme");
    scheme_only.token = None;
    scheme_only.authentication.as_mut().unwrap().credentials = None;
    for c in [&bare, &scheme_only] {
        configs.put(&Owner::anonymous(), c).unwrap();
        let got = configs.get(Scope::Node, "t1", c.id.as_deref().unwrap()).unwrap().unwrap();
        assert_eq!(&got.config, c);
        assert_eq!(got.owner, Owner::anonymous());
    }
}

#[test]
fn put_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    configs.put(&owner(), &config("t1", "c1")).unwrap();
    let mut changed = config("t1", "c1");
    changed.url = "https://other.example.com/hook".into();
    changed.token = Some("new-token".into());
    configs.put(&owner(), &changed).unwrap();
    assert_eq!(configs.get(Scope::Node, "t1", "c1").unwrap().unwrap().config, changed);
    assert_eq!(configs.list(Scope::Node, "t1").unwrap().len(), 1);
}

#[test]
fn delete_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    assert!(!configs.delete(Scope::Node, "t1", "c1").unwrap());
    configs.put(&owner(), &config("t1", "c1")).unwrap();
    assert!(configs.delete(Scope::Node, "t1", "c1").unwrap());
    assert!(!configs.delete(Scope::Node, "t1", "c1").unwrap());
    assert_eq!(configs.delete_task("t1").unwrap(), 0);
}

#[test]
fn list_is_one_task_in_id_order_even_for_prefix_task_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    for (task, id) in [("t10", "a"), ("t1", "c"), ("t1", "a"), ("t", "z"), ("t1", "b"), ("t10", "0"), ("t1", "aa")] {
        configs.put(&owner(), &config(task, id)).unwrap();
    }
    assert_eq!(ids(&configs.list(Scope::Node, "t1").unwrap()), ["a", "aa", "b", "c"]);
    assert_eq!(ids(&configs.list(Scope::Node, "t10").unwrap()), ["0", "a"]);
    assert_eq!(ids(&configs.list(Scope::Node, "t").unwrap()), ["z"]);
    assert!(configs.list(Scope::Node, "t100").unwrap().is_empty());
    assert!(configs.list(Scope::Node, "").unwrap().is_empty());
    for stored in configs.list(Scope::Node, "t1").unwrap() {
        assert_eq!(stored.config.task_id.as_deref(), Some("t1"));
    }
    // delete_task removes exactly that task's configs.
    assert_eq!(configs.delete_task("t1").unwrap(), 4);
    assert!(configs.list(Scope::Node, "t1").unwrap().is_empty());
    assert_eq!(ids(&configs.list(Scope::Node, "t10").unwrap()), ["0", "a"]);
    assert_eq!(ids(&configs.list(Scope::Node, "t").unwrap()), ["z"]);
}

#[test]
fn task_ids_are_listed_once_each_even_for_prefix_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    assert!(configs.task_ids().unwrap().is_empty());
    for (task, id) in [("t1", "a"), ("t1", "b"), ("t10", "a"), ("t2", "z")] {
        configs.put(&owner(), &config(task, id)).unwrap();
    }
    assert_eq!(configs.task_ids().unwrap(), ["t1", "t2", "t10"], "by length, then bytes: the key order");
}

#[test]
fn put_needs_task_id_and_id() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    let mut c = config("t1", "c1");
    c.id = None;
    assert!(matches!(configs.put(&owner(), &c), Err(StoreError::Corrupt(_))));
    let mut c = config("t1", "c1");
    c.task_id = None;
    assert!(matches!(configs.put(&owner(), &c), Err(StoreError::Corrupt(_))));
    let long = "x".repeat(70_000);
    assert!(configs.put(&owner(), &config(&long, "c1")).is_err());
    assert!(configs.get(Scope::Node, &long, "c1").unwrap().is_none());
    assert!(configs.list(Scope::Node, &long).unwrap().is_empty());
}

#[test]
fn reopening_with_the_same_key_file_reads_the_secrets() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, configs) = open(dir.path());
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        store.flush().unwrap();
    }
    let (_store, configs) = open(dir.path());
    assert_eq!(configs.get(Scope::Node, "t1", "c1").unwrap().unwrap().config, config("t1", "c1"));
}

#[test]
fn a_different_key_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, configs) = open(dir.path());
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        store.flush().unwrap();
    }
    let store = crate::sled::store::open_retrying(dir.path());
    let configs = PushConfigStore::new(store.tree("push_configs").unwrap(), SecretKey::generate().unwrap());
    let msg = key_error(configs.get(Scope::Node, "t1", "c1").unwrap_err());
    assert!(msg.contains("does not decrypt") && msg.contains("t1/c1"), "{msg}");
    assert!(!msg.contains(TOKEN_SECRET) && !msg.contains(CRED_SECRET), "{msg}");
    assert!(configs.list(Scope::Node, "t1").is_err());
    // Deleting still works without the key.
    assert!(configs.delete(Scope::Node, "t1", "c1").unwrap());
}

fn raw(configs: &PushConfigStore, task: &str, id: &str) -> serde_json::Value {
    serde_json::from_slice(&configs.rows.get(task, id).unwrap().unwrap()).unwrap()
}

fn write_raw(configs: &PushConfigStore, task: &str, id: &str, value: &serde_json::Value) {
    configs.rows.put(task, id, serde_json::to_vec(value).unwrap()).unwrap();
}

#[test]
fn sealed_values_moved_between_records_or_fields_fail_to_decrypt() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    configs.put(&owner(), &config("t1", "c1")).unwrap();
    configs.put(&owner(), &config("t1", "c2")).unwrap();
    configs.put(&owner(), &config("t2", "c1")).unwrap();
    let (a, b, c) = (raw(&configs, "t1", "c1"), raw(&configs, "t1", "c2"), raw(&configs, "t2", "c1"));

    // Swap the tokens of two configs of one task.
    let (mut a2, mut b2) = (a.clone(), b.clone());
    a2["sealed_token"] = b["sealed_token"].clone();
    b2["sealed_token"] = a["sealed_token"].clone();
    write_raw(&configs, "t1", "c1", &a2);
    write_raw(&configs, "t1", "c2", &b2);
    for id in ["c1", "c2"] {
        let msg = key_error(configs.get(Scope::Node, "t1", id).unwrap_err());
        assert!(msg.contains("sealed token") && !msg.contains(TOKEN_SECRET), "{msg}");
    }

    // Same config id, another task.
    let mut a3 = a.clone();
    a3["sealed_credentials"] = c["sealed_credentials"].clone();
    write_raw(&configs, "t1", "c1", &a3);
    assert!(key_error(configs.get(Scope::Node, "t1", "c1").unwrap_err()).contains("credentials"));

    // Token and credentials swapped within one record.
    let mut a4 = a.clone();
    a4["sealed_token"] = a["sealed_credentials"].clone();
    a4["sealed_credentials"] = a["sealed_token"].clone();
    write_raw(&configs, "t1", "c1", &a4);
    assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));

    // The URL or the owner edited on disk.
    let mut a5 = a.clone();
    a5["config"]["url"] = "https://attacker.example.com/".into();
    write_raw(&configs, "t1", "c1", &a5);
    assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));
    let mut a6 = a.clone();
    a6["owner"]["principal"] = "mallory".into();
    write_raw(&configs, "t1", "c1", &a6);
    assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));

    // A whole record moved under another key.
    write_raw(&configs, "t1", "c1", &b);
    assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Corrupt(_))));

    // A flipped ciphertext bit.
    let mut a7 = a.clone();
    let mut sealed = STANDARD.decode(a["sealed_token"].as_str().unwrap()).unwrap();
    sealed[NONCE_LEN] ^= 1;
    a7["sealed_token"] = STANDARD.encode(sealed).into();
    write_raw(&configs, "t1", "c1", &a7);
    assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));

    // The untouched originals still open.
    write_raw(&configs, "t1", "c1", &a);
    assert_eq!(configs.get(Scope::Node, "t1", "c1").unwrap().unwrap().config, config("t1", "c1"));
}

#[test]
fn each_seal_uses_a_fresh_nonce() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, configs) = open(dir.path());
    configs.put(&owner(), &config("t1", "c1")).unwrap();
    let first = raw(&configs, "t1", "c1");
    configs.put(&owner(), &config("t1", "c1")).unwrap();
    let second = raw(&configs, "t1", "c1");
    assert_ne!(first["sealed_token"], second["sealed_token"]);
    assert_ne!(first["sealed_credentials"], second["sealed_credentials"]);
    assert!(first["config"].get("token").is_none());
    assert!(first["config"]["authentication"].get("credentials").is_none());
    assert_eq!(first["config"]["authentication"]["scheme"], "Bearer");
}

#[test]
fn debug_redacts_the_secrets() {
    let stored = StoredPushConfig { owner: owner(), config: config("t1", "c1") };
    let text = format!("{stored:?}");
    assert!(text.contains("<redacted>") && text.contains("Bearer") && text.contains(URL), "{text}");
    assert!(!text.contains(TOKEN_SECRET) && !text.contains(CRED_SECRET), "{text}");
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn the_raw_data_dir_holds_no_plaintext_secret() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, configs) = open(dir.path());
        for (task, id) in [("t1", "c1"), ("t1", "c2"), ("t2", "c1")] {
            configs.put(&owner(), &config(task, id)).unwrap();
        }
        // Overwritten and deleted configs leave old values in sled's log: sealed too.
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        configs.delete(Scope::Node, "t1", "c2").unwrap();
        store.flush().unwrap();
        // Read the files while the store is still open, as well as after it closes.
        let mut paths = Vec::new();
        files(dir.path(), &mut paths);
        assert_no_secret(&paths);
    }
    let mut paths = Vec::new();
    files(dir.path(), &mut paths);
    assert_no_secret(&paths);
}

fn assert_no_secret(paths: &[std::path::PathBuf]) {
    let mut saw_url = false;
    for path in paths {
        let bytes = std::fs::read(path).unwrap();
        for secret in [TOKEN_SECRET, CRED_SECRET] {
            assert!(!contains(&bytes, secret), "{} holds the plaintext {secret}", path.display());
        }
        saw_url |= contains(&bytes, URL);
    }
    // The scan does see the records: their plain URL is in there.
    assert!(saw_url, "no file holds the config URL; the scan read nothing useful: {paths:?}");
}

#[test]
fn in_the_shared_store_configs_are_scoped_sealed_and_seen_by_every_node() {
    let Some(server) = crate::redis::test_server::redis() else { return };
    let options = crate::RedisStoreOptions { url: server.url(), ..crate::RedisStoreOptions::default() };
    let key_text = STANDARD.encode([7u8; crate::KEY_LEN]);
    let node1 = crate::RedisStore::connect(options.clone()).unwrap();
    let node2 = crate::RedisStore::connect(options).unwrap();
    let (one, two) = (
        node1.push_configs(SecretKey::from_base64(&key_text).unwrap()),
        node2.push_configs(SecretKey::from_base64(&key_text).unwrap()),
    );
    one.put(&owner(), &config("t1", "c2")).unwrap();
    one.put(&owner(), &config("t1", "c1")).unwrap();
    let alice = owner();
    let stranger = Owner { tenant: "acme".into(), principal: "mallory".into() };
    let listed: Vec<String> =
        two.list(Scope::Owner(&alice), "t1").unwrap().into_iter().filter_map(|c| c.config.id).collect();
    assert_eq!(listed, ["c1", "c2"], "node 2 lists node 1's configs, in id order");
    assert_eq!(two.get(Scope::Owner(&alice), "t1", "c1").unwrap().unwrap().config, config("t1", "c1"));
    assert!(two.get(Scope::Owner(&stranger), "t1", "c1").unwrap().is_none());
    assert!(!two.delete(Scope::Owner(&stranger), "t1", "c1").unwrap(), "another owner's is left alone");
    let sealed = String::from_utf8(one.rows.get("t1", "c1").unwrap().unwrap()).unwrap();
    assert!(!sealed.contains(TOKEN_SECRET) && !sealed.contains(CRED_SECRET), "sealed at rest in Redis: {sealed}");
    assert_eq!(two.task_ids().unwrap(), ["t1"]);
    assert!(two.delete(Scope::Owner(&alice), "t1", "c1").unwrap());
    assert_eq!(one.delete_task("t1").unwrap(), 1);
    assert!(two.task_ids().unwrap().is_empty(), "a task without configs is forgotten");
}
