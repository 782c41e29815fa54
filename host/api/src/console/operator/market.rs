//! A market's board: its area and roads on a map, the couriers online on it (free or on a job,
//! with their routes through their stops still to make), the jobs searching for one (coloured
//! by how much of their dispatch deadline has gone) and the jobs under way, following itself
//! while the page is open.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::super::respond::{page, when};
use super::{OperatorBar, message, signed_in, unavailable};
use crate::state::AppState;
use courier_core::auth::operator_sessions::OperatorSession;
use courier_core::infra::clock::now;
use courier_core::tracking::board::{
    Area, BoardAsk, BoardMap, CourierOnBoard, Group, GroupKind, MarketBoard, NetworkState,
    RouteOnBoard, SHOWN, SearchOnBoard, Totals, UnderWayOnBoard, search_share,
};
use courier_domain::operators::OpsPermission;
use courier_domain::{Environment, JobStatus};

/// How often the open page reads the board again.
const LIVE_SECONDS: u32 = 5;

/// A moment to the second: couriers move by the second, the console's other pages by the minute.
fn to_the_second(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A courier on the map.
struct CourierMark {
    id: String,
    busy: bool,
    title: String,
    centre: (String, String),
}

/// A courier in the table.
struct CourierRow {
    id: String,
    name: String,
    vehicle: &'static str,
    doing: &'static str,
    seen: String,
}

fn doing(busy: bool) -> &'static str {
    if busy { "on a job" } else { "free" }
}

impl CourierMark {
    fn new(c: &CourierOnBoard) -> Option<Self> {
        let at = c.at?;
        Some(CourierMark {
            id: c.id.to_string(),
            busy: c.busy,
            title: format!("{} ({}, {})", c.name, c.vehicle.as_str(), doing(c.busy)),
            centre: (format!("{:.0}", at.x), format!("{:.0}", at.y)),
        })
    }
}

impl From<CourierOnBoard> for CourierRow {
    fn from(c: CourierOnBoard) -> Self {
        CourierRow {
            id: c.id.to_string(),
            name: c.name,
            vehicle: c.vehicle.as_str(),
            doing: doing(c.busy),
            seen: c.seen_at.map_or_else(
                || "not lately (no position on the map)".to_owned(),
                to_the_second,
            ),
        }
    }
}

/// A search on the map, at its pickup.
struct SearchMark {
    id: String,
    title: String,
    /// How much of its dispatch deadline has gone: `fresh` (under half), `waiting` (under
    /// three quarters) or `late`.
    wait: &'static str,
    /// Its pickup, in whole view-box units (the marks are 18 wide).
    at: (String, String),
}

/// A search in the table.
struct SearchRow {
    id: String,
    reference: String,
    merchant: String,
    merchant_id: String,
    environment: &'static str,
    vehicle: &'static str,
    since: String,
    /// When the parcel will be ready, or empty.
    ready: String,
    offered: bool,
    wait: &'static str,
    waited: String,
}

/// How much of its time a search `since` has used by `now`, as the board colours it: it fails
/// `deadline` after it is due, when it searched or when its parcel is `ready`, the later.
fn wait_class(
    since: chrono::DateTime<chrono::Utc>,
    ready: Option<chrono::DateTime<chrono::Utc>>,
    now: chrono::DateTime<chrono::Utc>,
    deadline: chrono::Duration,
) -> (&'static str, String) {
    let due = ready.map_or(since, |ready| ready.max(since));
    let allowed = due + deadline - since;
    let waited = (now - since).max(chrono::Duration::zero());
    let share = search_share(since, ready, now, deadline);
    let words = format!(
        "{} of {} min",
        waited.num_minutes(),
        allowed.num_minutes().max(1)
    );
    (wait_of(share), words)
}

/// The colour of a search that has used `share` of its time: `fresh` (under half), `waiting`
/// (under three quarters) or `late`.
fn wait_of(share: f64) -> &'static str {
    if share < 0.5 {
        "fresh"
    } else if share < 0.75 {
        "waiting"
    } else {
        "late"
    }
}

