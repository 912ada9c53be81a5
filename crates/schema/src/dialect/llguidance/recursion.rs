//! Recursive `$ref`s: which targets reach themselves, and the names they get in the output `$defs`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::UNSUPPORTED;
use crate::dialect::{Cx, Result, child, subschemas};

/// A `$ref` target on a cycle: its pointer, its name in the output `$defs` (`None` for the root) and its
/// schema.
pub(super) type Recursive<'a> = (String, Option<String>, &'a Value);

/// The `$ref` targets that reach themselves, in the order a walk from the root first meets them, named for
/// the output `$defs`: the definition's own name where llguidance can look it up as written (its resolver
/// splits on `/` and unescapes nothing), otherwise a sanitised one.
pub(super) fn recursive_targets<'a>(cx: &Cx<'a>) -> Result<Vec<Recursive<'a>>> {
    let graph = ref_graph(cx)?;
    let cycles = on_cycle(&graph.edges);
    let cyclic: Vec<(String, &'a Value)> = graph
        .nodes
        .into_iter()
        .zip(cycles)
        .filter_map(|(node, cyclic)| cyclic.then_some(node))
        .collect();
    // Names as written first, so that a sanitised name never takes one a definition already has.
    let mut taken: HashSet<String> = HashSet::new();
    let mut names: HashMap<&str, String> = HashMap::new();
    for (target, _) in &cyclic {
        if let Some(name) = definition_name(target).filter(|n| is_plain(n))
            && taken.insert(name.clone())
        {
            names.insert(target, name);
        }
    }
    let mut out = Vec::with_capacity(cyclic.len());
    for (target, schema) in &cyclic {
        let name = if target.is_empty() {
            None
        } else if let Some(name) = names.get(target.as_str()) {
            Some(name.clone())
        } else {
            let wanted = definition_name(target).unwrap_or_else(|| tokens(target).join("_"));
            let base = sanitise(&wanted);
            let mut name = base.clone();
            let mut n = 2;
            while !taken.insert(name.clone()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            Some(name)
        };
        out.push((target.clone(), name, *schema));
    }
    Ok(out)
}

/// The `$ref`s reachable from the root through what the dialect keeps: node 0 is the root, the others are
/// targets in the order a walk first meets them, with their schemas; `edges[i]` are the nodes that node
/// `i`'s schema refers to directly.
struct RefGraph<'a> {
    nodes: Vec<(String, &'a Value)>,
    edges: Vec<Vec<usize>>,
}

fn ref_graph<'a>(cx: &Cx<'a>) -> Result<RefGraph<'a>> {
    let mut nodes: Vec<(String, &'a Value)> = vec![(String::new(), cx.root)];
    let mut edges: Vec<Vec<usize>> = vec![Vec::new()];
    let mut index: HashMap<String, usize> = HashMap::from([(String::new(), 0)]);
    // Each node's schema is walked once, with an explicit stack: no recursion on untrusted input.
    let mut owner = 0;
    while let Some((owner_pointer, schema)) = nodes.get(owner).cloned() {
        let mut stack = vec![(owner_pointer, schema)];
        while let Some((pointer, schema)) = stack.pop() {
            let Value::Object(map) = schema else { continue };
            let skipped: Vec<String> = UNSUPPORTED.iter().map(|k| child(&pointer, k)).collect();
            let mut children: Vec<(String, &'a Value)> = subschemas(map, &pointer)
                .into_iter()
                .filter(|(p, _)| {
                    !skipped.iter().any(|s| {
                        p == s
                            || p.strip_prefix(s.as_str())
                                .is_some_and(|r| r.starts_with('/'))
                    })
                })
                .collect();
            children.reverse();
            stack.extend(children);
            let Some(Value::String(reference)) = map.get("$ref") else {
                continue;
            };
            let (target, target_pointer) = cx.resolve(reference, &pointer)?;
            let to = match index.get(&target_pointer) {
                Some(&to) => to,
                None => {
                    index.insert(target_pointer.clone(), nodes.len());
                    nodes.push((target_pointer, target));
                    edges.push(Vec::new());
                    nodes.len() - 1
                }
            };
            if let Some(from) = edges.get_mut(owner) {
                from.push(to);
            }
        }
        owner += 1;
    }
    Ok(RefGraph { nodes, edges })
}

/// Which nodes lie on a cycle: strongly connected components (Kosaraju, iterative, linear in the graph)
/// with more than one node, or a node that refers to itself.
fn on_cycle(edges: &[Vec<usize>]) -> Vec<bool> {
    let n = edges.len();
    let mut visited = vec![false; n];
    let mut finished = Vec::with_capacity(n);
    for start in 0..n {
        if visited[start] {
            continue;
        }
        visited[start] = true;
        let mut stack = vec![(start, 0)];
        while let Some(&(node, next)) = stack.last() {
            match edges[node].get(next) {
                Some(&to) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    if !visited[to] {
                        visited[to] = true;
                        stack.push((to, 0));
                    }
                }
                None => {
                    finished.push(node);
                    stack.pop();
                }
            }
        }
    }
    let mut reverse = vec![Vec::new(); n];
    for (from, tos) in edges.iter().enumerate() {
        for &to in tos {
            reverse[to].push(from);
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut sizes = Vec::new();
    for &start in finished.iter().rev() {
        if component[start] != usize::MAX {
            continue;
        }
        let id = sizes.len();
        component[start] = id;
        let mut size = 0;
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            size += 1;
            for &from in &reverse[node] {
                if component[from] == usize::MAX {
                    component[from] = id;
                    stack.push(from);
                }
            }
        }
        sizes.push(size);
    }
    (0..n)
        .map(|node| sizes[component[node]] > 1 || edges[node].contains(&node))
        .collect()
}

/// `X` for `/$defs/X` or `/definitions/X` (unescaped).
fn definition_name(pointer: &str) -> Option<String> {
    match tokens(pointer).as_slice() {
        [defs, name] if defs == "$defs" || defs == "definitions" => Some(name.clone()),
        _ => None,
    }
}

/// The unescaped reference tokens of a JSON pointer.
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// Whether a definition name can appear in a `$ref` as written: no escapes, no percent-encoding.
fn is_plain(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_plain_char)
}

fn is_plain_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// `name` with every character that [`is_plain`] refuses replaced by `_`.
fn sanitise(name: &str) -> String {
    let out: String = name
        .chars()
        .map(|c| if is_plain_char(c) { c } else { '_' })
        .collect();
    if out.is_empty() {
        "def".to_owned()
    } else {
        out
    }
}
