//! docs/architecture.md against the tree: its crate graph must be exactly the latlab-*
//! dependencies that the crates' Cargo.toml files declare, and its list of these test
//! modules exactly the modules `main.rs` declares. A crate edge or a test module added
//! without the document (or a document line left behind) fails here, naming it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An edge `from -> to` between crates, by their directory names under `crates/`.
type Edge = (String, String);

/// The latlab-* dependencies of every crate: normal ones (build and optional ones
/// included) and dev-dependencies.
fn cargo_edges() -> (BTreeSet<Edge>, BTreeSet<Edge>) {
    let (mut normal, mut dev) = (BTreeSet::new(), BTreeSet::new());
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let toml = dir.join("Cargo.toml");
        if !toml.exists() {
            continue;
        }
        let from = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut section = String::new();
        for line in read(&toml).lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_owned();
                continue;
            }
            let Some(dep) = line.strip_prefix("latlab-") else {
                continue;
            };
            let name: String = dep
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let edge = (from.clone(), name);
            if section.ends_with("dev-dependencies]") {
                dev.insert(edge);
            } else if section.ends_with("dependencies]") {
                normal.insert(edge);
            }
        }
    }
    (normal, dev)
}

/// The lines of the fenced block that follows `marker` in the document.
fn block<'a>(doc: &'a str, marker: &str) -> Vec<&'a str> {
    let at = doc
        .find(marker)
        .unwrap_or_else(|| panic!("docs/architecture.md has no {marker}"));
    doc[at..]
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect()
}

/// The names in `list` (comma separated, up to a parenthesised remark).
fn names(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split('(')
        .next()
        .unwrap_or("")
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The document's graph: `a ──► b, c` lines are normal dependencies of `a`, `t ◄┄┄ a, b`
/// lines dev-dependencies of `a` and `b` on `t`. `latlab (cli)` is the crate `cli`.
fn doc_edges(doc: &str) -> (BTreeSet<Edge>, BTreeSet<Edge>) {
    let (mut normal, mut dev) = (BTreeSet::new(), BTreeSet::new());
    for line in block(doc, "<!-- crate-graph -->") {
        let node = |s: &str| {
            let s = s.trim();
            match (s.find('('), s.find(')')) {
                (Some(a), Some(b)) => s[a + 1..b].to_owned(),
                _ => s.to_owned(),
            }
        };
        if let Some((from, to)) = line.split_once("──►") {
            normal.extend(names(to).map(|t| (node(from), t)));
        } else if let Some((to, from)) = line.split_once("◄┄┄") {
            dev.extend(names(from).map(|f| (f, node(to))));
        } else {
            panic!("crate graph line without an arrow: {line}");
        }
    }
    (normal, dev)
}

fn assert_same(what: &str, tree: &BTreeSet<String>, doc: &BTreeSet<String>) {
    let missing: Vec<_> = tree.difference(doc).collect();
    let stale: Vec<_> = doc.difference(tree).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/architecture.md's {what} is not the tree's: missing from the document {missing:?}, \
         in the document but not the tree {stale:?}"
    );
}

fn spelled(edges: &BTreeSet<Edge>) -> BTreeSet<String> {
    edges.iter().map(|(a, b)| format!("{a} -> {b}")).collect()
}

#[test]
fn the_crate_graph_is_what_cargo_toml_declares() {
    let (normal, dev) = cargo_edges();
    assert!(
        normal.contains(&("cli".into(), "core".into())) && !dev.is_empty(),
        "no crate edges read from crates/*/Cargo.toml"
    );
    let doc = read(&root().join("docs/architecture.md"));
    let (doc_normal, doc_dev) = doc_edges(&doc);
    assert_same("crate graph", &spelled(&normal), &spelled(&doc_normal));
    assert_same("dev-dependency edges", &spelled(&dev), &spelled(&doc_dev));
}

#[test]
fn the_test_module_list_is_what_main_rs_declares() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let tree: BTreeSet<String> = read(&here.join("main.rs"))
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect();
    assert!(tree.contains("util") && tree.contains("architecture"));
    let doc = read(&root().join("docs/architecture.md"));
    let listed: BTreeSet<String> = block(&doc, "<!-- it-modules -->")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    assert_same("list of test modules", &tree, &listed);
}