impl SearchMark {
    fn new(
        j: &SearchOnBoard,
        now: chrono::DateTime<chrono::Utc>,
        deadline: chrono::Duration,
    ) -> Option<Self> {
        let at = j.at?;
        let (wait, waited) = wait_class(j.searching_since, j.pickup_ready_at, now, deadline);
        Some(SearchMark {
            id: j.id.to_string(),
            title: format!("{}: searching, {waited} of its deadline", j.reference),
            wait,
            at: (format!("{:.0}", at.x), format!("{:.0}", at.y)),
        })
    }
}

impl SearchRow {
    fn new(
        j: SearchOnBoard,
        now: chrono::DateTime<chrono::Utc>,
        deadline: chrono::Duration,
    ) -> Self {
        let (wait, waited) = wait_class(j.searching_since, j.pickup_ready_at, now, deadline);
        SearchRow {
            wait,
            waited,
            id: j.id.to_string(),
            reference: j.reference,
            merchant: j.merchant_name,
            merchant_id: j.merchant_id.to_string(),
            environment: j.environment.as_str(),
            vehicle: j.vehicle.as_str(),
            since: when(j.searching_since),
            ready: j.pickup_ready_at.map(when).unwrap_or_default(),
            offered: j.offered,
        }
    }
}

/// A job under way on the map, at its next stop.
struct UnderWayMark {
    id: String,
    title: String,
    /// Its next stop, in whole view-box units.
    at: (String, String),
}

impl UnderWayMark {
    fn new(j: &UnderWayOnBoard) -> Option<Self> {
        let at = j.next_stop?;
        Some(UnderWayMark {
            id: j.id.to_string(),
            title: format!(
                "{}: {}, {}",
                j.reference,
                j.status.as_str(),
                j.courier_name.as_deref().unwrap_or_default()
            ),
            at: (format!("{:.0}", at.x), format!("{:.0}", at.y)),
        })
    }
}

/// A job under way in the table.
struct UnderWayRow {
    id: String,
    reference: String,
    merchant: String,
    environment: &'static str,
    status: &'static str,
    courier_id: String,
    courier: String,
    since: String,
}

impl From<UnderWayOnBoard> for UnderWayRow {
    fn from(j: UnderWayOnBoard) -> Self {
        UnderWayRow {
            id: j.id.to_string(),
            reference: j.reference,
            merchant: j.merchant_name,
            environment: j.environment.as_str(),
            status: j.status.as_str(),
            courier_id: j.courier_id.map(|c| c.to_string()).unwrap_or_default(),
            courier: j.courier_name.unwrap_or_default(),
            since: j.assigned_at.map(when).unwrap_or_default(),
        }
    }
}

/// A group of couriers or jobs on the map, opening a closer map of its cell.
struct GroupMark {
    /// `couriers`, `search wait-…` or `under-way`.
    class: String,
    shape: &'static str,
    title: String,
    count: i64,
    area: String,
    at: (String, String),
}

impl GroupMark {
    fn new(g: &Group) -> Self {
        let n = g.count;
        // A cell's kinds side by side, not on top of one another: couriers to the left of
        // their middle, searches to the right, jobs under way below (the marks are 36 wide).
        let (dx, dy) = match g.kind {
            GroupKind::Couriers => (-20.0, 0.0),
            GroupKind::Searching => (20.0, 0.0),
            GroupKind::UnderWay => (0.0, 34.0),
        };
        let (class, shape, title) = match g.kind {
            GroupKind::Couriers => (
                "couriers".to_owned(),
                "#group-couriers-mark",
                format!(
                    "{n} {} online here, {} on a job: open a closer map",
                    if n == 1 { "courier" } else { "couriers" },
                    g.busy
                ),
            ),
            GroupKind::Searching => {
                let wait = wait_of(g.worst_share.unwrap_or(0.0));
                (
                    format!("search wait-{wait}"),
                    "#search-mark",
                    format!(
                        "{n} {} searching here, the longest {}: open a closer map",
                        if n == 1 { "job" } else { "jobs" },
                        match wait {
                            "fresh" => "under half its deadline gone",
                            "waiting" => "over half its deadline gone",
                            _ => "over three quarters of its deadline gone",
                        }
                    ),
                )
            }
            GroupKind::UnderWay => (
                "under-way".to_owned(),
                "#under-way-mark",
                format!(
                    "{n} {} under way here: open a closer map",
                    if n == 1 { "job" } else { "jobs" }
                ),
            ),
        };
        GroupMark {
            class,
            shape,
            title,
            count: n,
            area: g.cell.to_string(),
            at: (format!("{:.0}", g.at.x + dx), format!("{:.0}", g.at.y + dy)),
        }
    }
}

