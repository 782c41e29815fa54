//! A market's price books as an operator reads them: the uploads, the comparison of an upload
//! against the market's recent quotes (a histogram of the changes, the largest moves, the
//! re-priced quotes with filters), and activation (a rollback is activating an earlier upload)
//! after a confirmation that names the upload.

use askama::Template;
use axum::extract::multipart::MultipartError;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use super::super::respond::{money, page, see_other, when};
use super::histogram::{Histogram, histogram};
use super::{OperatorBar, message, not_allowed, permitted_form, signed_in, token_refusal};
use crate::state::AppState;
use courier_core::auth::operator_sessions::OperatorSession;
use courier_core::pricing::{Comparison, PriceBookError, Repriced, UploadSummary};
use courier_domain::Vehicle;
use courier_domain::operators::OpsPermission;

/// Re-priced quotes listed on the comparison page, at most (the histogram counts them all).
const LISTED: usize = 200;
/// The largest increases and decreases shown, each.
const LARGEST: usize = 5;
/// The distance bands the comparison filters by: (value, label, from metres, below metres).
const BANDS: [(&str, &str, i32, i32); 5] = [
    ("0-2", "under 2 km", 0, 2_000),
    ("2-5", "2 to 5 km", 2_000, 5_000),
    ("5-10", "5 to 10 km", 5_000, 10_000),
    ("10-20", "10 to 20 km", 10_000, 20_000),
    ("20+", "20 km or more", 20_000, i32::MAX),
];

