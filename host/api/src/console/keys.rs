//! The merchant's API keys of the console's environment (label, when made, last used,
//! revoked), a new key made (its secret shown once, on the page that made it), a key revoked
//! once the person has confirmed it, told what stops; and the account's settings: what
//! bookings default to and the texts' sender (the request budgets stay the operators').
//! Keys are for developers, admins and owners, settings for admins and owners; each change
//! asks for the password again past the re-authentication window. The audit trail records
//! these actions under the person's e-mail address.

use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::reauth::confirmed;
use super::respond::{
    SessionBar, client, field, message, page, refused_unless, see_other, signed_form, signed_in,
    when,
};
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::merchants::{CreatedKey, MerchantError, SettingsChange, SettingsError};
use courier_domain::Environment;
use courier_domain::numeric::Numeric;
use courier_domain::team::Permission;

struct ListedKey {
    key: String,
    label: String,
    created: String,
    last_used: String,
    revoked: String,
}

struct Setting {
    name: &'static str,
    value: String,
}

/// The settings a live session may change, as the form shows them.
struct Editable {
    notify_customer: bool,
    proof_photo_required: bool,
    proof_signature_required: bool,
    sms_sender_name: String,
    contact_email: String,
    /// Minutes, or empty for none.
    preparation_minutes: String,
}

#[derive(Template)]
#[template(path = "console/keys.html")]
struct KeysPage {
    session: Option<SessionBar>,
    environment: &'static str,
    other_environment: &'static str,
    /// Whether the person's role makes and revokes keys.
    manage_keys: bool,
    role: &'static str,
    keys: Vec<ListedKey>,
    settings: Vec<Setting>,
    /// Only for a role that changes settings.
    editable: Option<Editable>,
    created: Option<CreatedKey>,
    problem: Option<String>,
    notice: Option<&'static str>,
}

/// What the page says after an action.
#[derive(Default)]
struct Said {
    created: Option<CreatedKey>,
    problem: Option<String>,
    notice: Option<&'static str>,
    /// A refused settings form as it was sent: drawn again as typed, to be corrected.
    typed: Option<Editable>,
}

fn unavailable(session: &ConsoleSession, error: &MerchantError) -> Response {
    tracing::error!(%error, "a console keys page failed");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(session),
        "Try again shortly",
        "The console cannot reach its database just now.",
    )
}

