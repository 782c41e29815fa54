//! The console's people: joining a team by invitation, one's account (teams and sessions),
//! switching team and environment, and the team page where owners and admins invite people,
//! change their roles and remove them.

use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use uuid::Uuid;

use super::once::ShownOnce;
use super::respond::{
    SessionBar, cookie, field, message, open_session, page, see_other, signed_form, signed_in,
    signed_out_form, token, when,
};
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::team::{AcceptRefusal, ChangeRefusal, InvitationState, TeamError};
use courier_domain::Environment;
use courier_domain::team::{MIN_PASSWORD_CHARS, Permission, Role};

#[derive(Template)]
#[template(path = "console/invitation.html")]
struct InvitationPage<'a> {
    session: Option<SessionBar>,
    token: &'a str,
    merchant: &'a str,
    email: &'a str,
    role: &'static str,
    role_summary: &'static str,
    expires: String,
    has_account: bool,
    name: &'a str,
    min_password: usize,
    problem: Option<&'a str>,
}

/// Why an invitation's link cannot be used.
enum Closed {
    Used,
    Expired,
    Withdrawn,
    Unknown,
}

/// The page for an invitation that cannot be used, or None when it can.
/// What an invitation's form says when the person's answers are refused (a wrong password, a
/// name or password that cannot be used), with its status; None for a refusal of the link.
pub(super) fn form_refusal(refusal: &AcceptRefusal) -> Option<(StatusCode, String)> {
    Some(match refusal {
        AcceptRefusal::WrongPassword => (
            StatusCode::UNAUTHORIZED,
            "That is not the password of the account at this address.".to_owned(),
        ),
        AcceptRefusal::InvalidName => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "Enter your name (at most 100 characters).".to_owned(),
        ),
        AcceptRefusal::WeakPassword(weak) => (StatusCode::UNPROCESSABLE_ENTITY, weak.explain()),
        AcceptRefusal::AccountExists => (
            StatusCode::CONFLICT,
            "An account was made at this address a moment ago. Reload this page and enter that \
             account's password."
                .to_owned(),
        ),
        _ => return None,
    })
}

/// Whether the refusal is a guess at someone's password, which spends the address's budget.
pub(super) fn refusal_spends_budget(refusal: &AcceptRefusal) -> bool {
    matches!(refusal, AcceptRefusal::WrongPassword)
}

fn closed_invitation(state: &InvitationState) -> Option<Response> {
    match state {
        InvitationState::Open { .. } => None,
        InvitationState::Used => Some(closed_page(Closed::Used)),
        InvitationState::Expired => Some(closed_page(Closed::Expired)),
        InvitationState::Withdrawn => Some(closed_page(Closed::Withdrawn)),
        InvitationState::Unknown => Some(closed_page(Closed::Unknown)),
    }
}

fn closed_page(closed: Closed) -> Response {
    let (status, heading, text) = match closed {
        Closed::Used => (
            StatusCode::GONE,
            "This invitation was used",
            "It has been used to join the team already, and works only once. Sign in with the \
             account it made, or ask the team for a new invitation.",
        ),
        Closed::Expired => (
            StatusCode::GONE,
            "This invitation has expired",
            "Ask the person who invited you for a new one.",
        ),
        Closed::Withdrawn => (
            StatusCode::GONE,
            "This invitation was withdrawn",
            "The team withdrew it. Ask them for a new one if you should be in the team.",
        ),
        Closed::Unknown => (
            StatusCode::NOT_FOUND,
            "No such invitation",
            "This link does not open an invitation. Check that it was copied whole.",
        ),
    };
    message(status, None, heading, text)
}

fn unavailable(session: Option<&ConsoleSession>, error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "a console team page failed");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        session,
        "Try again shortly",
        "The console cannot reach its database just now; nothing was done.",
    )
}