/// A courier's route on the map.
struct RouteMark {
    courier_id: String,
    path: String,
}

impl From<RouteOnBoard> for RouteMark {
    fn from(r: RouteOnBoard) -> Self {
        RouteMark {
            courier_id: r.courier_id.to_string(),
            path: r.path,
        }
    }
}

/// One choice of a form's list: the id sent, the words shown.
struct Choice {
    id: String,
    label: String,
}

/// The forms that move jobs and couriers by hand, for a role that may.
struct ByHand {
    searching: Vec<Choice>,
    free: Vec<Choice>,
    online: Vec<Choice>,
    suspended: Vec<Choice>,
    statuses: Vec<&'static str>,
    /// What the last form did.
    done: Option<&'static str>,
}

/// What `?done=` says was done.
pub(super) fn done_words(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "assigned" => "The courier is on the job.",
        "status_set" => "The job's status is set.",
        "suspended" => "The courier is suspended.",
        "reinstated" => "The courier is reinstated.",
        _ => return None,
    })
}

#[derive(Template)]
#[template(path = "console/ops_market.html")]
struct MarketPage {
    session: Option<OperatorBar>,
    id: String,
    name: String,
    as_of: String,
    live_seconds: u32,
    network: String,
    map: Option<BoardMap>,
    description: String,
    courier_marks: Vec<CourierMark>,
    search_marks: Vec<SearchMark>,
    under_way_marks: Vec<UnderWayMark>,
    routes: Vec<RouteMark>,
    /// Drawn in groups by area: each group's mark (empty when drawn one by one).
    group_marks: Vec<GroupMark>,
    grouped: bool,
    /// The part of the market shown (`south,west,north,east`), empty for the whole of it.
    area: String,
    /// How many of each kind there are in the part shown.
    totals: Totals,
    /// Drawn one by one, whether some kind had more than the board draws.
    cut: bool,
    shown: i64,
    couriers: Vec<CourierRow>,
    searching: Vec<SearchRow>,
    under_way: Vec<UnderWayRow>,
    /// Whether the tables list every row (`?list=all`).
    listing_all: bool,
    /// Which environment's jobs are shown (`live`, `test` or `all`), and how many searching
    /// jobs of the other are not.
    jobs: &'static str,
    hidden_searching: i64,
    by_hand: Option<ByHand>,
}

/// Which environment's jobs a page shows, from `?{name}=`: live ones unless asked (test jobs
/// are a merchant's trials, not the fleet's work).
pub(super) fn environment_shown(
    query: &[(String, String)],
    name: &str,
) -> (&'static str, Option<Environment>) {
    match query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
    {
        Some("test") => ("test", Some(Environment::Test)),
        Some("all") => ("all", None),
        _ => ("live", Some(Environment::Live)),
    }
}