/// The page for a price-book refusal: an unknown market or upload is 404, the rest as the API
/// answers them.
fn refusal(session: &OperatorSession, error: &PriceBookError) -> Response {
    let status = match error {
        PriceBookError::UnknownMarket(_) | PriceBookError::UnknownVersion { .. } => {
            StatusCode::NOT_FOUND
        }
        PriceBookError::Rejected(_) | PriceBookError::InvalidSettings(_) => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        _ => {
            tracing::error!(%error, "an operator console price-book page failed");
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    message(status, Some(session), "Price books", &error.to_string())
}

struct ListedUpload {
    version: i32,
    name: String,
    label: String,
    sha256: String,
    uploaded: String,
    active: bool,
    activations: String,
}

impl From<UploadSummary> for ListedUpload {
    fn from(u: UploadSummary) -> Self {
        ListedUpload {
            version: u.version,
            name: u.name,
            label: u.version_label,
            sha256: u.sha256,
            uploaded: format!("{} by {}", when(u.uploaded_at), u.uploaded_by),
            active: u.active,
            activations: u
                .activations
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

#[derive(Template)]
#[template(path = "console/ops_price_books.html")]
struct PriceBooksPage {
    session: Option<OperatorBar>,
    csrf: String,
    market: String,
    uploads: Vec<ListedUpload>,
    notice: Option<String>,
}

#[derive(Deserialize, Default)]
pub struct PriceBooksQuery {
    activated: Option<i32>,
    as_version: Option<i32>,
    uploaded: Option<i32>,
}

#[utoipa::path(
    get,
    path = "/ops/markets/{market}/price-books",
    operation_id = "opsConsolePriceBooks",
    tag = "console",
    summary = "A market's price-book uploads, the one in force marked",
    security(()),
    params(("market" = String, Path, description = "The market's id")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 404, description = "A page: no such market", content_type = "text/html", body = String),
    )
)]
pub async fn price_books_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(market): Path<String>,
    query: Result<Query<PriceBooksQuery>, QueryRejection>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let uploads = match state.price_books.list(&market).await {
        Ok(uploads) => uploads,
        Err(error) => return refusal(&session, &error),
    };
    let query = query.map(|q| q.0).unwrap_or_default();
    let notice = match (query.activated, query.as_version, query.uploaded) {
        (Some(upload), Some(version), _) => Some(format!(
            "Upload {upload} is now in force, as price-book version {version}."
        )),
        (_, _, Some(upload)) => Some(format!(
            "Upload {upload} is in. Compare it with the market's recent quotes before activating it."
        )),
        _ => None,
    };
    page(
        StatusCode::OK,
        PriceBooksPage {
            session: Some(OperatorBar::from(&session)),
            csrf: session.csrf_token.clone(),
            market,
            uploads: uploads.into_iter().rev().map(ListedUpload::from).collect(),
            notice,
        }
        .render(),
    )
}

struct Row {
    quote_id: String,
    vehicle: &'static str,
    distance: String,
    before: String,
    after: String,
    difference: String,
    direction: &'static str,
}

#[derive(Template)]
#[template(path = "console/ops_comparison.html")]
struct ComparisonPage {
    session: Option<OperatorBar>,
    market: String,
    version: i32,
    comparison: Comparison,
    mean_change: String,
    total_before: String,
    total_after: String,
    largest_increase: String,
    largest_decrease: String,
    histogram: Histogram,
    /// What the histogram and the table show: "all N quotes" or the filters'.
    scope: String,
    vehicles: Vec<(&'static str, bool)>,
    bands: Vec<(&'static str, &'static str, bool)>,
    increases: Vec<Row>,
    decreases: Vec<Row>,
    rows: Vec<Row>,
    listed: String,
}

#[derive(Deserialize, Default)]
pub struct ComparisonQuery {
    vehicle: Option<String>,
    distance: Option<String>,
}

fn row(r: &Repriced) -> Row {
    let difference = r.after_minor.map(|after| after - r.before_minor);
    Row {
        quote_id: r.quote_id.to_string(),
        vehicle: r.vehicle.as_str(),
        distance: format!("{:.1} km", f64::from(r.distance_metres) / 1000.0),
        before: money(&r.currency, r.before_minor),
        after: r
            .after_minor
            .map_or_else(|| "refused".to_owned(), |a| money(&r.currency, a)),
        difference: match difference {
            None => "—".to_owned(),
            Some(d) if d > 0 => format!("+{}", money(&r.currency, d)),
            Some(d) => money(&r.currency, d),
        },
        direction: match difference {
            None => "refused",
            Some(d) if d > 0 => "up",
            Some(d) if d < 0 => "down",
            Some(_) => "same",
        },
    }
}

#[utoipa::path(
    get,
    path = "/ops/markets/{market}/price-books/{version}/comparison",
    operation_id = "opsConsoleComparison",
    tag = "console",
    summary = "An upload compared with the market's recent quotes: the API's comparison, a histogram of the changes, the largest moves and the re-priced quotes, filtered by vehicle and distance band",
    security(()),
    params(
        ("market" = String, Path, description = "The market's id"),
        ("version" = i32, Path, description = "The upload's version"),
        ("vehicle" = Option<String>, Query, description = "Only quotes for this vehicle"),
        ("distance" = Option<String>, Query, description = "Only quotes in this band: 0-2, 2-5, 5-10, 10-20 or 20+ (km)"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 404, description = "A page: no such market or upload", content_type = "text/html", body = String),
        (status = 422, description = "A page: the upload cannot price (re-pricing failed)", content_type = "text/html", body = String),
    )
)]
pub async fn comparison_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((market, version)): Path<(String, String)>,
    query: Result<Query<ComparisonQuery>, QueryRejection>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let compared = async {
        let version = state.price_books.parse_version(&market, &version)?;
        let (comparison, repriced) = state.price_books.compare_quotes(&market, version).await?;
        Ok::<_, PriceBookError>((version, comparison, repriced))
    };
    let (version, comparison, repriced) = match compared.await {
        Ok(compared) => compared,
        Err(error) => return refusal(&session, &error),
    };
    let query = query.map(|q| q.0).unwrap_or_default();
    let vehicle = query
        .vehicle
        .as_deref()
        .and_then(|v| v.parse::<Vehicle>().ok());
    let band = query
        .distance
        .as_deref()
        .and_then(|d| BANDS.iter().find(|band| band.0 == d));
    let shown: Vec<&Repriced> = repriced
        .iter()
        .filter(|r| vehicle.is_none_or(|v| r.vehicle == v))
        .filter(|r| band.is_none_or(|b| (b.2..b.3).contains(&r.distance_metres)))
        .collect();
    let currency = state
        .markets
        .get(&market)
        .map(|m| m.definition.currency.code())
        .unwrap_or_default();
    let changes: Vec<i64> = shown
        .iter()
        .filter_map(|r| r.after_minor.map(|a| a - r.before_minor))
        .collect();
    let drawn = histogram(&changes, |minor| money(&currency, minor));
    let mut by_change: Vec<&&Repriced> = shown.iter().filter(|r| r.after_minor.is_some()).collect();
    by_change.sort_by_key(|r| r.after_minor.unwrap_or(0) - r.before_minor);
    let decreases = by_change
        .iter()
        .take_while(|r| r.after_minor.unwrap_or(0) < r.before_minor)
        .take(LARGEST)
        .map(|r| row(r))
        .collect();
    let increases = by_change
        .iter()
        .rev()
        .take_while(|r| r.after_minor.unwrap_or(0) > r.before_minor)
        .take(LARGEST)
        .map(|r| row(r))
        .collect();
    let scope = match (vehicle, band) {
        (None, None) => format!("all {} quotes compared", shown.len()),
        _ => format!(
            "{} of {} quotes: {}{}",
            shown.len(),
            repriced.len(),
            vehicle.map_or("any vehicle", Vehicle::as_str),
            band.map_or(String::new(), |b| format!(", {}", b.1)),
        ),
    };
    let listed = if shown.len() > LISTED {
        format!("The newest {LISTED} of {} quotes", shown.len())
    } else {
        format!("{} quotes, newest first", shown.len())
    };
    let vehicles = Vehicle::ALL
        .iter()
        .map(|v| (v.as_str(), vehicle == Some(*v)))
        .collect();
    let bands = BANDS
        .iter()
        .map(|b| (b.0, b.1, band.is_some_and(|chosen| chosen.0 == b.0)))
        .collect();
    page(
        StatusCode::OK,
        ComparisonPage {
            session: Some(OperatorBar::from(&session)),
            market,
            version,
            mean_change: money(&currency, comparison.mean_change_minor),
            total_before: money(&currency, comparison.total_before_minor),
            total_after: money(&currency, comparison.total_after_minor),
            largest_increase: money(&currency, comparison.largest_increase_minor),
            largest_decrease: money(&currency, comparison.largest_decrease_minor),
            comparison,
            histogram: drawn,
            scope,
            vehicles,
            bands,
            increases,
            decreases,
            rows: shown.iter().take(LISTED).map(|r| row(r)).collect(),
            listed,
        }
        .render(),
    )
}

