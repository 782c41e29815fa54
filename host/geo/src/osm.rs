//! Reading the parts of an OpenStreetMap PBF extract that routing and places need.
//!
//! Everything downstream (graph build, places) consumes the in-memory [`OsmExtract`], so unit
//! tests can build fixtures directly while real extracts go through [`read_pbf`].

use std::collections::HashMap;
use std::io::Read;

use osmpbf::{Element, ElementReader};

use crate::coords::LatLon;

/// An element's tags, kept only for the elements that matter.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tags(Vec<(String, String)>);

impl Tags {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// True when `key` has one of `values`.
    pub(crate) fn is(&self, key: &str, values: &[&str]) -> bool {
        self.get(key).is_some_and(|v| values.contains(&v))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Tags {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OsmNode {
    pub(crate) id: i64,
    pub(crate) position: LatLon,
    pub(crate) tags: Tags,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OsmWay {
    pub(crate) id: i64,
    pub(crate) node_ids: Vec<i64>,
    pub(crate) tags: Tags,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemberKind {
    Node,
    Way,
    Relation,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OsmMember {
    pub(crate) kind: MemberKind,
    pub(crate) id: i64,
    pub(crate) role: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OsmRelation {
    pub(crate) id: i64,
    pub(crate) members: Vec<OsmMember>,
    pub(crate) tags: Tags,
}

/// Highway ways, tagged nodes and ways of interest to the places index, barrier nodes, turn
/// restrictions, plus the position of every node (ways reference nodes by id).
#[derive(Debug, Default)]
pub(crate) struct OsmExtract {
    pub(crate) node_positions: HashMap<i64, LatLon>,
    pub(crate) tagged_nodes: Vec<OsmNode>,
    /// Nodes tagged `barrier=*` (gates, bollards, ...), which may close a road to some vehicles.
    pub(crate) barriers: Vec<OsmNode>,
    pub(crate) ways: Vec<OsmWay>,
    /// `type=restriction` relations.
    pub(crate) restrictions: Vec<OsmRelation>,
    /// Multipolygon relations (buildings and the like) with an address or a name of interest.
    pub(crate) areas: Vec<OsmRelation>,
    /// The node lists of the areas' member ways.
    pub(crate) area_member_ways: HashMap<i64, Vec<i64>>,
}

impl OsmExtract {
    pub(crate) fn position(&self, node_id: i64) -> Option<LatLon> {
        self.node_positions.get(&node_id).copied()
    }
}

/// Tags that make a node worth keeping for the places index.
fn node_is_relevant(tags: &Tags) -> bool {
    tags.has("addr:housenumber")
        || (tags.has("name") && (tags.has("place") || is_point_of_interest(tags)))
}

/// Highways are routable; other ways only matter as addressed buildings, named POIs or
/// address interpolation lines.
fn way_is_relevant(tags: &Tags) -> bool {
    tags.has("highway") || node_is_relevant(tags) || tags.has("addr:interpolation")
}

/// Multipolygons whose tags the places index would take from a node.
fn area_is_relevant(tags: &Tags) -> bool {
    tags.is("type", &["multipolygon"]) && node_is_relevant(tags)
}

pub(crate) fn is_point_of_interest(tags: &Tags) -> bool {
    tags.has("amenity") || tags.has("shop") || tags.has("tourism")
}

fn is_restriction(tags: &Tags) -> bool {
    tags.is("type", &["restriction"])
}

impl OsmExtract {
    /// Files a node under the lists its tags make it relevant to.
    fn add_node(&mut self, id: i64, position: LatLon, tags: Tags) {
        if tags.has("barrier") {
            self.barriers.push(OsmNode {
                id,
                position,
                tags: tags.clone(),
            });
        }
        if node_is_relevant(&tags) {
            self.tagged_nodes.push(OsmNode { id, position, tags });
        }
    }
}

fn member_kind(kind: osmpbf::RelMemberType) -> MemberKind {
    match kind {
        osmpbf::RelMemberType::Node => MemberKind::Node,
        osmpbf::RelMemberType::Way => MemberKind::Way,
        osmpbf::RelMemberType::Relation => MemberKind::Relation,
    }
}

fn relation(relation: &osmpbf::Relation, tags: Tags) -> OsmRelation {
    let members = relation
        .members()
        .map(|member| OsmMember {
            kind: member_kind(member.member_type.clone()),
            id: member.member_id,
            role: member.role().unwrap_or_default().to_owned(),
        })
        .collect();
    OsmRelation {
        id: relation.id(),
        members,
        tags,
    }
}

/// Reads a PBF extract, keeping what [`node_is_relevant`], [`way_is_relevant`] and the
/// relation filters select. `open` gives the stream from its start; it is called a second
/// time when multipolygons need member ways the first pass did not keep (relations come after
/// ways in a PBF file).
pub(crate) fn read_pbf<R, E>(mut open: impl FnMut() -> Result<R, E>) -> Result<OsmExtract, E>
where
    R: Read + Send,
    E: From<osmpbf::Error>,
{
    let mut extract = OsmExtract::default();
    let collect_tags = |tags: &mut dyn Iterator<Item = (&str, &str)>| -> Tags { tags.collect() };
    ElementReader::new(open()?).for_each(|element| match element {
        Element::DenseNode(node) => {
            let position = LatLon::new(node.lat(), node.lon());
            extract.node_positions.insert(node.id(), position);
            if node.raw_tags().next().is_some() {
                let tags = collect_tags(&mut node.tags());
                extract.add_node(node.id(), position, tags);
            }
        }
        Element::Node(node) => {
            let position = LatLon::new(node.lat(), node.lon());
            extract.node_positions.insert(node.id(), position);
            let tags = collect_tags(&mut node.tags());
            extract.add_node(node.id(), position, tags);
        }
        Element::Way(way) => {
            let tags = collect_tags(&mut way.tags());
            if way_is_relevant(&tags) {
                extract.ways.push(OsmWay {
                    id: way.id(),
                    node_ids: way.refs().collect(),
                    tags,
                });
            }
        }
        Element::Relation(element) => {
            let tags = collect_tags(&mut element.tags());
            if is_restriction(&tags) {
                extract.restrictions.push(relation(&element, tags));
            } else if area_is_relevant(&tags) {
                extract.areas.push(relation(&element, tags));
            }
        }
    })?;

    let wanted: std::collections::HashSet<i64> = extract
        .areas
        .iter()
        .flat_map(|area| &area.members)
        .filter(|m| m.kind == MemberKind::Way)
        .map(|m| m.id)
        .collect();
    if !wanted.is_empty() {
        let mut member_ways = HashMap::new();
        ElementReader::new(open()?).for_each(|element| {
            if let Element::Way(way) = element
                && wanted.contains(&way.id())
            {
                member_ways.insert(way.id(), way.refs().collect());
            }
        })?;
        extract.area_member_ways = member_ways;
    }
    Ok(extract)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_lookup() {
        let tags: Tags = [("highway", "residential"), ("oneway", "yes")]
            .into_iter()
            .collect();
        assert_eq!(tags.get("highway"), Some("residential"));
        assert!(tags.is("oneway", &["yes", "1"]));
        assert!(!tags.is("oneway", &["-1"]));
        assert!(!tags.has("name"));
    }

    #[test]
    fn relevance_filters() {
        let house: Tags = [("addr:housenumber", "3")].into_iter().collect();
        let cafe: Tags = [("amenity", "cafe"), ("name", "Blue")]
            .into_iter()
            .collect();
        let unnamed_cafe: Tags = [("amenity", "cafe")].into_iter().collect();
        let road: Tags = [("highway", "service")].into_iter().collect();
        let fence: Tags = [("barrier", "fence")].into_iter().collect();
        assert!(node_is_relevant(&house) && node_is_relevant(&cafe));
        assert!(!node_is_relevant(&unnamed_cafe));
        assert!(way_is_relevant(&road) && way_is_relevant(&house));
        assert!(!way_is_relevant(&fence));
    }
}
