//! What every console page shares: the layout's session bar, the headers, the session
//! cookie, forms and their CSRF token, and pages that say what went wrong.

use std::net::IpAddr;
use std::time::Instant;

use askama::Template;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::rate_limit::Budget;
use courier_domain::Environment;
use courier_domain::team::Permission;

/// The session cookie's name.
pub(super) const COOKIE: &str = "courier_console";
/// The largest form a console page takes.
pub(super) const MAX_FORM_BYTES: usize = 16 * 1024;
/// What console pages may load: their own stylesheet and script (which reads only pages of
/// the same origin), nothing else; forms post only here.
pub(super) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// An amount as every console page writes it: in the currency's own form, or in minor units
/// with its code when the code is not one the service knows.
pub(super) fn money(currency: &str, amount_minor: i64) -> String {
    courier_domain::Currency::from_code(currency).map_or_else(
        |_| format!("{amount_minor} {currency} (minor units)"),
        |c| c.format(amount_minor),
    )
}

/// A moment as every console page writes it.
pub(super) fn when(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// What the layout shows of the session: whose it is, which merchant and environment it is
/// in (with the switch to the other), and which parts of the console the person's role opens.
pub(super) struct SessionBar {
    pub environment: &'static str,
    pub environment_label: &'static str,
    /// The environment the header's switch moves to, and its label.
    pub other_environment: &'static str,
    pub other_environment_label: &'static str,
    pub merchant_id: String,
    pub merchant_name: String,
    pub person: String,
    pub role: &'static str,
    pub csrf: String,
    pub may_use_sandbox: bool,
    pub may_manage_webhooks: bool,
    /// Settings and cards: what the account's money depends on.
    pub may_manage_settings: bool,
}

/// Whether the page's session may do `what` (`webhooks`, `settings`, `sandbox`): templates ask
/// it before drawing a form, so what a role may not do is not offered.
pub(crate) fn may(session: &Option<SessionBar>, what: &str) -> bool {
    session.as_ref().is_some_and(|s| match what {
        "webhooks" => s.may_manage_webhooks,
        "settings" => s.may_manage_settings,
        "sandbox" => s.may_use_sandbox,
        _ => false,
    })
}

fn environment_label(environment: Environment) -> &'static str {
    match environment {
        Environment::Live => "Live",
        Environment::Test => "Test",
    }
}

impl From<&ConsoleSession> for SessionBar {
    fn from(session: &ConsoleSession) -> Self {
        let environment = session.merchant.environment;
        let other = match environment {
            Environment::Live => Environment::Test,
            Environment::Test => Environment::Live,
        };
        SessionBar {
            environment: environment.as_str(),
            environment_label: environment_label(environment),
            other_environment: other.as_str(),
            other_environment_label: environment_label(other),
            merchant_id: session.merchant.merchant_id.to_string(),
            merchant_name: session.merchant_name.clone(),
            person: session.person.name.clone(),
            role: session.role.label(),
            csrf: session.csrf_token.clone(),
            may_use_sandbox: session.may(Permission::UseSandbox),
            may_manage_webhooks: session.may(Permission::ManageWebhooks),
            may_manage_settings: session.may(Permission::ManageSettings),
        }
    }
}

/// The page for a form the person's role may not send (the console does not offer it; this
/// answers one sent anyway).
pub(super) fn not_allowed(session: &ConsoleSession, what: &str) -> Response {
    let text = format!(
        "Your role in {}'s team ({}) does not allow {what}. Ask an owner or admin of the team.",
        session.merchant_name,
        session.role.label()
    );
    message(StatusCode::FORBIDDEN, Some(session), "Not allowed", &text)
}

/// The refusal of a form the person's role may not send; None when it may.
pub(super) fn refused_unless(
    session: &ConsoleSession,
    permission: Permission,
    what: &str,
) -> Option<Response> {
    (!session.may(permission)).then(|| not_allowed(session, what))
}

