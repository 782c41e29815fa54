//! "Demo City": a generated, deterministic city written as a real OSM PBF file, so demos and
//! tests load it through the same code path as a downloaded extract.
//!
//! The city is fictional and sits in an uninhabited stretch of the Rub' al Khali desert
//! (bounding box 19.9998..20.0202 N, 49.997..50.021 E; no real settlement nearby). Streets form
//! a 21 × 21 grid with 0.001° spacing (blocks of about 111 m × 105 m), junction (column `i`,
//! row `j`) at 20 + 0.001·j N, 50 + 0.001·i E:
//!
//! - Avenues run south-north (columns west to east, named after trees: "Acacia Avenue" ...
//!   "Willow Avenue"; column 10 is "Central Avenue", a primary road at 60 km/h; "Acacia" and
//!   "Willow" are 50 km/h secondaries; the rest are 30 km/h residential streets).
//! - Streets run west-east (rows south to north, "1st Street" ... "21st Street"; "6th" and
//!   "16th Street" are 50 km/h secondaries, the others 30 km/h residential).
//! - One-way: "3rd Street" and "13th Street" eastbound with a bicycle contraflow; "4th Street"
//!   and "14th Street" westbound for everyone; "Cedar Avenue" and "Maple Avenue" northbound.
//! - "Market Walk", the pedestrian zone around the "Old Market" junction (row 7 between columns
//!   6 and 8, column 7 between rows 6 and 8): `highway=pedestrian` + `bicycle=yes`.
//! - The "Demo River" flows west-east between rows 10 and 11; only avenues 3 ("Dogwood"), 10
//!   ("Central") and 17 ("Rowan") cross it on bridges, plus the bypass.
//! - "Demo Bypass", a 100 km/h `highway=trunk` + `motorroad=yes` two blocks west of the grid,
//!   linked to the grid's west corners at rows 0 and 20; bicycles may not use it.
//! - Addresses on both sides of every street block (column `i` block: `10i+1`, `10i+3` south
//!   side, `10i+2`, `10i+4` north side), the first of each side as an address node, the second
//!   as a building; postcodes D1001 (south-west), D1002 (south-east), D2001 (north-west), D2002
//!   (north-east); city "Demo City". Places "Demo City", "Northbank", "Southbank", "Old
//!   Market", and a few named shops, a cafe and a museum.
//!
//! Fixture addresses: "41 4th Street" (south side of row 3 between columns 4 and 5) at
//! 20.00285 N, 50.0043 E, postcode D1001; "102 17th Street" (north side of row 16 between
//! columns 10 and 11) at 20.01615 N, 50.0103 E, postcode D2002.

use std::collections::BTreeMap;

use crate::coords::LatLon;
use crate::pbf_writer::PbfWriter;

const ORIGIN: LatLon = LatLon::new(20.0, 50.0);
const SPACING_DEGREES: f64 = 0.001;
/// Houses stand this far (in degrees of latitude, ~17 m) from the street centre line.
const HOUSE_SETBACK_DEGREES: f64 = 0.000_15;
/// Columns west of column 0 where the bypass runs.
const BYPASS_COLUMN: i64 = -2;

const AVENUE_NAMES: [&str; 21] = [
    "Acacia", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hawthorn", "Ironwood",
    "Juniper", "Central", "Laurel", "Maple", "Nutmeg", "Oak", "Pine", "Quince", "Rowan", "Spruce",
    "Tamarind", "Willow",
];

/// The generated Demo City as PBF bytes (deterministic: same bytes on every call).
pub fn demo_city_pbf() -> Vec<u8> {
    CityPlan {
        streets: 21,
        furnished: true,
    }
    .to_pbf()
}

/// A plain grid city of `streets × streets` junctions with Demo City's road layout rules
/// (arterials, one-ways, river and bridges, bypass) but no addresses or places, for measuring
/// how routing scales. `streets` is clamped to at least 21.
pub fn grid_city_pbf(streets: usize) -> Vec<u8> {
    CityPlan {
        streets: streets.max(21),
        furnished: false,
    }
    .to_pbf()
}

