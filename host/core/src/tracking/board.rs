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
use courier_store::board::{self as board_store, Bounds, CourierSpot, SearchSpot, UnderWaySpot};
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
    /// Whether some kind had more than the board reads (`COURIER_TRACKING_BOARD_READ`): its
    /// count is "at least", and the map shows the ones read.
    pub at_least: bool,
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
const GROUP_COLUMNS: usize = 8;
/// A map narrower than this (metres) draws every mark, however many: closer it cannot go.
const SMALLEST_GROUPED_WIDTH_METRES: f64 = 1_000.0;

/// How much of its time a search has used at `now`: it fails `deadline` after it is due,
/// when it started searching (`since`) or when its parcel is `ready`, the later.
pub fn search_share(
    since: DateTime<Utc>,
    ready: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    deadline: chrono::Duration,
) -> f64 {
    let due = ready.map_or(since, |ready| ready.max(since));
    let allowed = due + deadline - since;
    let waited = (now - since).max(chrono::Duration::zero());
    waited.num_milliseconds() as f64 / allowed.num_milliseconds().max(1) as f64
}

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
        let within = ask.area.and(visible).map(|v| {
            Area {
                south_west: v.south_west,
                north_east: v.north_east,
            }
            .bounds()
        });
        // A backlog of tens of thousands is not read whole on every read.
        let read = i64::from(self.config.board_read);
        let (mut couriers, mut searching, mut under_way, hidden_searching) = tokio::try_join!(
            board_store::couriers_online(&self.pool, market.id(), fresh_since, within, read + 1),
            board_store::jobs_searching(&self.pool, market.id(), ask.environment, within, read + 1),
            board_store::jobs_under_way(&self.pool, market.id(), ask.environment, within, read + 1),
            jobs_store::searching_elsewhere(&self.pool, market.id(), ask.environment),
        )?;
        let at_least = [couriers.len(), searching.len(), under_way.len()]
            .iter()
            .any(|&n| n as i64 > read);
        couriers.truncate(read as usize);
        searching.truncate(read as usize);
        under_way.truncate(read as usize);
        // In the tables' order: couriers by name, the longest searching, the longest under way.
        couriers.sort_by(|a, b| (&a.name, a.id).cmp(&(&b.name, b.id)));
        searching.sort_by_key(|s| (s.since, s.id));
        under_way.sort_by_key(|j| (j.assigned_at, j.id));
        let totals = Totals {
            couriers: couriers.len() as i64,
            searching: searching.len() as i64,
            under_way: under_way.len() as i64,
            at_least,
        };
        let grid = projection.map(|p| CellGrid::over(&p));
        let spots = Spots {
            couriers: &couriers,
            searching: &searching,
            under_way: &under_way,
        };
        let in_view = grid.as_ref().map_or(0, |grid| spots.in_view(grid));
        let closest =
            visible.is_some_and(|v| v.metres_per_unit * WIDTH <= SMALLEST_GROUPED_WIDTH_METRES);
        let grouped = in_view > self.config.board_marks as usize && !closest;
        let take = if grouped {
            ask.listed.min(SHOWN as usize)
        } else {
            SHOWN as usize
        };
        let cut = !grouped
            && [totals.couriers, totals.searching, totals.under_way]
                .iter()
                .any(|&n| n > SHOWN);
        let groups = grid
            .as_ref()
            .zip(projection.as_ref())
            .filter(|_| grouped)
            .map(|(grid, projection)| spots.groups(grid, projection, now, ask.deadline));
        let courier_ids: Vec<Uuid> = couriers.iter().take(take).map(|c| c.id).collect();
        let search_ids: Vec<Uuid> = searching.iter().take(take).map(|s| s.id).collect();
        let under_way_ids: Vec<Uuid> = under_way.iter().take(take).map(|j| j.id).collect();
        let (couriers, searching, under_way) = tokio::try_join!(
            couriers_store::on_board(&self.pool, &courier_ids, fresh_since),
            jobs_store::searching_on_board(&self.pool, &search_ids),
            jobs_store::under_way_on_board(&self.pool, &under_way_ids),
        )?;
        let mut board = draw_board(market, projection, couriers, searching, under_way);
        if grouped {
            // Routes at this scale would be a tangle; the closer maps draw them.
            board.routes.clear();
        }
        board.area = ask.area;
        board.totals = totals;
        board.cut = cut;
        board.hidden_searching = hidden_searching;
        board.groups = groups;
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

/// Square cells over what a map shows, `GROUP_COLUMNS` across.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CellGrid {
    shown: Area,
    columns: usize,
    rows: usize,
}

