//! Which modules of a crate import each other. A module refers to another when its code names
//! it: a `use`, a path in an expression, type, attribute or macro call (`crate::a::b`,
//! `super::c`, a child module, or a name a `use` bound to one). Modules that refer to each other
//! in a ring of any length, parent and child included, are a loop; so are top-level modules when
//! anything below one refers to anything below the next, and so on back to the first. The host
//! keeps none (the test in `tests/` reads the host's crates).
//!
//! References are taken by name, as written: an item re-exported by a parent counts as the
//! parent's. Test code (`#[cfg(test)]`) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;
use syn::{Attribute, Item, UseTree};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum LayersError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Parse { path: PathBuf, source: syn::Error },
    #[error("module `{module}` is declared, but neither {0} nor {1} exists", .candidates.0.display(), .candidates.1.display())]
    MissingFile {
        module: String,
        candidates: (PathBuf, PathBuf),
    },
}

/// A module's path from the crate root, e.g. `["api", "error"]`; the root is empty.
pub type ModulePath = Vec<String>;

/// Which modules each module refers to.
#[derive(Debug, Default)]
pub struct ModuleGraph {
    refers: BTreeMap<ModulePath, BTreeSet<ModulePath>>,
}

impl ModuleGraph {
    /// Reads the crate whose root file is `root` (`src/lib.rs`), following `mod` declarations.
    pub fn read(root: &Path) -> Result<Self, LayersError> {
        let mut modules = Vec::new();
        collect_file(root, Vec::new(), true, &mut modules)?;
        Ok(Self::from_modules(modules))
    }

    /// The graph of one file's modules (inline `mod` blocks only), for tests.
    pub fn parse(source: &str) -> Result<Self, syn::Error> {
        let file = syn::parse_file(source)?;
        let mut modules = Vec::new();
        collect_items(&file.items, Vec::new(), &mut modules);
        Ok(Self::from_modules(modules))
    }

    fn from_modules(modules: Vec<Module>) -> Self {
        let known: BTreeSet<ModulePath> = modules.iter().map(|m| m.path.clone()).collect();
        let mut refers: BTreeMap<ModulePath, BTreeSet<ModulePath>> = BTreeMap::new();
        for module in &modules {
            let targets = refers.entry(module.path.clone()).or_default();
            for reference in module.references() {
                if let Some(target) = longest_known_prefix(&known, &reference)
                    && target != module.path
                {
                    targets.insert(target);
                }
            }
        }
        Self { refers }
    }

    /// Every module the graph knows.
    pub fn modules(&self) -> impl Iterator<Item = &ModulePath> {
        self.refers.keys()
    }

    /// Whether `from` refers to `to`.
    pub fn refers_to(&self, from: &[&str], to: &[&str]) -> bool {
        let owned = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<ModulePath>();
        self.refers
            .get(&owned(from))
            .is_some_and(|targets| targets.contains(&owned(to)))
    }

    /// The loops among modules: each a list of modules, every one referring to the next and
    /// the last to the first. A pair that refers to each other is a loop of two.
    pub fn loops(&self) -> Vec<Vec<String>> {
        loops(&self.refers)
    }

    /// The loops among top-level modules, each seen whole with everything below it: features
    /// and layers that depend on each other through any of their parts.
    pub fn top_level_loops(&self) -> Vec<Vec<String>> {
        let mut refers: BTreeMap<ModulePath, BTreeSet<ModulePath>> = BTreeMap::new();
        for (from, targets) in &self.refers {
            let Some(from) = from.first() else { continue };
            let from_targets = refers.entry(vec![from.clone()]).or_default();
            for to in targets.iter().filter_map(|to| to.first()) {
                if to != from {
                    from_targets.insert(vec![to.clone()]);
                }
            }
        }
        loops(&refers)
    }
}

/// One loop through each group of modules that can all reach each other (Tarjan's strongly
/// connected components), so a tangle of many loops is reported once, by a loop through it.
fn loops(refers: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<String>> {
    components(refers)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            loop_through(refers, &component)
                .iter()
                .map(display)
                .collect()
        })
        .collect()
}