#[utoipa::path(
    get,
    path = "/console/invitations/{token}",
    operation_id = "consoleInvitation",
    tag = "console",
    summary = "An invitation to a merchant's team: the form to join (a name and a new password, or an existing account's password)",
    security(()),
    params(("token" = String, Path, description = "The invitation's token, from its link")),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such invitation", content_type = "text/html", body = String),
        (status = 410, description = "A page: the invitation was used, has expired or was withdrawn", content_type = "text/html", body = String),
    )
)]
pub async fn invitation_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let found = match state.teams.invitation(&token).await {
        Ok(found) => found,
        Err(error) => return unavailable(None, &error),
    };
    if let Some(closed) = closed_invitation(&found) {
        return closed;
    }
    let InvitationState::Open {
        invitation,
        has_account,
    } = found
    else {
        return unavailable(None, &"an open invitation");
    };
    page(
        StatusCode::OK,
        InvitationPage {
            session: None,
            token: &token,
            merchant: &invitation.merchant_name,
            email: &invitation.email,
            role: invitation.role.label(),
            role_summary: invitation.role.summary(),
            expires: when(invitation.expires_at),
            has_account,
            name: "",
            min_password: MIN_PASSWORD_CHARS,
            problem: None,
        }
        .render(),
    )
}

#[utoipa::path(
    post,
    path = "/console/invitations/{token}",
    operation_id = "consoleAcceptInvitation",
    tag = "console",
    summary = "Uses an invitation: form fields `name`, `password` and `password_again` (a new account), or `password` (the address's existing account); joins the team and signs in",
    security(()),
    params(("token" = String, Path, description = "The invitation's token, from its link")),
    request_body(content = String, description = "`name=…&password=…&password_again=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Joined: to /console/jobs, signed in, with the session cookie"),
        (status = 401, description = "A page: the existing account's password is wrong", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form was sent from another site", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such invitation", content_type = "text/html", body = String),
        (status = 410, description = "A page: the invitation was used, has expired or was withdrawn", content_type = "text/html", body = String),
        (status = 422, description = "A page: the name or password cannot be used, or the two passwords differ", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed attempts from this address (with Retry-After)", content_type = "text/html", body = String),
    )
)]
pub async fn accept_invitation(
    State(state): State<AppState>,
    Path(token): Path<String>,
    request: Request,
) -> Response {
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let fields = &posted.fields;
    let found = match state.teams.invitation(&token).await {
        Ok(found) => found,
        Err(error) => return unavailable(None, &error),
    };
    if let Some(closed) = closed_invitation(&found) {
        return match found {
            InvitationState::Used => posted.used_link(&state, closed).await,
            _ => closed,
        };
    }
    let InvitationState::Open {
        invitation,
        has_account,
    } = found
    else {
        return unavailable(None, &"an open invitation");
    };
    let name = field(fields, "name").unwrap_or("");
    let password = field(fields, "password").unwrap_or("");
    let again = |status: StatusCode, problem: &str| {
        page(
            status,
            InvitationPage {
                session: None,
                token: &token,
                merchant: &invitation.merchant_name,
                email: &invitation.email,
                role: invitation.role.label(),
                role_summary: invitation.role.summary(),
                expires: when(invitation.expires_at),
                has_account,
                name,
                min_password: MIN_PASSWORD_CHARS,
                problem: Some(problem),
            }
            .render(),
        )
    };
    if !has_account && field(fields, "password_again") != Some(password) {
        return again(
            StatusCode::UNPROCESSABLE_ENTITY,
            "The two passwords differ; type the same password twice.",
        );
    }
    let person = match state.teams.accept(&token, name, password).await {
        Ok(person) => person,
        Err(refusal) => {
            if let Some((status, problem)) = form_refusal(&refusal) {
                if refusal_spends_budget(&refusal) {
                    state
                        .auth_failures
                        .spend(posted.client, std::time::Instant::now());
                }
                return again(status, &problem);
            }
            return match refusal {
                AcceptRefusal::Used => posted.used_link(&state, closed_page(Closed::Used)).await,
                AcceptRefusal::Expired => closed_page(Closed::Expired),
                AcceptRefusal::Withdrawn => closed_page(Closed::Withdrawn),
                AcceptRefusal::Store(error) => unavailable(None, &error),
                _ => closed_page(Closed::Unknown),
            };
        }
    };
    open_session(&state, &person, invitation.merchant_id, &posted)
        .await
        .unwrap_or_else(|error| {
            // Joined, but not signed in: the sign-in page does that.
            tracing::error!(%error, "opening a console session after joining failed");
            see_other("/console/sign-in")
        })
}