#[derive(Template)]
#[template(path = "console/message.html")]
pub(super) struct MessagePage<'a> {
    session: Option<SessionBar>,
    heading: &'a str,
    text: &'a str,
    back: &'a str,
    back_label: &'a str,
}

/// A rendered page with the console's headers.
pub(super) fn page(status: StatusCode, html: Result<String, askama::Error>) -> Response {
    let Ok(html) = html else {
        tracing::error!("a console page did not render");
        let mut response = (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be shown",
        )
            .into_response();
        for_people(&mut response);
        return response;
    };
    let mut response = (status, html).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    for_people(&mut response);
    response
}

/// A file every page shares, cached for five minutes.
pub(super) fn asset(content_type: &'static str, body: impl IntoResponse) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    for_people(&mut response);
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// Marks a console answer as a page for people, sent as it is (not rewritten as an API
/// error), with the console's headers.
pub(super) fn for_people(response: &mut Response) {
    response
        .extensions_mut()
        .insert(crate::middleware::PageForPeople);
    secure(response.headers_mut());
}

pub(super) fn secure(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// A page that says what went wrong, in words, with the way back.
pub(super) fn message(
    status: StatusCode,
    session: Option<&ConsoleSession>,
    heading: &str,
    text: &str,
) -> Response {
    let (back, back_label) = match session {
        Some(_) => ("/console/jobs", "Back to the jobs"),
        None => ("/console/sign-in", "Sign in"),
    };
    page(
        status,
        MessagePage {
            session: session.map(SessionBar::from),
            heading,
            text,
            back,
            back_label,
        }
        .render(),
    )
}

/// 303 to `location`.
pub(super) fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    for_people(&mut response);
    response
}

/// The session cookie's token, if the request has one.
pub(super) fn token(headers: &HeaderMap) -> Option<&str> {
    cookie_value(headers, COOKIE)
}

/// The value of the cookie `name`, if the request has one.
pub(super) fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(cookie, _)| *cookie == name)
        .map(|(_, value)| value)
}

