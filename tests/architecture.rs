//! The shape of the code, checked (ARCHITECTURE.md, issues 13 and 54). What crate may use which
//! is the crate graph's (each crate's `Cargo.toml`): here, that graph is the one ARCHITECTURE.md
//! draws and the engine's crate reaches no I/O crate. What the graph cannot say is read from the
//! sources as text (`src/` and each `crates/*/src/`, every `crate::`/`super::` path in code that
//! ships; comments, `#[cfg(test)]` modules and test files left out): nothing imports the command
//! line; no two modules import each other, and no folder's modules import each other round
//! (issue 41). Not for: what a module may do at run time (the other tests).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module, as its path below its crate's `src/` without the extension: `["engine", "gate"]`
/// (each crate names its neighbours' modules by the same paths, re-exported at its root).
type ModPath = Vec<String>;

struct Source {
    module: ModPath,
    code: String,
}

/// The source folders of the workspace's crates: the application's `src/` and each
/// `crates/*/src/`.
fn source_roots() -> Vec<PathBuf> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots = vec![base.join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(base.join("crates"))
        .expect("crates/ is readable")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    roots.extend(crates);
    roots
}

fn sources() -> Vec<Source> {
    let mut files = Vec::new();
    for root in source_roots() {
        let mut below = Vec::new();
        collect(&root, &mut below);
        files.extend(below.into_iter().map(|path| (root.clone(), path)));
    }
    files
        .into_iter()
        .filter_map(|(root, path)| {
            let rel = path.strip_prefix(&root).ok()?.with_extension("");
            let mut module: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module.first().is_some_and(|m| m == "main" || m == "lib") {
                return None;
            }
            // Test-only files (`dispatch_tests.rs`, `tests.rs`, a `tests/` folder) are not part
            // of what ships.
            if module.iter().any(|m| m == "tests")
                || module.last().is_some_and(|m| m.ends_with("_tests"))
            {
                return None;
            }
            let text = std::fs::read_to_string(&path).ok()?;
            Some(Source {
                module,
                code: shipped_code(&text),
            })
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file without comments and without what follows its first `#[cfg(test)]` (test modules
/// sit at the end of a file here).
fn shipped_code(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a file names: `crate::a::b` gives `[a, b]`; `super::b` and `use super::{b, c}`
/// give siblings. Identifiers only (lower case: modules, not types).
fn named_paths(source: &Source) -> Vec<ModPath> {
    let mut out = Vec::new();
    let code = &source.code;
    let parent: ModPath = source.module[..source.module.len() - 1].to_vec();
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && is_ident_byte(code.as_bytes()[at - 1]) {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        out.push(module_words(rest));
    }
    for (at, _) in code.match_indices("super::") {
        if at > 0 && (is_ident_byte(code.as_bytes()[at - 1]) || code[..at].ends_with("super::")) {
            continue;
        }
        let rest = &code[at + "super::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let words = module_words(item.trim());
                if !words.is_empty() {
                    out.push(parent.iter().cloned().chain(words).collect());
                }
            }
        } else {
            let words = module_words(rest);
            out.push(parent.iter().cloned().chain(words).collect());
        }
    }
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The leading `a::b::c` of `text`, lower-case words only.
fn module_words(text: &str) -> ModPath {
    let mut words = Vec::new();
    let mut rest = text;
    loop {
        let len = rest.bytes().take_while(|b| is_ident_byte(*b)).count();
        let word = &rest[..len];
        if word.is_empty() || !word.bytes().next().is_some_and(|b| b.is_ascii_lowercase()) {
            break;
        }
        words.push(word.to_string());
        match rest[len..].strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    words
}

/// The module tree, to tell a module from a function or constant of the same spelling.
fn module_set(sources: &[Source]) -> BTreeSet<ModPath> {
    let mut set = BTreeSet::new();
    for s in sources {
        for n in 1..=s.module.len() {
            set.insert(s.module[..n].to_vec());
        }
    }
    set
}

/// Edges between sibling modules (same parent, the top level included): a file in `a/x` naming
/// `a/y/...` makes `a/x → a/y`; naming `b/...` at the top makes `a → b`.
fn edges(sources: &[Source]) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let modules = module_set(sources);
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for source in sources {
        for path in named_paths(source) {
            // The longest prefix of the path that is a module.
            let Some(target) = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            // The first level where the two differ: those two siblings depend.
            let common = source
                .module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= source.module.len() || common >= target.len() {
                continue; // a module naming itself, a parent or a child of itself
            }
            edges
                .entry(source.module[..=common].to_vec())
                .or_default()
                .insert(target[..=common].to_vec());
        }
    }
    edges
}

/// The crates of ours each crate's `Cargo.toml` names under `[dependencies]`, by short name
/// (`opentiger-engine` is `engine`, the root package is `opentiger`); and the other crates it
/// names.
fn crate_dependencies() -> BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut manifests = vec![("opentiger".to_string(), base.join("Cargo.toml"))];
    for root in source_roots().into_iter().skip(1) {
        let dir = root.parent().expect("a crate folder").to_path_buf();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        manifests.push((name, dir.join("Cargo.toml")));
    }
    let mut graph = BTreeMap::new();
    for (name, manifest) in manifests {
        let text = std::fs::read_to_string(&manifest).expect("Cargo.toml is readable");
        let mut ours = BTreeSet::new();
        let mut others = BTreeSet::new();
        let mut in_dependencies = false;
        for line in text.lines() {
            if line.starts_with('[') {
                in_dependencies = line.trim() == "[dependencies]";
                continue;
            }
            let key: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if !in_dependencies || key.is_empty() {
                continue;
            }
            match key.strip_prefix("opentiger-") {
                Some(short) => ours.insert(short.to_string()),
                None => others.insert(key),
            };
        }
        graph.insert(name, (ours, others));
    }
    graph
}

/// The crate graph ARCHITECTURE.md draws: each `a --> b` line of its `crates` Mermaid block.
fn drawn_crate_graph() -> BTreeSet<(String, String)> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md is readable");
    let block = text
        .split("```mermaid")
        .map(|b| b.split("```").next().unwrap_or(""))
        .find(|b| b.contains("%% crates"))
        .expect("ARCHITECTURE.md draws the crate graph in a Mermaid block marked `%% crates`");
    block
        .lines()
        .filter_map(|line| line.split_once("-->"))
        .map(|(a, b)| {
            let name = |s: &str| {
                s.trim()
                    .split(['[', '('])
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()
            };
            (name(a), name(b))
        })
        .collect()
}

/// Issue 54: the layers are crates, and the graph ARCHITECTURE.md draws is the one cargo builds.
#[test]
fn the_crate_graph_is_the_one_architecture_draws() {
    let built: BTreeSet<(String, String)> = crate_dependencies()
        .into_iter()
        .flat_map(|(from, (ours, _))| ours.into_iter().map(move |to| (from.clone(), to)))
        .collect();
    assert!(built.len() >= 5, "{built:?}");
    assert_eq!(
        drawn_crate_graph(),
        built,
        "ARCHITECTURE.md's crate graph (left) differs from the crates' Cargo.toml (right)"
    );
}

/// Issue 54: "the engine does no I/O" is a fact of its crate: of ours it depends on the model
/// alone, and nothing it builds on, however far down, is an async runtime, HTTP, SQLite, libc,
/// a temporary file or a crate of ours above the model (`cargo tree -p opentiger-engine`).
#[test]
fn the_engine_crate_reaches_no_i_o_crate() {
    let graph = crate_dependencies();
    assert_eq!(
        graph["engine"].0,
        BTreeSet::from(["model".to_string()]),
        "{:?}",
        graph["engine"]
    );
    let mut cargo = std::process::Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
    let tree = cargo
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--offline", "--locked", "--prefix", "none"])
        .args(["-p", "opentiger-engine", "-e", "normal"])
        .output()
        .expect("cargo tree");
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let reached: BTreeSet<String> = String::from_utf8_lossy(&tree.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(reached.contains("opentiger-model"), "{reached:?}");
    let forbidden = [
        "tokio",
        "hyper",
        "hyper-util",
        "rusqlite",
        "libsqlite3-sys",
        "libc",
        "tempfile",
        "opentiger-system",
        "opentiger-store",
        "opentiger-forge",
        "opentiger",
    ];
    let found: Vec<&str> = forbidden
        .into_iter()
        .filter(|name| reached.contains(*name))
        .collect();
    assert!(found.is_empty(), "the engine's crate reaches {found:?}");
}

/// What the crate graph cannot say: the model's crate holds `policy` too, and the engine names
/// none of it — its modules name only the model, the configuration and the time.
#[test]
fn the_engine_reads_only_the_model_the_configuration_and_the_time() {
    let allowed = ["engine", "model", "config", "time"];
    let mut offenders = Vec::new();
    for source in sources().iter().filter(|s| s.module[0] == "engine") {
        for path in named_paths(source) {
            if let Some(top) = path.first() {
                if !allowed.contains(&top.as_str()) {
                    offenders.push(format!(
                        "crates/engine/src/{}: crate::{}",
                        source.module.join("/"),
                        path.join("::")
                    ));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the engine may use only model, config and time; move the data into `model` or the rule next to its data:\n{}",
        offenders.join("\n")
    );
}

/// `cli` sits in the root package with the binary, which no crate depends on: the crate graph
/// holds this for every crate below; this test, for the root package's own files.
#[test]
fn nothing_imports_the_command_line() {
    let mut offenders = Vec::new();
    for source in sources().iter().filter(|s| s.module[0] != "cli") {
        for path in named_paths(source) {
            if path.first().is_some_and(|m| m == "cli") {
                offenders.push(format!("src/{}", source.module.join("/")));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "`cli` is the outermost layer; these import it: {offenders:?}"
    );
}

#[test]
fn no_two_modules_import_each_other() {
    let edges = edges(&sources());
    let mut cycles = Vec::new();
    for (from, targets) in &edges {
        for to in targets {
            if from < to && edges.get(to).is_some_and(|back| back.contains(from)) {
                cycles.push(format!("{} <-> {}", from.join("/"), to.join("/")));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other: {cycles:?}"
    );
}

#[test]
fn the_checker_sees_imports_it_must_see() {
    // The rules above pass vacuously if the parser finds nothing: check it on known arrows.
    let edges = edges(&sources());
    let has = |a: &[&str], b: &[&str]| {
        let a: ModPath = a.iter().map(|s| s.to_string()).collect();
        let b: ModPath = b.iter().map(|s| s.to_string()).collect();
        edges.get(&a).is_some_and(|t| t.contains(&b))
    };
    assert!(has(&["cli"], &["tick"]), "cli → tick");
    assert!(has(&["tick"], &["engine"]), "tick → engine");
    assert!(has(&["engine"], &["model"]), "engine → model");
    assert!(
        has(&["tick", "act"], &["tick", "claim"]),
        "tick/act → tick/claim"
    );
    assert!(
        has(&["executor", "adapter"], &["executor", "report"]),
        "executor/adapter → executor/report"
    );
    assert!(
        has(&["tick", "observe"], &["tick", "people"]),
        "tick/observe → tick/people"
    );
    assert!(
        has(
            &["tick", "people", "commands"],
            &["tick", "people", "effects"]
        ),
        "tick/people/commands → tick/people/effects"
    );
}

/// Issue 41: no import cycle among the modules of any folder, of any length (`a → b → c → a`
/// as much as `a ↔ b`): each folder's modules form layers a reader can take one at a time.
#[test]
fn no_folder_has_an_import_cycle() {
    let edges = edges(&sources());
    let mut cycles = Vec::new();
    let mut reported: BTreeSet<ModPath> = BTreeSet::new();
    for start in edges.keys() {
        if reported.contains(start) {
            continue;
        }
        // A path back to `start` through its siblings, found depth first.
        let mut stack: Vec<(ModPath, Vec<ModPath>)> = vec![(start.clone(), vec![start.clone()])];
        let mut seen: BTreeSet<ModPath> = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    let ring: Vec<String> = path.iter().map(|m| m.join("/")).collect();
                    cycles.push(format!("{} → {}", ring.join(" → "), start.join("/")));
                    reported.extend(path.iter().cloned());
                    stack.clear();
                    break;
                }
                if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles (move the shared piece down a layer, or merge the concern):\n{}",
        cycles.join("\n")
    );
}

/// Every `.rs` file below `folder` of the crate (`src`, `tests`, `benches`), with its text.
fn files_below(folder: &str) -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut files = Vec::new();
    if root.is_dir() {
        collect(&root, &mut files);
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("source files are readable");
            let rel = path
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap_or(&path)
                .to_path_buf();
            (rel, text)
        })
        .collect()
}

/// A file's module doc: its leading `//!` lines, joined (before any code or attribute).
fn module_doc(text: &str) -> String {
    text.lines()
        .take_while(|line| line.starts_with("//!"))
        .map(|line| line.trim_start_matches("//!").trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A newcomer learns what a module is for and where to go for its neighbour's job from the top of
/// the file: every module that ships has a doc, and the doc says what the module is not for, in a
/// sentence starting "Not for" (or "Not here"). Test files (`tests.rs`, `*_tests.rs`, a `tests/`
/// folder) are left out: their doc says what they test.
#[test]
fn every_shipping_module_says_what_it_is_for_and_not_for() {
    let mut missing = Vec::new();
    let roots: Vec<String> = source_roots()
        .iter()
        .map(|r| {
            r.strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap_or(r)
                .display()
                .to_string()
        })
        .collect();
    for (path, text) in roots.iter().flat_map(|r| files_below(r)) {
        let test_only = path.components().any(|c| c.as_os_str() == "tests")
            || path
                .file_stem()
                .is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"));
        if test_only {
            continue;
        }
        let doc = module_doc(&text);
        if doc.is_empty() {
            missing.push(format!(
                "{}: no module doc (`//!` lines at the top)",
                path.display()
            ));
        } else if !doc.contains("Not for") && !doc.contains("Not here") {
            missing.push(format!(
                "{}: the module doc says nothing of what the module is not for",
                path.display()
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "add a \"Not for: …\" sentence naming the neighbour that does it:\n{}",
        missing.join("\n")
    );
}

/// A file a reader takes in one sitting: no source, test or bench file over 600 lines unless its
/// module doc gives the reason in a sentence starting "Over 600 lines:" (a single table that reads
/// as one, say). Split along a seam that has a name, not into parts.
#[test]
fn a_file_over_600_lines_names_its_reason() {
    let mut long = Vec::new();
    for folder in ["src", "crates", "tests", "benches", "examples"] {
        for (path, text) in files_below(folder) {
            let lines = text.lines().count();
            if lines > 600 && !module_doc(&text).contains("Over 600 lines:") {
                long.push(format!("{}: {lines} lines", path.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these along a named seam, or say why not in an \"Over 600 lines:\" sentence of \
         the module doc:\n{}",
        long.join("\n")
    );
}
