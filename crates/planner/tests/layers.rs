//! #24: the modules form layers, no circles: the core's files (crates/planner/src)
//! and the page's (src) each import only downwards. Read from the sources'
//! `crate::` paths, which is how every file here names another module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every path that follows `prefix` in `code`, its groups expanded:
/// `crate::{a::X, b::{c, d}}` is `a::X`, `b::c` and `b::d`.
fn full_paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        read_path(&code[i + prefix.len()..], &[], &mut out);
    }
    out
}

/// Reads one path (or group of paths) at the start of `s`, below the
/// segments `head`, into `out`; returns the bytes it read.
fn read_path(s: &str, head: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = head.to_vec();
    let mut at = 0;
    loop {
        if s[at..].starts_with('{') {
            return at + read_group(&s[at + 1..], &path, out) + 1;
        }
        let id: String = s[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if id.is_empty() {
            break;
        }
        at += id.len();
        path.push(id);
        match s[at..].strip_prefix("::") {
            Some(_) => at += 2,
            None => break,
        }
    }
    if path.len() > head.len() {
        out.push(path);
    }
    at
}

/// The items of a group up to its closing brace; returns the bytes read.
fn read_group(s: &str, head: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let skip_space = |at: usize| at + s[at..].len() - s[at..].trim_start().len();
    let mut at = skip_space(0);
    while at < s.len() && !s[at..].starts_with('}') {
        at = skip_space(at + read_path(&s[at..], head, out));
        // Past a rename (`X as Y`) or a comment to the item's end.
        at += s[at..].find([',', '}']).unwrap_or(s.len() - at);
        match s[at..].chars().next() {
            Some(',') => at = skip_space(at + 1),
            _ => break,
        }
    }
    (at + 1).min(s.len())
}

/// The first segment of every path that follows `prefix` in `code`:
/// `crate::a::f` names `a`, and a group `crate::{a, b::{c, d}}` names `a`
/// and `b`.
fn paths_after(code: &str, prefix: &str) -> BTreeSet<String> {
    full_paths_after(code, prefix)
        .into_iter()
        .map(|p| p[0].clone())
        .collect()
}

/// A module's code outside its tests: a file, or a folder's files.
fn module_code(path: &Path) -> Option<(String, String)> {
    let (name, files) = if path.is_dir() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let files: Vec<_> = std::fs::read_dir(path)
            .expect("module folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        (name, files)
    } else if path.extension().is_some_and(|e| e == "rs") {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        (name, vec![path.to_path_buf()])
    } else {
        return None;
    };
    let code: String = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("source");
            text.split("#[cfg(test)]").next().unwrap_or("").to_string()
        })
        .collect();
    (!files.is_empty()).then_some((name, code))
}

/// What modules re-export from others: (module, item) to the module the
/// item comes from; the crate root's (`lib.rs`: `pub use report::Report`)
/// under the module "".
fn reexports(dir: &Path) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let Some((name, code)) = module_code(&entry.expect("entry").path()) else {
            continue;
        };
        let (module, prefix) = match name.as_str() {
            "lib" => (String::new(), "pub use "),
            _ => (name, "pub use crate::"),
        };
        for path in full_paths_after(&code, prefix) {
            if let [from, .., item] = path.as_slice() {
                out.insert((module.clone(), item.clone()), from.clone());
            }
        }
    }
    out
}

/// The module a path names, through re-exports to the one that defines
/// its item: `crate::Report` is report's, and `crate::report::Message`
/// (report re-exports resolve's, which re-exports text's) is text's.
fn origin(path: &[String], reexports: &BTreeMap<(String, String), String>) -> String {
    // An item of the crate's root stands alone or is a type (`crate::Report`,
    // `crate::evaluate(..)`); a module path goes on (`crate::evaluate::x`).
    let root_item = path.len() == 1 || path[0].starts_with(|c: char| c.is_ascii_uppercase());
    let root = root_item
        .then(|| reexports.get(&(String::new(), path[0].clone())))
        .flatten();
    let (mut module, item) = match root {
        Some(m) => (m.clone(), &path[0]),
        None => (path[0].clone(), path.get(1).unwrap_or(&path[0])),
    };
    for _ in 0..8 {
        match reexports.get(&(module.clone(), item.clone())) {
            Some(next) => module = next.clone(),
            None => break,
        }
    }
    module
}

/// Each module of `dir` (a file, or a folder's files) and the modules it
/// names as `crate::name`, each item counted where it is defined.
fn imports(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let reexports = reexports(dir);
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let Some((name, code)) = module_code(&entry.expect("entry").path()) else {
            continue;
        };
        if ["lib", "main", "bin"].contains(&name.as_str()) {
            continue;
        }
        let mut named: BTreeSet<String> = full_paths_after(&code, "crate::")
            .iter()
            .map(|p| origin(p, &reexports))
            .collect();
        named.remove(&name);
        graph.insert(name, named);
    }
    graph
}

/// A circle of the graph, if it has one (depth-first search).
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if graph.contains_key(next) {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_core_has_no_import_circle() {
    let graph = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        graph.len() >= 20,
        "read the core's modules: {:?}",
        graph.keys()
    );
    assert_eq!(circle(&graph), None);
}

