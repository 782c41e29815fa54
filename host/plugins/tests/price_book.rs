//! The standard price book through the component boundary.

mod common;

use courier_plugins::defaults::{STANDARD_PRICE_BOOK, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS};
use courier_plugins::{LineCode, PriceBook, PriceRefusal, Vehicle, total_minor};

use common::{engine, request};

fn book() -> PriceBook {
    PriceBook::load(&engine(), STANDARD_PRICE_BOOK).unwrap()
}

#[test]
fn prices_a_plain_journey_with_the_example_settings() {
    let lines = book()
        .price(
            &request(Vehicle::Car, "m"),
            STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS,
        )
        .unwrap()
        .unwrap();
    let got: Vec<(LineCode, i64)> = lines.iter().map(|l| (l.code, l.amount_minor)).collect();
    assert_eq!(
        got,
        [
            (LineCode::BaseFare, 650),
            (LineCode::Distance, 680),
            (LineCode::Duration, 339),
            (LineCode::Tax, 334),
        ]
    );
    assert_eq!(total_minor(&lines), 2003);
    assert_eq!(lines[1].description, "Distance (4.2 km)");
}

#[test]
fn surcharges_minimum_and_merchant_lines_come_through() {
    let mut r = request(Vehicle::Bicycle, "merchant_acme_grocers");
    r.distance_metres = 200;
    r.duration_seconds = 60;
    // Night window: 384 + 20% = 461, still under the bicycle's 550 minimum.
    r.local_time.hour = 23;
    let lines = book()
        .price(&r, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS)
        .unwrap()
        .unwrap();
    let codes: Vec<LineCode> = lines.iter().map(|l| l.code).collect();
    assert_eq!(
        codes,
        [
            LineCode::BaseFare,
            LineCode::Distance,
            LineCode::Duration,
            LineCode::Surge,
            LineCode::MinimumFare,
            LineCode::MerchantAdjustment,
            LineCode::Tax,
        ]
    );
}

#[test]
fn refusals_are_answers_not_errors() {
    let b = book();
    let settings = r#"{"schema":1,"vehicles":{"car":{"base_fare_minor":1,"per_km_minor":1,"per_minute_minor":1}}}"#;
    assert_eq!(
        b.price(&request(Vehicle::Van, "m"), settings).unwrap(),
        Err(PriceRefusal::VehicleNotOffered)
    );
    let Err(PriceRefusal::InvalidSettings(why)) =
        b.price(&request(Vehicle::Car, "m"), "{}").unwrap()
    else {
        panic!("bad settings were accepted")
    };
    assert!(why.contains("schema"), "{why}");
}

#[test]
fn validate_reports_the_book_and_its_vehicles() {
    let info = book()
        .validate(STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS)
        .unwrap()
        .unwrap();
    assert_eq!(info.name, "standard");
    assert_eq!(info.settings_schema, 1);
    assert_eq!(info.vehicles, Vehicle::ALL);
    let err = book()
        .validate(r#"{"schema":1,"vehicles":{}}"#)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("at least one vehicle"), "{err}");
}
