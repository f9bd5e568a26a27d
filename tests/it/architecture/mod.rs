//! ARCHITECTURE.md cannot drift from the code: its "Layers" block is the one statement of the
//! layer order, and these tests read it and every reference of `src/` to the crate's modules
//! (`scan`), and fail, naming the file and line, where a module reaches one above it or two
//! files reach each other.

mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use scan::{ModulePath, Reference};

/// Top-level modules outside the layers, and why.
const OUTSIDE_THE_LAYERS: &[(&str, &str)] = &[(
    "test_support",
    "fixtures and tools for unit tests, compiled only under cfg(test), which any layer's tests use",
)];

/// References allowed against the layer order or as a pair of files reaching each other: (the
/// file, the module it reaches, why). Meant to be empty: an entry needs its reason.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// The tree to read: this one, or another checkout named by `BINDERY_ARCHITECTURE_ROOT` (to
/// see what the rules say of an older commit, with that tree's ARCHITECTURE.md).
fn root() -> &'static Path {
    static ROOT: std::sync::LazyLock<PathBuf> = std::sync::LazyLock::new(|| {
        std::env::var_os("BINDERY_ARCHITECTURE_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
    });
    &ROOT
}

/// The crate's layers, lowest first, each the modules on one line of ARCHITECTURE.md's
/// `layers` block (written top first, as a stack is drawn).
fn layers() -> Vec<Vec<String>> {
    layers_block("layers")
}

/// The layers inside `web/`, from ARCHITECTURE.md's `layers web` block: its children, in the
/// same form.
fn web_layers() -> Vec<Vec<String>> {
    layers_block("layers web")
}

fn layers_block(info: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let fence = format!("```{info}\n");
    let start = text
        .find(&fence)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has a ```{info} block, a layer order"));
    let block = &text[start + fence.len()..];
    let block = &block[..block.find("```").expect("the layers block is closed")];
    let mut layers: Vec<Vec<String>> = block
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .map(|line| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|layer| !layer.is_empty())
        .collect();
    layers.reverse();
    layers
}

fn layer_of(layers: &[Vec<String>]) -> BTreeMap<String, usize> {
    let mut of = BTreeMap::new();
    for (n, layer) in layers.iter().enumerate() {
        for module in layer {
            assert!(
                of.insert(module.clone(), n).is_none(),
                "{module} is in two layers"
            );
        }
    }
    of
}

fn top(module: &ModulePath) -> &str {
    module.first().map(String::as_str).unwrap_or_default()
}

fn excepted(reference: &Reference) -> bool {
    EXCEPTIONS.iter().any(|(file, module, reason)| {
        assert!(
            !reason.trim().is_empty(),
            "the exception {file} -> {module} has no reason"
        );
        Path::new(file) == reference.file && reference.module.join("::") == *module
    })
}

struct Crate {
    modules: BTreeMap<ModulePath, PathBuf>,
    references: Vec<Reference>,
}

/// The crate as read once for all the tests here (they run at once, and each would read and
/// parse all of `src/` again).
fn scanned() -> &'static Crate {
    static CRATE: std::sync::LazyLock<Crate> = std::sync::LazyLock::new(|| {
        let modules = scan::modules(root());
        let references = scan::references(root(), &modules);
        assert!(
            references.len() > 500,
            "only {} references found",
            references.len()
        );
        Crate {
            modules,
            references,
        }
    });
    &CRATE
}

#[test]
fn every_top_level_module_has_one_layer() {
    let layers = layer_of(&layers());
    let outside: BTreeSet<&str> = OUTSIDE_THE_LAYERS.iter().map(|(m, _)| *m).collect();
    let modules: BTreeSet<String> = scanned()
        .modules
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| top(m).to_owned())
        .collect();
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|m| !layers.contains_key(*m) && !outside.contains(m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "top-level modules in no layer: {unplaced:?}; add each to ARCHITECTURE.md's layers block"
    );
    let gone: Vec<&String> = layers.keys().filter(|m| !modules.contains(*m)).collect();
    assert!(
        gone.is_empty(),
        "the layers block names modules src/ does not have: {gone:?}"
    );
}