#[utoipa::path(
    post,
    path = "/console/switch",
    operation_id = "consoleSwitch",
    tag = "console",
    summary = "Moves the session to another of the person's teams, or the other environment: form fields `csrf`, `merchant` (an id) and `environment` (`test` or `live`)",
    security(()),
    request_body(content = String, description = "`csrf=…&merchant=…&environment=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Switched: to /console/jobs; or not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: the person is in no such team, or no such environment", content_type = "text/html", body = String),
    )
)]
pub async fn switch(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let merchant = field(&fields, "merchant").and_then(|m| Uuid::parse_str(m.trim()).ok());
    let environment = field(&fields, "environment").and_then(Environment::parse);
    let (Some(merchant), Some(environment), Some(token)) = (merchant, environment, token(&headers))
    else {
        return no_such_team(&session);
    };
    match state
        .console_sessions
        .switch(token, merchant, environment)
        .await
    {
        Ok(true) => see_other("/console/jobs"),
        Ok(false) => no_such_team(&session),
        Err(error) => unavailable(Some(&session), &error),
    }
}

fn no_such_team(session: &ConsoleSession) -> Response {
    message(
        StatusCode::NOT_FOUND,
        Some(session),
        "No such team",
        "You are not in that merchant's team, or there is no such environment. Your teams are \
         listed on your account's page.",
    )
}

struct ListedTeam {
    merchant_id: Uuid,
    merchant: String,
    role: &'static str,
    current: bool,
}

struct ListedSession {
    id: Uuid,
    browser: String,
    from: String,
    created: String,
    last_used: String,
    current: bool,
}

#[derive(Template)]
#[template(path = "console/account.html")]
struct AccountPage {
    session: Option<SessionBar>,
    notice: Option<&'static str>,
    name: String,
    email: String,
    teams: Vec<ListedTeam>,
    sessions: Vec<ListedSession>,
    second_factor: bool,
}

#[utoipa::path(
    get,
    path = "/console/account",
    operation_id = "consoleAccount",
    tag = "console",
    summary = "The signed-in person's account: their teams (each one to switch to) and their sessions (each one to revoke)",
    security(()),
    params(("done" = Option<String>, Query, description = "`revoked` after revoking a session")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
    )
)]
pub async fn account_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let person = &session.person;
    let (teams, sessions, second_factor) = match tokio::try_join!(
        state.teams.memberships(person.id),
        state.console_sessions.of_person(person.id),
        state.teams.has_second_factor(person.id)
    ) {
        Ok(found) => found,
        Err(error) => return unavailable(Some(&session), &error),
    };
    let body = AccountPage {
        session: Some(SessionBar::from(&session)),
        notice: (uri.query() == Some("done=revoked")).then_some("The session was revoked."),
        name: person.name.clone(),
        email: person.email.clone(),
        second_factor,
        teams: teams
            .into_iter()
            .map(|t| ListedTeam {
                current: t.merchant_id == session.merchant.merchant_id,
                merchant_id: t.merchant_id,
                merchant: t.merchant_name,
                role: t.role.label(),
            })
            .collect(),
        sessions: sessions
            .into_iter()
            .map(|s| ListedSession {
                current: s.id == session.id,
                id: s.id,
                browser: if s.user_agent.is_empty() {
                    "unknown".to_owned()
                } else {
                    s.user_agent
                },
                from: s.client_address,
                created: when(s.created_at),
                last_used: when(s.last_seen_at),
            })
            .collect(),
    };
    page(StatusCode::OK, body.render())
}

#[utoipa::path(
    post,
    path = "/console/sessions/{id}/revoke",
    operation_id = "consoleRevokeSession",
    tag = "console",
    summary = "Ends one of the person's sessions: form field `csrf`",
    security(()),
    params(("id" = String, Path, description = "The session's id, from the account page")),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Ended: to /console/account (to /console/sign-in, the cookie cleared, when it was this session)"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: the person has no such session", content_type = "text/html", body = String),
    )
)]
pub async fn revoke_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, _) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let revoked = match Uuid::parse_str(&id) {
        Ok(id) => state.console_sessions.revoke(session.person.id, id).await,
        Err(_) => Ok(false),
    };
    match revoked {
        Ok(true) if id == session.id.to_string() => {
            let mut response = see_other("/console/sign-in");
            response
                .headers_mut()
                .insert(header::SET_COOKIE, cookie(&state, None));
            response
        }
        Ok(true) => see_other("/console/account?done=revoked"),
        Ok(false) => message(
            StatusCode::NOT_FOUND,
            Some(&session),
            "No such session",
            "You have no session by that id; it may have ended already.",
        ),
        Err(error) => unavailable(Some(&session), &error),
    }
}

