//! Routes, place search and reverse lookup on the demo market and on real extracts.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually,
    shared_osm_markets, status_and_json,
};

/// Demo City fixtures (see courier-geo's demo_city module).
const FOURTH_STREET_41: (f64, f64) = (20.00285, 50.0043);
const SEVENTEENTH_STREET_102: (f64, f64) = (20.01615, 50.0103);

struct Lookups {
    app: TestApp,
    credential: Credential,
}

impl Lookups {
    async fn start() -> Self {
        Self::start_with(|_| None).await
    }

    async fn start_with(extra: impl Fn(&str) -> Option<String>) -> Self {
        let app = TestApp::spawn_with(extra).await;
        let credential = app.create_merchant("Lookups Ltd").await.test();
        let lookups = Self { app, credential };
        lookups.wait_until_loaded().await;
        lookups
    }

    /// Road networks load in the background: 503 `lookup.not_ready` until then.
    async fn wait_until_loaded(&self) {
        eventually(
            "the road networks to load",
            Duration::from_secs(60),
            Duration::from_millis(50),
            || async {
                let (status, body) = self.get("/v1/places?q=x").await;
                if status != 503 {
                    return Some(());
                }
                assert_eq!(body["code"], "lookup.not_ready");
                None
            },
        )
        .await;
    }

    async fn send(&self, path: &str) -> reqwest::Response {
        self.app
            .request(Method::GET, path)
            .auth(&self.credential)
            .send()
            .await
            .unwrap()
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        status_and_json(self.send(path).await).await
    }

    async fn route(&self, from: (f64, f64), to: (f64, f64), vehicle: Option<&str>) -> (u16, Value) {
        let mut path = format!(
            "/v1/routes?fromLatitude={}&fromLongitude={}&toLatitude={}&toLongitude={}",
            from.0, from.1, to.0, to.1
        );
        if let Some(vehicle) = vehicle {
            path.push_str(&format!("&vehicle={vehicle}"));
        }
        self.get(&path).await
    }
}

fn distance_metres(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (lat1, lon1, lat2, lon2) = (
        a.0.to_radians(),
        a.1.to_radians(),
        b.0.to_radians(),
        b.1.to_radians(),
    );
    let h = ((lat2 - lat1) / 2.0).sin().powi(2)
        + lat1.cos() * lat2.cos() * ((lon2 - lon1) / 2.0).sin().powi(2);
    2.0 * 6_371_000.0 * h.sqrt().asin()
}

fn shape_point(point: &Value) -> (f64, f64) {
    (
        point["latitude"].as_f64().unwrap(),
        point["longitude"].as_f64().unwrap(),
    )
}

#[tokio::test]
async fn a_route_has_distance_duration_and_every_bend() {
    let lookups = Lookups::start().await;
    let (status, route) = lookups
        .route(FOURTH_STREET_41, SEVENTEENTH_STREET_102, Some("car"))
        .await;
    assert_eq!(status, 200, "{route}");
    let distance = route["distance_metres"].as_u64().unwrap() as f64;
    let straight = distance_metres(FOURTH_STREET_41, SEVENTEENTH_STREET_102);
    assert!(
        distance >= straight && distance < straight * 2.5,
        "{distance} vs {straight}"
    );
    assert!(route["duration_seconds"].as_u64().unwrap() > 0);
    let shape = route["shape"].as_array().unwrap();
    assert!(shape.len() > 3, "a grid route bends: {shape:?}");
    assert!(distance_metres(shape_point(&shape[0]), FOURTH_STREET_41) < 50.0);
    assert!(distance_metres(shape_point(shape.last().unwrap()), SEVENTEENTH_STREET_102) < 50.0);
    // The shape's own length is the distance.
    let along: f64 = shape
        .windows(2)
        .map(|w| distance_metres(shape_point(&w[0]), shape_point(&w[1])))
        .sum();
    assert!(
        (along - distance).abs() < distance * 0.02 + 5.0,
        "{along} vs {distance}"
    );
    lookups.app.stop().await;
}

#[tokio::test]
async fn the_vehicle_matters_and_defaults_to_the_smallest_offered() {
    let lookups = Lookups::start().await;
    let (from, to) = (FOURTH_STREET_41, SEVENTEENTH_STREET_102);
    let (_, bicycle) = lookups.route(from, to, Some("bicycle")).await;
    let (_, car) = lookups.route(from, to, Some("car")).await;
    let (status, default) = lookups.route(from, to, None).await;
    assert_eq!(status, 200);
    assert_eq!(
        default, bicycle,
        "the demo market's smallest vehicle is the bicycle"
    );
    assert!(
        bicycle["duration_seconds"].as_u64() > car["duration_seconds"].as_u64(),
        "a bicycle is slower than a car: {bicycle} {car}"
    );
    lookups.app.stop().await;
}

