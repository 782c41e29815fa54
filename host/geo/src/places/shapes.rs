//! Where an area or a line of houses puts its addresses: the centroid of a closed way or a
//! multipolygon, and numbers spread along an address interpolation line.

use std::collections::{HashMap, HashSet};

use crate::coords::{LatLon, LocalProjection, interpolate};
use crate::osm::{MemberKind, OsmExtract, OsmRelation, Tags};

/// Most houses one interpolation segment may yield; more means a mistyped number.
const MAX_INTERPOLATED_PER_SEGMENT: i64 = 1_000;

/// Signed area and area-weighted centroid of a closed ring, in the plane.
fn ring_moments(ring: &[[f64; 2]]) -> (f64, [f64; 2]) {
    let (mut area, mut cx, mut cy) = (0.0, 0.0, 0.0);
    for pair in ring.windows(2) {
        let ([x0, y0], [x1, y1]) = (pair[0], pair[1]);
        let cross = x0 * y1 - x1 * y0;
        area += cross;
        cx += (x0 + x1) * cross;
        cy += (y0 + y1) * cross;
    }
    (area / 2.0, [cx / 6.0, cy / 6.0])
}

/// Centroid of outer rings minus inner rings (node positions; each ring closed). `None` when
/// the rings enclose no area.
fn polygon_centroid(outer: &[Vec<LatLon>], inner: &[Vec<LatLon>]) -> Option<LatLon> {
    let projection = LocalProjection::fitting(outer.iter().flatten().copied());
    let mut total = 0.0;
    let mut moment = [0.0, 0.0];
    for (rings, sign) in [(outer, 1.0), (inner, -1.0)] {
        for ring in rings {
            let plane: Vec<[f64; 2]> = ring.iter().map(|p| projection.to_plane(*p)).collect();
            let (area, [mx, my]) = ring_moments(&plane);
            // Orientation varies between rings; weight each by its absolute area.
            let weight = sign * area.signum();
            total += weight * area;
            moment[0] += weight * mx;
            moment[1] += weight * my;
        }
    }
    (total.abs() > 1e-6).then(|| projection.to_lat_lon([moment[0] / total, moment[1] / total]))
}

fn mean(points: &[LatLon]) -> Option<LatLon> {
    if points.is_empty() {
        return None;
    }
    let n = points.len() as f64;
    Some(LatLon::new(
        points.iter().map(|p| p.lat).sum::<f64>() / n,
        points.iter().map(|p| p.lon).sum::<f64>() / n,
    ))
}

fn positions(ids: &[i64], extract: &OsmExtract) -> Option<Vec<LatLon>> {
    ids.iter().map(|id| extract.position(*id)).collect()
}

/// A way's representative point: the centroid of the area it encloses when closed, else the
/// mean of its nodes (those present in the extract).
pub(crate) fn way_position(node_ids: &[i64], extract: &OsmExtract) -> Option<LatLon> {
    let closed = node_ids.len() >= 4 && node_ids.first() == node_ids.last();
    if closed
        && let Some(ring) = positions(node_ids, extract)
        && let Some(centroid) = polygon_centroid(&[ring], &[])
    {
        return Some(centroid);
    }
    let present: Vec<LatLon> = node_ids
        .iter()
        .filter_map(|id| extract.position(*id))
        .collect();
    mean(&present)
}

/// Joins member ways end to end into closed rings; ways that do not close are dropped.
fn assemble_rings(mut ways: Vec<&[i64]>) -> Vec<Vec<i64>> {
    let mut rings = Vec::new();
    while let Some(first) = ways.pop() {
        let mut ring = first.to_vec();
        while ring.len() > 1 && ring.first() != ring.last() {
            let end = *ring.last().expect("ring is not empty");
            let Some(next) = ways
                .iter()
                .position(|w| w.first() == Some(&end) || w.last() == Some(&end))
            else {
                break;
            };
            let way = ways.swap_remove(next);
            if way.first() == Some(&end) {
                ring.extend_from_slice(&way[1..]);
            } else {
                ring.extend(way.iter().rev().skip(1));
            }
        }
        if ring.len() >= 4 && ring.first() == ring.last() {
            rings.push(ring);
        }
    }
    rings
}