struct ListedMember {
    id: Uuid,
    name: String,
    email: String,
    role: &'static str,
    role_name: &'static str,
    joined: String,
    last_sign_in: String,
    you: bool,
    /// Whether the person looking may change this member's role or remove them.
    changeable: bool,
}

struct ListedInvitation {
    id: Uuid,
    email: String,
    role: &'static str,
    invited_by: String,
    expires: String,
    withdrawable: bool,
}

/// An invitation just made: mailed, or its link shown once.
struct Invited {
    email: String,
    role: &'static str,
    expires: String,
    /// The link, when it was not mailed.
    url: Option<String>,
}

#[derive(Template)]
#[template(path = "console/team.html")]
struct TeamPage {
    session: Option<SessionBar>,
    merchant: String,
    notice: Option<&'static str>,
    problem: Option<String>,
    invited: Option<Invited>,
    members: Vec<ListedMember>,
    invitations: Vec<ListedInvitation>,
    manage: bool,
    your_role: &'static str,
    grantable: Vec<(&'static str, &'static str)>,
    roles: Vec<(&'static str, &'static str)>,
    typed_email: String,
    /// For an owner: the team's second-factor rule, to change.
    owner: bool,
    requires_second_factor: bool,
}

/// What the team page says after an action.
#[derive(Default)]
struct Said {
    notice: Option<&'static str>,
    problem: Option<String>,
    invited: Option<Invited>,
    typed_email: String,
}

async fn render(
    state: &AppState,
    session: &ConsoleSession,
    status: StatusCode,
    said: Said,
) -> Response {
    let merchant_id = session.merchant.merchant_id;
    let (members, invitations) = match tokio::try_join!(
        state.teams.members(merchant_id),
        state.teams.open_invitations(merchant_id)
    ) {
        Ok(found) => found,
        Err(error) => return unavailable(Some(session), &error),
    };
    let manage = session.may(Permission::ManageTeam);
    let requires_second_factor = match state.teams.requires_second_factor(merchant_id).await {
        Ok(required) => required,
        Err(error) => return unavailable(Some(session), &error),
    };
    let body = TeamPage {
        session: Some(SessionBar::from(session)),
        merchant: session.merchant_name.clone(),
        notice: said.notice,
        problem: said.problem,
        invited: said.invited,
        members: members
            .into_iter()
            .map(|m| ListedMember {
                you: m.person_id == session.person.id,
                changeable: manage
                    && m.person_id != session.person.id
                    && session.role.may_grant(m.role),
                id: m.person_id,
                name: m.name,
                email: m.email,
                role: m.role.label(),
                role_name: m.role.as_str(),
                joined: when(m.joined_at),
                last_sign_in: m.last_sign_in_at.map_or_else(|| "never".to_owned(), when),
            })
            .collect(),
        invitations: invitations
            .into_iter()
            .map(|i| ListedInvitation {
                withdrawable: manage && session.role.may_grant(i.role),
                id: i.id,
                email: i.email,
                role: i.role.label(),
                invited_by: i.invited_by,
                expires: when(i.expires_at),
            })
            .collect(),
        manage,
        your_role: session.role.label(),
        grantable: Role::ALL
            .into_iter()
            .filter(|r| session.role.may_grant(*r))
            .map(|r| (r.as_str(), r.label()))
            .collect(),
        roles: Role::ALL
            .into_iter()
            .map(|r| (r.label(), r.summary()))
            .collect(),
        typed_email: said.typed_email,
        owner: session.role == Role::Owner,
        requires_second_factor,
    };
    page(status, body.render())
}

