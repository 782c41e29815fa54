//! Search and reverse geocoding on a small hand-written town (cells of ~111 m).

use super::*;
use crate::graph::fixtures::ExtractBuilder;

fn address(number: &str, street: &str, postcode: &str) -> Vec<(&'static str, String)> {
    vec![
        ("addr:housenumber", number.to_owned()),
        ("addr:street", street.to_owned()),
        ("addr:postcode", postcode.to_owned()),
    ]
}

fn with_node(
    builder: ExtractBuilder,
    id: i64,
    x: f64,
    y: f64,
    tags: &[(&'static str, String)],
) -> ExtractBuilder {
    let pairs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
    builder.tagged_node(id, x, y, &pairs)
}

/// Springfield: "Main Street" (two touching ways) along y = 0 from x = 0 to 4, "Oak Lane"
/// along x = 2 northwards; addresses 10-16 along Main Street; a second "Main Street" with
/// number 22 in Shelbyville, 30 cells east.
fn springfield() -> PlaceIndex {
    let mut b = ExtractBuilder::default()
        .node(1, 0.0, 0.0)
        .node(2, 2.0, 0.0)
        .node(3, 4.0, 0.0)
        .node(4, 2.0, 3.0)
        .node(5, 30.0, 0.0)
        .node(6, 31.0, 0.0)
        .way(
            &[1, 2],
            &[("highway", "residential"), ("name", "Main Street")],
        )
        .way(
            &[2, 3],
            &[("highway", "residential"), ("name", "Main Street")],
        )
        .way(&[2, 4], &[("highway", "residential"), ("name", "Oak Lane")])
        .way(
            &[5, 6],
            &[("highway", "residential"), ("name", "Main Street")],
        )
        .tagged_node(20, 2.0, 1.5, &[("place", "town"), ("name", "Springfield")])
        .tagged_node(21, 30.5, 1.0, &[("place", "town"), ("name", "Shelbyville")])
        .tagged_node(22, 3.0, 0.3, &[("amenity", "cafe"), ("name", "Blue Café")]);
    for (i, number) in ["10", "12", "14", "16"].iter().enumerate() {
        let mut tags = address(number, "Main Street", "99999");
        tags.push(("addr:city", "Springfield".to_owned()));
        b = with_node(b, 100 + i as i64, 0.5 + i as f64 * 0.5, 0.15, &tags);
    }
    b = with_node(b, 110, 30.5, 0.15, &address("22", "Main Street", "88888"));
    // A building with an address: its centroid is the address position.
    b = b
        .node(200, 1.0, -0.1)
        .node(201, 1.2, -0.1)
        .node(202, 1.2, -0.3)
        .node(203, 1.0, -0.3)
        .way(
            &[200, 201, 202, 203, 200],
            &[
                ("building", "yes"),
                ("addr:housenumber", "11"),
                ("addr:street", "Main Street"),
            ],
        );
    PlaceIndex::build(&b.build())
}

fn names(results: &[Place]) -> Vec<&str> {
    results.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn exact_address_comes_first() {
    let index = springfield();
    let results = index.search("12 Main Street", None, 5);
    assert_eq!(results[0].name, "12 Main Street, Springfield");
    assert_eq!(results[0].postcode.as_deref(), Some("99999"));
    let expected = ExtractBuilder::at(1.0, 0.15);
    assert!(LatLon::new(results[0].latitude, results[0].longitude).distance_metres(expected) < 0.1);
    // Without an exact match for every word, near misses follow.
    assert!(results[1..].iter().all(|p| p.name.contains("Main Street")));
    // Shelbyville's address takes its city from the nearest town.
    let results = index.search("22 Main Street", None, 1);
    assert_eq!(names(&results), ["22 Main Street, Shelbyville"]);
}

#[test]
fn near_breaks_ties_between_equal_matches() {
    let index = springfield();
    let near_shelbyville = Some(ExtractBuilder::at(30.0, 0.0));
    let streets = index.search("Main Street", near_shelbyville, 2);
    assert_eq!(
        names(&streets),
        ["Main Street, Shelbyville", "Main Street, Springfield"]
    );
    let near_springfield = Some(ExtractBuilder::at(1.0, 0.0));
    let streets = index.search("Main Street", near_springfield, 2);
    assert_eq!(
        names(&streets),
        ["Main Street, Springfield", "Main Street, Shelbyville"]
    );
}

#[test]
fn streets_are_merged_and_rank_above_their_addresses() {
    let index = springfield();
    let results = index.search("main street", None, 10);
    let mut streets = names(&results)[..2].to_vec();
    streets.sort();
    assert_eq!(
        streets,
        ["Main Street, Shelbyville", "Main Street, Springfield"],
        "the two touching ways are one street"
    );
    assert!(
        names(&results)[2..]
            .iter()
            .all(|n| n.starts_with(char::is_numeric))
    );
}

#[test]
fn abbreviations_prefixes_and_typos() {
    let index = springfield();
    for query in [
        "12 Main St",
        "12 main st.",
        "12 Mian Street",
        "12 Main Stret",
        "12 Main Str",
        "12 Mai",
    ] {
        let results = index.search(query, None, 1);
        assert_eq!(names(&results), ["12 Main Street, Springfield"], "{query}");
    }
    assert!(
        index
            .search("13 Main Street", None, 5)
            .iter()
            .all(|p| !p.name.starts_with("13"))
    );
}

#[test]
fn one_unknown_token_is_tolerated_but_ranked_lower() {
    let index = springfield();
    let results = index.search("12 Main Street Nowhere", None, 3);
    assert_eq!(results[0].name, "12 Main Street, Springfield");
    // A single unknown word finds nothing, and neither does a number with an unknown word.
    assert!(index.search("Nowhere", None, 3).is_empty());
    assert!(index.search("12 Nowhere", None, 3).is_empty());
    // An unbounded limit lists every partial match: six Main Street addresses, two streets.
    assert_eq!(index.search("12 Main Street", None, usize::MAX).len(), 8);
    assert!(index.search("", None, 3).is_empty());
    assert!(index.search("12 Main Street", None, 0).is_empty());
}

#[test]
fn postcode_query_finds_the_postcode_area_then_its_addresses() {
    let index = springfield();
    let results = index.search("99999", None, 4);
    assert_eq!(results[0].name, "99999 Springfield");
    assert!(
        results
            .iter()
            .all(|p| p.postcode.as_deref() == Some("99999"))
    );
    let area = ExtractBuilder::at(1.25, 0.15);
    assert!(LatLon::new(results[0].latitude, results[0].longitude).distance_metres(area) < 1.0);
}

#[test]
fn towns_and_points_of_interest() {
    let index = springfield();
    assert_eq!(index.search("Springfield", None, 1)[0].name, "Springfield");
    assert_eq!(
        index.search("blue cafe", None, 1)[0].name,
        "Blue Café, Springfield"
    );
    assert_eq!(
        index.search("Blue Café", None, 1)[0].name,
        "Blue Café, Springfield"
    );
}

#[test]
fn building_addresses_use_the_centroid() {
    let index = springfield();
    let results = index.search("11 Main Street", None, 1);
    assert_eq!(results[0].name, "11 Main Street, Springfield");
    let centroid = ExtractBuilder::at(1.1, -0.2);
    assert!(LatLon::new(results[0].latitude, results[0].longitude).distance_metres(centroid) < 0.5);
}

#[test]
fn reverse_prefers_addresses_then_streets() {
    let index = springfield();
    // 10 m from "14 Main Street".
    let at_house = ExtractBuilder::at(1.5, 0.24);
    let place = index.reverse(at_house).unwrap();
    assert_eq!(place.name, "14 Main Street, Springfield");
    // On Oak Lane, far from any address: the street, at the projected point.
    let on_lane = ExtractBuilder::at(2.1, 2.0);
    let place = index.reverse(on_lane).unwrap();
    assert_eq!(place.name, "Oak Lane, Springfield");
    let projected = ExtractBuilder::at(2.0, 2.0);
    assert!(LatLon::new(place.latitude, place.longitude).distance_metres(projected) < 0.5);
    assert_eq!(place.postcode, None);
    // 2 cells (~220 m) from every street and address.
    assert_eq!(index.reverse(ExtractBuilder::at(6.0, 2.0)), None);
    assert_eq!(index.reverse(LatLon::new(f64::NAN, 0.0)), None);
}

#[test]
fn street_at_names_the_street_even_beside_a_house() {
    let index = springfield();
    // 10 m from "14 Main Street": the street, not the address.
    let place = index.street_at(ExtractBuilder::at(1.5, 0.24)).unwrap();
    assert_eq!(place.name, "Main Street, Springfield");
    assert_eq!(index.street_at(ExtractBuilder::at(6.0, 2.0)), None);
    assert_eq!(index.street_at(LatLon::new(f64::NAN, 0.0)), None);
}

#[test]
fn street_first_countries_write_the_number_after_the_street() {
    let extract = ExtractBuilder::default()
        .node(1, 0.0, 0.0)
        .node(2, 1.0, 0.0)
        .way(&[1, 2], &[("highway", "pedestrian"), ("name", "Städtle")])
        .tagged_node(
            10,
            0.5,
            0.1,
            &[
                ("addr:housenumber", "43"),
                ("addr:street", "Städtle"),
                ("addr:city", "Vaduz"),
                ("addr:country", "LI"),
            ],
        )
        // Without its own country tag, the extract's usual country applies.
        .tagged_node(
            11,
            0.6,
            0.1,
            &[("addr:housenumber", "44"), ("addr:street", "Städtle")],
        )
        .build();
    let index = PlaceIndex::build(&extract);
    assert_eq!(
        index.search("Stadtle 43", None, 1)[0].name,
        "Städtle 43, Vaduz"
    );
    assert_eq!(
        index.search("44 Staedtle", None, 1)[0].name,
        "Städtle 44, Vaduz"
    );
    assert_eq!(index.search("städtle", None, 1)[0].name, "Städtle, Vaduz");
}