/// A multipolygon's representative point: the centroid of its outer rings less its inner
/// ones, else the mean of its outer ways' nodes.
pub(crate) fn area_position(area: &OsmRelation, extract: &OsmExtract) -> Option<LatLon> {
    let member_ways = |inner: bool| -> Vec<&[i64]> {
        area.members
            .iter()
            .filter(|m| m.kind == MemberKind::Way && (m.role == "inner") == inner)
            .filter_map(|m| extract.area_member_ways.get(&m.id).map(Vec::as_slice))
            .collect()
    };
    let ring_points = |ways: Vec<&[i64]>| -> Vec<Vec<LatLon>> {
        assemble_rings(ways)
            .iter()
            .filter_map(|ring| positions(ring, extract))
            .collect()
    };
    let (outer, inner) = (
        ring_points(member_ways(false)),
        ring_points(member_ways(true)),
    );
    polygon_centroid(&outer, &inner).or_else(|| {
        let present: Vec<LatLon> = member_ways(false)
            .into_iter()
            .flatten()
            .filter_map(|id| extract.position(*id))
            .collect();
        mean(&present)
    })
}

/// The step between house numbers on an interpolation line, from its `addr:interpolation`.
fn interpolation_step(scheme: &str) -> Option<i64> {
    match scheme {
        "odd" | "even" => Some(2),
        "all" => Some(1),
        other => other.parse().ok().filter(|&step: &i64| step > 0),
    }
}

/// The point `fraction` of the way along a polyline.
fn along(points: &[LatLon], fraction: f64) -> LatLon {
    let lengths: Vec<f64> = points
        .windows(2)
        .map(|w| w[0].distance_metres(w[1]))
        .collect();
    let mut remaining = lengths.iter().sum::<f64>() * fraction;
    for (pair, length) in points.windows(2).zip(&lengths) {
        if remaining <= *length && *length > 0.0 {
            return interpolate(pair[0], pair[1], remaining / length);
        }
        remaining -= length;
    }
    *points.last().expect("a line has points")
}