/// The strongly connected components, each sorted, in the order of their smallest module.
fn components(refers: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    struct Search<'g> {
        refers: &'g BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'g ModulePath, (usize, usize)>,
        stack: Vec<&'g ModulePath>,
        on_stack: BTreeSet<&'g ModulePath>,
        found: Vec<Vec<ModulePath>>,
    }
    impl<'g> Search<'g> {
        fn visit(&mut self, module: &'g ModulePath) {
            let order = self.index.len();
            self.index.insert(module, (order, order));
            self.stack.push(module);
            self.on_stack.insert(module);
            for target in self.refers.get(module).into_iter().flatten() {
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let reach = self.index[target].1;
                    let entry = self.index.get_mut(module).expect("visited");
                    entry.1 = entry.1.min(reach);
                } else if self.on_stack.contains(target) {
                    let reach = self.index[target].0;
                    let entry = self.index.get_mut(module).expect("visited");
                    entry.1 = entry.1.min(reach);
                }
            }
            let (order, reach) = self.index[module];
            if order == reach {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.clone());
                    if member == module {
                        break;
                    }
                }
                component.sort();
                self.found.push(component);
            }
        }
    }
    let mut search = Search {
        refers,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for module in refers.keys() {
        if !search.index.contains_key(module) {
            search.visit(module);
        }
    }
    search.found.sort();
    search.found
}

/// A shortest loop from the component's first module back to itself, within the component.
fn loop_through(
    refers: &BTreeMap<ModulePath, BTreeSet<ModulePath>>,
    component: &[ModulePath],
) -> Vec<ModulePath> {
    let members: BTreeSet<&ModulePath> = component.iter().collect();
    let start = &component[0];
    let mut came_from: BTreeMap<&ModulePath, &ModulePath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(module) = queue.pop_front() {
        for target in refers.get(module).into_iter().flatten() {
            if !members.contains(target) {
                continue;
            }
            if target == start {
                let mut path = vec![module.clone()];
                let mut at = module;
                while at != start {
                    at = came_from[at];
                    path.push(at.clone());
                }
                path.reverse();
                return path;
            }
            if !came_from.contains_key(target) {
                came_from.insert(target, module);
                queue.push_back(target);
            }
        }
    }
    component.to_vec()
}

/// `crate::a::b` for `["a", "b"]`.
pub fn display(path: &ModulePath) -> String {
    std::iter::once("crate")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

fn longest_known_prefix(known: &BTreeSet<ModulePath>, path: &[String]) -> Option<ModulePath> {
    (1..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|prefix| known.contains(prefix))
}

/// One module's items, as written.
struct Module {
    path: ModulePath,
    /// Child modules declared here.
    children: BTreeSet<String>,
    items: Vec<Item>,
}

impl Module {
    /// Every crate path this module names, made absolute.
    fn references(&self) -> Vec<Vec<String>> {
        // Each `use` leaf: the name it binds (None for globs) and the path as written.
        let mut uses = Vec::new();
        for item in &self.items {
            if let Item::Use(import) = item {
                flatten_use(&import.tree, Vec::new(), &mut uses);
            }
        }
        let aliases: BTreeMap<String, Vec<String>> = uses
            .iter()
            .filter_map(|(alias, written)| Some((alias.clone()?, written.clone())))
            .collect();
        let mut collector = PathCollector::default();
        for item in &self.items {
            match item {
                Item::Use(_) | Item::Mod(_) => {}
                other => collector.visit_item(other),
            }
        }
        let written = uses
            .into_iter()
            .map(|(_, path)| path)
            .chain(collector.paths);
        written
            .filter_map(|path| self.absolute(&path, &aliases))
            .collect()
    }

    /// `written` as a path from the crate root, if it names something of the crate.
    fn absolute(
        &self,
        written: &[String],
        aliases: &BTreeMap<String, Vec<String>>,
    ) -> Option<Vec<String>> {
        let (first, rest) = written.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some([self.path.clone(), rest.to_vec()].concat()),
            "super" => {
                let mut base = self.path.clone();
                let mut rest = written;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                Some([base, rest.to_vec()].concat())
            }
            name if self.children.contains(name) => {
                Some([self.path.clone(), written.to_vec()].concat())
            }
            name => {
                let target = aliases.get(name)?;
                // A `use` of a crate path, written as it was: resolve it the same way.
                let resolved = self.absolute(target, &BTreeMap::new())?;
                Some([resolved, rest.to_vec()].concat())
            }
        }
    }
}

