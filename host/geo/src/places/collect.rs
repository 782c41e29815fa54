//! Turning an extract's addresses, streets, settlements and points of interest into entries.

use std::collections::HashMap;

use rstar::RTree;
use rstar::primitives::GeomWithData;

use crate::coords::{LatLon, LocalProjection};
use crate::osm::{OsmExtract, Tags, is_point_of_interest};

use super::shapes::{area_position, interpolated_addresses, way_position};
use super::text;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Kind {
    Address,
    Street,
    Postcode,
    /// City, town or village.
    Settlement,
    /// Suburb, neighbourhood, hamlet, locality and the like.
    Locality,
    PointOfInterest,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Entry {
    pub(crate) kind: Kind,
    pub(crate) display: String,
    pub(crate) position: LatLon,
    pub(crate) postcode: Option<String>,
    /// Tokens of the entry's own name (house number and street, place or shop name).
    pub(crate) name_tokens: Vec<String>,
    /// Tokens that locate it (city, postcode).
    pub(crate) context_tokens: Vec<String>,
}

/// A named street's geometry, for reverse geocoding onto the street.
#[derive(Debug, Clone)]
pub(crate) struct StreetLine {
    pub(crate) entry: u32,
    pub(crate) points: Vec<LatLon>,
}

#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub(crate) entries: Vec<Entry>,
    pub(crate) street_lines: Vec<StreetLine>,
}

/// Countries whose addresses put the street before the house number ("Städtle 43").
const STREET_FIRST_COUNTRIES: &[&str] = &[
    "AD", "AT", "BA", "BE", "CH", "CZ", "DE", "DK", "EE", "ES", "FI", "HR", "HU", "IS", "IT", "LI",
    "LT", "LU", "LV", "NL", "NO", "PL", "PT", "RS", "SE", "SI", "SK",
];

/// How far to look for a city name for entries that lack one.
const CITY_FROM_ADDRESS_METRES: f64 = 500.0;
const CITY_FROM_SETTLEMENT_METRES: f64 = 5_000.0;

/// A raw address before its display name is settled.
struct Address<'a> {
    position: LatLon,
    house_number: &'a str,
    street: &'a str,
    postcode: Option<&'a str>,
    city: Option<&'a str>,
    country: Option<&'a str>,
}

/// Names nearby places: the city of the nearest address that states one, else the nearest
/// city, town or village.
struct AreaNamer<'a> {
    projection: LocalProjection,
    cities_by_address: RTree<GeomWithData<[f64; 2], &'a str>>,
    settlements: RTree<GeomWithData<[f64; 2], &'a str>>,
}

impl<'a> AreaNamer<'a> {
    fn new(
        projection: LocalProjection,
        addresses: &[Address<'a>],
        settlements: &[(LatLon, &'a str)],
    ) -> Self {
        let point = |p: LatLon, name: &'a str| GeomWithData::new(projection.to_plane(p), name);
        Self {
            projection,
            cities_by_address: RTree::bulk_load(
                addresses
                    .iter()
                    .filter_map(|a| a.city.map(|c| point(a.position, c)))
                    .collect(),
            ),
            settlements: RTree::bulk_load(
                settlements
                    .iter()
                    .map(|&(position, name)| point(position, name))
                    .collect(),
            ),
        }
    }

    fn area(&self, at: LatLon) -> Option<&'a str> {
        let query = self.projection.to_plane(at);
        let within = |tree: &RTree<GeomWithData<[f64; 2], &'a str>>, metres: f64| {
            tree.nearest_neighbor_iter_with_distance_2(query)
                .next()
                .filter(|(_, d2)| *d2 <= metres * metres)
                .map(|(hit, _)| hit.data)
        };
        within(&self.cities_by_address, CITY_FROM_ADDRESS_METRES)
            .or_else(|| within(&self.settlements, CITY_FROM_SETTLEMENT_METRES))
    }
}

/// "Name, Area", unless the name already mentions the area ("Schloss Vaduz").
fn with_area(name: &str, area: Option<&str>) -> String {
    let Some(area) = area else {
        return name.to_owned();
    };
    let (name_tokens, area_tokens) = (text::raw_tokens(name), text::raw_tokens(area));
    let mentioned = !area_tokens.is_empty()
        && name_tokens
            .windows(area_tokens.len())
            .any(|window| window == area_tokens.as_slice());
    if mentioned {
        name.to_owned()
    } else {
        format!("{name}, {area}")
    }
}

/// Elements with tags and a representative position: tagged nodes, ways and multipolygons
/// (at their centroid), and the houses of interpolation lines.
fn tagged_elements<'a>(
    extract: &'a OsmExtract,
    interpolated: &'a [(LatLon, Tags)],
) -> Vec<(LatLon, &'a Tags)> {
    let nodes = extract.tagged_nodes.iter().map(|n| (n.position, &n.tags));
    let ways = extract
        .ways
        .iter()
        .filter(|w| !w.tags.has("highway") && !w.tags.has("addr:interpolation"))
        .filter_map(|w| way_position(&w.node_ids, extract).map(|c| (c, &w.tags)));
    let areas = extract
        .areas
        .iter()
        .filter_map(|a| area_position(a, extract).map(|c| (c, &a.tags)));
    let houses = interpolated
        .iter()
        .map(|(position, tags)| (*position, tags));
    nodes.chain(ways).chain(areas).chain(houses).collect()
}