/// The addresses between the numbered nodes of every `addr:interpolation` way, each at its
/// interpolated position, with the street, postcode and city of the node before it. Numbers
/// already mapped on that street are left to their own elements.
pub(crate) fn interpolated_addresses(extract: &OsmExtract) -> Vec<(LatLon, Tags)> {
    let numbered: HashMap<i64, &Tags> = extract
        .tagged_nodes
        .iter()
        .filter(|n| n.tags.has("addr:housenumber"))
        .map(|n| (n.id, &n.tags))
        .collect();
    let mapped: HashSet<(&str, &str)> = extract
        .tagged_nodes
        .iter()
        .map(|n| &n.tags)
        .chain(extract.ways.iter().map(|w| &w.tags))
        .filter_map(|t| Some((t.get("addr:street")?, t.get("addr:housenumber")?)))
        .collect();
    let mut addresses = Vec::new();
    for way in &extract.ways {
        let Some(step) = way
            .tags
            .get("addr:interpolation")
            .and_then(interpolation_step)
        else {
            continue;
        };
        let Some(points) = positions(&way.node_ids, extract) else {
            continue; // clipped by the extract's border
        };
        let stops: Vec<(usize, &Tags, i64)> = way
            .node_ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let tags = numbered.get(id)?;
                let number = tags.get("addr:housenumber")?.trim().parse().ok()?;
                Some((i, *tags, number))
            })
            .collect();
        for pair in stops.windows(2) {
            let ((i, tags, first), (j, _, last)) = (pair[0], pair[1]);
            let Some(street) = way.tags.get("addr:street").or(tags.get("addr:street")) else {
                continue;
            };
            let direction = (last - first).signum();
            let count = (last - first).abs() / step;
            if direction == 0 || count > MAX_INTERPOLATED_PER_SEGMENT {
                continue;
            }
            for k in 1..count {
                let number = first + direction * k * step;
                if mapped.contains(&(street, number.to_string().as_str())) {
                    continue;
                }
                let fraction = (number - first) as f64 / (last - first) as f64;
                let position = along(&points[i..=j], fraction);
                let mut house: Vec<(String, String)> = vec![
                    ("addr:housenumber".into(), number.to_string()),
                    ("addr:street".into(), street.to_owned()),
                ];
                for key in ["addr:postcode", "addr:city", "addr:country"] {
                    if let Some(value) = tags.get(key) {
                        house.push((key.into(), value.to_owned()));
                    }
                }
                addresses.push((position, house.into_iter().collect()));
            }
        }
    }
    addresses
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::fixtures::ExtractBuilder;
    use crate::osm::{OsmMember, OsmNode};

    fn at(x: f64, y: f64) -> LatLon {
        ExtractBuilder::at(x, y)
    }

    #[test]
    fn a_closed_way_is_placed_at_its_centroid_not_its_vertex_mean() {
        // An L-shaped building: the vertex mean and the area centroid differ.
        let extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 2.0, 0.0)
            .node(3, 2.0, 1.0)
            .node(4, 1.0, 1.0)
            .node(5, 1.0, 2.0)
            .node(6, 0.0, 2.0)
            .build();
        let centroid = way_position(&[1, 2, 3, 4, 5, 6, 1], &extract).unwrap();
        // Two unit squares (centre 1, 0.5) and one (0.5, 1.5): area-weighted (5/6, 5/6).
        assert!(
            centroid.distance_metres(at(5.0 / 6.0, 5.0 / 6.0)) < 0.5,
            "{centroid:?}"
        );
        let open = way_position(&[1, 2], &extract).unwrap();
        assert!(open.distance_metres(at(1.0, 0.0)) < 0.5);
    }

    #[test]
    fn a_multipolygon_joins_its_outer_ways_and_cuts_its_holes() {
        let mut extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 4.0, 0.0)
            .node(3, 4.0, 4.0)
            .node(4, 0.0, 4.0)
            .node(11, 2.0, 0.5)
            .node(12, 3.5, 0.5)
            .node(13, 3.5, 3.5)
            .node(14, 2.0, 3.5)
            .build();
        // The outer square in two open halves (one drawn backwards), a hole on its east side.
        extract.area_member_ways.insert(100, vec![1, 2, 3]);
        extract.area_member_ways.insert(101, vec![1, 4, 3]);
        extract
            .area_member_ways
            .insert(102, vec![11, 12, 13, 14, 11]);
        let member = |id, role: &str| OsmMember {
            kind: MemberKind::Way,
            id,
            role: role.to_owned(),
        };
        let area = OsmRelation {
            id: 1,
            members: vec![
                member(100, "outer"),
                member(101, "outer"),
                member(102, "inner"),
            ],
            tags: Tags::default(),
        };
        let centroid = area_position(&area, &extract).unwrap();
        // Square 16 at (2, 2) less hole 4.5 at (2.75, 2): x = (32 - 12.375) / 11.5.
        let expected = at((32.0 - 12.375) / 11.5, 2.0);
        assert!(centroid.distance_metres(expected) < 1.0, "{centroid:?}");
    }

    #[test]
    fn interpolation_lines_spread_their_numbers() {
        let house = |number: &str| {
            vec![
                ("addr:housenumber", number.to_owned()),
                ("addr:street", "Elliott Street".to_owned()),
                ("addr:postcode", "21224".to_owned()),
            ]
        };
        let mut extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, 0.0)
            .node(3, 2.0, 0.0)
            .way(&[1, 2, 3], &[("addr:interpolation", "odd")])
            .build();
        for (id, number, x) in [(1, "3121", 0.0), (3, "3141", 2.0)] {
            extract.tagged_nodes.push(OsmNode {
                id,
                position: at(x, 0.0),
                tags: house(number).into_iter().collect(),
            });
        }
        // 3129 is mapped on its own: not repeated.
        extract.tagged_nodes.push(OsmNode {
            id: 9,
            position: at(0.8, 0.3),
            tags: house("3129").into_iter().collect(),
        });
        let found = interpolated_addresses(&extract);
        let numbers: Vec<&str> = found
            .iter()
            .map(|(_, t)| t.get("addr:housenumber").unwrap())
            .collect();
        assert_eq!(
            numbers,
            [
                "3123", "3125", "3127", "3131", "3133", "3135", "3137", "3139"
            ]
        );
        // 3131 is half way along the two-cell line.
        let (position, tags) = &found[3];
        assert!(position.distance_metres(at(1.0, 0.0)) < 0.5);
        assert_eq!(tags.get("addr:postcode"), Some("21224"));
        assert_eq!(tags.get("addr:street"), Some("Elliott Street"));
        assert_eq!(interpolation_step("alphabetic"), None);
        assert_eq!(interpolation_step("5"), Some(5));
    }
}
