//! The operator console's sign-in and sign-out, and its index of markets.

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::super::respond::{
    TOO_MANY_ATTEMPTS, field, page, retry_after, see_other, signed_out_form,
};
use super::{OperatorBar, any_signed_form, cookie, message, session, signed_in, token};
use crate::state::AppState;
use courier_core::auth::AuthError;
use courier_core::operator_accounts::OperatorSignInRefusal;
use courier_core::team::SignInRefusal;

#[derive(Template)]
#[template(path = "console/ops_sign_in.html")]
struct SignInPage<'a> {
    session: Option<OperatorBar>,
    problem: Option<&'a str>,
    email: &'a str,
    /// Just became an operator through an invitation.
    joined: bool,
}

#[utoipa::path(
    get,
    path = "/ops/sign-in",
    operation_id = "opsConsoleSignInPage",
    tag = "console",
    summary = "The operator console's sign-in form (e-mail address and password)",
    security(()),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 303, description = "Signed in already: to /ops/markets (or to the second factor the session owes)"),
    )
)]
pub async fn sign_in_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    match session(&state, &headers).await {
        Ok(Some(_)) => see_other("/ops/"),
        Ok(None) => page(
            StatusCode::OK,
            SignInPage {
                session: None,
                problem: None,
                email: "",
                joined: uri.query() == Some("joined=1"),
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
    summary = "Signs an operator in: form fields `email`, `password`; sets the session cookie, then asks for the second factor (or for setting one up)",
    security(()),
    request_body(content = String, description = "`email=…&password=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "The password is right: to /ops/sign-in/code (or /ops/second-factor, for an operator without one), with the session cookie"),
        (status = 400, description = "A page: the address or password is missing", content_type = "text/html", body = String),
        (status = 401, description = "A page: the address and password are not an account's", content_type = "text/html", body = String),
        (status = 403, description = "A page: the account is not an operator's; or the form was sent from another site", content_type = "text/html", body = String),
        (status = 413, description = "A page: the form is too large", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed sign-ins from this address or to this account (with Retry-After)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn sign_in(State(state): State<AppState>, request: Request) -> Response {
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let (fields, client) = (&posted.fields, posted.client);
    let email = field(fields, "email").unwrap_or("").trim();
    let password = field(fields, "password").unwrap_or("");
    let again = |status: StatusCode, problem: &str| {
        page(
            status,
            SignInPage {
                session: None,
                problem: Some(problem),
                email,
                joined: false,
            }
            .render(),
        )
    };
    if email.is_empty() || password.is_empty() {
        return again(
            StatusCode::BAD_REQUEST,
            "Enter both your e-mail address and your password.",
        );
    }
    let (person, role, has_factor) = match state.operator_accounts.sign_in(email, password).await {
        Ok(signed) => signed,
        Err(OperatorSignInRefusal::Account(SignInRefusal::Wrong)) => {
            state.auth_failures.spend(client, std::time::Instant::now());
            // In the audit trail, as the operator API's failed sign-ins are.
            crate::admin::record_failed_sign_in(&state, client, &AuthError::Invalid).await;
            return again(
                StatusCode::UNAUTHORIZED,
                "That address and password do not match an operator's account.",
            );
        }
        Err(OperatorSignInRefusal::NotOperator) => {
            return again(
                StatusCode::FORBIDDEN,
                "That account is not an operator's. Ask an operator with the Admin role for an \
                 invitation.",
            );
        }
        Err(OperatorSignInRefusal::Account(SignInRefusal::Blocked { until })) => {
            state.auth_failures.spend(client, std::time::Instant::now());
            let (heading, text) = TOO_MANY_ATTEMPTS;
            let mut response = message(StatusCode::TOO_MANY_REQUESTS, None, heading, text);
            let wait = (until - courier_core::infra::clock::now())
                .to_std()
                .unwrap_or_default();
            retry_after(&mut response, wait);
            return response;
        }
        Err(OperatorSignInRefusal::Account(SignInRefusal::Store(error))) => {
            tracing::error!(%error, "an operator sign-in failed");
            return again(
                StatusCode::SERVICE_UNAVAILABLE,
                "The console cannot check accounts just now; try again shortly.",
            );
        }
    };
    match state
        .operator_sessions
        .open(&person, role, has_factor)
        .await
    {
        Ok(signed_in) => {
            let next = if has_factor {
                "/ops/sign-in/code"
            } else {
                "/ops/second-factor"
            };
            let mut response = see_other(next);
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
    summary = "Signs an operator out: form field `csrf`; ends the session (complete or still owing its second factor)",
    security(()),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To /ops/sign-in, the cookie cleared"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
    )
)]
pub async fn sign_out(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    if let Err(answer) = any_signed_form(&state, request).await {
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