fn settlement_kind(place: &str) -> Option<Kind> {
    match place {
        "city" | "town" | "village" => Some(Kind::Settlement),
        "suburb" | "quarter" | "neighbourhood" | "hamlet" | "locality" | "isolated_dwelling"
        | "borough" | "city_block" | "square" => Some(Kind::Locality),
        _ => None,
    }
}

fn most_common<'a>(values: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for value in values {
        *counts.entry(value).or_default() += 1;
    }
    // Ties broken by name so the choice is deterministic.
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(value, _)| value)
}

pub(crate) fn collect(extract: &OsmExtract) -> Collected {
    let projection = LocalProjection::fitting(extract.tagged_nodes.iter().map(|n| n.position));
    let interpolated = interpolated_addresses(extract);
    let elements = tagged_elements(extract, &interpolated);

    let addresses: Vec<Address> = elements
        .iter()
        .filter_map(|&(position, tags)| {
            Some(Address {
                position,
                house_number: tags.get("addr:housenumber")?,
                street: tags.get("addr:street").or(tags.get("addr:place"))?,
                postcode: tags.get("addr:postcode"),
                city: tags.get("addr:city"),
                country: tags.get("addr:country"),
            })
        })
        .collect();
    let settlements: Vec<(LatLon, &str)> = elements
        .iter()
        .filter(|(_, tags)| tags.get("place").and_then(settlement_kind) == Some(Kind::Settlement))
        .filter_map(|&(position, tags)| Some((position, tags.get("name")?)))
        .collect();
    let namer = AreaNamer::new(projection, &addresses, &settlements);
    let default_country = most_common(addresses.iter().filter_map(|a| a.country));

    let mut collected = Collected::default();
    for address in &addresses {
        let city = address.city.or_else(|| namer.area(address.position));
        let street_first = address
            .country
            .or(default_country)
            .is_some_and(|c| STREET_FIRST_COUNTRIES.contains(&c.to_uppercase().as_str()));
        let line = if street_first {
            format!("{} {}", address.street, address.house_number)
        } else {
            format!("{} {}", address.house_number, address.street)
        };
        collected.entries.push(Entry {
            kind: Kind::Address,
            display: with_area(&line, city),
            position: address.position,
            postcode: address.postcode.map(str::to_owned),
            name_tokens: text::tokens(&line),
            context_tokens: context_tokens(city, address.postcode),
        });
    }

    collect_postcodes(&addresses, &mut collected);
    collect_named_elements(&elements, &namer, &mut collected);
    collect_streets(extract, &namer, &mut collected);
    collected
}

fn context_tokens(city: Option<&str>, postcode: Option<&str>) -> Vec<String> {
    city.into_iter()
        .chain(postcode)
        .flat_map(text::tokens)
        .collect()
}

/// One entry per postcode, at the centre of its addresses, named with its most common city.
fn collect_postcodes(addresses: &[Address], collected: &mut Collected) {
    let mut by_postcode: HashMap<&str, Vec<&Address>> = HashMap::new();
    for address in addresses {
        if let Some(postcode) = address.postcode {
            by_postcode.entry(postcode).or_default().push(address);
        }
    }
    let mut postcodes: Vec<_> = by_postcode.into_iter().collect();
    postcodes.sort_by_key(|(postcode, _)| *postcode);
    for (postcode, members) in postcodes {
        let n = members.len() as f64;
        let position = LatLon::new(
            members.iter().map(|a| a.position.lat).sum::<f64>() / n,
            members.iter().map(|a| a.position.lon).sum::<f64>() / n,
        );
        let city = most_common(members.iter().filter_map(|a| a.city));
        let display = match city {
            Some(city) => format!("{postcode} {city}"),
            None => postcode.to_owned(),
        };
        collected.entries.push(Entry {
            kind: Kind::Postcode,
            display,
            position,
            postcode: Some(postcode.to_owned()),
            name_tokens: text::tokens(postcode),
            context_tokens: city.map(text::tokens).unwrap_or_default(),
        });
    }
}