async fn render(
    state: &AppState,
    session: &ConsoleSession,
    status: StatusCode,
    mut said: Said,
) -> Response {
    let merchant = &session.merchant;
    let detail = match state.merchants.show(merchant.merchant_id).await {
        Ok(detail) => detail,
        Err(error) => return unavailable(session, &error),
    };
    let keys = detail
        .keys
        .into_iter()
        .filter(|k| k.environment == merchant.environment)
        .map(|k| ListedKey {
            key: k.key,
            label: k.label,
            created: when(k.created_at),
            last_used: k.last_used_at.map_or_else(|| "never".to_owned(), when),
            revoked: k.revoked_at.map(when).unwrap_or_default(),
        })
        .collect();
    let s = detail.settings;
    let stored = || Editable {
        notify_customer: s.notify_customer,
        proof_photo_required: s.proof_photo_required,
        proof_signature_required: s.proof_signature_required,
        sms_sender_name: s.sms_sender_name.clone().unwrap_or_default(),
        contact_email: s.contact_email.clone().unwrap_or_default(),
        preparation_minutes: s
            .preparation_minutes
            .map(|m| m.to_string())
            .unwrap_or_default(),
    };
    let editable = session
        .may(Permission::ManageSettings)
        .then(|| said.typed.take().unwrap_or_else(stored));
    let or_default = |limit: Option<i32>| {
        limit.map_or_else(
            || "the service's default".to_owned(),
            |n| format!("{n} a minute"),
        )
    };
    let yes_no = |flag: bool| if flag { "yes" } else { "no" }.to_owned();
    let settings = vec![
        Setting {
            name: "Text the customer unless a booking says",
            value: yes_no(s.notify_customer),
        },
        Setting {
            name: "Photo proof of delivery required",
            value: yes_no(s.proof_photo_required),
        },
        Setting {
            name: "Signature proof of delivery required",
            value: yes_no(s.proof_signature_required),
        },
        Setting {
            name: "Texts sent as",
            value: s
                .sms_sender_name
                .unwrap_or_else(|| "the service's sender".to_owned()),
        },
        Setting {
            name: "Billing contact given to the card provider",
            value: s.contact_email.unwrap_or_else(|| "none".to_owned()),
        },
        Setting {
            name: "Parcels ready after, unless a booking says",
            value: s
                .preparation_minutes
                .map_or_else(|| "as soon as booked".to_owned(), |m| format!("{m} min")),
        },
        Setting {
            name: "Quotes",
            value: or_default(s.rate_limit_quotes_per_minute),
        },
        Setting {
            name: "Bookings",
            value: or_default(s.rate_limit_bookings_per_minute),
        },
        Setting {
            name: "Reads",
            value: or_default(s.rate_limit_reads_per_minute),
        },
    ];
    page(
        status,
        KeysPage {
            session: Some(SessionBar::from(session)),
            environment: merchant.environment.as_str(),
            other_environment: match merchant.environment {
                Environment::Live => "test",
                Environment::Test => "live",
            },
            manage_keys: session.may(Permission::ManageKeys),
            role: session.role.label(),
            keys,
            settings,
            editable,
            created: said.created,
            problem: said.problem,
            notice: said.notice,
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/console/keys",
    operation_id = "consoleKeys",
    tag = "console",
    summary = "The merchant's API keys of the console's environment, and the account's settings",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn keys_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match signed_in(&state, &headers).await {
        Ok(session) => render(&state, &session, StatusCode::OK, Said::default()).await,
        Err(answer) => answer,
    }
}

#[utoipa::path(
    post,
    path = "/console/keys",
    operation_id = "consoleCreateKey",
    tag = "console",
    summary = "Makes a key: form fields `label`, `csrf`, `once` and optionally `environment` (`test` or `live`; the console's by default), and `reauthentication` (the person's password, or a code of their second factor) past the re-authentication window; the page shows its secret once",
    security(()),
    request_body(content = String, description = "`label=…&csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 201, description = "The page, with the new key and its secret (shown this once)", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 401, description = "A page asking for the person's password (past the re-authentication window, or it was wrong), which sends the form again", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not make keys", content_type = "text/html", body = String),
        (status = 422, description = "A page: the label is empty or too long, or the environment is neither test nor live", content_type = "text/html", body = String),
    )
)]
pub async fn create_key(State(state): State<AppState>, request: Request) -> Response {
    let posted = (request.headers().clone(), client(&state, &request));
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(refused) = refused_unless(&session, Permission::ManageKeys, "making keys") {
        return refused;
    }
    let merchant = &session.merchant;
    let label = field(&fields, "label").unwrap_or("");
    let environment = match field(&fields, "environment") {
        None => merchant.environment,
        Some(asked) => match asked.parse::<Environment>() {
            Ok(environment) => environment,
            Err(_) => {
                let said = Said {
                    problem: Some("A key is either live or test.".to_owned()),
                    ..Said::default()
                };
                return render(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, said).await;
            }
        },
    };
    let what = ("Making a key", "/console/keys", "/console/keys");
    if let Err(ask) = confirmed(&state, (&posted.0, posted.1), &session, &fields, what).await {
        return ask;
    }
    match state
        .merchants
        .create_key(
            merchant.merchant_id,
            environment.as_str(),
            label,
            session.actor(),
        )
        .await
    {
        Ok(created) => {
            let said = Said {
                created: Some(created),
                ..Said::default()
            };
            // Its secret is on this page only: never kept for the form's repeats.
            let mut page = render(&state, &session, StatusCode::CREATED, said).await;
            page.extensions_mut().insert(super::once::ShownOnce);
            page
        }
        Err(error @ MerchantError::InvalidLabel) => {
            let said = Said {
                problem: Some(error.to_string()),
                ..Said::default()
            };
            render(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, said).await
        }
        Err(error) => unavailable(&session, &error),
    }
}

