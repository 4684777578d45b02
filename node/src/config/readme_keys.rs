//! Keeps README's configuration reference honest: every key that a config struct accepts
//! (the kebab-case fields of each `deny_unknown_fields` struct in `src/config/` and
//! `src/auth/config.rs`) is named in README.md, the top-level ones as a row of the
//! reference table, and every `ENV_KEYS` entry is listed as its `A2AD_*` variable.

use super::ENV_KEYS;

const README: &str = include_str!("../../../README.md");

/// The sources that define config keys, by file name.
const SOURCES: &[(&str, &str)] = &[
    ("mod.rs", include_str!("mod.rs")),
    ("agents.rs", include_str!("agents.rs")),
    ("card.rs", include_str!("card.rs")),
    ("content.rs", include_str!("content.rs")),
    ("dialects.rs", include_str!("dialects.rs")),
    ("limits.rs", include_str!("limits.rs")),
    ("push.rs", include_str!("push.rs")),
    ("retention.rs", include_str!("retention.rs")),
    ("transports.rs", include_str!("transports.rs")),
    ("auth/config.rs", include_str!("../auth/config.rs")),
];

/// (struct name, kebab-case keys) of every struct that refuses unknown keys.
fn keyed_structs(source: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        if !(line.contains("deny_unknown_fields") && line.contains("kebab-case")) {
            continue;
        }
        let Some(header) = lines.by_ref().find(|l| l.contains("struct ")) else { break };
        let name = header.split("struct ").nth(1).unwrap_or("").split([' ', '{', '<']).next().unwrap_or("");
        let mut keys = Vec::new();
        let mut rename: Option<String> = None;
        for field in lines.by_ref() {
            let field = field.trim();
            if field.starts_with('}') {
                break;
            }
            if let Some(renamed) = field.strip_prefix("#[serde(rename = \"") {
                rename = renamed.split('"').next().map(str::to_string);
                continue;
            }
            let field = field.strip_prefix("pub ").unwrap_or(field);
            let Some((ident, _)) = field.split_once(':') else { continue };
            if ident.is_empty() || !ident.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                continue;
            }
            keys.push(rename.take().unwrap_or_else(|| ident.replace('_', "-")));
        }
        found.push((name.to_string(), keys));
    }
    found
}

/// The README's configuration reference table rows (the first cell of each row).
fn table_keys() -> String {
    let start = README.find("## Configuration").expect("README has a Configuration section");
    let section = &README[start..];
    section.lines().filter(|l| l.starts_with("| `")).map(|l| l.split(" | ").next().unwrap_or("")).collect()
}

#[test]
fn every_top_level_key_is_a_row_of_the_readme_reference_table() {
    let rows = table_keys();
    let mut missing = Vec::new();
    for (_, source) in SOURCES {
        for (name, keys) in keyed_structs(source) {
            if name != "ConfigFile" && name != "PushKeys" {
                continue;
            }
            missing.extend(
                keys.into_iter().filter(|k| !rows.contains(&format!("`{k}")) && !rows.contains(&format!(" `{k}"))),
            );
        }
    }
    assert!(missing.is_empty(), "top-level keys missing from README's config table: {missing:?}");
}

#[test]
fn every_nested_key_is_named_in_the_readme() {
    let mut missing = Vec::new();
    for (file, source) in SOURCES {
        let structs = keyed_structs(source);
        assert!(!structs.is_empty(), "no keyed struct found in {file}");
        for (name, keys) in structs {
            for key in keys {
                let named =
                    [format!("`{key}"), format!(".{key}`"), format!("{key}:"), format!("{{{key},"), format!(", {key}")]
                        .iter()
                        .any(|form| README.contains(form.as_str()));
                if !named {
                    missing.push(format!("{file} {name}.{key}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "config keys never named in README: {missing:?}");
}

#[test]
fn every_env_key_is_listed_as_its_variable() {
    let start = README.find("## Configuration").expect("README has a Configuration section");
    let intro = &README[start..start + README[start..].find("| key |").expect("the reference table")];
    let missing: Vec<String> = ENV_KEYS
        .iter()
        .map(|key| format!("A2AD_{}", key.to_uppercase().replace(['-', '.'], "_")))
        .filter(|var| !intro.contains(&format!("`{var}`")))
        .collect();
    assert!(missing.is_empty(), "A2AD_* variables missing from README's Configuration intro: {missing:?}");
}
