//! Keeps the configuration reference (docs/configuration.md) honest: every key that a
//! config struct accepts (the kebab-case fields of each `deny_unknown_fields` struct in
//! `node/src/config/` and `node/src/auth/config.rs`) is named on the page, the top-level
//! ones as a row of the reference table, and every `ENV_KEYS` entry is listed as its
//! `A2AD_*` variable; and the other way round, the reference table and the variable list
//! name nothing the config does not accept.

use super::ENV_KEYS;

const README: &str = include_str!("../../../docs/configuration.md");

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
    let start = README.find("# Configuration").expect("the page has a Configuration title");
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
    let start = README.find("# Configuration").expect("the page has a Configuration title");
    let intro = &README[start..start + README[start..].find("| key |").expect("the reference table")];
    let missing: Vec<String> = ENV_KEYS
        .iter()
        .map(|key| format!("A2AD_{}", key.to_uppercase().replace(['-', '.'], "_")))
        .filter(|var| !intro.contains(&format!("`{var}`")))
        .collect();
    assert!(missing.is_empty(), "A2AD_* variables missing from README's Configuration intro: {missing:?}");
}

#[test]
fn the_reference_table_and_the_variable_list_name_no_stale_key() {
    let structs: Vec<(String, Vec<String>)> = SOURCES.iter().flat_map(|(_, source)| keyed_structs(source)).collect();
    let top: Vec<&String> =
        structs.iter().filter(|(name, _)| name == "ConfigFile" || name == "PushKeys").flat_map(|(_, k)| k).collect();
    let nested: Vec<&String> = structs.iter().flat_map(|(_, k)| k).collect();
    let start = README.find("# Configuration").expect("the page has a Configuration title");
    let table = &README[start + README[start..].find("| key |").expect("the reference table")..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let mut stale = Vec::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let cell = row.split(" | ").next().unwrap_or("");
        for name in cell.split('`').skip(1).step_by(2) {
            let mut path = name.split('.');
            let head = path.next().unwrap_or("");
            let known = top.iter().any(|k| k.as_str() == head)
                && path.all(|part| part.starts_with('<') || nested.iter().any(|k| k.as_str() == part));
            if !known {
                stale.push(name.to_string());
            }
        }
    }
    let intro = &README[start..start + README[start..].find("| key |").expect("the reference table")];
    let vars: Vec<String> =
        ENV_KEYS.iter().map(|key| format!("A2AD_{}", key.to_uppercase().replace(['-', '.'], "_"))).collect();
    for word in intro.split('`').skip(1).step_by(2).filter(|w| w.starts_with("A2AD_")) {
        if word != "A2AD_<KEY>" && !vars.iter().any(|v| v == word) {
            stale.push(word.to_string());
        }
    }
    assert!(stale.is_empty(), "the configuration reference names keys the config does not accept: {stale:?}");
}