fn flatten_use(tree: &UseTree, prefix: Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) {
    match tree {
        UseTree::Path(path) => {
            let mut prefix = prefix;
            prefix.push(path.ident.to_string());
            flatten_use(&path.tree, prefix, out);
        }
        UseTree::Name(name) => {
            let ident = name.ident.to_string();
            let (bound, path) = if ident == "self" {
                (prefix.last().cloned(), prefix)
            } else {
                let mut path = prefix;
                path.push(ident.clone());
                (Some(ident), path)
            };
            out.push((bound, path));
        }
        UseTree::Rename(rename) => {
            let mut path = prefix;
            if rename.ident != "self" {
                path.push(rename.ident.to_string());
            }
            out.push((Some(rename.rename.to_string()), path));
        }
        UseTree::Glob(_) => out.push((None, prefix)),
        UseTree::Group(group) => {
            for tree in &group.items {
                flatten_use(tree, prefix.clone(), out);
            }
        }
    }
}

/// Paths written in code, attributes and macro calls.
#[derive(Default)]
struct PathCollector {
    paths: Vec<Vec<String>>,
}

impl PathCollector {
    /// `a::b::c` runs of identifiers in a token stream (attribute arguments, macro input).
    fn scan(&mut self, tokens: TokenStream) {
        let mut current: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                TokenTree::Ident(ident) => {
                    if colons != 2 && !current.is_empty() {
                        self.finish(&mut current);
                    }
                    current.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(punct) if punct.as_char() == ':' && !current.is_empty() => {
                    colons += 1;
                }
                TokenTree::Group(group) => {
                    self.finish(&mut current);
                    colons = 0;
                    self.scan(group.stream());
                }
                _ => {
                    self.finish(&mut current);
                    colons = 0;
                }
            }
        }
        self.finish(&mut current);
    }

    fn finish(&mut self, current: &mut Vec<String>) {
        if current.len() > 1 {
            self.paths.push(std::mem::take(current));
        }
        current.clear();
    }
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() > 1 {
            self.paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_attribute(&mut self, attribute: &'ast Attribute) {
        if let syn::Meta::List(list) = &attribute.meta {
            self.scan(list.tokens.clone());
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan(mac.tokens.clone());
    }

    // Test code is left out wherever it sits.
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }
}

fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
            || attr.path().is_ident("test")
    })
}

fn read_file(path: &Path) -> Result<syn::File, LayersError> {
    let source = std::fs::read_to_string(path).map_err(|source| LayersError::Read {
        path: path.to_owned(),
        source,
    })?;
    syn::parse_file(&source).map_err(|source| LayersError::Parse {
        path: path.to_owned(),
        source,
    })
}

/// The modules of the file at `path`, whose module is `module`. `owns_folder`: its children's
/// files sit beside it (`lib.rs`, `mod.rs`) rather than in a folder named after it.
fn collect_file(
    path: &Path,
    module: ModulePath,
    owns_folder: bool,
    out: &mut Vec<Module>,
) -> Result<(), LayersError> {
    let file = read_file(path)?;
    let folder = if owns_folder {
        path.parent().expect("a file has a folder").to_owned()
    } else {
        path.with_extension("")
    };
    let depth = module.len();
    for child in collect_items(&file.items, module, out) {
        let relative = &child[depth..];
        let (name, parents) = relative.split_last().expect("a child has a name");
        let parent_folder = parents.iter().fold(folder.clone(), |f, p| f.join(p));
        let flat = parent_folder.join(format!("{name}.rs"));
        let nested = parent_folder.join(name).join("mod.rs");
        if flat.exists() {
            collect_file(&flat, child, false, out)?;
        } else if nested.exists() {
            collect_file(&nested, child, true, out)?;
        } else {
            return Err(LayersError::MissingFile {
                module: display(&child),
                candidates: (flat, nested),
            });
        }
    }
    Ok(())
}

