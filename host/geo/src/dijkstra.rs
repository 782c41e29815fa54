//! Plain graph algorithms over the compressed adjacency: the reference (turn-aware) Dijkstra
//! search and the
//! strongly connected component used to pick snap targets.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::arc::{Arc, Millis};
use crate::graph::{EdgeIndex, NodeIndex};

const UNREACHED: Millis = Millis::MAX;
const NO_ARC: u32 = u32::MAX;

/// A path found by [`turn_aware_path`]: the arcs travelled, starting with the source arc, the
/// target reached (by index) and the total weight.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArcPath {
    pub(crate) weight: Millis,
    pub(crate) arcs: Vec<u32>,
    pub(crate) target: usize,
}

/// Dijkstra whose states are arcs (how a junction was reached), so that every turn can be
/// checked with `allows(junction, arriving edge, leaving edge)`. Sources are arcs already
/// travelled, at an initial weight; a target `(junction, edge, weight)` is reached by arriving
/// at the junction on an arc that may turn onto the edge, and adds its weight.
pub(crate) fn turn_aware_path(
    offsets: &[u32],
    arcs: &[Arc],
    sources: &[(u32, Millis)],
    targets: &[(NodeIndex, EdgeIndex, Millis)],
    allows: impl Fn(NodeIndex, EdgeIndex, EdgeIndex) -> bool,
) -> Option<ArcPath> {
    let mut distance = vec![UNREACHED; arcs.len()];
    let mut parent = vec![NO_ARC; arcs.len()];
    let mut heap = BinaryHeap::new();
    for &(arc, weight) in sources {
        if weight < distance[arc as usize] {
            distance[arc as usize] = weight;
            heap.push(Reverse((weight, arc)));
        }
    }
    let mut best: Option<(Millis, u32, usize)> = None;
    while let Some(Reverse((d, state))) = heap.pop() {
        if best.is_some_and(|(b, _, _)| d >= b) {
            break;
        }
        if d > distance[state as usize] {
            continue;
        }
        let arrived = arcs[state as usize];
        let junction = arrived.head;
        for (index, &(node, edge, extra)) in targets.iter().enumerate() {
            if node == junction && allows(junction, arrived.edge(), edge) {
                let total = d + extra;
                if best.is_none_or(|(b, _, _)| total < b) {
                    best = Some((total, state, index));
                }
            }
        }
        let start = offsets[junction as usize];
        let end = offsets[junction as usize + 1];
        for next in start..end {
            let arc = arcs[next as usize];
            if !allows(junction, arrived.edge(), arc.edge()) {
                continue;
            }
            let candidate = d + Millis::from(arc.weight);
            if candidate < distance[next as usize] {
                distance[next as usize] = candidate;
                parent[next as usize] = state;
                heap.push(Reverse((candidate, next)));
            }
        }
    }
    let (weight, last, target) = best?;
    let mut path = vec![last];
    let mut state = last;
    while parent[state as usize] != NO_ARC {
        state = parent[state as usize];
        path.push(state);
    }
    path.reverse();
    Some(ArcPath {
        weight,
        arcs: path,
        target,
    })
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
            .map(|&(tail, head, weight)| {
                let edge = edges
                    .iter()
                    .position(|e| *e == (tail, head, weight))
                    .unwrap();
                Arc::new(head, weight, edge as u32, true)
            })
            .collect();
        (offsets, arcs)
    }

    const FREE: fn(NodeIndex, EdgeIndex, EdgeIndex) -> bool = |_, _, _| true;

    #[test]
    fn finds_the_cheaper_detour() {
        // Arcs (index = edge): 0: 0->1 (10), 1: 1->3 (10), 2: 0->2 (6), 3: 2->3 (6), and a
        // source arc 4: 9->0 arriving at 0. Target: leave 3 on edge 9.
        let (offsets, arcs) = adjacency(
            10,
            &[(0, 1, 10), (1, 3, 10), (0, 2, 6), (2, 3, 6), (9, 0, 1)],
        );
        let source = arc_index(&arcs, 4);
        let path = turn_aware_path(&offsets, &arcs, &[(source, 0)], &[(3, 9, 0)], FREE).unwrap();
        assert_eq!(path.weight, 12);
        let edges: Vec<u32> = path.arcs.iter().map(|&a| arcs[a as usize].edge()).collect();
        assert_eq!(edges, [4, 2, 3]);
    }

    #[test]
    fn forbidden_turns_force_the_detour() {
        let (offsets, arcs) = adjacency(
            10,
            &[(0, 1, 10), (1, 3, 10), (0, 2, 6), (2, 3, 6), (9, 0, 1)],
        );
        let source = arc_index(&arcs, 4);
        // No turn from edge 4 onto edge 2 at junction 0.
        let rules = |node, arriving, leaving| !(node == 0 && arriving == 4 && leaving == 2);
        let path = turn_aware_path(&offsets, &arcs, &[(source, 0)], &[(3, 9, 0)], rules).unwrap();
        assert_eq!(path.weight, 20);
        // A target behind a forbidden turn is unreachable.
        let never = |_, _, leaving| leaving != 9;
        assert!(turn_aware_path(&offsets, &arcs, &[(source, 0)], &[(3, 9, 0)], never).is_none());
    }

    #[test]
    fn initial_weights_choose_among_sources_and_targets() {
        // Edges 0: 0->1 (5), 1: 1->2 (5); sources arrive at 0 (edge 0 source arc is 0->1).
        let (offsets, arcs) = adjacency(3, &[(0, 1, 5), (1, 2, 5)]);
        let (first, second) = (arc_index(&arcs, 0), arc_index(&arcs, 1));
        // Having travelled 0->1 at 1, or 1->2 at 7: reaching junction 1 is cheapest.
        let path = turn_aware_path(
            &offsets,
            &arcs,
            &[(first, 1), (second, 7)],
            &[(1, 8, 0), (2, 8, 0)],
            FREE,
        )
        .unwrap();
        assert_eq!(
            (path.weight, path.target, path.arcs.clone()),
            (1, 0, vec![first])
        );
    }

    /// The position of `edge`'s arc in compressed adjacency.
    fn arc_index(arcs: &[Arc], edge: u32) -> u32 {
        arcs.iter().position(|a| a.edge() == edge).unwrap() as u32
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