#[test]
fn modules_import_only_the_layers_below_them() {
    let wrong = against_the_order(&layers(), &[]);
    assert!(
        wrong.is_empty(),
        "{} references against the layer order in ARCHITECTURE.md:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// `web/` has layers of its own: the pages and the API on top, what they share below them, and
/// the request's plumbing at the bottom. A reference to `web` itself (`AppState`, the server) is
/// a child's use of what its module declares, not counted.
#[test]
fn the_web_modules_import_only_the_layers_below_them() {
    let web = vec!["web".to_owned()];
    let layers = web_layers();
    let placed = layer_of(&layers);
    let children: BTreeSet<String> = scanned()
        .modules
        .keys()
        .filter(|m| m.len() > 1 && m[0] == "web")
        .map(|m| m[1].clone())
        .collect();
    let unplaced: Vec<&String> = children
        .iter()
        .filter(|m| !placed.contains_key(*m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules of web/ in no layer: {unplaced:?}; add each to ARCHITECTURE.md's `layers web` block"
    );
    let gone: Vec<&String> = placed.keys().filter(|m| !children.contains(*m)).collect();
    assert!(
        gone.is_empty(),
        "the `layers web` block names modules web/ does not have: {gone:?}"
    );
    let wrong = against_the_order(&layers, &web);
    assert!(
        wrong.is_empty(),
        "{} references against the order of ARCHITECTURE.md's `layers web` block:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Every reference between two modules of `within` (the crate, or `web`) that reaches its own
/// layer of `layers` or one above it, named by its file and line. Modules are compared by their
/// first part below `within`.
fn against_the_order(layers: &[Vec<String>], within: &[String]) -> Vec<String> {
    let layer = layer_of(layers);
    let part = |module: &ModulePath| -> Option<String> {
        (module.len() > within.len() && module[..within.len()] == within[..])
            .then(|| module[within.len()].clone())
    };
    let mut wrong = BTreeSet::new();
    for reference in &scanned().references {
        let (Some(from), Some(to)) = (
            part(&scan::module_of(&reference.file)),
            part(&reference.module),
        ) else {
            continue; // outside `within`, or `within` itself
        };
        if from == to || excepted(reference) {
            continue;
        }
        let (Some(&a), Some(&b)) = (layer.get(&from), layer.get(&to)) else {
            continue; // outside the layers, or unplaced (the tests name those)
        };
        if b >= a {
            let why = if a == b {
                "beside it in the same layer"
            } else {
                "above it"
            };
            wrong.insert(format!(
                "{}:{}: {from} reaches {} ({to} is {why})",
                reference.file.display(),
                reference.line,
                reference.path
            ));
        }
    }
    wrong.into_iter().collect()
}

/// No file reaches, directly or through others, a file that reaches it back. A file's reaching
/// up to a module that holds it is not counted (it uses what the modules around it declare);
/// every other reference is, a module's reaching its own children too, so a circle that closes
/// through a `mod.rs` (`api/mod.rs` declares `api/admin/`, whose file reaches `web/admin/`, whose
/// file reaches back into `api/mod.rs`) is seen. Each knot is named with the references between
/// its files.
#[test]
fn no_files_import_each_other() {
    let crate_ = scanned();
    let mut reaches: BTreeMap<(&Path, &Path), &Reference> = BTreeMap::new();
    for reference in &crate_.references {
        let (from, to) = (
            reference.file.as_path(),
            crate_.modules[&reference.module].as_path(),
        );
        // The modules outside the layers are the unit tests' fixtures: compiled only for the
        // tests, which use them as they use the crate, they close no circle a build has.
        let outside = |module: &ModulePath| {
            OUTSIDE_THE_LAYERS
                .iter()
                .any(|(name, _)| top(module) == *name)
        };
        if excepted(reference)
            || scan::is_ancestor(to, from)
            || outside(&reference.module)
            || outside(&scan::module_of(from))
        {
            continue;
        }
        reaches.entry((from, to)).or_insert(reference);
    }
    let mut edges: BTreeMap<&Path, BTreeSet<&Path>> = BTreeMap::new();
    for &(from, to) in reaches.keys() {
        edges.entry(from).or_default().insert(to);
    }
    let knots: Vec<String> = strongly_connected(&edges)
        .into_iter()
        .filter(|files| files.len() > 1)
        .map(|files| {
            let inside = |f: &Path| files.contains(&f);
            let lines: Vec<String> = reaches
                .iter()
                .filter(|((from, to), _)| inside(from) && inside(to))
                .map(|(_, r)| format!("  {}:{} reaches {}", r.file.display(), r.line, r.path))
                .collect();
            lines.join("\n")
        })
        .collect();
    assert!(
        knots.is_empty(),
        "files that reach each other, directly or through others (move what they share below \
         them):\n{}",
        knots.join("\n\n")
    );
}

/// Tarjan's strongly connected components of a graph of files.
fn strongly_connected<'a>(edges: &BTreeMap<&'a Path, BTreeSet<&'a Path>>) -> Vec<Vec<&'a Path>> {
    struct State<'a> {
        index: BTreeMap<&'a Path, usize>,
        low: BTreeMap<&'a Path, usize>,
        stack: Vec<&'a Path>,
        on_stack: BTreeSet<&'a Path>,
        found: Vec<Vec<&'a Path>>,
    }
    fn visit<'a>(
        node: &'a Path,
        edges: &BTreeMap<&'a Path, BTreeSet<&'a Path>>,
        state: &mut State<'a>,
    ) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        state.on_stack.insert(node);
        for &next in edges.get(node).into_iter().flatten() {
            if !state.index.contains_key(next) {
                visit(next, edges, state);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top);
                if top == node {
                    break;
                }
            }
            component.sort();
            state.found.push(component);
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for &node in edges.keys() {
        if !state.index.contains_key(node) {
            visit(node, edges, &mut state);
        }
    }
    state.found
}
