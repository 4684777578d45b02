//! The deployment files as shipped: the systemd unit lets the sample config's workspaces
//! be written (its `ProtectSystem=strict` makes everything else read-only), and git
//! ignores the data dir the quick start creates.

use std::path::Path;

fn shipped(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

#[test]
fn the_unit_makes_the_sample_workspaces_writable() {
    let unit = shipped("deploy/a2ad.service");
    assert!(unit.lines().any(|l| l == "ProtectSystem=strict"), "the sandbox this guards against");
    let writable: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("ReadWritePaths="))
        .flat_map(str::split_whitespace)
        .map(|p| p.trim_start_matches('-'))
        .collect();
    let sample = shipped("deploy/a2ad.yaml");
    let roots = sample.lines().find_map(|l| l.trim_start_matches("# ").strip_prefix("allowed-cwds: ")).unwrap();
    for root in roots.trim_matches(['[', ']']).split(',').map(str::trim) {
        assert!(
            writable.iter().any(|w| Path::new(root).starts_with(w)),
            "{root} is not in ReadWritePaths= {writable:?}"
        );
    }
    assert!(shipped("docs/operating.md").contains("ReadWritePaths="), "the manual names the setting");
}

#[test]
fn git_ignores_the_quick_starts_data_dir() {
    assert!(shipped(".gitignore").lines().any(|l| l == "a2ad-data/" || l == "/a2ad-data/"));
}