/// Settlements, localities and named points of interest.
fn collect_named_elements(
    elements: &[(LatLon, &Tags)],
    namer: &AreaNamer,
    collected: &mut Collected,
) {
    for &(position, tags) in elements {
        let Some(name) = tags.get("name") else {
            continue;
        };
        let kind = match tags.get("place").and_then(settlement_kind) {
            Some(kind) => kind,
            None if is_point_of_interest(tags) => Kind::PointOfInterest,
            None => continue,
        };
        let area = match kind {
            Kind::Settlement => None,
            _ => tags.get("addr:city").or_else(|| namer.area(position)),
        };
        let postcode = tags.get("addr:postcode");
        collected.entries.push(Entry {
            kind,
            display: with_area(name, area),
            position,
            postcode: postcode.map(str::to_owned),
            name_tokens: text::tokens(name),
            context_tokens: context_tokens(area, postcode),
        });
    }
}

/// Named highways: ways of one name that share nodes form a street piece; pieces with the same
/// name and area become one entry, placed at the street node nearest their common centre.
fn collect_streets(extract: &OsmExtract, namer: &AreaNamer, collected: &mut Collected) {
    let named: Vec<(&str, Vec<LatLon>, &[i64])> = extract
        .ways
        .iter()
        .filter(|w| w.tags.has("highway"))
        .filter_map(|w| {
            let points: Vec<LatLon> = w
                .node_ids
                .iter()
                .filter_map(|id| extract.position(*id))
                .collect();
            Some((w.tags.get("name")?, points, w.node_ids.as_slice()))
        })
        .filter(|(_, points, _)| !points.is_empty())
        .collect();

    let mut streets: Vec<(&str, Option<&str>, Vec<usize>)> = Vec::new();
    let mut street_of: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    for piece in touching_pieces(&named) {
        let name = named[piece[0]].0;
        let points = piece.iter().flat_map(|&w| named[w].1.iter().copied());
        let area = namer.area(nearest_to_centre(points).expect("pieces have points"));
        let street = *street_of.entry((name, area)).or_insert_with(|| {
            streets.push((name, area, Vec::new()));
            streets.len() - 1
        });
        streets[street].2.extend(piece);
    }

    for (name, area, ways) in streets {
        let points = ways.iter().flat_map(|&w| named[w].1.iter().copied());
        let position = nearest_to_centre(points).expect("streets have points");
        let entry = collected.entries.len() as u32;
        collected.entries.push(Entry {
            kind: Kind::Street,
            display: with_area(name, area),
            position,
            postcode: None,
            name_tokens: text::tokens(name),
            context_tokens: context_tokens(area, None),
        });
        collected
            .street_lines
            .extend(ways.iter().map(|&w| StreetLine {
                entry,
                points: named[w].1.clone(),
            }));
    }
}

/// Groups ways (by index) that carry the same name and share a node, in input order.
fn touching_pieces(named: &[(&str, Vec<LatLon>, &[i64])]) -> Vec<Vec<usize>> {
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut parent: Vec<usize> = (0..named.len()).collect();
    let mut first_way_at: HashMap<(&str, i64), usize> = HashMap::new();
    for (way, (name, _, node_ids)) in named.iter().enumerate() {
        for &node in *node_ids {
            if let Some(&other) = first_way_at.get(&(*name, node)) {
                let (a, b) = (root(&mut parent, way), root(&mut parent, other));
                parent[a.max(b)] = a.min(b);
            } else {
                first_way_at.insert((*name, node), way);
            }
        }
    }
    let mut pieces: Vec<Vec<usize>> = Vec::new();
    let mut piece_of_root: HashMap<usize, usize> = HashMap::new();
    for way in 0..named.len() {
        let r = root(&mut parent, way);
        let piece = *piece_of_root.entry(r).or_insert_with(|| {
            pieces.push(Vec::new());
            pieces.len() - 1
        });
        pieces[piece].push(way);
    }
    pieces
}

/// The point nearest the mean of `points` (so it lies on the street itself).
fn nearest_to_centre(points: impl Iterator<Item = LatLon> + Clone) -> Option<LatLon> {
    let (sum_lat, sum_lon, count) = points.clone().fold((0.0, 0.0, 0usize), |(la, lo, n), p| {
        (la + p.lat, lo + p.lon, n + 1)
    });
    if count == 0 {
        return None;
    }
    let centre = LatLon::new(sum_lat / count as f64, sum_lon / count as f64);
    points.min_by(|a, b| {
        a.distance_metres(centre)
            .total_cmp(&b.distance_metres(centre))
    })
}
