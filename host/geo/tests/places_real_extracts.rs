//! Places search and reverse geocoding on real OpenStreetMap extracts.

mod common;

use common::extract;
use courier_geo::{LatLon, Place};

fn position(place: &Place) -> LatLon {
    LatLon::new(place.latitude, place.longitude)
}

/// The house at 2019 East Pratt Street, Baltimore, as mapped.
const EAST_PRATT_2019: LatLon = LatLon::new(39.28937, -76.58819);

#[test]
fn baltimore_address_search_and_reverse() {
    let Some(network) = extract("baltimore") else {
        return;
    };
    let places = network.places();
    for query in [
        "2019 East Pratt Street",
        "2019 east pratt st",
        "2019 E Pratt St, Baltimore",
        "2019 East Prat Stret",
    ] {
        let hits = places.search(query, None, 5);
        let first = hits.first().unwrap_or_else(|| panic!("{query}: no result"));
        assert_eq!(
            first.name, "2019 East Pratt Street, Baltimore",
            "{query}: {hits:?}"
        );
        assert_eq!(first.postcode.as_deref(), Some("21231"));
        assert!(
            position(first).distance_metres(EAST_PRATT_2019) < 5.0,
            "{query}"
        );
    }
    let reversed = places.reverse(EAST_PRATT_2019).expect("an address there");
    assert_eq!(reversed.name, "2019 East Pratt Street, Baltimore");
}

#[test]
fn baltimore_postcode_and_street_queries() {
    let Some(network) = extract("baltimore") else {
        return;
    };
    let places = network.places();
    let hits = places.search("21231", None, 10);
    assert_eq!(hits[0].name, "21231 Baltimore");
    assert!(
        hits.iter().all(|p| p.postcode.as_deref() == Some("21231")),
        "{hits:?}"
    );

    // The street itself ranks before its addresses; near orders equal matches by distance.
    let hits = places.search("East Pratt Street", Some(EAST_PRATT_2019), 5);
    assert!(hits[0].name.starts_with("East Pratt Street"), "{hits:?}");

    // Away from any address, reverse geocoding names the street.
    let street = places.search("East Pratt Street", None, 1).remove(0);
    let reversed = places.reverse(position(&street)).unwrap();
    assert!(reversed.name.contains("Street") || reversed.name.contains("Avenue"));
}

#[test]
fn liechtenstein_search_ignores_accents_and_eszett() {
    let Some(network) = extract("liechtenstein") else {
        return;
    };
    let places = network.places();
    let hits = places.search("Stadtle 43 Vaduz", None, 3);
    assert_eq!(hits[0].name, "Städtle 43, Vaduz", "{hits:?}");
    assert_eq!(hits[0].postcode.as_deref(), Some("9490"));
    let reversed = places.reverse(position(&hits[0])).unwrap();
    assert_eq!(reversed.name, "Städtle 43, Vaduz");

    let with_eszett = places.search("Landstraße Schaan", None, 5);
    let spelled_out = places.search("landstrasse schaan", None, 5);
    assert!(!with_eszett.is_empty());
    assert_eq!(with_eszett, spelled_out);
    assert!(
        with_eszett[0].name.starts_with("Landstrasse"),
        "{with_eszett:?}"
    );

    let hamlet = places.search("Sassfurkle", None, 1);
    assert!(hamlet[0].name.starts_with("Sassfürkle"), "{hamlet:?}");
    let town = places.search("vaduz", None, 1);
    assert_eq!(town[0].name, "Vaduz");
}

#[test]
fn andorra_place_names() {
    let Some(network) = extract("andorra") else {
        return;
    };
    let places = network.places();
    let hits = places.search("Sant Julia de Loria", None, 3);
    assert!(hits[0].name.starts_with("Sant Julià de Lòria"), "{hits:?}");
    let soldeu = places.search("soldeu", None, 1);
    assert!(soldeu[0].name.starts_with("Soldeu"), "{soldeu:?}");
    assert!(position(&soldeu[0]).distance_metres(LatLon::new(42.5766, 1.6672)) < 2_000.0);
}

/// True when `at` lies in the box spanned by two corners (south-west, north-east).
fn inside(at: LatLon, south_west: LatLon, north_east: LatLon) -> bool {
    (south_west.lat..=north_east.lat).contains(&at.lat)
        && (south_west.lon..=north_east.lon).contains(&at.lon)
}

#[test]
fn houses_on_building_multipolygons_are_found() {
    let cases = [
        // A building relation with a courtyard (an inner ring).
        (
            "baltimore",
            "2809 Boston Street",
            "2809 Boston Street, Baltimore",
            LatLon::new(39.27716, -76.57669),
            LatLon::new(39.27827, -76.57542),
        ),
        // A house drawn as two outer halves.
        (
            "liechtenstein",
            "Wangerbergstrasse 33",
            "Wangerbergstrasse 33",
            LatLon::new(47.11449, 9.54600),
            LatLon::new(47.11469, 9.54625),
        ),
    ];
    for (extract_name, query, name, south_west, north_east) in cases {
        let Some(network) = extract(extract_name) else {
            return;
        };
        let places = network.places();
        let hits = places.search(query, None, 5);
        let first = hits.first().unwrap_or_else(|| panic!("{query}: no result"));
        assert!(first.name.starts_with(name), "{query}: {hits:?}");
        assert!(
            inside(position(first), south_west, north_east),
            "{query}: {first:?} is not on the building"
        );
        let reversed = places.reverse(position(first)).expect("an address there");
        assert_eq!(reversed.name, first.name);
    }
}

#[test]
fn houses_on_interpolation_lines_are_found_where_they_stand() {
    let Some(network) = extract("baltimore") else {
        return;
    };
    let places = network.places();
    // Between 2901 and 2919 O'Donnell Street (odd numbers), 8/18 of the way along.
    let expected = LatLon::new(39.280_016_4, -76.575_066_8);
    let hits = places.search("2909 O'Donnell Street", None, 5);
    let first = hits.first().expect("a result");
    assert_eq!(first.name, "2909 O'Donnell Street, Baltimore", "{hits:?}");
    assert_eq!(first.postcode.as_deref(), Some("21224"));
    assert!(position(first).distance_metres(expected) < 3.0, "{first:?}");
    let reversed = places.reverse(expected).expect("an address there");
    assert_eq!(reversed.name, "2909 O'Donnell Street, Baltimore");
    // An even number is not on an odd line.
    let hits = places.search("2910 O'Donnell Street", None, 1);
    assert!(
        hits.iter().all(|h| !h.name.starts_with("2910 ")),
        "{hits:?}"
    );
}