#[utoipa::path(
    post,
    path = "/console/keys/{key}/revoke",
    operation_id = "consoleRevokeKey",
    tag = "console",
    summary = "Revokes one of the merchant's keys of the console's environment: form fields `csrf`, `once`, `confirm=yes` (without it, a page asks to confirm, saying what stops), and `reauthentication` (the person's password, or a code of their second factor) past the re-authentication window",
    security(()),
    params(("key" = String, Path, description = "The key (`ck_test_…` or `ck_live_…`)")),
    request_body(content = String, description = "`csrf=…&confirm=yes`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "A page asking to confirm (the form had no `confirm=yes`): what stops, and that it is the environment's last key in use", content_type = "text/html", body = String),
        (status = 303, description = "Revoked: to /console/keys"),
        (status = 401, description = "A page asking for the person's password (past the re-authentication window, or it was wrong), which sends the form again", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not revoke keys", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such key of this merchant and environment", content_type = "text/html", body = String),
    )
)]
pub async fn revoke_key(
    State(state): State<AppState>,
    Path(key): Path<String>,
    request: Request,
) -> Response {
    let posted = (request.headers().clone(), client(&state, &request));
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(refused) = refused_unless(&session, Permission::ManageKeys, "revoking keys") {
        return refused;
    }
    let merchant = &session.merchant;
    // Only a key of this merchant and environment: another's is no key at all.
    let keys = match state.merchants.show(merchant.merchant_id).await {
        Ok(detail) => detail.keys,
        Err(error) => return unavailable(&session, &error),
    };
    let in_use: Vec<_> = keys
        .iter()
        .filter(|k| k.environment == merchant.environment && k.revoked_at.is_none())
        .collect();
    let Some(doomed) = keys
        .iter()
        .find(|k| k.key == key && k.environment == merchant.environment)
    else {
        return message(
            StatusCode::NOT_FOUND,
            Some(&session),
            "No such key",
            "There is no such key of yours in this environment.",
        );
    };
    if doomed.revoked_at.is_none() && field(&fields, "confirm") != Some("yes") {
        let last = in_use.len() == 1;
        return confirm_revoking(&session, &key, last);
    }
    let action = format!("/console/keys/{key}/revoke");
    let what = ("Revoking a key", action.as_str(), "/console/keys");
    if let Err(ask) = confirmed(&state, (&posted.0, posted.1), &session, &fields, what).await {
        return ask;
    }
    match state.merchants.revoke_key(&key, session.actor()).await {
        Ok(_) => see_other("/console/keys"),
        Err(error) => unavailable(&session, &error),
    }
}

#[derive(Template)]
#[template(path = "console/confirm.html")]
struct ConfirmPage<'a> {
    session: Option<SessionBar>,
    heading: String,
    lines: Vec<String>,
    action: String,
    button: String,
    back: &'a str,
    back_label: &'a str,
}

/// The page that asks to confirm revoking `key`, saying what stops: whatever uses it, and,
/// for the environment's `last` key in use, every request of the environment until another
/// is made (and how to make one).
fn confirm_revoking(session: &ConsoleSession, key: &str, last: bool) -> Response {
    let environment = session.merchant.environment;
    let mut lines = vec![format!(
        "Anything that sends requests with {key} is refused from the moment it is revoked. A \
         revoked key cannot be brought back."
    )];
    if last {
        lines.push(match environment {
            Environment::Test => "It is your only test key in use: test requests stop until \
                 you make another. Make the new key first, then revoke this one."
                .to_owned(),
            Environment::Live => "It is your only live key in use: live bookings stop until \
                 you make another. Make the new key first, then revoke this one."
                .to_owned(),
        });
    }
    page(
        StatusCode::OK,
        ConfirmPage {
            session: Some(SessionBar::from(session)),
            heading: format!("Revoke {key}?"),
            lines,
            action: format!("/console/keys/{key}/revoke"),
            button: format!("Revoke {key}"),
            back: "/console/keys",
            back_label: "Keep it: back to the keys",
        }
        .render(),
    )
}