#[utoipa::path(
    get,
    path = "/console/team",
    operation_id = "consoleTeam",
    tag = "console",
    summary = "The merchant's team: its members and open invitations; for owners and admins, the forms to invite, change roles and remove",
    security(()),
    params(("done" = Option<String>, Query, description = "`role_changed`, `removed` or `withdrawn` after that action")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
    )
)]
pub async fn team_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let notice = match uri.query() {
        Some("done=role_changed") => Some("The role was changed."),
        Some("done=removed") => Some("They were removed from the team; their sessions here ended."),
        Some("done=withdrawn") => Some("The invitation was withdrawn; its link no longer works."),
        Some("done=second_factor") => Some("The team's rule for a second factor was changed."),
        _ => None,
    };
    render(
        &state,
        &session,
        StatusCode::OK,
        Said {
            notice,
            ..Said::default()
        },
    )
    .await
}

/// The refusal of a team form by a role that may not manage the team.
fn may_manage(session: &ConsoleSession) -> Option<Response> {
    super::respond::refused_unless(session, Permission::ManageTeam, "changing the team")
}

#[utoipa::path(
    post,
    path = "/console/team/invitations",
    operation_id = "consoleInvite",
    tag = "console",
    summary = "Invites someone to the team: form fields `csrf`, `once`, `email` and `role`; the page shows the invitation's link once",
    security(()),
    request_body(content = String, description = "`csrf=…&once=…&email=…&role=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The team page with the new invitation's link", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not invite (or not to that role)", content_type = "text/html", body = String),
        (status = 409, description = "The team page: the address belongs to a member already", content_type = "text/html", body = String),
        (status = 422, description = "The team page: the address or role cannot be used", content_type = "text/html", body = String),
    )
)]
pub async fn invite(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(refused) = may_manage(&session) {
        return refused;
    }
    let email = field(&fields, "email").unwrap_or("").trim();
    let role = field(&fields, "role").unwrap_or("");
    if Role::parse(role).is_some_and(|r| !session.role.may_grant(r)) {
        return super::respond::not_allowed(&session, "inviting someone as an owner");
    }
    let problem = |status: StatusCode, text: &str| {
        render(
            &state,
            &session,
            status,
            Said {
                problem: Some(text.to_owned()),
                typed_email: email.to_owned(),
                ..Said::default()
            },
        )
    };
    match state
        .teams
        .invite(session.merchant.merchant_id, email, role, session.actor())
        .await
    {
        Ok(issued) => {
            let mut response = render(
                &state,
                &session,
                StatusCode::OK,
                Said {
                    invited: Some(Invited {
                        email: issued.email,
                        role: issued.role.label(),
                        expires: when(issued.expires_at),
                        url: (!issued.mailed).then_some(issued.invitation_url),
                    }),
                    ..Said::default()
                },
            )
            .await;
            // The link is as good as a password until used: not kept for the form's repeats.
            response.extensions_mut().insert(ShownOnce);
            response
        }
        Err(TeamError::InvalidEmail) => {
            problem(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Enter an e-mail address such as ana@example.com.",
            )
            .await
        }
        Err(TeamError::InvalidRole(_)) => {
            problem(StatusCode::UNPROCESSABLE_ENTITY, "Choose one of the roles.").await
        }
        Err(TeamError::AlreadyMember) => {
            problem(
                StatusCode::CONFLICT,
                "That address belongs to a member of the team already.",
            )
            .await
        }
        Err(error) => unavailable(Some(&session), &error),
    }
}

/// The answer to a refused change of the team.
fn change_refused(session: &ConsoleSession, refusal: ChangeRefusal) -> Response {
    let (status, heading, text) = match refusal {
        ChangeRefusal::NotAllowed => {
            return super::respond::not_allowed(session, "this change to the team");
        }
        ChangeRefusal::LastOwner => (
            StatusCode::CONFLICT,
            "A team keeps an owner",
            "This is the team's only owner. Make someone else an owner first.",
        ),
        ChangeRefusal::Yourself => (
            StatusCode::CONFLICT,
            "Not your own place",
            "You cannot change your own role or remove yourself; another owner or admin can.",
        ),
        ChangeRefusal::OwnFactorFirst => (
            StatusCode::CONFLICT,
            "Your own second factor first",
            "Set up your own second factor (your account's page) before requiring one of the \
             whole team.",
        ),
        ChangeRefusal::NotAMember => (
            StatusCode::NOT_FOUND,
            "No such member",
            "There is no such member or open invitation in this team; it may have changed \
             since the page was drawn.",
        ),
        ChangeRefusal::Store(error) => return unavailable(Some(session), &error),
    };
    message(status, Some(session), heading, text)
}

