//! A market as operators watch it: its area and roads drawn as one map (the tracking page's
//! drawing, at the market's scale), the couriers online on it, the jobs searching for one, and
//! the jobs under way with each courier's route through its stops still to make.

use chrono::{DateTime, Utc};
use courier_geo::{LatLon, Polygon};
use uuid::Uuid;

use super::Tracking;
use super::map::{Point, Projection, WIDTH};
use crate::jobs::POSITION_FRESHNESS;
use crate::markets::{Market, RoutingError};
use courier_domain::{Environment, JobStatus, Vehicle};
use courier_store::board::{self as board_store, Bounds, Cell, Grid};
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
    /// The part of the market shown, when not the whole of it.
    pub area: Option<Area>,
    /// How many of each kind there are (in the part shown).
    pub totals: Totals,
    /// When there are too many to draw one by one: the map draws these groups instead, and
    /// the rows below are only the first of each kind, for the tables.
    pub groups: Option<Vec<Group>>,
    pub couriers: Vec<CourierOnBoard>,
    pub searching: Vec<SearchOnBoard>,
    /// Jobs of the environment not shown searching in the market too.
    pub hidden_searching: i64,
    pub under_way: Vec<UnderWayOnBoard>,
    /// Drawn one by one, whether more of some kind were there than [`SHOWN`].
    pub cut: bool,
    pub routes: Vec<RouteOnBoard>,
}

/// How many couriers are online, jobs searching and jobs under way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub couriers: i64,
    pub searching: i64,
    pub under_way: i64,
}

/// What a group of the map stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    Couriers,
    Searching,
    UnderWay,
}

/// Several couriers or jobs of one kind in one cell of the map, drawn as one mark at their
/// middle that opens a closer map of the cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub kind: GroupKind,
    pub count: i64,
    /// Couriers on a job, of a group of couriers.
    pub busy: i64,
    /// Of a group of searches, the largest share of its dispatch time one has used.
    pub worst_share: Option<f64>,
    pub at: Point,
    /// The cell, for its closer map.
    pub cell: Area,
}

/// A part of a market's map, in degrees: `south,west,north,east` in its links.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub south_west: LatLon,
    pub north_east: LatLon,
}

/// Why an asked-for area is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "an area is four numbers, south,west,north,east in degrees, south below north and west of east"
)]
pub struct NotAnArea;

impl std::str::FromStr for Area {
    type Err = NotAnArea;

    fn from_str(text: &str) -> Result<Self, NotAnArea> {
        let numbers: Vec<f64> = text
            .split(',')
            .map(|n| n.trim().parse::<f64>().map_err(|_| NotAnArea))
            .collect::<Result<_, _>>()?;
        let [south, west, north, east] = numbers[..] else {
            return Err(NotAnArea);
        };
        let (south_west, north_east) = (LatLon::new(south, west), LatLon::new(north, east));
        if !south_west.is_valid() || !north_east.is_valid() || south >= north || west >= east {
            return Err(NotAnArea);
        }
        Ok(Area {
            south_west,
            north_east,
        })
    }
}

impl std::fmt::Display for Area {
    /// To the metre, as the links carry it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.5},{:.5},{:.5},{:.5}",
            self.south_west.lat, self.south_west.lon, self.north_east.lat, self.north_east.lon
        )
    }
}

impl Area {
    fn bounds(&self) -> Bounds {
        Bounds {
            south: self.south_west.lat,
            west: self.south_west.lon,
            north: self.north_east.lat,
            east: self.north_east.lon,
        }
    }
}

/// What a board shows: whose jobs, which part of the market, and how many rows each table
/// lists when the map draws groups.
#[derive(Clone, Copy, Debug)]
pub struct BoardAsk {
    pub environment: Option<Environment>,
    pub area: Option<Area>,
    pub listed: usize,
    /// A search's dispatch time, for colouring groups of searches.
    pub deadline: chrono::Duration,
}

/// The map is cut into this many columns of square cells (as many rows as fit) when it
/// draws groups: a mark a cell and kind, at most a few hundred on a page.
const GROUP_COLUMNS: i32 = 8;
/// A map narrower than this (metres) draws every mark, however many: closer it cannot go.
const SMALLEST_GROUPED_WIDTH_METRES: f64 = 1_000.0;

