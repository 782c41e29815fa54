//! One vehicle's rules at junctions: which turns it may take where a barrier stands or a turn
//! restriction binds it. Everywhere else every turn, U-turns included, is allowed.

use crate::graph::{EdgeIndex, NodeIndex, RoadGraph};
use crate::junction_rules::TurnRule;
use crate::vehicle::Vehicle;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum NodeRule {
    /// The vehicle cannot pass: it may only turn back the way it came.
    Barrier,
    /// Sorted `(arriving edge, leaving edge)` pairs: turns forbidden, and turns that are the
    /// only ones allowed after arriving on their first edge.
    Restricted {
        prohibited: Vec<(EdgeIndex, EdgeIndex)>,
        mandatory: Vec<(EdgeIndex, EdgeIndex)>,
    },
}

/// Rules per junction, sorted by node, so two vehicles with the same rules compare equal.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct TurnRules {
    nodes: Vec<(NodeIndex, NodeRule)>,
}

impl TurnRules {
    pub(crate) fn for_vehicle(graph: &RoadGraph, vehicle: Vehicle) -> Self {
        let mut nodes: Vec<(NodeIndex, NodeRule)> = graph
            .barriers
            .iter()
            .filter(|b| b.blocks[vehicle.index()])
            .map(|b| (b.node, NodeRule::Barrier))
            .collect();
        let mut restricted: Vec<(NodeIndex, TurnRule, (EdgeIndex, EdgeIndex))> = graph
            .restrictions
            .iter()
            .filter_map(|r| Some((r.via, r.rule[vehicle.index()]?, &r.turns)))
            .flat_map(|(via, rule, turns)| turns.iter().map(move |&turn| (via, rule, turn)))
            .collect();
        restricted.sort_unstable();
        restricted.dedup();
        for group in restricted.chunk_by(|a, b| a.0 == b.0) {
            let via = group[0].0;
            if nodes.iter().any(|(node, _)| *node == via) {
                continue; // a barrier already allows no turn but back
            }
            let pick = |wanted: TurnRule| {
                group
                    .iter()
                    .filter(|(_, rule, _)| *rule == wanted)
                    .map(|(_, _, turn)| *turn)
                    .collect()
            };
            nodes.push((
                via,
                NodeRule::Restricted {
                    prohibited: pick(TurnRule::Prohibited),
                    mandatory: pick(TurnRule::Mandatory),
                },
            ));
        }
        nodes.sort_unstable_by_key(|(node, _)| *node);
        Self { nodes }
    }

    fn rule(&self, node: NodeIndex) -> Option<&NodeRule> {
        self.nodes
            .binary_search_by_key(&node, |(n, _)| *n)
            .ok()
            .map(|i| &self.nodes[i].1)
    }

    /// True when some turn at `node` is not allowed.
    pub(crate) fn constrains(&self, node: NodeIndex) -> bool {
        self.rule(node).is_some()
    }

    /// Whether the vehicle, arriving at `node` on `arriving`, may leave on `leaving`.
    pub(crate) fn allows(&self, node: NodeIndex, arriving: EdgeIndex, leaving: EdgeIndex) -> bool {
        match self.rule(node) {
            None => true,
            Some(NodeRule::Barrier) => arriving == leaving,
            Some(NodeRule::Restricted {
                prohibited,
                mandatory,
            }) => {
                let turn = (arriving, leaving);
                let bound = mandatory.iter().any(|&(from, _)| from == arriving);
                prohibited.binary_search(&turn).is_err()
                    && (!bound || mandatory.binary_search(&turn).is_ok())
            }
        }
    }

    /// Junctions with barriers and with restrictions (of which U-turn only restrictions are
    /// counted too) for this vehicle.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let barriers = self
            .nodes
            .iter()
            .filter(|(_, rule)| *rule == NodeRule::Barrier)
            .count();
        (barriers, self.nodes.len() - barriers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Barrier, TurnRestriction};

    fn graph_with(barriers: Vec<Barrier>, restrictions: Vec<TurnRestriction>) -> RoadGraph {
        RoadGraph {
            barriers,
            restrictions,
            ..RoadGraph::default()
        }
    }

    const CAR_ONLY: [bool; 5] = [false, false, false, true, false];

    #[test]
    fn barriers_allow_only_turning_back() {
        let graph = graph_with(
            vec![Barrier {
                node: 4,
                blocks: CAR_ONLY,
            }],
            vec![],
        );
        let car = TurnRules::for_vehicle(&graph, Vehicle::Car);
        assert!(car.constrains(4) && !car.constrains(3));
        assert!(!car.allows(4, 1, 2));
        assert!(car.allows(4, 1, 1));
        assert!(car.allows(3, 1, 2));
        let bicycle = TurnRules::for_vehicle(&graph, Vehicle::Bicycle);
        assert!(bicycle.allows(4, 1, 2));
        assert_eq!(car.counts(), (1, 0));
    }

    #[test]
    fn prohibitions_and_mandates_combine() {
        let rule = |r| {
            let mut all = [None; 5];
            all[Vehicle::Car.index()] = Some(r);
            all
        };
        let graph = graph_with(
            vec![],
            vec![
                TurnRestriction {
                    via: 7,
                    turns: vec![(1, 2)],
                    rule: rule(TurnRule::Prohibited),
                },
                TurnRestriction {
                    via: 7,
                    turns: vec![(3, 1)],
                    rule: rule(TurnRule::Mandatory),
                },
            ],
        );
        let car = TurnRules::for_vehicle(&graph, Vehicle::Car);
        assert!(!car.allows(7, 1, 2), "no left turn");
        assert!(car.allows(7, 1, 3) && car.allows(7, 1, 1));
        assert!(car.allows(7, 3, 1), "the only way on");
        assert!(!car.allows(7, 3, 2) && !car.allows(7, 3, 3));
        assert!(car.allows(7, 2, 3), "other arrivals are free");
        let van = TurnRules::for_vehicle(&graph, Vehicle::Van);
        assert!(van.allows(7, 1, 2) && !van.constrains(7));
        assert_ne!(car, van);
    }
}
