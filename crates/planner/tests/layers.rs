//! #24: the modules form layers, no circles: the core's files (crates/planner/src)
//! and the page's (src) each import only downwards. Read from the sources'
//! `crate::` paths, which is how every file here names another module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `dir` (a file, or a folder's `mod.rs`) and the modules
/// it names as `crate::name`.
fn imports(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("entry").path();
        // A folder module is all its files (memory/: states, activations, ...).
        let (name, files) = if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let files: Vec<_> = std::fs::read_dir(&path)
                .expect("module folder")
                .map(|e| e.expect("entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "rs"))
                .collect();
            (name, files)
        } else if path.extension().is_some_and(|e| e == "rs") {
            (
                path.file_stem().unwrap().to_string_lossy().to_string(),
                vec![path],
            )
        } else {
            continue;
        };
        if ["lib", "main", "bin"].contains(&name.as_str()) || files.is_empty() {
            continue;
        }
        let text: String = files
            .iter()
            .map(|f| std::fs::read_to_string(f).expect("source"))
            .collect();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let named = code
            .match_indices("crate::")
            .map(|(i, _)| {
                code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .filter(|m| !m.is_empty() && *m != name)
            .collect();
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