impl Tracking {
    /// `market`'s board as it is at `now`: the part `ask` names of it, its couriers and jobs
    /// each drawn when there are at most `COURIER_TRACKING_BOARD_MARKS` of them in view, else
    /// drawn in groups by area.
    pub async fn board(
        &self,
        market: &Market,
        now: DateTime<Utc>,
        ask: BoardAsk,
    ) -> Result<MarketBoard, sqlx::Error> {
        let projection = match (ask.area, market_area(market)) {
            (Some(area), _) => Some(Projection::fit(&[area.south_west, area.north_east])),
            (None, Some(market_area)) => Some(Projection::fit(market_area.vertices())),
            (None, None) => None,
        };
        let fresh_since = now - POSITION_FRESHNESS;
        let visible = projection.map(|p| p.visible());
        // Zoomed in, only what the map shows; else the whole market.
        let within = ask.area.and(visible).map(|v| Area {
            south_west: v.south_west,
            north_east: v.north_east,
        });
        let grid = visible.zip(projection).map(|(visible, projection)| {
            let side = WIDTH / f64::from(GROUP_COLUMNS);
            let (_, height) = projection.size();
            Grid {
                bounds: Area {
                    south_west: visible.south_west,
                    north_east: visible.north_east,
                }
                .bounds(),
                columns: GROUP_COLUMNS,
                rows: (height / side).ceil() as i32,
                only_inside: within.is_some(),
            }
        });
        let (cells, totals) = match &grid {
            Some(grid) => {
                let cells = tokio::try_join!(
                    board_store::couriers_online(&self.pool, market.id(), fresh_since, grid),
                    board_store::jobs_searching(
                        &self.pool,
                        market.id(),
                        ask.environment,
                        grid,
                        now,
                        ask.deadline
                    ),
                    board_store::jobs_under_way(&self.pool, market.id(), ask.environment, grid),
                )?;
                let sum = |cells: &[Cell]| cells.iter().map(|c| c.count).sum::<i64>();
                let totals = Totals {
                    couriers: sum(&cells.0),
                    searching: sum(&cells.1),
                    under_way: sum(&cells.2),
                };
                (Some(cells), totals)
            }
            None => (None, Totals::default()),
        };
        let in_view = |cells: &[Cell]| {
            grid.as_ref().map_or(0, |grid| {
                cells
                    .iter()
                    .filter(|c| grid_cell(grid, c).is_some())
                    .map(|c| c.count)
                    .sum::<i64>()
            })
        };
        let marks = cells
            .as_ref()
            .map_or(0, |c| in_view(&c.0) + in_view(&c.1) + in_view(&c.2));
        let closest =
            visible.is_some_and(|v| v.metres_per_unit * WIDTH <= SMALLEST_GROUPED_WIDTH_METRES);
        let grouped = marks > i64::from(self.config.board_marks) && !closest;
        let limit = if grouped {
            ask.listed.min(SHOWN as usize) as i64
        } else {
            SHOWN + 1
        };
        let within_bounds = within.map(|a| a.bounds());
        let (mut couriers, (mut searching, hidden_searching), mut under_way) = tokio::try_join!(
            couriers_store::online_in_market(
                &self.pool,
                market.id(),
                fresh_since,
                within_bounds,
                limit
            ),
            jobs_store::searching_in_market(
                &self.pool,
                market.id(),
                ask.environment,
                within_bounds,
                limit
            ),
            jobs_store::under_way_in_market(
                &self.pool,
                market.id(),
                ask.environment,
                within_bounds,
                limit
            ),
        )?;
        let mut cut = false;
        if !grouped {
            cut = [couriers.len(), searching.len(), under_way.len()]
                .iter()
                .any(|&n| n as i64 > SHOWN);
            couriers.truncate(SHOWN as usize);
            searching.truncate(SHOWN as usize);
            under_way.truncate(SHOWN as usize);
        }
        let mut board = draw_board(market, projection, couriers, searching, under_way);
        board.area = ask.area;
        board.totals = totals;
        board.cut = cut;
        board.hidden_searching = hidden_searching;
        if grouped {
            // Routes at this scale would be a tangle; the closer maps draw them.
            board.routes.clear();
            let (grid, projection, cells) = (
                grid.expect("grouped"),
                projection.expect("grouped"),
                cells.expect("grouped"),
            );
            let kinds = [
                (GroupKind::Couriers, cells.0),
                (GroupKind::Searching, cells.1),
                (GroupKind::UnderWay, cells.2),
            ];
            board.groups = Some(
                kinds
                    .into_iter()
                    .flat_map(|(kind, cells)| {
                        cells
                            .into_iter()
                            .filter_map(move |c| group(&grid, &projection, kind, c))
                    })
                    .collect(),
            );
        }
        Ok(board)
    }
}