#[utoipa::path(
    post,
    path = "/console/settings",
    operation_id = "consoleChangeSettings",
    tag = "console",
    summary = "Changes the account's settings (admins and owners, with `reauthentication`, the person's password or a code of their second factor, past the re-authentication window): form fields `csrf`, `once`, `notify_customer`, `proof_photo_required`, `proof_signature_required` (checkboxes: present is yes), `sms_sender_name` (empty: the service's sender), `contact_email` (empty: none), `preparation_minutes` (0 to 240; empty: none)",
    security(()),
    request_body(content = String, description = "`csrf=…&notify_customer=on&sms_sender_name=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The page, saying the settings are saved", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 401, description = "A page asking for the person's password (past the re-authentication window, or it was wrong), which sends the form again", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not change settings", content_type = "text/html", body = String),
        (status = 422, description = "A page: a sender name that is not 3 to 11 letters and digits with a letter, a contact email that is not an address, or a preparation time that is not 0 to 240 minutes", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn change_settings(State(state): State<AppState>, request: Request) -> Response {
    let posted = (request.headers().clone(), client(&state, &request));
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let what = "changing the account's settings";
    if let Some(refused) = refused_unless(&session, Permission::ManageSettings, what) {
        return refused;
    }
    let what = (
        "Changing the account's settings",
        "/console/settings",
        "/console/keys",
    );
    if let Err(ask) = confirmed(&state, (&posted.0, posted.1), &session, &fields, what).await {
        return ask;
    }
    // A checkbox left unticked is not sent at all: absent is "no".
    let ticked = |name: &str| Some(field(&fields, name).is_some());
    let sender = field(&fields, "sms_sender_name").unwrap_or("").trim();
    let email = field(&fields, "contact_email").unwrap_or("").trim();
    let preparation = field(&fields, "preparation_minutes").unwrap_or("").trim();
    // Empty is none; text that is not a whole number is refused like one out of range.
    let preparation_minutes = preparation.parse::<i64>().ok().map(Numeric);
    let preparation_readable = preparation.is_empty() || preparation_minutes.is_some();
    let change = SettingsChange {
        notify_customer: ticked("notify_customer"),
        proof_photo_required: ticked("proof_photo_required"),
        proof_signature_required: ticked("proof_signature_required"),
        sms_sender_name: Some((!sender.is_empty()).then(|| sender.to_owned())),
        contact_email: Some((!email.is_empty()).then(|| email.to_owned())),
        preparation_minutes: Some(preparation_minutes),
        ..SettingsChange::default()
    };
    let merchant_id = session.merchant.merchant_id;
    let changed = if preparation_readable {
        state
            .merchants
            .change_settings(merchant_id, &change, session.actor())
            .await
    } else {
        Err(MerchantError::Settings(
            SettingsError::InvalidPreparationMinutes,
        ))
    };
    match changed {
        Ok(_) => {
            let said = Said {
                notice: Some("Settings saved."),
                ..Said::default()
            };
            render(&state, &session, StatusCode::OK, said).await
        }
        Err(MerchantError::Settings(error)) => {
            let said = Said {
                problem: Some(error.to_string()),
                typed: Some(Editable {
                    notify_customer: change.notify_customer == Some(true),
                    proof_photo_required: change.proof_photo_required == Some(true),
                    proof_signature_required: change.proof_signature_required == Some(true),
                    sms_sender_name: sender.to_owned(),
                    contact_email: email.to_owned(),
                    preparation_minutes: preparation.to_owned(),
                }),
                ..Said::default()
            };
            render(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, said).await
        }
        Err(error) => unavailable(&session, &error),
    }
}
