use super::*;

const EXAMPLE: &str = include_str!("../settings.example.json");

fn request(vehicle: Vehicle) -> Request {
    Request {
        currency: "GBP".into(),
        vehicle,
        distance_metres: 4_250,
        duration_seconds: 1_130,
        weight_grams: 0,
        pickup_postcode: None,
        dropoff_postcode: None,
        local_time: LocalTime {
            hour: 11,
            minute: 0,
            weekday: Weekday::Wednesday,
        },
        demand_permille: 800,
        merchant: "merchant_plain".into(),
    }
}

/// Prepares the document and prices with it, as the host does.
fn price(settings: &str, request: &Request) -> Result<Vec<Line>, Refusal> {
    let prepared = prepare(settings).map_err(Refusal::InvalidSettings)?;
    super::price(&prepared.compiled, request)
}

fn amount(lines: &[Line], code: &str) -> Option<i64> {
    lines
        .iter()
        .find(|l| l.code == code)
        .map(|l| l.amount_minor)
}

fn codes(lines: &[Line]) -> Vec<&str> {
    lines.iter().map(|l| l.code).collect()
}

/// A minimal book with round numbers so expected amounts are obvious.
fn simple(extra: &str) -> String {
    format!(
        r#"{{"schema":1,"vehicles":{{"car":{{"base_fare_minor":500,"per_km_minor":100,
            "per_minute_minor":10,"minimum_fare_minor":0}}}}{extra}}}"#
    )
}

#[test]
fn example_settings_are_valid_and_offer_all_vehicles_smallest_first() {
    assert_eq!(
        prepare(EXAMPLE).unwrap().vehicles,
        vec![
            Vehicle::Bicycle,
            Vehicle::ElectricBicycle,
            Vehicle::Motorcycle,
            Vehicle::Car,
            Vehicle::Van
        ]
    );
}

#[test]
fn plain_journey_has_base_distance_duration_and_tax() {
    let lines = price(EXAMPLE, &request(Vehicle::Car)).unwrap();
    assert_eq!(codes(&lines), ["base_fare", "distance", "duration", "tax"]);
    assert_eq!(amount(&lines, "base_fare"), Some(650));
    // 160/km x 4.25 km = 680
    assert_eq!(amount(&lines, "distance"), Some(680));
    // 18/min x 1130 s / 60 = 339
    assert_eq!(amount(&lines, "duration"), Some(339));
    // 20% of 1669 = 333.8 -> 334
    assert_eq!(amount(&lines, "tax"), Some(334));
}

#[test]
fn descriptions_use_integer_formatting() {
    let mut r = request(Vehicle::Car);
    r.distance_metres = 4_250;
    let s = simple(
        r#","time_of_day":[{"from":"00:00","until":"23:59","percent":-5}],"tax_rate_bp":1750"#,
    );
    let lines = price(&s, &r).unwrap();
    let text = |code: &str| {
        lines
            .iter()
            .find(|l| l.code == code)
            .unwrap()
            .description
            .clone()
    };
    assert_eq!(text("distance"), "Distance (4.3 km)");
    assert_eq!(text("surge"), "Surge (-5.0%)");
    assert_eq!(text("tax"), "Tax (17.5%)");
    assert_eq!(pricing::hundredths(1725), "17.25");
}