impl CellGrid {
    fn over(projection: &Projection) -> Self {
        let visible = projection.visible();
        let (width, height) = projection.size();
        let side = width / GROUP_COLUMNS as f64;
        CellGrid {
            shown: Area {
                south_west: visible.south_west,
                north_east: visible.north_east,
            },
            columns: GROUP_COLUMNS,
            rows: ((height / side).ceil() as usize).max(1),
        }
    }

    fn cell_size(&self) -> (f64, f64) {
        (
            (self.shown.north_east.lat - self.shown.south_west.lat) / self.rows as f64,
            (self.shown.north_east.lon - self.shown.south_west.lon) / self.columns as f64,
        )
    }

    /// The cell (column, row from the south-west) `point` falls in, if the map shows it.
    fn cell_of(&self, point: LatLon) -> Option<(usize, usize)> {
        let (height, width) = self.cell_size();
        let column = ((point.lon - self.shown.south_west.lon) / width).floor();
        let row = ((point.lat - self.shown.south_west.lat) / height).floor();
        let inside =
            (0.0..self.columns as f64).contains(&column) && (0.0..self.rows as f64).contains(&row);
        inside.then_some((column as usize, row as usize))
    }

    fn cell(&self, (column, row): (usize, usize)) -> Area {
        let (height, width) = self.cell_size();
        let south = self.shown.south_west.lat + height * row as f64;
        let west = self.shown.south_west.lon + width * column as f64;
        Area {
            south_west: LatLon::new(south, west),
            north_east: LatLon::new(south + height, west + width),
        }
    }
}

/// Where everything on a board is, as read.
struct Spots<'a> {
    couriers: &'a [CourierSpot],
    searching: &'a [SearchSpot],
    under_way: &'a [UnderWaySpot],
}

/// A group's tally as its members are counted.
#[derive(Default)]
struct Tally {
    count: i64,
    latitude: f64,
    longitude: f64,
    busy: i64,
    worst_share: Option<f64>,
}

