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

/// The core's folders by job, lowest first: each builds only on those
/// before it (lib.rs says what each holds). `text` is one module.
const JOB_FOLDERS: &[&str] = &[
    "formats", "text", "model", "accuracy", "estimate", "launch", "runs",
];

/// The page's folders of modules (src/panels), each module a unit.
const PAGE_FOLDERS: &[&str] = &["panels"];

/// Whether a folder holds units of its own rather than being one.
fn holds_units(folder: &str) -> bool {
    (JOB_FOLDERS.contains(&folder) && folder != "text") || PAGE_FOLDERS.contains(&folder)
}

/// The unit a path below `crate::` names: a module of a job folder
/// (`model::memory`), or a top-level module (`text`).
fn unit(path: &[String]) -> String {
    match path {
        [folder, module, ..] if holds_units(folder) => {
            format!("{folder}::{module}")
        }
        [first, ..] => first.clone(),
        [] => String::new(),
    }
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

/// Every unit of a source folder with its code: the page's modules (its
/// `src`), or the core's modules inside its job folders and its top-level
/// ones (`lib` among them). A job folder's own `mod.rs` only lists its
/// modules and is not a unit.
fn units(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() && holds_units(&name) {
            for inner in std::fs::read_dir(&path).expect("job folder") {
                let inner = inner.expect("entry").path();
                if let Some((module, code)) = module_code(&inner) {
                    if module != "mod" {
                        out.push((format!("{name}::{module}"), code));
                    }
                }
            }
        } else if let Some(unit) = module_code(&path) {
            out.push(unit);
        }
    }
    out
}

/// What modules re-export from others: (unit, item) to the unit the item
/// comes from; the crate root's (`lib.rs`: `pub use estimate::report::Report`)
/// under the unit "".
fn reexports(dir: &Path) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for (name, code) in units(dir) {
        let (module, prefix) = match name.as_str() {
            "lib" => (String::new(), "pub use "),
            _ => (name, "pub use crate::"),
        };
        for path in full_paths_after(&code, prefix) {
            if let Some(item) = path.last() {
                out.insert((module.clone(), item.clone()), unit(&path));
            }
        }
    }
    out
}

/// The unit a path names, through re-exports to the one that defines its
/// item: `crate::Report` is estimate::report's, and
/// `crate::estimate::report::Message` (report re-exports resolve's, which
/// re-exports text's) is text's.
fn origin(path: &[String], reexports: &BTreeMap<(String, String), String>) -> String {
    // An item of the crate's root stands alone or is a type (`crate::Report`,
    // `crate::evaluate(..)`); a module path goes on (`crate::model::x`).
    let root_item = path.len() == 1 || path[0].starts_with(|c: char| c.is_ascii_uppercase());
    let root = root_item
        .then(|| reexports.get(&(String::new(), path[0].clone())))
        .flatten();
    let (mut module, item) = match root {
        Some(m) => (m.clone(), &path[0]),
        None => {
            let module = unit(path);
            let depth = module.matches("::").count() + 1;
            (module, path.get(depth).unwrap_or(&path[0]))
        }
    };
    for _ in 0..8 {
        match reexports.get(&(module.clone(), item.clone())) {
            Some(next) => module = next.clone(),
            None => break,
        }
    }
    module
}

