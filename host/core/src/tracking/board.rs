//! A market as operators watch it: its area and roads drawn as one map (the tracking page's
//! drawing, at the market's scale), the couriers online on it, the jobs searching for one, and
//! the jobs under way with each courier's route through its stops still to make.

use chrono::{DateTime, Utc};
use courier_geo::LatLon;
use uuid::Uuid;

use super::Tracking;
use super::map::{Point, Projection};
use crate::jobs::POSITION_FRESHNESS;
use crate::markets::{Market, RoutingError};
use courier_domain::{Environment, JobStatus, Vehicle};
use courier_store::couriers::{self as couriers_store, OnlineCourier};
use courier_store::jobs::{self as jobs_store, JobUnderWay, SearchingJob};

/// The most couriers, searching jobs and jobs under way one board draws, each (the page says
/// when it is cut): every one of a busy city's, a bound on what one page carries.
pub const SHOWN: i64 = 5_000;
/// A whole market's roads: more than a journey's map carries, still a page drawn at once.
pub const MAX_MARKET_STREET_POINTS: usize = 12_000;

/// What the board's map shows, in view-box units.
#[derive(Clone, Debug, PartialEq)]
pub struct BoardMap {
    pub view_box: String,
    /// The market's area: its configured coverage, else the area of its road network.
    pub area: String,
    /// The roads, simplified to what shows at this scale.
    pub streets: String,
}

/// A courier online, and where on the map when seen lately.
#[derive(Clone, Debug)]
pub struct CourierOnBoard {
    pub id: Uuid,
    pub name: String,
    pub vehicle: Vehicle,
    pub busy: bool,
    pub seen_at: Option<DateTime<Utc>>,
    pub at: Option<Point>,
}

/// A job searching for a courier, at its pickup.
#[derive(Clone, Debug)]
pub struct SearchOnBoard {
    pub id: Uuid,
    pub reference: String,
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub environment: Environment,
    pub vehicle: Vehicle,
    pub searching_since: DateTime<Utc>,
    /// When its parcel will be ready, if the merchant said.
    pub pickup_ready_at: Option<DateTime<Utc>>,
    pub offered: bool,
    pub at: Option<Point>,
}

/// A job under way, its stops on the map.
#[derive(Clone, Debug)]
pub struct UnderWayOnBoard {
    pub id: Uuid,
    pub reference: String,
    pub merchant_name: String,
    pub environment: Environment,
    pub status: JobStatus,
    pub courier_id: Option<Uuid>,
    pub courier_name: Option<String>,
    pub assigned_at: Option<DateTime<Utc>>,
    /// Its next stop: the pickup until collected, then the drop-off.
    pub next_stop: Option<Point>,
}

/// A courier's way through the stops of its jobs under way, from where it was seen: the
/// pickups not yet collected, then the drop-offs (straight lines between them).
#[derive(Clone, Debug)]
pub struct RouteOnBoard {
    pub courier_id: Uuid,
    pub path: String,
}

/// Whether the market's road network can be drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkState {
    Loaded { road_edges: usize, places: usize },
    Loading,
    Failed,
}

#[derive(Clone, Debug)]
pub struct MarketBoard {
    /// Nothing to draw on while the network loads and no coverage is configured.
    pub map: Option<BoardMap>,
    pub network: NetworkState,
    pub couriers: Vec<CourierOnBoard>,
    /// Whether more couriers are online than listed.
    pub more_couriers: bool,
    pub searching: Vec<SearchOnBoard>,
    pub more_searching: bool,
    /// Jobs of the environment not shown searching in the market too.
    pub hidden_searching: i64,
    pub under_way: Vec<UnderWayOnBoard>,
    pub more_under_way: bool,
    pub routes: Vec<RouteOnBoard>,
}

impl Tracking {
    /// `market`'s board as it is at `now`.
    /// The market's board; `environment`: only that environment's jobs (None: both).
    pub async fn board(
        &self,
        market: &Market,
        now: DateTime<Utc>,
        environment: Option<Environment>,
    ) -> Result<MarketBoard, sqlx::Error> {
        let (mut couriers, (mut searching, hidden_searching), mut under_way) = tokio::try_join!(
            couriers_store::online_in_market(
                &self.pool,
                market.id(),
                now - POSITION_FRESHNESS,
                SHOWN + 1
            ),
            jobs_store::searching_in_market(&self.pool, market.id(), environment, SHOWN + 1),
            jobs_store::under_way_in_market(&self.pool, market.id(), environment, SHOWN + 1),
        )?;
        let more_couriers = couriers.len() as i64 > SHOWN;
        couriers.truncate(SHOWN as usize);
        let more_searching = searching.len() as i64 > SHOWN;
        searching.truncate(SHOWN as usize);
        let more_under_way = under_way.len() as i64 > SHOWN;
        under_way.truncate(SHOWN as usize);
        let mut board = draw_board(
            market,
            couriers,
            searching,
            under_way,
            (more_couriers, more_searching, more_under_way),
        );
        board.hidden_searching = hidden_searching;
        Ok(board)
    }
}

