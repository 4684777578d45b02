//! The README stays a page for users (issue 38): within its budget, its sections in the
//! order a newcomer reads them, and every link to a page of the repository alive.

/// The README's budget, in characters: what it is, the two commands, the quick start, the
/// several-teams recipe, clients, and a map of `docs/`. Reference text goes to `docs/`,
/// contributors' text to CONTRIBUTING.md.
const BUDGET: usize = 8_000;

const README: &str = include_str!("../../README.md");

#[test]
fn the_readme_stays_within_its_budget_in_the_users_order() {
    let chars = README.chars().count();
    assert!(
        chars <= BUDGET,
        "README.md has {chars} characters, over its budget of {BUDGET}: move reference text to docs/"
    );
    let headings: Vec<&str> = README.lines().filter(|l| l.starts_with("## ") || l.starts_with("### ")).collect();
    assert_eq!(
        headings,
        [
            "## The two commands",
            "## Quick start: host your own agent",
            "### Several teams",
            "## Clients",
            "## Documentation"
        ],
        "the users' order (the teams recipe's test finds its heading too)"
    );
}

#[test]
fn every_link_of_the_readme_to_the_repository_names_a_file_there() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let links = README.split("](").skip(1).filter_map(|rest| rest.split(')').next());
    let local: Vec<&str> = links.filter(|l| !l.starts_with("http")).collect();
    assert!(local.len() >= 10, "the map of docs/: {local:?}");
    for link in local {
        let path = link.split('#').next().unwrap();
        assert!(root.join(path).is_file(), "README.md links to {link}, which is not a file of the repository");
    }
}
