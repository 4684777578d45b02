//! The README's "several teams" recipe, run as written: its config, from the README,
//! served by the real binary from the repository root; a call of team acme with a webhook,
//! the lists of both teams, and the private directory of acme's task.

use crate::client::{a2ad, stderr, stdout};
use crate::receiver::Receiver;
use crate::support::{eventually, NodeProcess};

/// The first ```yaml block after the "### Several teams" heading of the README.
fn recipe_yaml() -> String {
    let readme = include_str!("../../README.md");
    let section = readme.split("### Several teams").nth(1).expect("the recipe's heading");
    let block = section.split("```yaml\n").nth(1).expect("its yaml block");
    block.split("```").next().unwrap().to_owned()
}

#[actix_web::test]
async fn the_several_teams_recipe_runs() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("teams.yaml");
    std::fs::write(&config, recipe_yaml()).unwrap();
    let data = dir.path().join("data");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let node = NodeProcess::start(repo, &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    let hook = format!("{}/hook", receiver.base);

    let called = a2ad(
        &["call", &node.url, "hello", "--token", "acme-secret", "--push-url", &hook, "--push-token", "s3cret"],
        &[],
    )
    .await;
    assert_eq!(called.status.code(), Some(0), "{}", stderr(&called));
    assert!(stdout(&called).contains("HELLO"), "{}", stdout(&called));
    let task =
        stderr(&called).lines().next().unwrap().trim_start_matches("a2ad: task ").split(' ').next().unwrap().to_owned();

    let pushed = eventually(400, || async {
        receiver.received().iter().any(|r| {
            r.path == "/hook" && r.headers.get("x-a2a-notification-token").map(String::as_str) == Some("s3cret")
        })
    })
    .await;
    assert!(pushed, "the webhook gets acme's updates: {:?}", receiver.received());

    let acme = a2ad(&["tasks", "list", &node.url, "--token", "acme-secret"], &[]).await;
    assert!(stdout(&acme).contains(&task), "{}", stdout(&acme));
    let beta = a2ad(&["tasks", "list", &node.url, "--token", "beta-secret"], &[]).await;
    assert_eq!(beta.status.code(), Some(0), "{}", stderr(&beta));
    assert_eq!(stdout(&beta).lines().count(), 1, "beta sees only the header: {}", stdout(&beta));
    assert!(data.join("workdirs/acme+alice").join(&task).is_dir(), "acme's task ran in its private directory");
}