#[utoipa::path(
    post,
    path = "/console/team/members/{person}/role",
    operation_id = "consoleChangeRole",
    tag = "console",
    summary = "Gives a member another role: form fields `csrf`, `once` and `role`",
    security(()),
    params(("person" = String, Path, description = "The member's id")),
    request_body(content = String, description = "`csrf=…&once=…&role=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Changed: to /console/team?done=role_changed; or not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not make the change", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such member", content_type = "text/html", body = String),
        (status = 409, description = "A page: the team's only owner, or one's own role", content_type = "text/html", body = String),
    )
)]
pub async fn change_role(
    State(state): State<AppState>,
    Path(person): Path<String>,
    request: Request,
) -> Response {
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(refused) = may_manage(&session) {
        return refused;
    }
    let Some(role) = field(&fields, "role").and_then(Role::parse) else {
        return message(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some(&session),
            "Choose a role",
            "The form did not name one of the roles.",
        );
    };
    let Ok(person) = Uuid::parse_str(&person) else {
        return change_refused(&session, ChangeRefusal::NotAMember);
    };
    match state
        .teams
        .change_role(&session.acting(), person, role)
        .await
    {
        Ok(()) => see_other("/console/team?done=role_changed"),
        Err(refusal) => change_refused(&session, refusal),
    }
}

#[utoipa::path(
    post,
    path = "/console/team/members/{person}/remove",
    operation_id = "consoleRemoveMember",
    tag = "console",
    summary = "Takes a member out of the team, ending their sessions in it: form fields `csrf` and `once`",
    security(()),
    params(("person" = String, Path, description = "The member's id")),
    request_body(content = String, description = "`csrf=…&once=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Removed: to /console/team?done=removed; or not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not make the change", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such member", content_type = "text/html", body = String),
        (status = 409, description = "A page: the team's only owner, or oneself", content_type = "text/html", body = String),
    )
)]
pub async fn remove_member(
    State(state): State<AppState>,
    Path(person): Path<String>,
    request: Request,
) -> Response {
    let (session, _) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(refused) = may_manage(&session) {
        return refused;
    }
    let Ok(person) = Uuid::parse_str(&person) else {
        return change_refused(&session, ChangeRefusal::NotAMember);
    };
    match state.teams.remove(&session.acting(), person).await {
        Ok(()) => see_other("/console/team?done=removed"),
        Err(refusal) => change_refused(&session, refusal),
    }
}

#[utoipa::path(
    post,
    path = "/console/team/invitations/{id}/withdraw",
    operation_id = "consoleWithdrawInvitation",
    tag = "console",
    summary = "Withdraws an invitation not used yet: form fields `csrf` and `once`",
    security(()),
    params(("id" = String, Path, description = "The invitation's id")),
    request_body(content = String, description = "`csrf=…&once=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Withdrawn: to /console/team?done=withdrawn; or not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not withdraw it", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such open invitation", content_type = "text/html", body = String),
    )
)]
pub async fn withdraw_invitation(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, _) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(refused) = may_manage(&session) {
        return refused;
    }
    let Ok(id) = Uuid::parse_str(&id) else {
        return change_refused(&session, ChangeRefusal::NotAMember);
    };
    match state.teams.withdraw(&session.acting(), id).await {
        Ok(()) => see_other("/console/team?done=withdrawn"),
        Err(refusal) => change_refused(&session, refusal),
    }
}

#[utoipa::path(
    post,
    path = "/console/team/second-factor",
    operation_id = "consoleRequireSecondFactor",
    tag = "console",
    summary = "An owner requires (`required=on`) or stops requiring (no `required`) a second factor of the whole team: form fields `csrf`, `once` and `required`",
    security(()),
    request_body(content = String, description = "`csrf=…&once=…&required=on`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Done: to /console/team?done=second_factor; or not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token, or the person is not an owner", content_type = "text/html", body = String),
        (status = 409, description = "A page: the owner has no second factor themselves", content_type = "text/html", body = String),
    )
)]
pub async fn require_second_factor(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let required = field(&fields, "required").is_some();
    match state
        .teams
        .require_second_factor(&session.acting(), required)
        .await
    {
        Ok(()) => see_other("/console/team?done=second_factor"),
        Err(refusal) => change_refused(&session, refusal),
    }
}
