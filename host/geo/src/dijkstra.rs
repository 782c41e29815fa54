//! Plain graph algorithms over the compressed adjacency: the reference Dijkstra search and the
//! strongly connected component used to pick snap targets.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::graph::NodeIndex;
use crate::routing_graph::{Arc, Millis, NodePath};

const UNREACHED: Millis = Millis::MAX;

/// Multi-source, multi-target Dijkstra; sources and targets carry initial weights, which are
/// included in the returned path weight.
pub(crate) fn shortest_path(
    offsets: &[u32],
    arcs: &[Arc],
    sources: &[(NodeIndex, Millis)],
    targets: &[(NodeIndex, Millis)],
) -> Option<NodePath> {
    let node_count = offsets.len() - 1;
    let mut distance = vec![UNREACHED; node_count];
    let mut parent = vec![NodeIndex::MAX; node_count];
    let mut heap = BinaryHeap::new();
    let mut target_weight: HashMap<NodeIndex, Millis> = HashMap::new();
    for &(node, weight) in targets {
        let entry = target_weight.entry(node).or_insert(weight);
        *entry = (*entry).min(weight);
    }
    for &(node, weight) in sources {
        if weight < distance[node as usize] {
            distance[node as usize] = weight;
            heap.push(Reverse((weight, node)));
        }
    }
    let mut best: Option<(Millis, NodeIndex)> = None;
    while let Some(Reverse((d, node))) = heap.pop() {
        if best.is_some_and(|(b, _)| d >= b) {
            break;
        }
        if d > distance[node as usize] {
            continue;
        }
        if let Some(&extra) = target_weight.get(&node) {
            let total = d + extra;
            if best.is_none_or(|(b, _)| total < b) {
                best = Some((total, node));
            }
        }
        let start = offsets[node as usize] as usize;
        let end = offsets[node as usize + 1] as usize;
        for arc in &arcs[start..end] {
            let candidate = d + Millis::from(arc.weight);
            if candidate < distance[arc.head as usize] {
                distance[arc.head as usize] = candidate;
                parent[arc.head as usize] = node;
                heap.push(Reverse((candidate, arc.head)));
            }
        }
    }
    let (weight, last) = best?;
    let mut nodes = vec![last];
    let mut node = last;
    while parent[node as usize] != NodeIndex::MAX {
        node = parent[node as usize];
        nodes.push(node);
    }
    nodes.reverse();
    Some(NodePath { weight, nodes })
}

/// Marks the nodes of the largest strongly connected component (iterative Tarjan).
pub(crate) fn largest_strongly_connected_component(offsets: &[u32], arcs: &[Arc]) -> Vec<bool> {
    const UNVISITED: u32 = u32::MAX;
    let node_count = offsets.len() - 1;
    let mut index = vec![UNVISITED; node_count];
    let mut low_link = vec![0u32; node_count];
    let mut on_stack = vec![false; node_count];
    let mut component_stack: Vec<u32> = Vec::new();
    // (node, position of the next arc to explore)
    let mut call_stack: Vec<(u32, u32)> = Vec::new();
    let mut next_index = 0u32;
    let mut best: Vec<u32> = Vec::new();

    for root in 0..node_count as u32 {
        if index[root as usize] != UNVISITED {
            continue;
        }
        call_stack.push((root, offsets[root as usize]));
        index[root as usize] = next_index;
        low_link[root as usize] = next_index;
        next_index += 1;
        component_stack.push(root);
        on_stack[root as usize] = true;

        while let Some(top) = call_stack.last_mut() {
            let node = top.0;
            let n = node as usize;
            if top.1 < offsets[n + 1] {
                let head = arcs[top.1 as usize].head;
                top.1 += 1;
                let h = head as usize;
                if index[h] == UNVISITED {
                    index[h] = next_index;
                    low_link[h] = next_index;
                    next_index += 1;
                    component_stack.push(head);
                    on_stack[h] = true;
                    call_stack.push((head, offsets[h]));
                } else if on_stack[h] {
                    low_link[n] = low_link[n].min(index[h]);
                }
                continue;
            }
            call_stack.pop();
            if let Some(&(caller, _)) = call_stack.last() {
                low_link[caller as usize] = low_link[caller as usize].min(low_link[n]);
            }
            if low_link[n] == index[n] {
                let mut component = Vec::new();
                loop {
                    let member = component_stack.pop().expect("node is on the stack");
                    on_stack[member as usize] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                if component.len() > best.len() {
                    best = component;
                }
            }
        }
    }
    let mut in_best = vec![false; node_count];
    for node in best {
        in_best[node as usize] = true;
    }
    in_best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds compressed adjacency from `(tail, head, weight)` triples.
    fn adjacency(node_count: usize, edges: &[(u32, u32, u32)]) -> (Vec<u32>, Vec<Arc>) {
        let mut offsets = vec![0u32; node_count + 1];
        let mut sorted = edges.to_vec();
        sorted.sort_by_key(|e| e.0);
        for e in &sorted {
            offsets[e.0 as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let arcs = sorted
            .iter()
            .enumerate()
            .map(|(i, &(_, head, weight))| Arc::new(head, weight, i as u32, true))
            .collect();
        (offsets, arcs)
    }

    #[test]
    fn finds_the_cheaper_detour() {
        // 0 -> 1 -> 3 costs 20, 0 -> 2 -> 3 costs 12.
        let (offsets, arcs) = adjacency(4, &[(0, 1, 10), (1, 3, 10), (0, 2, 6), (2, 3, 6)]);
        let path = shortest_path(&offsets, &arcs, &[(0, 0)], &[(3, 0)]).unwrap();
        assert_eq!(
            path,
            NodePath {
                weight: 12,
                nodes: vec![0, 2, 3]
            }
        );
    }

    #[test]
    fn initial_weights_choose_among_sources_and_targets() {
        let (offsets, arcs) = adjacency(3, &[(0, 1, 5), (1, 2, 5)]);
        // Starting at 1 costs 7 up front, at 0 only 1: 0 -> 1 (5) + target weight at 1 (0).
        let path = shortest_path(&offsets, &arcs, &[(0, 1), (1, 7)], &[(1, 0), (2, 0)]).unwrap();
        assert_eq!(
            path,
            NodePath {
                weight: 6,
                nodes: vec![0, 1]
            }
        );
        // A shared source/target node is a path of one node.
        let path = shortest_path(&offsets, &arcs, &[(1, 2)], &[(1, 3)]).unwrap();
        assert_eq!(
            path,
            NodePath {
                weight: 5,
                nodes: vec![1]
            }
        );
    }

    #[test]
    fn unreachable_targets_give_none() {
        let (offsets, arcs) = adjacency(3, &[(0, 1, 5)]);
        assert!(shortest_path(&offsets, &arcs, &[(1, 0)], &[(0, 0)]).is_none());
        assert!(shortest_path(&offsets, &arcs, &[(0, 0)], &[(2, 0)]).is_none());
    }

    #[test]
    fn largest_component_ignores_one_way_dead_ends() {
        // Cycle 0-1-2, a one-way spur 2 -> 3, and a separate pair 4 <-> 5.
        let (offsets, arcs) = adjacency(
            6,
            &[
                (0, 1, 1),
                (1, 2, 1),
                (2, 0, 1),
                (2, 3, 1),
                (4, 5, 1),
                (5, 4, 1),
            ],
        );
        let core = largest_strongly_connected_component(&offsets, &arcs);
        assert_eq!(core, [true, true, true, false, false, false]);
    }
}