/// The request's live session; None when signed out (or the lookup failed, logged).
pub(super) async fn session(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<ConsoleSession>, Response> {
    let Some(token) = token(headers) else {
        return Ok(None);
    };
    state.console_sessions.find(token).await.map_err(|error| {
        tracing::error!(%error, "looking up a console session failed");
        message(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "Try again shortly",
            "The console cannot reach its database just now.",
        )
    })
}

/// The request's session, or the answer to give without one: to the sign-in page. Every
/// signed-in page and form spends one request of the merchant's reads budget, as the API's
/// requests do, so the console is no way around the merchant's budgets. A person whose team
/// requires a second factor they do not have yet is sent to set one up.
pub(super) async fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<ConsoleSession, Response> {
    let session = signed_in_any(state, headers).await?;
    if session.needs_second_factor {
        return Err(see_other("/console/account/second-factor"));
    }
    Ok(session)
}

/// [`signed_in`], for the pages a person whose team requires a second factor still opens
/// without one: its setup, and signing out.
pub(super) async fn signed_in_any(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<ConsoleSession, Response> {
    let session = session(state, headers)
        .await?
        .ok_or_else(|| see_other("/console/sign-in"))?;
    match over_budget(state, &session, Budget::Reads) {
        Some(refused) => Err(refused),
        None => Ok(session),
    }
}

/// Spends one request of the session's merchant's `budget`: None when it had one to spend,
/// else the 429 page that says when to try again.
pub(super) fn over_budget(
    state: &AppState,
    session: &ConsoleSession,
    budget: Budget,
) -> Option<Response> {
    let limit = state
        .config
        .rate_limits
        .limits_for(&session.limits)
        .of(budget);
    let decision =
        state
            .rate_limiter
            .check(session.merchant.merchant_id, budget, limit, Instant::now());
    if decision.allowed {
        return None;
    }
    let mut response = message(
        StatusCode::TOO_MANY_REQUESTS,
        Some(session),
        "Too many requests",
        "This account has used its budget of requests for now (the console spends the same \
         budgets as the account's API keys). Wait a moment, then try again.",
    );
    retry_after(&mut response, decision.retry_after);
    Some(response)
}

/// A posted form's fields, or the page that says it could not be read.
pub(super) async fn form(request: Request) -> Result<Vec<(String, String)>, Response> {
    let body = axum::body::to_bytes(request.into_body(), MAX_FORM_BYTES)
        .await
        .map_err(|_| {
            message(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                "Too much to read",
                "The form sent more than the console takes.",
            )
        })?;
    Ok(form_urlencoded::parse(&body).into_owned().collect())
}

pub(super) fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The refusal of a form without the session's CSRF token; None when it has it.
pub(super) fn csrf_refusal(
    session: &ConsoleSession,
    fields: &[(String, String)],
) -> Option<Response> {
    match field(fields, "csrf") {
        Some(token) if session.accepts(token) => None,
        _ => Some(message(
            StatusCode::FORBIDDEN,
            Some(session),
            "This form has expired",
            "The form did not carry this session's token. Reload the page and send it again.",
        )),
    }
}

/// [`signed_form`] of a person whose role may do `permission` (`what`, as the refusal says it).
pub(super) async fn permitted_form(
    state: &AppState,
    request: Request,
    permission: Permission,
    what: &str,
) -> Result<(ConsoleSession, Vec<(String, String)>), Response> {
    let (session, fields) = signed_form(state, request).await?;
    match refused_unless(&session, permission, what) {
        Some(refused) => Err(refused),
        None => Ok((session, fields)),
    }
}

/// A posted form of a signed-in session, carrying the session's CSRF token: the session and
/// the form's fields, or the answer to give instead.
pub(super) async fn signed_form(
    state: &AppState,
    request: Request,
) -> Result<(ConsoleSession, Vec<(String, String)>), Response> {
    let (session, fields) = signed_form_any(state, request).await?;
    if session.needs_second_factor {
        return Err(see_other("/console/account/second-factor"));
    }
    Ok((session, fields))
}

/// [`signed_form`] for the forms that [`signed_in_any`] opens.
pub(super) async fn signed_form_any(
    state: &AppState,
    request: Request,
) -> Result<(ConsoleSession, Vec<(String, String)>), Response> {
    let session = signed_in_any(state, request.headers()).await?;
    let fields = form(request).await?;
    match csrf_refusal(&session, &fields) {
        Some(refused) => Err(refused),
        None => Ok((session, fields)),
    }
}

/// The refusal of a sign-in form a browser sent from another site (login CSRF: someone else's
/// page signing this browser in to the sender's account); None when it came from this site's
/// own page, or from a client that is not a browser. A browser says where a form came from in
/// `Sec-Fetch-Site`, or else in `Origin`, which must then be this service's own.
pub(super) fn cross_site_refusal(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let same_site = match (text("sec-fetch-site"), text("origin")) {
        (Some(site), _) => matches!(site, "same-origin" | "none"),
        (None, Some(origin)) => {
            let host = text("host").unwrap_or_default();
            let public = state.config.public_url();
            origin == public
                || ["http://", "https://"]
                    .iter()
                    .any(|scheme| !host.is_empty() && origin == format!("{scheme}{host}"))
        }
        (None, None) => true,
    };
    (!same_site).then(|| {
        message(
            StatusCode::FORBIDDEN,
            None,
            "Sign in from this site",
            "This sign-in form was sent from another site. Open the sign-in page here and sign \
             in from it.",
        )
    })
}

/// A form posted signed out (a sign-in, an invitation, a password reset), as it was sent.
pub(super) struct SignedOutForm {
    pub fields: Vec<(String, String)>,
    /// The client address, whose failure budget the form spends.
    pub client: IpAddr,
    /// The browser's name, for the person's list of sessions.
    pub user_agent: String,
    /// The session cookie the browser sent, if any.
    pub session_token: Option<String>,
}

impl SignedOutForm {
    /// The answer to a link's form sent again once the link is used: a browser its first post
    /// signed in (a double click, a reload) goes on to the console; any other gets `used`.
    pub(super) async fn used_link(&self, state: &AppState, used: Response) -> Response {
        let Some(token) = &self.session_token else {
            return used;
        };
        match state.console_sessions.find(token).await {
            Ok(Some(_)) => see_other("/console/jobs"),
            _ => used,
        }
    }
}

/// A form posted signed out: refused when a browser sent it from another site, or past the
/// address's failure budget; else its fields and where it came from.
pub(super) async fn signed_out_form(
    state: &AppState,
    request: Request,
) -> Result<SignedOutForm, Response> {
    let client = client(state, &request);
    if let Some(refused) = cross_site_refusal(state, request.headers()) {
        return Err(refused);
    }
    if let Some(refused) = budget_refusal(state, client) {
        return Err(refused);
    }
    let user_agent = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let session_token = token(request.headers()).map(str::to_owned);
    Ok(SignedOutForm {
        fields: form(request).await?,
        client,
        user_agent,
        session_token,
    })
}

/// Opens a session for `person` in `merchant_id`'s team, from the browser of `posted`: 303
/// to the jobs with the session's cookie; for a person with a second factor, 303 to the page
/// that asks for its code, the session opening nothing else until it is given.
pub(super) async fn open_session(
    state: &AppState,
    person: &courier_domain::team::Person,
    merchant_id: uuid::Uuid,
    posted: &SignedOutForm,
) -> Result<Response, sqlx::Error> {
    let from = courier_core::auth::OpenedFrom {
        user_agent: &posted.user_agent,
        client_address: &posted.client.to_string(),
    };
    let code_wanted = state.teams.has_second_factor(person.id).await?;
    let signed_in = state
        .console_sessions
        .open(person, merchant_id, &from, code_wanted)
        .await?;
    let mut response = see_other(if code_wanted {
        "/console/sign-in/code"
    } else {
        "/console/jobs"
    });
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(state, Some(&signed_in.token)));
    Ok(response)
}

/// The client address, for the failure budget of sign-ins.
pub(super) fn client(state: &AppState, request: &Request) -> IpAddr {
    crate::middleware::client_address(state, request)
}

/// The page to answer when `client` may not try to sign in now (past its failure budget).
pub(super) fn budget_refusal(state: &AppState, client: IpAddr) -> Option<Response> {
    let wait = state.auth_failures.wait(client, Instant::now())?;
    Some(too_many_attempts(wait))
}

/// The page for an address past its failure budget, which may try again after `wait`.
fn too_many_attempts(wait: std::time::Duration) -> Response {
    let mut response = message(
        StatusCode::TOO_MANY_REQUESTS,
        None,
        TOO_MANY_ATTEMPTS.0,
        TOO_MANY_ATTEMPTS.1,
    );
    retry_after(&mut response, wait);
    response
}

/// The heading and text of the page for an address past its failure budget.
pub(super) const TOO_MANY_ATTEMPTS: (&str, &str) = (
    "Too many attempts",
    "Too many sign-ins from this address failed. Wait a minute, then try again.",
);

/// Says when an address past its failure budget may try again.
pub(super) fn retry_after(response: &mut Response, wait: std::time::Duration) {
    if let Ok(value) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
}

/// The `Set-Cookie` value of a session (`token`), or of its end (None).
pub(super) fn cookie(state: &AppState, token: Option<&str>) -> HeaderValue {
    session_cookie(
        (COOKIE, "/console"),
        &state.config.public_url(),
        state.console_sessions.lifetime(),
        token,
    )
}

/// The `Set-Cookie` value of a console's session cookie (`name`, scoped to `path`) holding
/// `token` for `lifetime`, or of its end (None); `Secure` when the console is `served_at` an
/// https address.
pub(super) fn session_cookie(
    (name, path): (&str, &str),
    served_at: &str,
    lifetime: std::time::Duration,
    token: Option<&str>,
) -> HeaderValue {
    let secure = if served_at.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let (token, max_age) = token.map_or(("", 0), |token| (token, lifetime.as_secs()));
    let value = format!(
        "{name}={token}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}