/// A valid point from coordinates a row may lack.
fn point(latitude: Option<f64>, longitude: Option<f64>) -> Option<LatLon> {
    let point = LatLon::new(latitude?, longitude?);
    point.is_valid().then_some(point)
}

fn courier_point(courier: &OnlineCourier) -> Option<LatLon> {
    point(courier.latitude, courier.longitude)
}

fn pickup_point(job: &JobUnderWay) -> Option<LatLon> {
    point(job.pickup_latitude, job.pickup_longitude)
}

fn dropoff_point(job: &JobUnderWay) -> Option<LatLon> {
    point(job.dropoff_latitude, job.dropoff_longitude)
}

/// Each courier's way through its jobs' stops still to make, from where it was seen.
fn courier_routes(
    couriers: &[OnlineCourier],
    under_way: &[JobUnderWay],
    projection: &Projection,
) -> Vec<RouteOnBoard> {
    let mut jobs_of: std::collections::HashMap<Uuid, Vec<&JobUnderWay>> =
        std::collections::HashMap::new();
    for job in under_way {
        if let Some(courier) = job.courier_id {
            jobs_of.entry(courier).or_default().push(job);
        }
    }
    couriers
        .iter()
        .filter_map(|courier| {
            let from = courier_point(courier)?;
            let jobs = jobs_of.get(&courier.id)?;
            let pickups = jobs
                .iter()
                .filter(|j| j.status == JobStatus::Assigned)
                .filter_map(|j| pickup_point(j));
            let dropoffs = jobs.iter().filter_map(|j| dropoff_point(j));
            let stops: Vec<LatLon> = std::iter::once(from)
                .chain(pickups)
                .chain(dropoffs)
                .collect();
            (stops.len() > 1).then(|| RouteOnBoard {
                courier_id: courier.id,
                path: projection.path(&stops),
            })
        })
        .collect()
}