/// Adds the module of `items` and its inline children to `out`; answers the children declared
/// without a body (`mod x;`), whose items are in files of their own.
fn collect_items(items: &[Item], module: ModulePath, out: &mut Vec<Module>) -> Vec<ModulePath> {
    let mut children = BTreeSet::new();
    let mut kept = Vec::new();
    let mut in_files = Vec::new();
    for item in items {
        match item {
            Item::Mod(declared) if is_test(&declared.attrs) => {}
            Item::Mod(declared) => {
                let name = declared.ident.to_string();
                children.insert(name.clone());
                let mut child = module.clone();
                child.push(name);
                match &declared.content {
                    Some((_, inner)) => in_files.extend(collect_items(inner, child, out)),
                    None => in_files.push(child),
                }
            }
            Item::Fn(f) if is_test(&f.attrs) => {}
            Item::Impl(i) if is_test(&i.attrs) => {}
            other => kept.push(other.clone()),
        }
    }
    out.push(Module {
        path: module,
        children,
        items: kept,
    });
    in_files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_reference_is_seen() {
        let graph = ModuleGraph::parse(
            r#"
            mod api {
                use crate::store::jobs as rows;
                #[schema(value_type = crate::domain::Status)]
                struct View;
                fn f() { rows::find(); crate::config::read(); format!("{}", crate::clock::now()); }
                mod error { use super::super::secrets::Key; }
            }
            mod store { pub mod jobs {} }
            mod domain {}
            mod config {}
            mod clock {}
            mod secrets {}
            "#,
        )
        .unwrap();
        for target in [&["store", "jobs"][..], &["domain"], &["config"], &["clock"]] {
            assert!(graph.refers_to(&["api"], target), "api -> {target:?}");
        }
        assert!(graph.refers_to(&["api", "error"], &["secrets"]));
        assert!(graph.loops().is_empty());
        assert!(graph.top_level_loops().is_empty());
    }

    #[test]
    fn a_child_and_its_parent_naming_each_other_are_a_pair() {
        let graph = ModuleGraph::parse(
            r#"
            mod payments {
                pub use config::Limits;
                pub struct Payments;
                mod config { use super::Payments; pub struct Limits; }
            }
            mod jobs { use crate::sandbox::run; pub fn book() {} }
            mod sandbox { pub fn run() { crate::jobs::book(); } }
            "#,
        )
        .unwrap();
        assert_eq!(
            graph.loops(),
            [
                vec!["crate::jobs", "crate::sandbox"],
                vec!["crate::payments", "crate::payments::config"],
            ]
        );
        assert_eq!(
            graph.top_level_loops(),
            [vec!["crate::jobs", "crate::sandbox"]]
        );
    }

    #[test]
    fn a_loop_of_any_length_is_found_once_by_a_shortest_way_round() {
        let graph = ModuleGraph::parse(
            r#"
            mod config { use crate::dispatch::Offers; }
            mod dispatch { use crate::jobs::Job; }
            mod jobs { use crate::auth::Key; fn f() { crate::dispatch::run(); } }
            mod auth { use crate::config::Config; }
            mod quotes { use crate::config::Config; }
            "#,
        )
        .unwrap();
        assert_eq!(
            graph.loops(),
            [vec![
                "crate::auth",
                "crate::config",
                "crate::dispatch",
                "crate::jobs"
            ]]
        );
        assert_eq!(graph.loops(), graph.top_level_loops());
    }

    #[test]
    fn modules_below_two_top_level_modules_can_close_a_loop_between_them() {
        let graph = ModuleGraph::parse(
            r#"
            mod geo { pub mod graph { use crate::routing::Route; } }
            mod routing { pub mod dijkstra { use crate::places::Place; } }
            mod places { fn f() { crate::geo::graph::read(); } }
            "#,
        )
        .unwrap();
        assert!(graph.loops().is_empty());
        assert_eq!(
            graph.top_level_loops(),
            [vec!["crate::geo", "crate::routing", "crate::places"]]
        );
    }

    #[test]
    fn test_code_and_outside_crates_are_left_out() {
        let graph = ModuleGraph::parse(
            r#"
            mod a {
                use std::sync::Arc;
                fn f() { serde_json::json!({}); }
                #[cfg(test)]
                mod tests { use crate::b::X; }
            }
            mod b { use crate::a::f; }
            "#,
        )
        .unwrap();
        assert!(graph.loops().is_empty());
        assert!(graph.refers_to(&["b"], &["a"]));
        assert!(!graph.refers_to(&["a"], &["b"]));
    }
}