#[test]
fn rounding_is_half_away_from_zero_per_line() {
    let s = simple("");
    let mut r = request(Vehicle::Car);
    r.distance_metres = 5; // 100 * 5 / 1000 = 0.5 -> 1
    r.duration_seconds = 3; // 10 * 3 / 60 = 0.5 -> 1
    let lines = price(&s, &r).unwrap();
    assert_eq!(amount(&lines, "distance"), Some(1));
    assert_eq!(amount(&lines, "duration"), Some(1));
    r.distance_metres = 4; // 0.4 -> 0
    r.duration_seconds = 2; // 0.33 -> 0
    let lines = price(&s, &r).unwrap();
    assert_eq!(amount(&lines, "distance"), Some(0));
    assert_eq!(amount(&lines, "duration"), Some(0));
    // A -15% discount of 1001 is -150.15 -> -150; of 1010 is -151.5 -> -152.
    let s = simple(r#","merchants":{"m":{"percent":-15}}"#);
    r.merchant = "m".into();
    r.distance_metres = 5_000;
    r.duration_seconds = 6; // 500 + 500 + 1 = 1001
    assert_eq!(
        amount(&price(&s, &r).unwrap(), "merchant_adjustment"),
        Some(-150)
    );
    r.duration_seconds = 60; // 1010
    assert_eq!(
        amount(&price(&s, &r).unwrap(), "merchant_adjustment"),
        Some(-152)
    );
}

#[test]
fn vehicle_missing_from_settings_is_not_offered() {
    let s = simple("");
    assert_eq!(
        price(&s, &request(Vehicle::Van)),
        Err(Refusal::VehicleNotOffered)
    );
}

#[test]
fn weight_selects_bracket_and_above_the_last_is_not_offered() {
    let mut r = request(Vehicle::Bicycle);
    r.weight_grams = 3_000;
    assert_eq!(amount(&price(EXAMPLE, &r).unwrap(), "base_fare"), Some(350));
    r.weight_grams = 3_001;
    assert_eq!(amount(&price(EXAMPLE, &r).unwrap(), "base_fare"), Some(500));
    r.weight_grams = 8_001;
    assert_eq!(price(EXAMPLE, &r), Err(Refusal::VehicleNotOffered));
}

#[test]
fn time_of_day_takes_the_highest_window_and_adds_the_weekday() {
    let s = simple(
        r#","time_of_day":[{"from":"17:00","until":"19:00","percent":10},
            {"from":"18:00","until":"20:00","percent":25}],"weekdays":{"friday":5}"#,
    );
    let mut r = request(Vehicle::Car);
    r.distance_metres = 5_000;
    r.duration_seconds = 0; // subtotal 1000
    r.local_time.hour = 18;
    r.local_time.minute = 30;
    assert_eq!(amount(&price(&s, &r).unwrap(), "surge"), Some(250));
    r.local_time.weekday = Weekday::Friday;
    assert_eq!(amount(&price(&s, &r).unwrap(), "surge"), Some(300));
    // `until` is exclusive.
    r.local_time.hour = 20;
    r.local_time.minute = 0;
    assert_eq!(amount(&price(&s, &r).unwrap(), "surge"), Some(50));
    r.local_time.weekday = Weekday::Thursday;
    assert_eq!(amount(&price(&s, &r).unwrap(), "surge"), None);
}

#[test]
fn night_window_wraps_past_midnight() {
    let mut r = request(Vehicle::Car);
    for (hour, night) in [(23, true), (2, true), (5, true), (6, false), (21, false)] {
        r.local_time.hour = hour;
        let lines = price(EXAMPLE, &r).unwrap();
        assert_eq!(amount(&lines, "surge").is_some(), night, "hour {hour}");
    }
}

#[test]
fn demand_surge_is_the_ratio_above_threshold_up_to_the_cap() {
    let s = simple(r#","demand_surge":{"threshold_permille":1500,"cap_permille":2000}"#);
    let mut r = request(Vehicle::Car);
    r.distance_metres = 5_000;
    r.duration_seconds = 0; // subtotal 1000
    for (demand, surge) in [
        (1_499, None),
        (1_500, Some(500)),
        (1_750, Some(750)),
        (2_000, Some(1_000)),
        (u32::MAX, Some(1_000)),
    ] {
        r.demand_permille = demand;
        assert_eq!(
            amount(&price(&s, &r).unwrap(), "surge"),
            surge,
            "demand {demand}"
        );
    }
}

#[test]
fn minimum_fare_tops_up_and_discount_applies_after_it() {
    let mut r = request(Vehicle::Bicycle);
    r.distance_metres = 200;
    r.duration_seconds = 60;
    let lines = price(EXAMPLE, &r).unwrap();
    // 350 + 22 + 12 = 384, topped up to 550.
    assert_eq!(amount(&lines, "minimum_fare"), Some(166));
    r.merchant = "merchant_acme_grocers".into();
    let lines = price(EXAMPLE, &r).unwrap();
    assert_eq!(amount(&lines, "merchant_adjustment"), Some(-55));
    // Tax on 495.
    assert_eq!(amount(&lines, "tax"), Some(99));
}

#[test]
fn fixed_merchant_adjustment_cannot_make_the_price_negative() {
    let s = simple(r#","merchants":{"m":{"amount_minor":-100000}}"#);
    let mut r = request(Vehicle::Car);
    r.merchant = "m".into();
    let lines = price(&s, &r).unwrap();
    assert_eq!(lines.iter().map(|l| l.amount_minor).sum::<i64>(), 0);
}

#[test]
fn postcode_zones_match_longest_prefix_per_stop() {
    let s = simple(
        r#","postcode_zones":{"zones":[{"prefix":"E1","amount_minor":100},
            {"prefix":"e14","amount_minor":300}]}"#,
    );
    let mut r = request(Vehicle::Car);
    r.pickup_postcode = Some("e14 5ab".into());
    r.dropoff_postcode = Some("E1 6AN".into());
    assert_eq!(
        amount(&price(&s, &r).unwrap(), "base_fare"),
        Some(500 + 300 + 100)
    );
    r.dropoff_postcode = Some("SW1A 1AA".into());
    assert_eq!(amount(&price(&s, &r).unwrap(), "base_fare"), Some(800));
}