/// The map in words: what a screen reader says for it.
fn describe(name: &str, board: &MarketBoard) -> String {
    let part = if board.area.is_some() {
        format!("Part of the area {name} serves")
    } else {
        format!("The area {name} serves")
    };
    if let Some(groups) = &board.groups {
        let t = board.totals;
        return format!(
            "{part} and its roads, with {} couriers online, {} jobs searching and {} jobs \
             under way: too many to draw one by one, so drawn in {} groups by area, each \
             opening a closer map of its part. The tables below list the first of each kind.",
            t.couriers,
            t.searching,
            t.under_way,
            groups.len()
        );
    }
    let on_map = board.couriers.iter().filter(|c| c.at.is_some()).count();
    let busy = board
        .couriers
        .iter()
        .filter(|c| c.busy && c.at.is_some())
        .count();
    let searching = board.searching.iter().filter(|j| j.at.is_some()).count();
    let under_way = board
        .under_way
        .iter()
        .filter(|j| j.next_stop.is_some())
        .count();
    format!(
        "{part} and its roads, with {on_map} couriers seen lately \
         ({busy} on a job, {} with their routes drawn), {searching} jobs searching at their \
         pickups and {under_way} jobs under way at their next stops. The tables below list \
         them, or the first of each kind when there are many.",
        board.routes.len()
    )
}

fn not_an_area(session: &OperatorSession) -> Response {
    message(
        StatusCode::BAD_REQUEST,
        Some(session),
        "Not an area",
        "A part of the market is four numbers, south,west,north,east in degrees, as the \
         board's own links give it.",
    )
}