/// Each unit of `dir` and the units it names as `crate::…`, each item
/// counted where it is defined.
fn imports(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let reexports = reexports(dir);
    let mut graph = BTreeMap::new();
    for (name, code) in units(dir) {
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
    assert!(graph.contains_key("ctx") && graph.contains_key("panels::inputs"));
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
    let mut offenders = vec![];
    for path in core_files() {
        if path.components().any(|c| c.as_os_str() == "text") {
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
    assert!(core_files().len() > 40, "read the core's files");
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// Every `.rs` file of the core, in every folder.
fn core_files() -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = vec![];
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
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
    assert_eq!(at("Report"), "estimate::report");
    assert_eq!(at("estimate::report::Message"), "text");
    assert_eq!(at("model::throughput::Fabric"), "model::fabric");
    assert_eq!(at("model::throughput::efficiency"), "model::throughput");
}

/// Layers in the order they build on each other, lowest first: no module
/// of an earlier layer reaches (through any chain of imports) one of a
/// later layer. The text catalog and the plan sit below the models; the
/// layout below memory and throughput (#34: `Layout` lived in memory, so
/// throughput imported memory for it); evaluation above every model; the
/// search, export and bundle on top.
const LAYER_ORDER: &[&str] = &[
    "text",
    "model::plan",
    "model::recipe",
    "model::layout",
    "model::stage",
    "model::job",
    "model::memory",
    "model::throughput",
    "estimate::evaluate",
    "estimate::search",
    "launch::export",
    "launch::bundle",
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
        graph["model::layout"].is_empty(),
        "layout builds on nothing: {:?}",
        graph["model::layout"]
    );
}

/// #59: memory/ and throughput/ read the job's recipe, never the plan: no
/// `Plan` type and no `plan.` read in their code (comments may name it).
#[test]
fn the_models_read_the_recipe_not_the_plan() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let job = std::fs::read_to_string(src.join("model/job.rs")).expect("job.rs");
    assert!(!job.contains("Plan"), "the Job holds no plan");
    for folder in ["model/memory", "model/throughput"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src")
            .join(folder);
        for entry in std::fs::read_dir(&dir).expect("module folder") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("source");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let words: Vec<&str> = code
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .collect();
                assert!(
                    !words.iter().any(|w| *w == "Plan" || w.starts_with("plan.")),
                    "{}:{}: {line}",
                    path.display(),
                    i + 1
                );
            }
        }
    }
}

/// Inside memory/, plan/ and throughput/ every file imports only its siblings,
/// through `super::sibling` paths, never `super::*` or an item of mod.rs
/// (#34: six files of memory/ read mod.rs back through `use super::*`); the
/// siblings form no circle, and mod.rs builds on them from the top.
#[test]
fn folder_files_import_only_downwards() {
    for folder in ["model/memory", "model/plan", "model/throughput"] {
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
                .any(|p| p.join("/").starts_with(folder)),
            "{folder}/{name}.rs reads its folder's mod.rs back through `crate::{folder}`"
        );
        named.remove(&name);
        graph.insert(name, named);
    }
    assert!(graph.len() >= 3, "{folder}: {:?}", graph.keys());
    assert_eq!(circle(&graph), None, "{folder}");
}

/// #59: the job folders build on each other in the order of `JOB_FOLDERS`:
/// no module imports one of a later folder.
#[test]
fn job_folders_build_only_on_earlier_ones() {
    let graph = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let folder_rank = |unit: &str| {
        let folder = unit.split("::").next().unwrap_or(unit);
        JOB_FOLDERS.iter().position(|f| *f == folder)
    };
    let mut upward = vec![];
    for (from, named) in &graph {
        let rank = folder_rank(from).unwrap_or_else(|| panic!("{from} is in no job folder"));
        for to in named {
            if folder_rank(to).is_some_and(|r| r > rank) {
                upward.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        graph.len() >= 40,
        "read the core's units: {:?}",
        graph.keys()
    );
    assert!(upward.is_empty(), "{upward:#?}");
}

/// #59: a newcomer reads a file at once and a folder at a glance: no file
/// of the core or the page over 800 lines, no folder with more than 15
/// `.rs` files side by side.
#[test]
fn files_and_folders_stay_small() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src");
    let mut files = core_files();
    for entry in std::fs::read_dir(&page).expect("page") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    let long: Vec<_> = files
        .iter()
        .map(|f| {
            (
                f,
                std::fs::read_to_string(f).expect("source").lines().count(),
            )
        })
        .filter(|(_, n)| *n > 800)
        .collect();
    assert!(long.is_empty(), "files over 800 lines: {long:#?}");
    let mut per_folder: BTreeMap<std::path::PathBuf, usize> = BTreeMap::new();
    for f in &files {
        *per_folder
            .entry(f.parent().expect("folder").to_path_buf())
            .or_default() += 1;
    }
    let crowded: Vec<_> = per_folder.iter().filter(|(_, n)| **n > 15).collect();
    assert!(crowded.is_empty(), "folders over 15 files: {crowded:#?}");
}