impl Spots<'_> {
    /// Every spot with a position, its kind, whether busy, and its search's share.
    fn each(
        &self,
        now: DateTime<Utc>,
        deadline: chrono::Duration,
    ) -> impl Iterator<Item = (GroupKind, LatLon, bool, Option<f64>)> + '_ {
        let couriers = self.couriers.iter().filter_map(|c| {
            Some((
                GroupKind::Couriers,
                point(c.latitude, c.longitude)?,
                c.busy,
                None,
            ))
        });
        let searching = self.searching.iter().filter_map(move |s| {
            Some((
                GroupKind::Searching,
                point(s.latitude, s.longitude)?,
                false,
                Some(search_share(s.since, s.pickup_ready_at, now, deadline)),
            ))
        });
        let under_way = self.under_way.iter().filter_map(|j| {
            Some((
                GroupKind::UnderWay,
                point(j.latitude, j.longitude)?,
                false,
                None,
            ))
        });
        couriers.chain(searching).chain(under_way)
    }

    /// How many marks the map would draw one by one.
    fn in_view(&self, grid: &CellGrid) -> usize {
        // Shares do not count here: any moment and deadline will do.
        self.each(DateTime::<Utc>::UNIX_EPOCH, chrono::Duration::zero())
            .filter(|(_, at, _, _)| grid.cell_of(*at).is_some())
            .count()
    }

    /// A group for each kind in each cell, at the middle of its members.
    fn groups(
        &self,
        grid: &CellGrid,
        projection: &Projection,
        now: DateTime<Utc>,
        deadline: chrono::Duration,
    ) -> Vec<Group> {
        let mut tallies: std::collections::BTreeMap<(u8, usize, usize), (GroupKind, Tally)> =
            std::collections::BTreeMap::new();
        for (kind, at, busy, share) in self.each(now, deadline) {
            let Some((column, row)) = grid.cell_of(at) else {
                continue;
            };
            let (_, tally) = tallies
                .entry((kind as u8, row, column))
                .or_insert_with(|| (kind, Tally::default()));
            tally.count += 1;
            tally.latitude += at.lat;
            tally.longitude += at.lon;
            tally.busy += i64::from(busy);
            tally.worst_share = share.map(|s| tally.worst_share.map_or(s, |w| w.max(s)));
        }
        tallies
            .into_iter()
            .map(|((_, row, column), (kind, tally))| {
                let n = tally.count as f64;
                Group {
                    kind,
                    count: tally.count,
                    busy: tally.busy,
                    worst_share: tally.worst_share,
                    at: projection.project(LatLon::new(tally.latitude / n, tally.longitude / n)),
                    cell: grid.cell((column, row)),
                }
            })
            .collect()
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
    fn a_grid_s_cells_tile_what_the_map_shows_and_nothing_outside_it() {
        let projection = Projection::fit(&[LatLon::new(20.0, 50.0), LatLon::new(20.02, 50.02)]);
        let grid = CellGrid::over(&projection);
        assert_eq!(grid.columns, GROUP_COLUMNS);
        let (south_west, north_east) = (grid.shown.south_west, grid.shown.north_east);
        let first = grid.cell((0, 0));
        assert_eq!(first.south_west, south_west);
        let last = grid.cell((grid.columns - 1, grid.rows - 1));
        assert!((last.north_east.lat - north_east.lat).abs() < 1e-9);
        assert!((last.north_east.lon - north_east.lon).abs() < 1e-9);
        // A point in a cell is in that cell; beyond the map, in none.
        let middle = LatLon::new(
            (first.south_west.lat + first.north_east.lat) / 2.0,
            (first.south_west.lon + first.north_east.lon) / 2.0,
        );
        assert_eq!(grid.cell_of(middle), Some((0, 0)));
        assert_eq!(
            grid.cell_of(LatLon::new(20.01, 50.01))
                .map(|c| grid.cell(c).south_west.lat <= 20.01),
            Some(true)
        );
        assert_eq!(
            grid.cell_of(LatLon::new(south_west.lat - 0.001, 50.01)),
            None
        );
        assert_eq!(
            grid.cell_of(LatLon::new(20.01, north_east.lon + 0.001)),
            None
        );
    }

    #[test]
    fn groups_count_each_kind_in_each_cell_and_colour_searches_by_the_most_pressed() {
        let projection = Projection::fit(&[LatLon::new(20.0, 50.0), LatLon::new(20.02, 50.02)]);
        let grid = CellGrid::over(&projection);
        let now = Utc::now();
        let deadline = chrono::Duration::minutes(10);
        let courier = |lat, busy| CourierSpot {
            id: Uuid::new_v4(),
            name: "c".into(),
            latitude: Some(lat),
            longitude: Some(50.001),
            busy,
        };
        let search = |lat, minutes| SearchSpot {
            id: Uuid::new_v4(),
            latitude: Some(lat),
            longitude: Some(50.001),
            since: now - chrono::Duration::minutes(minutes),
            pickup_ready_at: None,
        };
        let couriers = [
            courier(20.001, true),
            courier(20.0012, false),
            courier(20.019, false),
        ];
        let searching = [search(20.001, 2), search(20.0011, 8)];
        let unseen = CourierSpot {
            latitude: None,
            longitude: None,
            ..courier(0.0, false)
        };
        let with_unseen = [couriers[0].clone(), unseen];
        let spots = Spots {
            couriers: &couriers,
            searching: &searching,
            under_way: &[],
        };
        assert_eq!(spots.in_view(&grid), 5);
        let groups = spots.groups(&grid, &projection, now, deadline);
        let couriers_near: Vec<&Group> = groups
            .iter()
            .filter(|g| g.kind == GroupKind::Couriers && g.count == 2)
            .collect();
        assert_eq!(couriers_near.len(), 1, "{groups:?}");
        assert_eq!(couriers_near[0].busy, 1);
        assert!(couriers_near[0].cell.south_west.lat <= 20.001);
        let searches: Vec<&Group> = groups
            .iter()
            .filter(|g| g.kind == GroupKind::Searching)
            .collect();
        assert_eq!(searches.len(), 1);
        assert_eq!(searches[0].count, 2);
        assert!((searches[0].worst_share.unwrap() - 0.8).abs() < 1e-6);
        assert_eq!(groups.len(), 3, "the far courier has a group of its own");
        // A courier never seen is counted nowhere on the map.
        let spots = Spots {
            couriers: &with_unseen,
            searching: &[],
            under_way: &[],
        };
        assert_eq!(spots.in_view(&grid), 1);
    }

    #[test]
    fn a_search_s_share_runs_from_when_it_is_due() {
        let now = Utc::now();
        let deadline = chrono::Duration::minutes(15);
        let since = now - chrono::Duration::minutes(12);
        assert!((search_share(since, None, now, deadline) - 0.8).abs() < 1e-9);
        // Ready 15 minutes after it started searching: it has 30 minutes in all.
        let ready = Some(since + chrono::Duration::minutes(15));
        assert!((search_share(since, ready, now, deadline) - 0.4).abs() < 1e-9);
        // Not yet searching: nothing used.
        assert_eq!(
            search_share(now + chrono::Duration::minutes(1), None, now, deadline),
            0.0
        );
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