fn draw_board(
    market: &Market,
    couriers: Vec<OnlineCourier>,
    searching: Vec<SearchingJob>,
    under_way: Vec<JobUnderWay>,
    (more_couriers, more_searching, more_under_way): (bool, bool, bool),
) -> MarketBoard {
    let network = market.network();
    let network_state = match &network {
        Ok(network) => {
            let stats = network.stats();
            NetworkState::Loaded {
                road_edges: stats.road_edges,
                places: stats.places,
            }
        }
        Err(RoutingError::NotReady) => NetworkState::Loading,
        Err(_) => NetworkState::Failed,
    };
    let area = market
        .definition
        .coverage
        .as_ref()
        .or_else(|| network.as_ref().ok().map(|n| n.network_area()));
    let projection = area.map(|area| Projection::fit(area.vertices()));
    let map = area.zip(projection).map(|(area, projection)| {
        let visible = projection.visible();
        let streets = network.as_ref().map_or_else(
            |_| Vec::new(),
            |network| {
                network.streets_in(
                    visible.south_west,
                    visible.north_east,
                    visible.street_tolerance_metres(),
                    MAX_MARKET_STREET_POINTS,
                )
            },
        );
        let mut outline = projection.path(area.vertices());
        if !outline.is_empty() {
            outline.push_str(" Z");
        }
        BoardMap {
            view_box: projection.view_box(),
            area: outline,
            streets: streets
                .iter()
                .map(|street| projection.path(street))
                .filter(|d| d.contains('L'))
                .collect::<Vec<_>>()
                .join(" "),
        }
    });
    let place = |point: Option<LatLon>| projection.zip(point).map(|(p, point)| p.project(point));
    let routes = projection.map_or_else(Vec::new, |projection| {
        courier_routes(&couriers, &under_way, &projection)
    });
    MarketBoard {
        map,
        network: network_state,
        couriers: couriers
            .into_iter()
            .map(|c| CourierOnBoard {
                at: place(courier_point(&c)),
                id: c.id,
                name: c.name,
                vehicle: c.vehicle,
                busy: c.busy,
                seen_at: c.seen_at,
            })
            .collect(),
        more_couriers,
        searching: searching
            .into_iter()
            .map(|j| SearchOnBoard {
                at: place(point(j.pickup_latitude, j.pickup_longitude)),
                id: j.id,
                reference: j.reference,
                merchant_id: j.merchant_id,
                merchant_name: j.merchant_name,
                environment: j.environment,
                vehicle: j.vehicle,
                searching_since: j.searching_since,
                pickup_ready_at: j.pickup_ready_at,
                offered: j.offered,
            })
            .collect(),
        more_searching,
        hidden_searching: 0,
        under_way: under_way
            .into_iter()
            .map(|j| UnderWayOnBoard {
                next_stop: place(if j.status == JobStatus::Assigned {
                    pickup_point(&j)
                } else {
                    dropoff_point(&j)
                }),
                id: j.id,
                reference: j.reference,
                merchant_name: j.merchant_name,
                environment: j.environment,
                status: j.status,
                courier_id: j.courier_id,
                courier_name: j.courier_name,
                assigned_at: j.assigned_at,
            })
            .collect(),
        more_under_way,
        routes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markets::Markets;

    fn demo() -> std::sync::Arc<Market> {
        let markets = Markets::from_file(None).expect("the demo market");
        markets.load_networks(None);
        markets.get("demo").expect("demo").clone()
    }

    fn courier(name: &str, at: Option<(f64, f64)>) -> OnlineCourier {
        OnlineCourier {
            id: Uuid::new_v4(),
            name: name.into(),
            vehicle: Vehicle::Car,
            latitude: at.map(|a| a.0),
            longitude: at.map(|a| a.1),
            seen_at: at.map(|_| Utc::now()),
            busy: false,
        }
    }

    #[test]
    fn the_board_draws_the_area_its_roads_and_who_is_where() {
        let market = demo();
        let inside = (20.01, 50.01);
        let job = SearchingJob {
            id: Uuid::new_v4(),
            reference: "order-1".into(),
            merchant_id: Uuid::new_v4(),
            merchant_name: "Shop".into(),
            environment: Environment::Live,
            vehicle: Vehicle::Car,
            pickup_latitude: Some(inside.0),
            pickup_longitude: Some(inside.1),
            searching_since: Utc::now(),
            pickup_ready_at: None,
            offered: false,
        };
        let seen = courier("seen", Some(inside));
        let carried = JobUnderWay {
            id: Uuid::new_v4(),
            reference: "order-2".into(),
            merchant_name: "Shop".into(),
            environment: Environment::Live,
            status: JobStatus::Assigned,
            courier_id: Some(seen.id),
            courier_name: Some("seen".into()),
            pickup_latitude: Some(20.012),
            pickup_longitude: Some(50.012),
            dropoff_latitude: Some(20.015),
            dropoff_longitude: Some(50.011),
            assigned_at: Some(Utc::now()),
        };
        let board = draw_board(
            &market,
            vec![seen, courier("unseen", None)],
            vec![job],
            vec![carried],
            (false, false, false),
        );
        let map = board.map.expect("a map of the demo city");
        assert!(
            map.area.starts_with('M') && map.area.ends_with('Z'),
            "{}",
            map.area
        );
        assert!(
            map.streets.matches('M').count() > 50,
            "the city's roads are drawn"
        );
        assert!(matches!(board.network, NetworkState::Loaded { road_edges, .. } if road_edges > 0));
        // The courier and the job's pickup are the same spot, inside the view box.
        let (seen, unseen) = (&board.couriers[0], &board.couriers[1]);
        let at = seen.at.expect("a courier seen lately is on the map");
        assert_eq!(Some(at), board.searching[0].at);
        let height: f64 = map.view_box.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(at.x > 0.0 && at.x < super::super::map::WIDTH && at.y > 0.0 && at.y < height);
        assert_eq!(unseen.at, None);
        // The job under way waits at its pickup; its courier's route runs from where it is,
        // through the pickup, to the drop-off: three points, two lines.
        assert!(board.under_way[0].next_stop.is_some());
        assert_eq!(board.routes.len(), 1);
        assert_eq!(board.routes[0].courier_id, board.couriers[0].id);
        assert_eq!(
            board.routes[0].path.matches('L').count(),
            2,
            "{}",
            board.routes[0].path
        );
    }
}
