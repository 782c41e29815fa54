//! The standard price book through the component boundary.

mod common;

use courier_plugins::defaults::{STANDARD_PRICE_BOOK, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS};
use courier_plugins::{LineCode, PluginError, PriceBook, PriceRefusal, Vehicle, total_minor};

use common::{engine, prepare, request};

fn book() -> PriceBook {
    PriceBook::load(&engine(), STANDARD_PRICE_BOOK).unwrap()
}

#[test]
fn prices_a_plain_journey_with_the_example_settings() {
    let b = book();
    let settings = prepare(&b, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS);
    let lines = b
        .price(&request(Vehicle::Car, "m"), &settings)
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
    assert_eq!(lines[1].description, "Distance (4.3 km)");
}

#[test]
fn surcharges_minimum_and_merchant_lines_come_through() {
    let mut r = request(Vehicle::Bicycle, "merchant_acme_grocers");
    r.distance_metres = 200;
    r.duration_seconds = 60;
    // Night window: 384 + 20% = 461, still under the bicycle's 550 minimum.
    r.local_time.hour = 23;
    let b = book();
    let settings = prepare(&b, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS);
    let lines = b.price(&r, &settings).unwrap().unwrap();
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
    let settings = prepare(
        &b,
        r#"{"schema":1,"vehicles":{"car":{"base_fare_minor":1,"per_km_minor":1,"per_minute_minor":1}}}"#,
    );
    assert_eq!(
        b.price(&request(Vehicle::Van, "m"), &settings).unwrap(),
        Err(PriceRefusal::VehicleNotOffered)
    );
    let mut euros = request(Vehicle::Car, "m");
    euros.currency = "EUR".into();
    let gbp = prepare(&b, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS);
    let Err(PriceRefusal::InvalidSettings(why)) = b.price(&euros, &gbp).unwrap() else {
        panic!("a GBP book priced in EUR")
    };
    assert!(why.contains("GBP"), "{why}");
}

#[test]
fn prepare_reports_the_book_and_its_vehicles() {
    let b = book();
    let prepared = prepare(&b, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS);
    let info = prepared.info();
    assert_eq!(info.name, "standard");
    assert_eq!(info.settings_schema, 1);
    assert_eq!(info.vehicles, Vehicle::ALL);
    let err = b
        .prepare(r#"{"schema":1,"vehicles":{}}"#)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("at least one vehicle"), "{err}");
}

#[test]
fn settings_prepared_by_another_book_are_refused() {
    let engine = engine();
    let standard = PriceBook::load(&engine, STANDARD_PRICE_BOOK).unwrap();
    let hostile = PriceBook::load(&engine, common::HOSTILE).unwrap();
    let foreign = prepare(&hostile, "fine");
    let err = standard
        .price(&request(Vehicle::Car, "m"), &foreign)
        .unwrap_err();
    assert!(matches!(err, PluginError::Incompatible { .. }), "{err}");
}

#[test]
fn large_settings_work_beyond_the_guest_arena() {
    // ~1,500 postcode zones: preparing and pricing allocate well past the
    // 64 KiB arena the guest starts with, so its memory has to grow.
    let zones: Vec<String> = (0..1_500)
        .map(|i| format!(r#"{{"prefix":"Z{i:04}","amount_minor":{i}}}"#))
        .collect();
    let settings = format!(
        r#"{{"schema":1,"vehicles":{{"car":{{"base_fare_minor":100,"per_km_minor":0,"per_minute_minor":0}}}},"postcode_zones":{{"required":true,"zones":[{}]}}}}"#,
        zones.join(",")
    );
    assert!(settings.len() > 50_000);
    let b = book();
    let prepared = prepare(&b, &settings);
    let mut r = request(Vehicle::Car, "m");
    r.pickup_postcode = Some("Z1234 9XX".into());
    r.dropoff_postcode = Some("z0007".into());
    let lines = b.price(&r, &prepared).unwrap().unwrap();
    assert_eq!(lines[0].amount_minor, 100 + 1234 + 7);
    r.dropoff_postcode = Some("Y1".into());
    assert_eq!(
        b.price(&r, &prepared).unwrap(),
        Err(PriceRefusal::NotCovered)
    );
}