#[test]
fn the_page_has_no_import_circle() {
    let graph = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src"));
    assert!(graph.contains_key("ctx") && graph.contains_key("app"));
    assert_eq!(circle(&graph), None);
}

/// The check finds a circle where there is one.
#[test]
fn a_circle_is_found() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(circle(&g).map(|c| c.len()), Some(3));
}

/// #24: the model speaks in facts. No function of the core outside `text/`
/// (which renders) takes a language: evaluate, the search, the warnings and
/// the labels return phrases, and the fronts render them.
#[test]
fn no_core_function_takes_a_language() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = vec![];
    for entry in std::fs::read_dir(&src).expect("src") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        // A signature runs from `fn` to its body's brace.
        for (i, _) in code.match_indices("fn ") {
            let signature = &code[i..code[i..].find('{').map_or(code.len(), |j| i + j)];
            if signature.contains("Lang") {
                let name = signature.lines().next().unwrap_or("").trim().to_string();
                offenders.push(format!("{}: {name}", path.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The check reads grouped imports and nested groups.
#[test]
fn grouped_imports_are_read() {
    let code = "use crate::{a::X, b::{c, d}, e};\nfn f() { crate::g::h(); }";
    let got: Vec<String> = paths_after(code, "crate::").into_iter().collect();
    assert_eq!(got, ["a", "b", "e", "g"]);
}

/// The check expands nested groups into whole paths and follows
/// re-exports to the module that defines the item.
#[test]
fn paths_and_reexports_are_followed() {
    let code = "use crate::{a::X as Y, b::{c, d::{E, F}}};\nfn f() { crate::g::h(); }";
    let got: Vec<String> = full_paths_after(code, "crate::")
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(got, ["a::X", "b::c", "b::d::E", "b::d::F", "g::h"]);
    // Unclosed or cut-off input ends without a panic.
    for odd in [
        "use crate::",
        "use crate::{a, b",
        "crate::{",
        "crate::{*}",
        "crate::{a, }}",
    ] {
        full_paths_after(odd, "crate::");
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let r = reexports(&src);
    let at = |p: &str| origin(&p.split("::").map(String::from).collect::<Vec<_>>(), &r);
    assert_eq!(at("Report"), "report");
    assert_eq!(at("report::Message"), "text");
    assert_eq!(at("throughput::Fabric"), "fabric");
    assert_eq!(at("throughput::efficiency"), "throughput");
}

/// Layers in the order they build on each other, lowest first: no module
/// of an earlier layer reaches (through any chain of imports) one of a
/// later layer. The text catalog and the plan sit below the models; the
/// layout below memory and throughput (#34: `Layout` lived in memory, so
/// throughput imported memory for it); evaluation above every model; the
/// search, export and bundle on top.
const LAYER_ORDER: &[&str] = &[
    "text",
    "plan",
    "layout",
    "job",
    "memory",
    "throughput",
    "evaluate",
    "search",
    "export",
    "bundle",
];

fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(n) = todo.pop() {
        for next in graph.get(&n).into_iter().flatten() {
            if seen.insert(next.clone()) {
                todo.push(next.clone());
            }
        }
    }
    seen
}

#[test]
fn the_core_keeps_its_layer_order() {
    let graph = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    for (i, low) in LAYER_ORDER.iter().enumerate() {
        assert!(graph.contains_key(*low), "no module {low}");
        let below = reaches(&graph, low);
        for high in &LAYER_ORDER[i + 1..] {
            assert!(
                !below.contains(*high),
                "{low} reaches {high}, a later layer"
            );
        }
    }
    assert!(
        graph["layout"].is_empty(),
        "layout builds on nothing: {:?}",
        graph["layout"]
    );
}

/// Inside memory/, plan/ and throughput/ every file imports only its siblings,
/// through `super::sibling` paths, never `super::*` or an item of mod.rs
/// (#34: six files of memory/ read mod.rs back through `use super::*`); the
/// siblings form no circle, and mod.rs builds on them from the top.
#[test]
fn folder_files_import_only_downwards() {
    for folder in ["memory", "plan", "throughput"] {
        files_import_only_siblings(folder);
    }
}

fn files_import_only_siblings(folder: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("module folder") {
        let path = entry.expect("entry").path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut named = paths_after(code, "super::");
        for n in &named {
            assert!(
                dir.join(format!("{n}.rs")).exists(),
                "{folder}/{name}.rs imports `super::{n}`, not a sibling file"
            );
        }
        assert!(
            !code.contains("super::*"),
            "{folder}/{name}.rs imports super::*"
        );
        assert!(
            !full_paths_after(code, "crate::")
                .iter()
                .any(|p| p[0] == folder),
            "{folder}/{name}.rs reads its folder's mod.rs back through `crate::{folder}`"
        );
        named.remove(&name);
        graph.insert(name, named);
    }
    assert!(graph.len() >= 3, "{folder}: {:?}", graph.keys());
    assert_eq!(circle(&graph), None, "{folder}");
}
