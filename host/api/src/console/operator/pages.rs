//! The operator console's sign-in and sign-out, and its index of markets.

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::super::respond::{
    TOO_MANY_ATTEMPTS, client, cross_site_refusal, field, form, page, retry_after, see_other,
};
use super::{OperatorBar, cookie, message, session, signed_form, signed_in, token};
use crate::state::AppState;
use courier_core::auth::operators::OperatorRefusal;

#[utoipa::path(
    get,
    path = "/ops/",
    operation_id = "opsConsoleStart",
    tag = "console",
    summary = "The operator console: to its markets when signed in, else to sign in",
    security(()),
    responses((status = 303, description = "To /ops/markets or /ops/sign-in"))
)]
pub async fn start(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match session(&state, &headers).await {
        Ok(Some(_)) => see_other("/ops/markets"),
        Ok(None) => see_other("/ops/sign-in"),
        Err(page) => page,
    }
}

#[derive(Template)]
#[template(path = "console/ops_sign_in.html")]
struct SignInPage<'a> {
    session: Option<OperatorBar>,
    problem: Option<&'a str>,
}

#[utoipa::path(
    get,
    path = "/ops/sign-in",
    operation_id = "opsConsoleSignInPage",
    tag = "console",
    summary = "The operator console's sign-in form (an operator token)",
    security(()),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 303, description = "Signed in already: to /ops/markets"),
    )
)]
pub async fn sign_in_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match session(&state, &headers).await {
        Ok(Some(_)) => see_other("/ops/markets"),
        Ok(None) => page(
            StatusCode::OK,
            SignInPage {
                session: None,
                problem: None,
            }
            .render(),
        ),
        Err(page) => page,
    }
}

#[utoipa::path(
    post,
    path = "/ops/sign-in",
    operation_id = "opsConsoleSignIn",
    tag = "console",
    summary = "Signs an operator in: form field `token`; sets the session cookie",
    security(()),
    request_body(content = String, description = "`token=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed in: to /ops/markets, with the session cookie"),
        (status = 400, description = "A page: the token is missing", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form was sent from another site (its `Sec-Fetch-Site` or `Origin` is not this service's)", content_type = "text/html", body = String),
        (status = 401, description = "A page: no operator has that token", content_type = "text/html", body = String),
        (status = 413, description = "A page: the form is too large", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed sign-ins from this address (with Retry-After)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn sign_in(State(state): State<AppState>, request: Request) -> Response {
    let client = client(&state, &request);
    if let Some(refused) = cross_site_refusal(&state, request.headers()) {
        return refused;
    }
    let fields = match form(request).await {
        Ok(fields) => fields,
        Err(page) => return page,
    };
    let presented = field(&fields, "token").unwrap_or("").trim();
    let again = |status: StatusCode, problem: &str| {
        page(
            status,
            SignInPage {
                session: None,
                problem: Some(problem),
            }
            .render(),
        )
    };
    if presented.is_empty() {
        return again(StatusCode::BAD_REQUEST, "Enter your operator token.");
    }
    let header = format!("Bearer {presented}");
    let operator = match state.operators.check_from(Some(header.as_bytes()), client) {
        Ok(operator) => operator,
        Err(OperatorRefusal::TooManyFailures(wait)) => {
            let (heading, text) = TOO_MANY_ATTEMPTS;
            let mut response = message(StatusCode::TOO_MANY_REQUESTS, None, heading, text);
            retry_after(&mut response, wait);
            return response;
        }
        Err(OperatorRefusal::Credentials(refusal)) => {
            // In the audit trail, as the operator API's failed sign-ins are.
            crate::admin::record_failed_sign_in(&state, client, &refusal).await;
            return again(
                StatusCode::UNAUTHORIZED,
                "That token is not an operator token in use.",
            );
        }
    };
    match state.operator_sessions.open(operator, presented).await {
        Ok(signed_in) => {
            let mut response = see_other("/ops/markets");
            response
                .headers_mut()
                .insert(header::SET_COOKIE, cookie(&state, Some(&signed_in.token)));
            response
        }
        Err(error) => {
            tracing::error!(%error, "opening an operator console session failed");
            again(
                StatusCode::SERVICE_UNAVAILABLE,
                "The console cannot reach its database just now; try again shortly.",
            )
        }
    }
}

#[utoipa::path(
    post,
    path = "/ops/sign-out",
    operation_id = "opsConsoleSignOut",
    tag = "console",
    summary = "Signs an operator out: form field `csrf`; ends the session",
    security(()),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To /ops/sign-in, the cookie cleared"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
    )
)]
pub async fn sign_out(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    if let Err(answer) = signed_form(&state, request).await {
        return answer;
    }
    if let Some(token) = token(&headers)
        && let Err(error) = state.operator_sessions.close(token).await
    {
        tracing::error!(%error, "ending an operator console session failed");
    }
    let mut response = see_other("/ops/sign-in");
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(&state, None));
    response
}

struct ListedMarket {
    id: String,
    name: String,
    currency: String,
    vehicles: String,
}

#[derive(Template)]
#[template(path = "console/ops_markets.html")]
struct MarketsPage {
    session: Option<OperatorBar>,
    markets: Vec<ListedMarket>,
}

#[utoipa::path(
    get,
    path = "/ops/markets",
    operation_id = "opsConsoleMarkets",
    tag = "console",
    summary = "The markets, each with the way to its price books",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
    )
)]
pub async fn markets_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let markets = state
        .markets
        .all()
        .iter()
        .map(|market| {
            let definition = &market.definition;
            ListedMarket {
                id: definition.id.clone(),
                name: definition.name.clone(),
                currency: definition.currency.code(),
                vehicles: definition
                    .vehicles
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })
        .collect();
    page(
        StatusCode::OK,
        MarketsPage {
            session: Some(OperatorBar::from(&session)),
            markets,
        }
        .render(),
    )
}