#[tokio::test]
async fn route_refusals_have_their_codes() {
    let lookups = Lookups::start().await;
    let inside = FOURTH_STREET_41;
    let vaduz = (47.1410, 9.5209);
    let cases: Vec<(String, &str)> = vec![
        (
            "/v1/routes?fromLatitude=20.003&fromLongitude=50.004&toLatitude=20.01&toLongitude=50.01&vehicle=truck".into(),
            "request.unknown_vehicle",
        ),
        (
            "/v1/routes?fromLatitude=91&fromLongitude=50.004&toLatitude=20.01&toLongitude=50.01".into(),
            "request.invalid_pickup",
        ),
        (
            "/v1/routes?fromLongitude=50.004&toLatitude=20.01&toLongitude=50.01".into(),
            "request.invalid_pickup",
        ),
        (
            "/v1/routes?fromLatitude=20.003&fromLongitude=50.004&toLatitude=20.01&toLongitude=east".into(),
            "request.invalid_dropoff",
        ),
        (
            "/v1/routes?fromLatitude=20.003&fromLongitude=50.004&toLatitude=20.01&toLongitude=181".into(),
            "request.invalid_dropoff",
        ),
        (
            format!(
                "/v1/routes?fromLatitude={}&fromLongitude={}&toLatitude={}&toLongitude={}",
                vaduz.0, vaduz.1, inside.0, inside.1
            ),
            "pricing.origin_not_covered",
        ),
        (
            format!(
                "/v1/routes?fromLatitude={}&fromLongitude={}&toLatitude={}&toLongitude={}",
                inside.0, inside.1, vaduz.0, vaduz.1
            ),
            "pricing.destination_not_covered",
        ),
    ];
    for (path, code) in cases {
        assert_refusal(lookups.send(&path).await, 422, code).await;
    }
    lookups.app.stop().await;
}

#[tokio::test]
async fn vehicles_not_offered_and_points_far_from_roads_are_refused() {
    let file = crate::support::car_only_market_file();
    let file_name = file.to_string_lossy().into_owned();
    let lookups = Lookups::start_with(move |name| {
        (name == "COURIER_MARKETS_FILE").then(|| file_name.clone())
    })
    .await;
    let (from, to) = (FOURTH_STREET_41, SEVENTEENTH_STREET_102);
    let (status, _) = lookups.route(from, to, None).await;
    assert_eq!(status, 200, "the car, the only vehicle, is the default");
    let (status, body) = lookups.route(from, to, Some("bicycle")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("pricing.vehicle_not_available"))
    );
    // Covered, but about 8 km from the nearest road.
    let (status, body) = lookups.route(from, (20.10, 50.10), Some("car")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("pricing.no_route"))
    );
    lookups.app.stop().await;
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn place_search_finds_addresses_best_first() {
    let lookups = Lookups::start().await;
    let (status, places) = lookups.get("/v1/places?q=41%204th%20Street").await;
    assert_eq!(status, 200, "{places}");
    let places = places.as_array().unwrap();
    assert!(!places.is_empty() && places.len() <= 5);
    let first = &places[0];
    assert!(
        first["name"].as_str().unwrap().starts_with("41 4th Street"),
        "{first}"
    );
    assert_eq!(first["postcode"], "D1001");
    assert!(
        distance_metres(shape_point(first), FOURTH_STREET_41) < 30.0,
        "{first}"
    );

    let (status, places) = lookups
        .get("/v1/places?q=4th%20Street&limit=2&nearLatitude=20.0028&nearLongitude=50.0043")
        .await;
    assert_eq!(status, 200);
    assert_eq!(places.as_array().unwrap().len(), 2);
    let (status, places) = lookups.get("/v1/places?q=").await;
    assert_eq!((status, places), (200, Value::Array(vec![])));
    lookups.app.stop().await;
}

#[tokio::test]
async fn place_search_refusals_have_their_codes() {
    let lookups = Lookups::start().await;
    for (path, code) in [
        ("/v1/places", "request.invalid_query"),
        ("/v1/places?q=a&limit=0", "request.invalid_limit"),
        ("/v1/places?q=a&limit=21", "request.invalid_limit"),
        ("/v1/places?q=a&limit=many", "request.invalid_limit"),
        ("/v1/places?q=a&nearLatitude=20", "request.invalid_location"),
        (
            "/v1/places?q=a&nearLatitude=95&nearLongitude=50",
            "request.invalid_location",
        ),
    ] {
        assert_refusal(lookups.send(path).await, 422, code).await;
    }
    lookups.app.stop().await;
}

