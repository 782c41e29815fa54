//! One edge traversal leaving a node, as the routing graph stores it and searches read it.

use crate::graph::{EdgeIndex, NodeIndex};

/// Travel time in milliseconds (path totals).
pub(crate) type Millis = u64;

/// One edge's travel time in milliseconds; 0 marks a closed direction. Kept at 32 bits
/// because graphs hold millions of them (the limit is 49 days per edge).
pub(crate) type EdgeMillis = u32;

/// An edge traversal leaving a node, packed into 12 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Arc {
    pub(crate) head: NodeIndex,
    pub(crate) weight: EdgeMillis,
    /// Edge index in the low 31 bits, direction in the top bit.
    edge_and_direction: u32,
}

const BACKWARD_BIT: u32 = 1 << 31;

impl Arc {
    pub(crate) fn new(head: NodeIndex, weight: EdgeMillis, edge: EdgeIndex, forward: bool) -> Self {
        debug_assert!(edge < BACKWARD_BIT, "edge indices fit in 31 bits");
        let direction = if forward { 0 } else { BACKWARD_BIT };
        Self {
            head,
            weight,
            edge_and_direction: edge | direction,
        }
    }

    pub(crate) fn edge(&self) -> EdgeIndex {
        self.edge_and_direction & !BACKWARD_BIT
    }

    /// True when the edge is traversed in its drawing direction.
    pub(crate) fn is_forward(&self) -> bool {
        self.edge_and_direction & BACKWARD_BIT == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arcs_pack_edge_and_direction() {
        assert_eq!(std::mem::size_of::<Arc>(), 12);
        let backward = Arc::new(7, 1_500, BACKWARD_BIT - 1, false);
        assert_eq!(
            (backward.edge(), backward.is_forward()),
            (BACKWARD_BIT - 1, false)
        );
        let forward = Arc::new(7, 1_500, 42, true);
        assert_eq!((forward.edge(), forward.is_forward()), (42, true));
    }
}
