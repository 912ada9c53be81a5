//! Module cycles in one crate's sources: a module that names another module (a `crate::`,
//! `super::`, `self::` or bare child path to it or to an item in it) which names it back, directly
//! or through others. A child naming one of its ancestors is not counted: a child module is a
//! part of its parent (it sees the parent's private items by design), so `ask` and `ask::report`
//! using each other is one module, split in files. Test modules (`tests.rs` files and what
//! follows `#[cfg(test)]`) are left out for the same reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, Result};

/// The crate's modules: their path (`ask::llm`) to the file that holds them (`ask/llm.rs`), and
/// the modules each one names.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    /// Module path (`""` for the crate root) to its file, relative to `src/`.
    files: BTreeMap<String, String>,
    /// Module path to the modules it names (never itself).
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    /// Reads every non-test `.rs` file under `src`.
    pub(crate) fn read(src: &Path) -> Result<Graph> {
        let mut files = Vec::new();
        rust_files(src, src, &mut files)?;
        let mut sources = Vec::new();
        for relative in files {
            let text = std::fs::read_to_string(src.join(&relative))
                .with_context(|| format!("cannot read {}", src.join(&relative).display()))?;
            sources.push((relative, text));
        }
        Ok(Graph::from_sources(
            sources.iter().map(|(p, t)| (p.as_str(), t.as_str())),
        ))
    }

    /// The graph of `(path relative to src/, text)` pairs.
    pub(crate) fn from_sources<'a>(sources: impl IntoIterator<Item = (&'a str, &'a str)>) -> Graph {
        let sources: Vec<(String, &str, &str)> = sources
            .into_iter()
            .filter(|(path, _)| !is_test_file(path))
            .map(|(path, text)| (module_of(path), path, text))
            .collect();
        let mut graph = Graph::default();
        for (module, path, _) in &sources {
            graph.files.insert(module.clone(), (*path).to_owned());
        }
        for (module, _, text) in &sources {
            let named: BTreeSet<String> = references(text)
                .into_iter()
                .filter_map(|reference| graph.resolve(module, &reference))
                .filter(|target| target != module && !is_ancestor(target, module))
                .collect();
            graph.edges.insert(module.clone(), named);
        }
        graph
    }

    /// The deepest module of the crate that `reference` (segments from `crate`, `super` or
    /// `self`, written in `from`) lands in.
    fn resolve(&self, from: &str, reference: &[String]) -> Option<String> {
        let mut path: Vec<&str> = Vec::new();
        let mut rest = reference.iter().map(String::as_str);
        match rest.next()? {
            "crate" => {}
            "self" => path.extend(segments(from)),
            "super" => {
                path.extend(segments(from));
                path.pop()?;
            }
            // A child module named without `self::` (`services::run`), else another crate.
            first => {
                path.extend(segments(from));
                path.push(first);
                if !self.files.contains_key(&path.join("::")) {
                    return None;
                }
            }
        }
        let mut rest = rest.peekable();
        while rest.peek() == Some(&"super") {
            rest.next();
            path.pop()?;
        }
        let mut deepest = path.join("::");
        for segment in rest {
            path.push(segment);
            let candidate = path.join("::");
            if self.files.contains_key(&candidate) {
                deepest = candidate;
            } else {
                break;
            }
        }
        self.files.contains_key(&deepest).then_some(deepest)
    }

    /// Every cycle: each strongly connected set of two or more modules, as its files, sorted.
    pub(crate) fn cycles(&self) -> Vec<Vec<String>> {
        let nodes: Vec<&String> = self.files.keys().collect();
        let index: BTreeMap<&String, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let adjacency: Vec<Vec<usize>> = nodes
            .iter()
            .map(|n| {
                self.edges
                    .get(*n)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| index.get(t).copied())
                    .collect()
            })
            .collect();
        strongly_connected(&adjacency)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let mut files: Vec<String> = component
                    .into_iter()
                    .map(|i| self.files[nodes[i]].clone())
                    .collect();
                files.sort();
                files
            })
            .collect()
    }

    /// The edges inside `cycle` (files), as `a.rs -> b.rs`, for the message.
    pub(crate) fn edges_within(&self, cycle: &[String]) -> Vec<String> {
        let modules: BTreeMap<&String, &String> = self
            .files
            .iter()
            .filter(|(_, f)| cycle.contains(f))
            .collect();
        let mut out = Vec::new();
        for (module, file) in &modules {
            for target in self.edges.get(*module).into_iter().flatten() {
                if let Some(to) = modules.get(target) {
                    out.push(format!("{file} -> {to}"));
                }
            }
        }
        out
    }
}