#[derive(Template)]
#[template(path = "console/ops_activate.html")]
struct ActivatePage {
    session: Option<OperatorBar>,
    market: String,
    upload: ListedUpload,
    in_force: Option<i32>,
    rollback: bool,
}

#[utoipa::path(
    get,
    path = "/ops/markets/{market}/price-books/{version}/activate",
    operation_id = "opsConsoleActivatePage",
    tag = "console",
    summary = "The confirmation before an upload is activated, naming it",
    security(()),
    params(
        ("market" = String, Path, description = "The market's id"),
        ("version" = i32, Path, description = "The upload's version"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 403, description = "A page: the operator's role does not manage price books", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such market or upload", content_type = "text/html", body = String),
    )
)]
pub async fn activate_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((market, version)): Path<(String, String)>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    if !session.may(OpsPermission::ManagePriceBooks) {
        return not_allowed(&session, "activating price books");
    }
    let found = async {
        let version = state.price_books.parse_version(&market, &version)?;
        let uploads = state.price_books.list(&market).await?;
        Ok::<_, PriceBookError>((version, uploads))
    };
    let (version, uploads) = match found.await {
        Ok(found) => found,
        Err(error) => return refusal(&session, &error),
    };
    let in_force = uploads.iter().find(|u| u.active).map(|u| u.version);
    let Some(upload) = uploads.into_iter().find(|u| u.version == version) else {
        let error = PriceBookError::UnknownVersion {
            market: market.clone(),
            version: version.to_string(),
        };
        return refusal(&session, &error);
    };
    page(
        StatusCode::OK,
        ActivatePage {
            session: Some(OperatorBar::from(&session)),
            rollback: in_force.is_some_and(|active| version < active),
            market,
            upload: upload.into(),
            in_force,
        }
        .render(),
    )
}