#[tokio::test]
async fn reverse_lookup_finds_the_nearest_address_or_nothing() {
    let lookups = Lookups::start().await;
    let (lat, lon) = FOURTH_STREET_41;
    let (status, place) = lookups
        .get(&format!(
            "/v1/places/reverse?latitude={lat}&longitude={lon}"
        ))
        .await;
    assert_eq!(status, 200);
    assert!(
        place["name"].as_str().unwrap().starts_with("41 4th Street"),
        "{place}"
    );
    assert_eq!(place["postcode"], "D1001");

    let response = lookups
        .send("/v1/places/reverse?latitude=47.14&longitude=9.52")
        .await;
    assert_eq!(response.status(), 204);
    assert!(response.text().await.unwrap().is_empty());
    assert_refusal(
        lookups.send("/v1/places/reverse?latitude=20").await,
        422,
        "request.invalid_location",
    )
    .await;
    lookups.app.stop().await;
}

#[tokio::test]
async fn lookups_need_credentials() {
    let lookups = Lookups::start().await;
    for path in ["/v1/routes", "/v1/places?q=a", "/v1/places/reverse"] {
        let response = lookups.app.request(Method::GET, path).send().await.unwrap();
        assert_refusal(response, 401, "auth.missing_credentials").await;
    }
    lookups.app.stop().await;
}

/// The four shared extracts as markets: real addresses, real routes.
#[tokio::test]
async fn the_shared_extracts_serve_real_routes_and_addresses() {
    let Some(file) = shared_osm_markets() else {
        return;
    };
    let lookups =
        Lookups::start_with(move |name| (name == "COURIER_MARKETS_FILE").then(|| file.clone()))
            .await;

    // Baltimore: the acceptance example.
    let (status, places) = lookups
        .get("/v1/places?q=2019%20East%20Pratt%20Street")
        .await;
    assert_eq!(status, 200, "{places}");
    let first = &places[0];
    assert!(
        distance_metres(shape_point(first), (39.28937, -76.58819)) < 25.0,
        "{first}"
    );
    assert!(first["name"].as_str().unwrap().contains("2019"), "{first}");
    let (status, place) = lookups
        .get("/v1/places/reverse?latitude=39.28937&longitude=-76.58819")
        .await;
    assert_eq!(status, 200);
    assert_eq!(place["name"], first["name"]);

    // A house on a building multipolygon, and one on an address interpolation line (between
    // 2901 and 2919, odd numbers).
    for (query, expected) in [
        ("2809%20Boston%20Street", (39.27772, -76.57606)),
        ("2909%20O'Donnell%20Street", (39.280_016, -76.575_067)),
    ] {
        let (status, places) = lookups.get(&format!("/v1/places?q={query}")).await;
        assert_eq!(status, 200, "{places}");
        let first = &places[0];
        assert!(
            distance_metres(shape_point(first), expected) < 40.0,
            "{query}: {first}"
        );
        let (latitude, longitude) = shape_point(first);
        let (status, place) = lookups
            .get(&format!(
                "/v1/places/reverse?latitude={latitude}&longitude={longitude}"
            ))
            .await;
        assert_eq!(status, 200);
        assert_eq!(place["name"], first["name"], "{query}");
    }

    // Liechtenstein: Vaduz to Schaan by car, and by bicycle.
    let (vaduz, schaan) = ((47.1410, 9.5209), (47.1650, 9.5097));
    let (status, car) = lookups.route(vaduz, schaan, Some("car")).await;
    assert_eq!(status, 200, "{car}");
    let metres = car["distance_metres"].as_u64().unwrap() as f64;
    assert!(
        metres > distance_metres(vaduz, schaan) && metres < 8_000.0,
        "{car}"
    );

    // Monaco's coverage is the principality: the French hills in the extract are not served.
    let (status, body) = lookups
        .route((43.7384, 7.4246), (43.7500, 7.3900), Some("car"))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("pricing.destination_not_covered"))
    );

    // Andorra offers no bicycles.
    let (status, body) = lookups
        .route((42.5063, 1.5218), (42.5347, 1.5800), Some("bicycle"))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("pricing.vehicle_not_available"))
    );
    let (status, body) = lookups
        .route((42.5063, 1.5218), (42.5347, 1.5800), None)
        .await;
    assert_eq!(status, 200, "{body}");
    lookups.app.stop().await;
}