/// The market's area: its configured coverage, else the area of its road network.
fn market_area(market: &Market) -> Option<&Polygon> {
    market
        .definition
        .coverage
        .as_ref()
        .or_else(|| market.network().ok().map(|n| n.network_area()))
}

/// The cell's corners, for what lies inside the grid.
fn grid_cell(grid: &Grid, cell: &Cell) -> Option<Area> {
    let (column, row) = (cell.column?, cell.row?);
    if !(1..=grid.columns).contains(&column) || !(1..=grid.rows).contains(&row) {
        return None;
    }
    let b = grid.bounds;
    let width = (b.east - b.west) / f64::from(grid.columns);
    let height = (b.north - b.south) / f64::from(grid.rows);
    let west = b.west + width * f64::from(column - 1);
    let south = b.south + height * f64::from(row - 1);
    Some(Area {
        south_west: LatLon::new(south, west),
        north_east: LatLon::new(south + height, west + width),
    })
}

fn group(grid: &Grid, projection: &Projection, kind: GroupKind, cell: Cell) -> Option<Group> {
    let area = grid_cell(grid, &cell)?;
    let middle = point(cell.latitude, cell.longitude)?;
    Some(Group {
        kind,
        count: cell.count,
        busy: cell.busy,
        worst_share: cell.worst_share,
        at: projection.project(middle),
        cell: area,
    })
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
    projection: Option<Projection>,
    couriers: Vec<OnlineCourier>,
    searching: Vec<SearchingJob>,
    under_way: Vec<JobUnderWay>,
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
    let area = market_area(market);
    let map = projection.map(|projection| {
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
        let mut outline = area.map_or_else(String::new, |area| projection.path(area.vertices()));
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
        routes,
        area: None,
        totals: Totals::default(),
        groups: None,
        cut: false,
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
    fn an_area_is_four_numbers_south_west_north_east() {
        let area: Area = "20.001,50.002,20.0035,50.004".parse().unwrap();
        assert_eq!(area.south_west, LatLon::new(20.001, 50.002));
        assert_eq!(area.north_east, LatLon::new(20.0035, 50.004));
        assert_eq!(area.to_string(), "20.00100,50.00200,20.00350,50.00400");
        assert_eq!(area.to_string().parse::<Area>(), Ok(area));
        for bad in [
            "",
            "20,50,21",
            "20,50,21,51,1",
            "a,50,21,51",
            "21,50,20,51",
            "20,51,21,50",
            "20,50,20,51",
            "-91,50,21,51",
            "20,50,21,181",
            "NaN,50,21,51",
        ] {
            assert_eq!(bad.parse::<Area>(), Err(NotAnArea), "{bad}");
        }
    }

    #[test]
    fn a_grid_s_cells_tile_its_bounds_and_nothing_outside_them() {
        let grid = Grid {
            bounds: Bounds {
                south: 20.0,
                west: 50.0,
                north: 20.02,
                east: 50.04,
            },
            columns: 4,
            rows: 2,
            only_inside: false,
        };
        let cell = |column, row| Cell {
            column,
            row,
            count: 1,
            latitude: None,
            longitude: None,
            busy: 0,
            worst_share: None,
        };
        let first = grid_cell(&grid, &cell(Some(1), Some(1))).unwrap();
        assert_eq!(first.south_west, LatLon::new(20.0, 50.0));
        assert!((first.north_east.lat - 20.01).abs() < 1e-9);
        assert!((first.north_east.lon - 50.01).abs() < 1e-9);
        let last = grid_cell(&grid, &cell(Some(4), Some(2))).unwrap();
        assert!((last.north_east.lat - 20.02).abs() < 1e-9);
        assert!((last.north_east.lon - 50.04).abs() < 1e-9);
        // West of the grid, north of it, and without a position: in no cell.
        assert_eq!(grid_cell(&grid, &cell(Some(0), Some(1))), None);
        assert_eq!(grid_cell(&grid, &cell(Some(1), Some(3))), None);
        assert_eq!(grid_cell(&grid, &cell(None, None)), None);
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
        let area = market_area(&market).expect("the demo's roads");
        let board = draw_board(
            &market,
            Some(Projection::fit(area.vertices())),
            vec![seen, courier("unseen", None)],
            vec![job],
            vec![carried],
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