#[utoipa::path(
    post,
    path = "/ops/markets/{market}/price-books/{version}/activate",
    operation_id = "opsConsoleActivate",
    tag = "console",
    summary = "Activates an upload (form field `csrf`): the market's next quote is priced by it",
    security(()),
    params(
        ("market" = String, Path, description = "The market's id"),
        ("version" = i32, Path, description = "The upload's version"),
    ),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Activated: to the market's price books, saying so"),
        (status = 403, description = "A page: the form did not carry the session's token, or the operator's role does not manage price books", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such market or upload", content_type = "text/html", body = String),
    )
)]
pub async fn activate(
    State(state): State<AppState>,
    Path((market, version)): Path<(String, String)>,
    request: Request,
) -> Response {
    let (session, _) = match permitted_form(
        &state,
        request,
        OpsPermission::ManagePriceBooks,
        "activating price books",
    )
    .await
    {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let activated = async {
        let version = state.price_books.parse_version(&market, &version)?;
        state
            .price_books
            .activate(&market, version, &session.operator.name)
            .await
    };
    match activated.await {
        Ok(activation) => see_other(&format!(
            "/ops/markets/{}/price-books?activated={}&as_version={}",
            urlencoding(&market),
            activation.version,
            activation.price_book_version
        )),
        Err(error) => refusal(&session, &error),
    }
}

/// What the upload form sent: the component's bytes, the settings' text, the CSRF token.
#[derive(Default)]
struct UploadForm {
    csrf: Option<String>,
    component: Vec<u8>,
    settings: String,
}

/// Reads the upload form's parts; any other part is ignored. A part that cannot be read says
/// why, with its status (413 past the body limit).
async fn upload_form(mut parts: Multipart) -> Result<UploadForm, (StatusCode, String)> {
    let unread = |e: MultipartError| (e.status(), e.body_text());
    let mut form = UploadForm::default();
    while let Some(part) = parts.next_field().await.map_err(unread)? {
        match part.name() {
            Some("csrf") => form.csrf = Some(part.text().await.map_err(unread)?),
            Some("settings") => form.settings = part.text().await.map_err(unread)?,
            Some("component") => form.component = part.bytes().await.map_err(unread)?.to_vec(),
            _ => {}
        }
    }
    Ok(form)
}

#[utoipa::path(
    post,
    path = "/ops/markets/{market}/price-books",
    operation_id = "opsConsoleUpload",
    tag = "console",
    summary = "Uploads a price book (multipart form: `csrf`, `component`, the .wasm file, and `settings`, JSON); it is not in force until activated",
    security(()),
    params(("market" = String, Path, description = "The market's id")),
    request_body(content = String, description = "`csrf`, `component` (file), `settings` (JSON text, `{}` when empty)", content_type = "multipart/form-data"),
    responses(
        (status = 303, description = "Uploaded: to the market's price books, saying so"),
        (status = 400, description = "A page: not a multipart form, no component, or settings that are not JSON", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token, or the operator's role does not manage price books", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such market", content_type = "text/html", body = String),
        (status = 413, description = "A page: larger than an upload may be (16 MiB)", content_type = "text/html", body = String),
        (status = 422, description = "A page: the component or its settings were refused, with the reason", content_type = "text/html", body = String),
    )
)]
pub async fn upload(
    State(state): State<AppState>,
    Path(market): Path<String>,
    request: Request,
) -> Response {
    let session = match signed_in(&state, request.headers()).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    if !session.may(OpsPermission::ManagePriceBooks) {
        return not_allowed(&session, "uploading price books");
    }
    let unreadable = |status: StatusCode, why: &str| {
        message(
            status,
            Some(&session),
            "Price books",
            &format!("The upload could not be read: {why}."),
        )
    };
    let form = match Multipart::from_request(request, &state).await {
        Ok(parts) => upload_form(parts).await,
        Err(rejection) => Err((rejection.status(), rejection.body_text())),
    };
    let form = match form {
        Ok(form) => form,
        Err((status, why)) => return unreadable(status, &why),
    };
    if let Some(refusal) = token_refusal(&session, form.csrf.as_deref()) {
        return refusal;
    }
    if form.component.is_empty() {
        return unreadable(
            StatusCode::BAD_REQUEST,
            "choose the price book's .wasm file",
        );
    }
    let settings = if form.settings.trim().is_empty() {
        serde_json::json!({})
    } else {
        match serde_json::from_str(&form.settings) {
            Ok(settings) => settings,
            Err(e) => {
                let why = format!("the settings are not JSON ({e})");
                return unreadable(StatusCode::BAD_REQUEST, &why);
            }
        }
    };
    match state
        .price_books
        .upload(&market, form.component, settings, &session.operator.name)
        .await
    {
        Ok(summary) => see_other(&format!(
            "/ops/markets/{}/price-books?uploaded={}",
            urlencoding(&market),
            summary.version
        )),
        Err(error) => refusal(&session, &error),
    }
}

/// A market id as a path segment (ids are plain, but the page never trusts that).
fn urlencoding(segment: &str) -> String {
    form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}