struct CityPlan {
    /// Streets (and avenues) per side.
    streets: usize,
    /// Adds the pedestrian zone, addresses, places and points of interest.
    furnished: bool,
}

/// Accumulates the file while handing out element ids.
struct CityWriter {
    writer: PbfWriter,
    next_node_id: i64,
    next_way_id: i64,
    columns: i64,
}

impl CityWriter {
    fn junction_id(&self, column: i64, row: i64) -> i64 {
        1 + row * (self.columns - BYPASS_COLUMN + 1) + (column - BYPASS_COLUMN)
    }

    fn node(&mut self, position: LatLon, tags: &[(&str, &str)]) -> i64 {
        let id = self.next_node_id;
        self.next_node_id += 1;
        self.writer.add_node(id, position, tags);
        id
    }

    fn way(&mut self, node_ids: &[i64], tags: &[(&str, &str)]) {
        let id = self.next_way_id;
        self.next_way_id += 1;
        self.writer.add_way(id, node_ids, tags);
    }
}

fn at(column: f64, row: f64) -> LatLon {
    LatLon::new(
        ORIGIN.lat + row * SPACING_DEGREES,
        ORIGIN.lon + column * SPACING_DEGREES,
    )
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Tags of a grid road; `class` and `maxspeed` vary by arterial status.
struct RoadTags {
    name: String,
    class: &'static str,
    maxspeed: &'static str,
    extra: Vec<(&'static str, &'static str)>,
}

impl RoadTags {
    fn as_pairs(&self) -> Vec<(&str, &str)> {
        let mut pairs = vec![
            ("highway", self.class),
            ("name", self.name.as_str()),
            ("maxspeed", self.maxspeed),
        ];
        pairs.extend(self.extra.iter().copied());
        pairs
    }
}

impl CityPlan {
    fn river_row(&self) -> usize {
        (self.streets - 1) / 2
    }

    fn is_bridge_column(&self, column: usize) -> bool {
        column % 7 == 3
    }

    fn in_pedestrian_zone(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        let inside = |(c, r): (usize, usize)| (6..=8).contains(&c) && (6..=8).contains(&r);
        let on_market_lines = (a.0 == 7 && b.0 == 7) || (a.1 == 7 && b.1 == 7);
        self.furnished && inside(a) && inside(b) && on_market_lines
    }

    fn avenue_tags(&self, column: usize) -> RoadTags {
        let name = if self.streets == AVENUE_NAMES.len() {
            format!("{} Avenue", AVENUE_NAMES[column])
        } else {
            format!("{} Avenue", ordinal(column + 1))
        };
        let (class, maxspeed) = if column == self.streets / 2 {
            ("primary", "60")
        } else if column.is_multiple_of(10) {
            ("secondary", "50")
        } else {
            ("residential", "30")
        };
        let extra = if column % 10 == 2 {
            vec![("oneway", "yes")]
        } else {
            Vec::new()
        };
        RoadTags {
            name,
            class,
            maxspeed,
            extra,
        }
    }

    fn street_tags(&self, row: usize) -> RoadTags {
        let (class, maxspeed) = if row % 10 == 5 {
            ("secondary", "50")
        } else {
            ("residential", "30")
        };
        let extra = match row % 10 {
            2 => vec![("oneway", "yes"), ("oneway:bicycle", "no")],
            3 => vec![("oneway", "-1")],
            _ => Vec::new(),
        };
        RoadTags {
            name: format!("{} Street", ordinal(row + 1)),
            class,
            maxspeed,
            extra,
        }
    }

    fn to_pbf(&self) -> Vec<u8> {
        let n = self.streets;
        let mut city = CityWriter {
            writer: PbfWriter::default(),
            next_node_id: 0,
            next_way_id: 1,
            columns: n as i64,
        };
        city.next_node_id = city.junction_id(n as i64, n as i64) + 1;
        for row in 0..n {
            for column in BYPASS_COLUMN..n as i64 {
                let id = city.junction_id(column, row as i64);
                let is_grid = column >= 0;
                let is_bypass = column == BYPASS_COLUMN;
                let is_link = column == BYPASS_COLUMN + 1 && (row == 0 || row == n - 1);
                if is_grid || is_bypass || is_link {
                    city.writer.add_node(id, at(column as f64, row as f64), &[]);
                }
            }
        }
        self.write_streets(&mut city);
        self.write_avenues(&mut city);
        self.write_bypass(&mut city);
        let river = [
            city.node(at(-3.0, self.river_row() as f64 + 0.5), &[]),
            city.node(at(n as f64, self.river_row() as f64 + 0.5), &[]),
        ];
        city.way(&river, &[("waterway", "river"), ("name", "Demo River")]);
        if self.furnished {
            self.write_addresses(&mut city);
            self.write_places(&mut city);
        }
        city.writer.finish()
    }

    /// Emits `line` (a sequence of grid cells) as ways, switching to "Market Walk" inside the
    /// pedestrian zone.
    fn write_line(&self, city: &mut CityWriter, line: &[(usize, usize)], tags: &RoadTags) {
        let mut start = 0;
        while start + 1 < line.len() {
            let pedestrian = self.in_pedestrian_zone(line[start], line[start + 1]);
            let mut end = start + 1;
            while end + 1 < line.len()
                && self.in_pedestrian_zone(line[end], line[end + 1]) == pedestrian
            {
                end += 1;
            }
            let ids: Vec<i64> = line[start..=end]
                .iter()
                .map(|&(c, r)| city.junction_id(c as i64, r as i64))
                .collect();
            if pedestrian {
                city.way(
                    &ids,
                    &[
                        ("highway", "pedestrian"),
                        ("name", "Market Walk"),
                        ("bicycle", "yes"),
                    ],
                );
            } else {
                city.way(&ids, &tags.as_pairs());
            }
            start = end;
        }
    }

    fn write_streets(&self, city: &mut CityWriter) {
        for row in 0..self.streets {
            let line: Vec<(usize, usize)> = (0..self.streets).map(|c| (c, row)).collect();
            self.write_line(city, &line, &self.street_tags(row));
        }
    }

    fn write_avenues(&self, city: &mut CityWriter) {
        let river = self.river_row();
        for column in 0..self.streets {
            let tags = self.avenue_tags(column);
            let south: Vec<(usize, usize)> = (0..=river).map(|r| (column, r)).collect();
            let north: Vec<(usize, usize)> =
                (river + 1..self.streets).map(|r| (column, r)).collect();
            self.write_line(city, &south, &tags);
            self.write_line(city, &north, &tags);
            if self.is_bridge_column(column) {
                let ids = [
                    city.junction_id(column as i64, river as i64),
                    city.junction_id(column as i64, river as i64 + 1),
                ];
                let mut pairs = tags.as_pairs();
                pairs.extend([("bridge", "yes"), ("layer", "1")]);
                city.way(&ids, &pairs);
            }
        }
    }

    fn write_bypass(&self, city: &mut CityWriter) {
        let last = self.streets as i64 - 1;
        let river = self.river_row() as i64;
        let bypass = [
            ("highway", "trunk"),
            ("name", "Demo Bypass"),
            ("maxspeed", "100"),
            ("motorroad", "yes"),
        ];
        let column_ids = |city: &CityWriter, rows: std::ops::RangeInclusive<i64>| -> Vec<i64> {
            rows.map(|r| city.junction_id(BYPASS_COLUMN, r)).collect()
        };
        let south = column_ids(city, 0..=river);
        let bridge = column_ids(city, river..=river + 1);
        let north = column_ids(city, river + 1..=last);
        city.way(&south, &bypass);
        let mut bridge_tags = bypass.to_vec();
        bridge_tags.extend([("bridge", "yes"), ("layer", "1")]);
        city.way(&bridge, &bridge_tags);
        city.way(&north, &bypass);
        let link = [
            ("highway", "trunk_link"),
            ("maxspeed", "60"),
            ("motorroad", "yes"),
        ];
        for row in [0, last] {
            let ids: Vec<i64> = (BYPASS_COLUMN..=0)
                .map(|c| city.junction_id(c, row))
                .collect();
            city.way(&ids, &link);
        }
    }

    fn postcode(&self, column: usize, row: usize) -> &'static str {
        let north = row > self.river_row();
        let east = column >= self.streets / 2;
        match (north, east) {
            (false, false) => "D1001",
            (false, true) => "D1002",
            (true, false) => "D2001",
            (true, true) => "D2002",
        }
    }

    fn write_addresses(&self, city: &mut CityWriter) {
        for row in 0..self.streets {
            for column in 0..self.streets - 1 {
                let street = if self.in_pedestrian_zone((column, row), (column + 1, row)) {
                    "Market Walk".to_owned()
                } else {
                    self.street_tags(row).name
                };
                let postcode = self.postcode(column, row);
                // (number offset, side: -1 south / +1 north, position along the block)
                for (offset, side, along) in
                    [(1, -1.0, 0.3), (3, -1.0, 0.7), (2, 1.0, 0.3), (4, 1.0, 0.7)]
                {
                    let number = (10 * column + offset).to_string();
                    let centre = LatLon::new(
                        at(0.0, row as f64).lat + side * HOUSE_SETBACK_DEGREES,
                        at(column as f64 + along, 0.0).lon,
                    );
                    let tags = [
                        ("addr:housenumber", number.as_str()),
                        ("addr:street", street.as_str()),
                        ("addr:postcode", postcode),
                        ("addr:city", "Demo City"),
                    ];
                    if along < 0.5 {
                        city.node(centre, &tags);
                    } else {
                        self.write_building(city, centre, &tags);
                    }
                }
            }
        }
    }

    /// A square building of ~10 m around `centre`, carrying the address tags.
    fn write_building(&self, city: &mut CityWriter, centre: LatLon, tags: &[(&str, &str)]) {
        let half = 0.000_05;
        let corners: Vec<i64> = [(-half, -half), (-half, half), (half, half), (half, -half)]
            .iter()
            .map(|(dlat, dlon)| city.node(LatLon::new(centre.lat + dlat, centre.lon + dlon), &[]))
            .collect();
        let mut ring = corners.clone();
        ring.push(corners[0]);
        let mut pairs = vec![("building", "house")];
        pairs.extend_from_slice(tags);
        city.way(&ring, &pairs);
    }

    fn write_places(&self, city: &mut CityWriter) {
        let middle = (self.streets / 2) as f64;
        let river = self.river_row() as f64;
        let places: BTreeMap<&str, (&str, &str, LatLon)> = BTreeMap::from([
            ("Demo City", ("place", "city", at(middle, middle))),
            ("Northbank", ("place", "suburb", at(middle, river + 5.0))),
            ("Southbank", ("place", "suburb", at(middle, river - 5.0))),
            ("Old Market", ("place", "neighbourhood", at(7.0, 7.0))),
            ("Riverside Café", ("amenity", "cafe", at(10.3, river + 0.2))),
            ("Demo Bakery", ("shop", "bakery", at(4.5, 3.2))),
            ("City Museum", ("tourism", "museum", at(13.5, 16.2))),
            ("Old Market Pharmacy", ("amenity", "pharmacy", at(6.8, 7.2))),
        ]);
        for (name, (key, value, position)) in places {
            city.node(position, &[(key, value), ("name", name)]);
        }
    }
}

#[cfg(test)]
mod tests;
