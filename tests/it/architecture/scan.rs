//! What each file of `src/` refers to in the crate: every `use crate::…`, `super::…`,
//! `self::…` and child-module path, in `use` items, in code and inside macro calls, resolved
//! to the module (and so the file) it names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A module's path below the crate root: `["jobs", "store"]` for `src/jobs/store.rs`.
pub type ModulePath = Vec<String>;

/// One reference from a file to a module of the crate.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The file the reference is in, relative to the crate's root (`src/jobs/store.rs`).
    pub file: PathBuf,
    /// Its line, found by looking for the path's text (syn's spans carry no lines here).
    pub line: usize,
    /// The module it names.
    pub module: ModulePath,
    /// The path as written, resolved (`crate::jobs::Failpoint`).
    pub path: String,
}

/// Every module of the crate that is a file, by module path. `lib.rs` is the root (`[]`);
/// `main.rs`, a crate of its own, is left out.
pub fn modules(root: &Path) -> BTreeMap<ModulePath, PathBuf> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path
                .strip_prefix(root)
                .expect("under the root")
                .to_path_buf();
            if relative == Path::new("src/main.rs") {
                continue;
            }
            found.insert(module_of(&relative), relative);
        }
    }
    found
}

/// `src/jobs/mod.rs` and `src/jobs.rs` are `jobs`, `src/jobs/store.rs` is `jobs::store`.
pub fn module_of(file: &Path) -> ModulePath {
    let mut parts: ModulePath = file
        .strip_prefix("src")
        .expect("under src")
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Whether `ancestor` is the file of a module that holds `file`'s (`jobs/mod.rs` of
/// `jobs/store.rs`, `web/mod.rs` of `web/api/books.rs`). A module uses what the modules around
/// it declare; a module declaring its children and re-exporting from them still reaches them.
pub fn is_ancestor(ancestor: &Path, file: &Path) -> bool {
    let (ancestor, file) = (module_of(ancestor), module_of(file));
    ancestor.len() < file.len() && file[..ancestor.len()] == ancestor[..]
}

/// Every reference each file makes to another module of the crate.
pub fn references(root: &Path, modules: &BTreeMap<ModulePath, PathBuf>) -> Vec<Reference> {
    let mut all = Vec::new();
    for (module, file) in modules {
        let text = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Paths {
            inline: Vec::new(),
            found: Vec::new(),
        };
        paths.visit_file(&syntax);
        let lines: Vec<&str> = text.lines().collect();
        for (inline, written) in paths.found {
            let mut here = module.clone();
            here.extend(inline);
            let Some(resolved) = resolve(&here, &written, modules) else {
                continue;
            };
            let target = longest_module(&resolved, modules);
            if modules.get(&target) == Some(file) {
                continue;
            }
            all.push(Reference {
                file: file.clone(),
                line: line_of(&lines, &written),
                module: target,
                path: format!("crate::{}", resolved.join("::")),
            });
        }
    }
    all
}

/// The absolute path a written path names, if it names something of this crate: `crate::`,
/// `super::`, `self::` or a child module's name.
fn resolve(
    here: &[String],
    written: &[String],
    modules: &BTreeMap<ModulePath, PathBuf>,
) -> Option<ModulePath> {
    let first = written.first()?;
    let (mut base, mut rest) = match first.as_str() {
        "crate" => (Vec::new(), &written[1..]),
        "self" => (here.to_vec(), &written[1..]),
        "super" => (here.to_vec(), written),
        name => {
            let mut child = here.to_vec();
            child.push(name.to_string());
            if written.len() < 2 || !modules.contains_key(&child) {
                return None;
            }
            (here.to_vec(), written)
        }
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// The deepest module of the crate that `path` is in.
fn longest_module(path: &[String], modules: &BTreeMap<ModulePath, PathBuf>) -> ModulePath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains_key(prefix))
        .unwrap_or_default()
}

/// The first line of code that writes the whole path, or else its last two segments, its last
/// one, or its first two (a path inside a `use` group is written in pieces).
fn line_of(lines: &[&str], written: &[String]) -> usize {
    let code = |line: &&str| !line.trim_start().starts_with("//");
    let n = written.len();
    let mut needles = vec![written.join("::")];
    if n >= 2 {
        needles.push(written[n - 2..].join("::"));
    }
    needles.extend(written.last().cloned());
    if n >= 2 {
        needles.push(written[..2].join("::"));
    }
    for needle in &needles {
        if let Some(at) = lines
            .iter()
            .position(|l| code(l) && contains_word(l, needle))
        {
            return at + 1;
        }
    }
    1
}

fn contains_word(line: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// Collects every path with at least a module segment, and the inline modules it is in.
struct Paths {
    inline: Vec<String>,
    found: Vec<(Vec<String>, Vec<String>)>,
}

impl Paths {
    fn add(&mut self, written: Vec<String>) {
        if !written.is_empty() {
            self.found.push((self.inline.clone(), written));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                path.push(n.ident.to_string());
                self.add(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                self.add(path);
            }
            syn::UseTree::Glob(_) => self.add(prefix.clone()),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    /// `crate :: a :: b` (and `super`, `self`) inside a macro's tokens, which syn leaves
    /// unparsed.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if matches!(id.to_string().as_str(), "crate" | "super") => {
                    let preceded_by_dollar =
                        i > 0 && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                    let mut path = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < trees.len() + 1 {
                        let colons = matches!((&trees.get(j), &trees.get(j + 1)),
                            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                                if a.as_char() == ':' && b.as_char() == ':');
                        match (colons, trees.get(j + 2)) {
                            (true, Some(TokenTree::Ident(next))) => {
                                path.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if !preceded_by_dollar && path.len() > 1 {
                        self.add(path);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.inline.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.inline.pop();
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() >= 2 {
            self.add(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}
