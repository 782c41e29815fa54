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
use courier_core::infra::clock::now;
use courier_core::tracking::board::{
    BoardMap, CourierOnBoard, MarketBoard, NetworkState, RouteOnBoard, SHOWN, SearchOnBoard,
    UnderWayOnBoard,
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
    let share = waited.num_milliseconds() as f64 / allowed.num_milliseconds().max(1) as f64;
    let class = if share < 0.5 {
        "fresh"
    } else if share < 0.75 {
        "waiting"
    } else {
        "late"
    };
    let words = format!(
        "{} of {} min",
        waited.num_minutes(),
        allowed.num_minutes().max(1)
    );
    (class, words)
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
    /// Each kind's count (on the map, up to the board's bound), whether there were more, and
    /// the rows listed.
    counts: Counts,
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

/// How many of each kind the board holds, and whether it was cut at its bound.
struct Counts {
    couriers: usize,
    more_couriers: bool,
    searching: usize,
    more_searching: bool,
    under_way: usize,
    more_under_way: bool,
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
        "The area {name} serves and its roads, with {on_map} couriers seen lately \
         ({busy} on a job, {} with their routes drawn), {searching} jobs searching at their \
         pickups and {under_way} jobs under way at their next stops. The tables below list \
         them, or the first of each kind when there are many.",
        board.routes.len()
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
        ("list" = Option<String>, Query, description = "`all`: the tables list every courier and job on the map, not the first 100 of each"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
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
    let at = now();
    let board = match state.tracking.board(market, at, environment).await {
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
    let listing_all = query.iter().any(|(k, v)| k == "list" && v == "all");
    // The tables list the first couriers by name, the longest searching, the longest under
    // way (`COURIER_TRACKING_BOARD_ROWS` of each) unless asked for all; the map draws them all.
    let rows = state.config.tracking.board_rows as usize;
    let listed = if listing_all { usize::MAX } else { rows };
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
    let deadline = state.config.dispatch.deadline;
    let counts = Counts {
        couriers: board.couriers.len(),
        more_couriers: board.more_couriers,
        searching: board.searching.len(),
        more_searching: board.more_searching,
        under_way: board.under_way.len(),
        more_under_way: board.more_under_way,
    };
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
            courier_marks: board.couriers.iter().filter_map(CourierMark::new).collect(),
            search_marks: board
                .searching
                .iter()
                .filter_map(|j| SearchMark::new(j, at, deadline))
                .collect(),
            under_way_marks: board
                .under_way
                .iter()
                .filter_map(UnderWayMark::new)
                .collect(),
            routes: board.routes.into_iter().map(RouteMark::from).collect(),
            counts,
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