#[test]
fn required_zones_refuse_uncovered_postcodes() {
    let s =
        simple(r#","postcode_zones":{"required":true,"zones":[{"prefix":"E1","amount_minor":0}]}"#);
    let mut r = request(Vehicle::Car);
    r.pickup_postcode = Some("E1 6AN".into());
    r.dropoff_postcode = None;
    assert_eq!(price(&s, &r), Err(Refusal::NotCovered));
    r.dropoff_postcode = Some("N1 9GU".into());
    assert_eq!(price(&s, &r), Err(Refusal::NotCovered));
    r.dropoff_postcode = Some("E1 7QX".into());
    assert!(price(&s, &r).is_ok());
}

#[test]
fn lines_always_sum_to_a_non_negative_total_with_known_codes() {
    const KNOWN: [&str; 7] = [
        "base_fare",
        "distance",
        "duration",
        "surge",
        "minimum_fare",
        "merchant_adjustment",
        "tax",
    ];
    let mut r = request(Vehicle::Car);
    for merchant in ["x", "merchant_acme_grocers", "merchant_night_pharmacy"] {
        for hour in [3u8, 8, 12, 17] {
            for demand in [0u32, 1_700, 5_000] {
                for metres in [0u32, 999, 12_345, 80_000] {
                    r.merchant = merchant.into();
                    r.local_time.hour = hour;
                    r.demand_permille = demand;
                    r.distance_metres = metres;
                    r.duration_seconds = metres / 5;
                    r.pickup_postcode = Some("EC1A 1BB".into());
                    let lines = price(EXAMPLE, &r).unwrap();
                    assert!(lines.iter().all(|l| KNOWN.contains(&l.code)));
                    let pre_tax: i64 = lines
                        .iter()
                        .filter(|l| l.code != "tax")
                        .map(|l| l.amount_minor)
                        .sum();
                    let adjustment = amount(&lines, "merchant_adjustment").unwrap_or(0);
                    assert!(pre_tax - adjustment >= 950, "below the car's minimum");
                    let tax = amount(&lines, "tax").unwrap();
                    assert_eq!(tax, (pre_tax * 2000 + 5000) / 10_000);
                }
            }
        }
    }
}

#[test]
fn currency_mismatch_is_a_settings_error() {
    let mut r = request(Vehicle::Car);
    r.currency = "EUR".into();
    assert!(matches!(
        price(EXAMPLE, &r),
        Err(Refusal::InvalidSettings(_))
    ));
}

#[test]
fn prepared_settings_round_trip_and_foreign_bytes_are_refused() {
    let s = Settings::parse(EXAMPLE).unwrap();
    let book = compiled::Book::new(&s).unwrap();
    assert_eq!(compiled::Book::decode(&book.encode()).unwrap(), book);
    // Longest prefix first.
    assert_eq!(book.zones[0].0.len(), 3);
    let r = request(Vehicle::Car);
    for bad in [&b""[..], b"\x02abc", b"\x01\xff\xff\xff"] {
        assert!(matches!(
            super::price(bad, &r),
            Err(Refusal::InvalidSettings(_))
        ));
    }
    // The prepared form is much smaller than the document.
    assert!(
        book.encode().len() < EXAMPLE.len() / 3,
        "{}",
        book.encode().len()
    );
}

#[test]
fn invalid_settings_say_what_is_wrong() {
    let cases = [
        ("{", "EOF"),
        (r#"{"schema":2,"vehicles":{}}"#, "schema 2"),
        (r#"{"schema":1,"vehicles":{}}"#, "at least one vehicle"),
        (r#"{"schema":1,"vehicles":{"truck":{}}}"#, "truck"),
        (&simple(r#","tax_rate_bp":20000"#), "tax_rate_bp"),
        (&simple(r#","taxrate":5"#), "unknown field"),
        (
            &simple(r#","time_of_day":[{"from":"25:00","until":"01:00","percent":5}]"#),
            "HH:MM",
        ),
        (&simple(r#","merchants":{"m":{}}"#), "exactly one"),
        (
            &simple(r#","demand_surge":{"threshold_permille":1000,"cap_permille":900}"#),
            "cap",
        ),
        (
            r#"{"schema":1,"vehicles":{"car":{"base_fare_minor":1,"per_km_minor":1,
               "per_minute_minor":1,"weight_brackets":[{"up_to_grams":5,"surcharge_minor":0},
               {"up_to_grams":5,"surcharge_minor":1}]}}}"#,
            "ascending",
        ),
    ];
    for (doc, needle) in cases {
        let err = Settings::parse(doc).unwrap_err();
        assert!(err.contains(needle), "{doc}: {err}");
    }
}