#[utoipa::path(
    get,
    path = "/ops/markets/{market}",
    operation_id = "opsConsoleMarket",
    tag = "console",
    summary = "A market's board: its area and roads on a map, the couriers online with their routes, the jobs searching (coloured by how much of their deadline has gone) and the jobs under way; for roles that move jobs, the forms that do it by hand",
    security(()),
    params(
        ("market" = String, Path, description = "The market's id"),
        ("jobs" = Option<String>, Query, description = "Whose jobs: `live` (the default), `test` or `all`"),
        ("list" = Option<String>, Query, description = "`all`: the tables list every courier and job in view, not the first 100 of each"),
        ("area" = Option<String>, Query, description = "A part of the market, `south,west,north,east` in degrees (the links of the map's groups): the map shows it closer, the tables list what is in it"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 400, description = "A page: `area` is not one", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such market", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn market_page(
    State(state): State<AppState>,
    Path(market_id): Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let Some(market) = state.markets.get(&market_id) else {
        return message(
            StatusCode::NOT_FOUND,
            Some(&session),
            "No such market",
            "There is no market with that id.",
        );
    };
    let query: Vec<(String, String)> = uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let (jobs, environment) = environment_shown(&query, "jobs");
    let area = match query.iter().find(|(k, _)| k == "area") {
        None => None,
        Some((_, raw)) => match raw.parse::<Area>() {
            Ok(area) => Some(area),
            Err(_) => return not_an_area(&session),
        },
    };
    let listing_all = query.iter().any(|(k, v)| k == "list" && v == "all");
    // The tables list the first couriers by name, the longest searching, the longest under
    // way (`COURIER_TRACKING_BOARD_ROWS` of each) unless asked for all.
    let rows = state.config.tracking.board_rows as usize;
    let listed = if listing_all { usize::MAX } else { rows };
    let at = now();
    let deadline = state.config.dispatch.deadline;
    let ask = BoardAsk {
        environment,
        area,
        listed,
        deadline,
    };
    let board = match state.tracking.board(market, at, ask).await {
        Ok(board) => board,
        Err(error) => {
            tracing::error!(%error, market = market_id, "reading a market's board failed");
            return unavailable(Some(&session));
        }
    };
    let name = market.definition.name.clone();
    let network = match board.network {
        NetworkState::Loaded { road_edges, places } => {
            format!("Road network: {road_edges} road segments, {places} places.")
        }
        NetworkState::Loading => "The road network is still loading.".to_owned(),
        NetworkState::Failed => "The road network failed to load (see the log).".to_owned(),
    };
    let description = describe(&name, &board);
    let by_hand = if session.may(OpsPermission::MoveJobs) {
        let suspended = match state
            .couriers
            .suspended_in_market(&market_id, listed.min(SHOWN as usize) as i64)
            .await
        {
            Ok(couriers) => couriers
                .into_iter()
                .map(|c| Choice {
                    id: c.id.to_string(),
                    label: format!("{} ({})", c.name, c.vehicle.as_str()),
                })
                .collect(),
            Err(error) => {
                tracing::error!(%error, "listing a market's suspended couriers failed");
                Vec::new()
            }
        };
        let done = done_words(
            query
                .iter()
                .find(|(k, _)| k == "done")
                .map(|(_, v)| v.as_str()),
        );
        let courier_choice = |c: &CourierOnBoard| Choice {
            id: c.id.to_string(),
            label: format!("{} ({})", c.name, c.vehicle.as_str()),
        };
        // The forms offer what the tables list; any other job is steered from its own page.
        Some(ByHand {
            searching: board
                .searching
                .iter()
                .take(listed)
                .map(|j| Choice {
                    id: j.id.to_string(),
                    label: format!(
                        "{} ({}, {})",
                        j.reference,
                        j.vehicle.as_str(),
                        j.environment.as_str()
                    ),
                })
                .collect(),
            free: board
                .couriers
                .iter()
                .filter(|c| !c.busy)
                .take(listed)
                .map(courier_choice)
                .collect(),
            online: board
                .couriers
                .iter()
                .take(listed)
                .map(courier_choice)
                .collect(),
            suspended,
            statuses: JobStatus::ALL.iter().map(|s| s.as_str()).collect(),
            done,
        })
    } else {
        None
    };
    // Grouped, the rows are only the tables' first few: the map draws the groups instead.
    let one_by_one = board.groups.is_none();
    page(
        StatusCode::OK,
        MarketPage {
            session: Some(OperatorBar::from(&session)),
            id: market_id,
            as_of: to_the_second(at),
            live_seconds: LIVE_SECONDS,
            network,
            map: board.map,
            description,
            courier_marks: board
                .couriers
                .iter()
                .filter(|_| one_by_one)
                .filter_map(CourierMark::new)
                .collect(),
            search_marks: board
                .searching
                .iter()
                .filter(|_| one_by_one)
                .filter_map(|j| SearchMark::new(j, at, deadline))
                .collect(),
            under_way_marks: board
                .under_way
                .iter()
                .filter(|_| one_by_one)
                .filter_map(UnderWayMark::new)
                .collect(),
            routes: board.routes.into_iter().map(RouteMark::from).collect(),
            group_marks: board.groups.iter().flatten().map(GroupMark::new).collect(),
            grouped: board.groups.is_some(),
            area: board.area.map(|a| a.to_string()).unwrap_or_default(),
            totals: board.totals,
            cut: board.cut,
            shown: SHOWN,
            couriers: board
                .couriers
                .into_iter()
                .take(listed)
                .map(CourierRow::from)
                .collect(),
            searching: board
                .searching
                .into_iter()
                .take(listed)
                .map(|j| SearchRow::new(j, at, deadline))
                .collect(),
            under_way: board
                .under_way
                .into_iter()
                .take(listed)
                .map(UnderWayRow::from)
                .collect(),
            listing_all,
            jobs,
            hidden_searching: board.hidden_searching,
            by_hand,
            name,
        }
        .render(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, Utc};

    #[test]
    fn a_search_is_coloured_by_how_much_of_its_time_has_gone() {
        let now = Utc::now();
        let deadline = Duration::minutes(15);
        let class = |waited: i64, ready: Option<i64>| {
            let since = now - Duration::minutes(waited);
            wait_class(
                since,
                ready.map(|r| since + Duration::minutes(r)),
                now,
                deadline,
            )
        };
        assert_eq!(class(2, None), ("fresh", "2 of 15 min".to_owned()));
        assert_eq!(class(8, None).0, "waiting");
        assert_eq!(class(12, None).0, "late");
        // Ready 15 minutes after it started searching: it has 30 minutes in all.
        assert_eq!(class(12, Some(15)), ("fresh", "12 of 30 min".to_owned()));
    }
}