/// Tarjan's algorithm, iteratively: the strongly connected components of `adjacency`.
fn strongly_connected(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = adjacency.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, position in its adjacency list)
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut at)) = work.last_mut() {
            if let Some(&child) = adjacency[node].get(*at) {
                *at += 1;
                if index[child] == usize::MAX {
                    index[child] = next;
                    low[child] = next;
                    next += 1;
                    stack.push(child);
                    on_stack[child] = true;
                    work.push((child, 0));
                } else if on_stack[child] {
                    low[node] = low[node].min(index[child]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(top) = stack.pop() {
                    on_stack[top] = false;
                    component.push(top);
                    if top == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// Whether `ancestor` is `module`'s parent, its parent's parent, ... (the root is everyone's).
fn is_ancestor(ancestor: &str, module: &str) -> bool {
    ancestor.is_empty() && !module.is_empty()
        || module
            .strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with("::"))
}

fn is_test_file(path: &str) -> bool {
    path.ends_with("/tests.rs") || path == "tests.rs" || path.contains("/tests/")
}

/// `ask/llm.rs` → `ask::llm`; `main.rs`, `lib.rs` → `` (the root); `x/mod.rs` → `x`.
fn module_of(path: &str) -> String {
    let path = path.trim_end_matches(".rs").trim_end_matches("/mod");
    if path == "main" || path == "lib" {
        return String::new();
    }
    path.replace('/', "::")
}

fn segments(module: &str) -> impl Iterator<Item = &str> {
    module.split("::").filter(|s| !s.is_empty())
}

/// The paths (`a::b`, `crate::x`, `super::y`) in `text`, outside comments and test
/// modules, each as its segments (`use crate::{a, b::c}` gives `crate a` and `crate b c`).
fn references(text: &str) -> Vec<Vec<String>> {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // What follows is test code to the end of the file, or only one item: a `mod tests;`
            // line, or an inline `mod tests { ... }` block, skipped to its closing brace.
            if let Some(next) = lines.peek()
                && next.trim_start().starts_with("mod ")
                && next.trim_end().ends_with(';')
            {
                lines.next();
                continue;
            }
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let line = line.split(" // ").next().unwrap_or(line);
        code.push_str(line);
        code.push('\n');
    }
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &code[i..];
        let boundary = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != b':';
        let ident = rest.bytes().take_while(|b| is_ident(*b)).count();
        let is_path = ident > 0 && rest[ident..].starts_with("::");
        if boundary && is_path {
            let (paths, used) = path_at(rest);
            found.extend(paths);
            i += used.max(ident);
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    found
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The paths written at the start of `text` (one, or several through a `{...}` group), and how
/// many bytes they took.
fn path_at(text: &str) -> (Vec<Vec<String>>, usize) {
    let bytes = text.as_bytes();
    let mut segments = Vec::new();
    let mut i = 0;
    loop {
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        if i == start {
            break;
        }
        segments.push(text[start..i].to_owned());
        if text[i..].starts_with("::") {
            i += 2;
            if text[i..].starts_with('{') {
                let Some(close) = matching_brace(&text[i..]) else {
                    break;
                };
                let inner = &text[i + 1..i + close];
                let mut paths = Vec::new();
                for item in split_top(inner) {
                    let item = item.trim();
                    if item.is_empty() {
                        continue;
                    }
                    let (inner_paths, _) = path_at(item);
                    for tail in inner_paths {
                        let mut path = segments.clone();
                        if tail.first().map(String::as_str) != Some("self") {
                            path.extend(tail);
                        }
                        paths.push(path);
                    }
                }
                if paths.is_empty() {
                    paths.push(segments);
                }
                return (paths, i + close + 1);
            }
        } else {
            break;
        }
    }
    (vec![segments], i)
}

fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Every `.rs` file under `dir`, relative to `src`, with `/` separators.
fn rust_files(src: &Path, dir: &Path, files: &mut Vec<String>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let path = entry.path();
        if path.is_dir() {
            rust_files(src, &path, files)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src).unwrap_or(&path);
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
    }
    files.sort();
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::Graph;

    fn cycles(sources: &[(&str, &str)]) -> Vec<Vec<String>> {
        Graph::from_sources(sources.iter().copied()).cycles()
    }

    #[test]
    fn two_modules_that_name_each_other_are_a_cycle() {
        let found = cycles(&[
            ("main.rs", "mod config;\nmod ask;\n"),
            ("config.rs", "use crate::ask::llm::Llm;\n"),
            ("ask.rs", "pub mod llm;\n"),
            ("ask/llm.rs", "use crate::config::Settings;\n"),
        ]);
        assert_eq!(found, [["ask/llm.rs", "config.rs"]]);
    }

    #[test]
    fn a_child_naming_its_parent_is_part_of_it() {
        let found = cycles(&[
            ("main.rs", "mod ask;\nfn main() { ask::run(); }\n"),
            ("ask.rs", "mod report;\nuse self::report::line;\n"),
            ("ask/report.rs", "use super::Options;\nuse crate::Status;\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
        // Through another module it is a cycle again.
        let found = cycles(&[
            ("main.rs", ""),
            ("ask.rs", "mod report;\nuse self::report::line;\n"),
            ("ask/report.rs", "use crate::fsm::count;\n"),
            ("fsm.rs", "use crate::ask::Options;\n"),
        ]);
        assert_eq!(found, [["ask.rs", "ask/report.rs", "fsm.rs"]]);
    }

    #[test]
    fn a_one_way_use_is_no_cycle() {
        let found = cycles(&[
            (
                "main.rs",
                "mod config;\nmod ask;\nfn main() { ask::run(); }\n",
            ),
            ("config.rs", "pub struct Settings;\n"),
            ("ask.rs", "use crate::config::Settings;\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn groups_super_and_bare_child_paths_count() {
        // fsm names its child `services` bare; services names mcp in a group; mcp's child `chat`
        // names fsm through two supers.
        let found = cycles(&[
            ("main.rs", ""),
            ("fsm.rs", "mod services;\nfn f() { services::start(); }\n"),
            (
                "fsm/services.rs",
                "use crate::{input, mcp::{start, stop}};\n",
            ),
            ("mcp.rs", "mod chat;\nuse self::chat::run;\n"),
            ("mcp/chat.rs", "use super::super::fsm::limit;\n"),
            ("input.rs", ""),
        ]);
        assert_eq!(
            found,
            [["fsm.rs", "fsm/services.rs", "mcp.rs", "mcp/chat.rs"]]
        );
    }

    #[test]
    fn comments_and_tests_are_not_uses() {
        let found = cycles(&[
            ("main.rs", ""),
            ("a.rs", "// see crate::b::x\n/// [`crate::b`]\nfn f() {}\n"),
            (
                "b.rs",
                "use crate::a::f;\n#[cfg(test)]\nmod tests {\n use crate::a::f;\n}\n",
            ),
            ("b/tests.rs", "use crate::a;\n"),
            ("a/tests.rs", "use crate::b;\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }
}
