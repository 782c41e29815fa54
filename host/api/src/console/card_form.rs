//! A live card added through the payment provider's own card form, with the merchant present:
//! the console starts the form (`POST /v1/payment-methods/setup`'s work), draws the provider's
//! component from the card-form document the adapter made, and puts on file the reference the
//! provider hands back. The card number goes from the merchant's browser to the provider only.
//!
//! The document's `browser` member says how: `component` (a form this console knows how to
//! drive, or the name under which the provider's own script registers its driver), `script`
//! (the provider's script), optionally `stylesheet`, and `origins` (all the form loads from,
//! frames or calls). Those origins, and only on this page, join the console's
//! Content-Security-Policy: a known provider's own origins, or ones the operator allowed
//! (`COURIER_CARD_FORM_ORIGINS`); a provider's own component, only the operator's.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::Value;

use super::respond::{SessionBar, field, message, page, permitted_form, see_other, session, token};
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::payments::cards::CardFormOptions;
use courier_domain::Environment;
use courier_domain::team::Permission;

/// The provider forms this console draws: two it drives itself (`/console/card-form.js` knows
/// each by name), and any other provider's by the driver its own script registers.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Component {
    /// Stripe's Payment Element, on a SetupIntent.
    StripePaymentElement,
    /// Adyen's Drop-in, on a Checkout session; Adyen announces the card it stored by
    /// notification, and the card is on file when it arrives.
    AdyenDropIn,
    /// Another provider's form, drawn by the driver its script registers under this name
    /// (`window.courierCardForms[name]`, docs/writing-an-adapter.md); its origins only the
    /// operator's.
    Provided(String),
}

/// The longest name of a provider's own component.
const MOST_NAME: usize = 40;

impl Component {
    fn named(name: &str) -> Option<Self> {
        match name {
            "stripe-payment-element" => Some(Component::StripePaymentElement),
            "adyen-drop-in" => Some(Component::AdyenDropIn),
            // Lower-case letters, digits and inner hyphens: safe as a name on the page.
            _ if !name.is_empty()
                && name.len() <= MOST_NAME
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !name.starts_with('-')
                && !name.ends_with('-') =>
            {
                Some(Component::Provided(name.to_owned()))
            }
            _ => None,
        }
    }

    /// The provider's own origins (its Content-Security-Policy guidance): a document may name
    /// these, and those the operator adds (`COURIER_CARD_FORM_ORIGINS`), and no others, so an
    /// adapter cannot bring a script of its choosing into the console.
    fn provider_origins(&self) -> &'static [&'static str] {
        match self {
            Component::StripePaymentElement => &[
                "https://js.stripe.com",
                "https://*.js.stripe.com",
                "https://api.stripe.com",
                "https://hooks.stripe.com",
            ],
            Component::AdyenDropIn => &[
                "https://checkoutshopper-test.adyen.com",
                "https://checkoutshopper-live.adyen.com",
                "https://checkoutshopper-test.cdn.adyen.com",
                "https://checkoutshopper-live.cdn.adyen.com",
            ],
            Component::Provided(_) => &[],
        }
    }

    /// What the page's policy allows beyond the form's origins: Adyen's 3-D Secure 2 challenge
    /// is framed from, and posts to, the card issuer's own server, which no list can name
    /// (Adyen's guidance); Stripe's passes through its own origins.
    fn challenge_sources(&self) -> &'static str {
        match self {
            Component::StripePaymentElement | Component::Provided(_) => "",
            Component::AdyenDropIn => " https:",
        }
    }

    fn name(&self) -> &str {
        match self {
            Component::StripePaymentElement => "stripe-payment-element",
            Component::AdyenDropIn => "adyen-drop-in",
            Component::Provided(name) => name,
        }
    }

    /// What the provider's return to the console says (it sends the card holder back after an
    /// authentication on its own pages): the reference of the card it saved, or why none.
    fn returned(&self, query: &HashMap<String, String>) -> Result<String, String> {
        match self {
            // Stripe's documented return: `setup_intent`, `setup_intent_client_secret` and
            // `redirect_status`; the SetupIntent stands for the card it saved.
            Component::StripePaymentElement => {
                let status = query.get("redirect_status").map_or("", String::as_str);
                match query.get("setup_intent") {
                    Some(intent) if status == "succeeded" && intent.starts_with("seti_") => {
                        Ok(intent.clone())
                    }
                    _ => Err("Stripe did not say it saved the card. Start the form again.".into()),
                }
            }
            // Adyen's return goes to the session's own return URL, and its card arrives by
            // notification: nothing to put on file from here.
            Component::AdyenDropIn => Err("Adyen announces the card it stored itself: it is \
                 listed on the cards page once Adyen's notification arrives."
                .into()),
            // Its return is the provider's own: the card it saved, if any, is put on file by
            // its form, or listed once the provider announces it.
            Component::Provided(_) => Err("Your payment provider sent you back here. If it \
                 saved the card, the cards page lists it; otherwise start the form again."
                .into()),
        }
    }
}

/// What the page needs to draw a provider's form, read from the adapter's document.
#[derive(Debug, PartialEq, Eq)]
struct ProviderForm {
    component: Component,
    script: String,
    stylesheet: Option<String>,
    origins: Vec<String>,
}

/// The most origins a provider's form may add to the page's policy.
const MOST_ORIGINS: usize = 8;

/// A CSP source naming one origin, or a provider's subdomains (`https://*.host`).
fn is_origin(text: &str) -> bool {
    courier_core::payments::is_csp_origin(text, true)
}

/// The provider's form from the adapter's card-form document, or why the console cannot draw
/// it (in words for the merchant). Its origins must be the provider's own or ones `allowed` by
/// the operator.
fn provider_form(document: &Value, allowed: &[String]) -> Result<ProviderForm, &'static str> {
    let browser = document
        .get("browser")
        .ok_or("the payment adapter's card form says nothing about the browser")?;
    let component = browser
        .get("component")
        .and_then(Value::as_str)
        .and_then(Component::named)
        .ok_or("the payment provider's card form is not one the console draws")?;
    let origins: Vec<String> = browser
        .get("origins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|o| o.as_str().filter(|o| is_origin(o)).map(str::to_owned))
        .collect::<Option<_>>()
        .filter(|o: &Vec<String>| !o.is_empty() && o.len() <= MOST_ORIGINS)
        .ok_or("the payment adapter's card form names origins that are not")?;
    let permitted = |origin: &String| {
        component.provider_origins().contains(&origin.as_str()) || allowed.contains(origin)
    };
    if !origins.iter().all(permitted) {
        return Err("the payment adapter's card form names origins the operator has not allowed");
    }
    // The script and stylesheet must come from one of the named origins (not a wildcard one).
    let from_origins = |url: &&str| {
        !url.bytes().any(|b| b.is_ascii_whitespace() || b == b'"')
            && origins.iter().any(|o| {
                !o.contains('*')
                    && url
                        .strip_prefix(o.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
    };
    let script = browser
        .get("script")
        .and_then(Value::as_str)
        .filter(from_origins)
        .ok_or("the payment adapter's card form names no script from its origins")?;
    let stylesheet = match browser.get("stylesheet") {
        None => None,
        Some(sheet) => Some(
            sheet
                .as_str()
                .filter(from_origins)
                .ok_or("the payment adapter's card form names a stylesheet from elsewhere")?,
        ),
    };
    Ok(ProviderForm {
        component,
        script: script.to_owned(),
        stylesheet: stylesheet.map(str::to_owned),
        origins,
    })
}

/// The console's policy with the provider's origins allowed to load scripts, styles, images
/// and frames and to be called: this page only.
fn content_security_policy(form: &ProviderForm) -> String {
    let o = form.origins.join(" ");
    let challenge = form.component.challenge_sources();
    format!(
        "default-src 'none'; style-src 'self' {o}; img-src 'self' {o}; script-src 'self' {o}; \
         connect-src 'self' {o}; frame-src {o}{challenge}; form-action 'self'{challenge}; \
         frame-ancestors 'none'; base-uri 'none'"
    )
}

/// The provider's form as the page draws it.
struct DrawnForm {
    component: String,
    /// Where a form whose provider stores the card itself goes when it has (Adyen's): the
    /// cards page, following itself until the provider's card is on file.
    stored_path: String,
    script: String,
    stylesheet: Option<String>,
    document: String,
    return_path: String,
}

#[derive(Template)]
#[template(path = "console/card_form.html")]
struct CardFormPage {
    session: Option<SessionBar>,
    /// The same address again, for a browser the provider sent back without the session's
    /// cookie (`SameSite=Strict` holds it back on a navigation from another site; a link
    /// followed from here carries it).
    continue_to: Option<String>,
    form: Option<DrawnForm>,
    /// The card the provider saved, when it sent the card holder back here.
    reference: String,
    problem: Option<String>,
}

/// A test session's answer: its cards are the sandbox's.
fn not_in_test(session: &ConsoleSession) -> Option<Response> {
    (session.merchant.environment == Environment::Test).then(|| {
        message(
            StatusCode::BAD_REQUEST,
            Some(session),
            "Test cards come from the sandbox",
            "A test session adds the sandbox's cards, on the cards page; the provider's card \
             form is for live cards.",
        )
    })
}

#[utoipa::path(
    post,
    path = "/console/cards/form",
    operation_id = "consoleStartCardForm",
    tag = "console",
    summary = "Starts the payment provider's card form (live keys): form field `csrf`",
    security(()),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "A page: the provider's card form, under a policy that admits the provider's origins; or, when the console cannot draw the provider's form, a page that says why", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 400, description = "A page: a test session (its cards are the sandbox's)", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 503, description = "A page: the provider or the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn start_card_form(State(state): State<AppState>, request: Request) -> Response {
    let (session, _) =
        match permitted_form(&state, request, Permission::ManageSettings, "adding cards").await {
            Ok(signed) => signed,
            Err(answer) => return answer,
        };
    if let Some(refused) = not_in_test(&session) {
        return refused;
    }
    let setup = match state
        .payments
        .setup(&session.merchant, &CardFormOptions::default())
        .await
    {
        Ok(setup) => setup,
        Err(error) => {
            tracing::warn!(%error, "starting a card form for the console failed");
            let api = crate::error::ApiError::from(error);
            let (status, _) = api.status_and_code();
            let said = api.public_message();
            return message(status, Some(&session), "The card form did not start", &said);
        }
    };
    let form = match provider_form(&setup.card_form, &state.config.payments.card_form.origins) {
        Ok(form) => form,
        Err(why) => {
            return message(
                StatusCode::OK,
                Some(&session),
                "The console cannot draw this card form",
                &format!(
                    "Here, {why}. Your own page can start it with POST /v1/payment-methods/setup \
                     and put the card on file with POST /v1/payment-methods."
                ),
            );
        }
    };
    // Read now so the cards page knows when the provider's card has arrived.
    let had = match state.payments.cards(&session.merchant).await {
        Ok(cards) => cards.len(),
        Err(error) => {
            tracing::warn!(%error, "reading the cards before a card form failed");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&session),
                "Try again shortly",
                "The console cannot reach its database just now.",
            );
        }
    };
    let policy = content_security_policy(&form);
    let mut answer = page(
        StatusCode::OK,
        CardFormPage {
            session: Some(SessionBar::from(&session)),
            continue_to: None,
            form: Some(DrawnForm {
                component: form.component.name().to_owned(),
                stored_path: format!("/console/cards?done=stored&had={had}"),
                script: form.script,
                stylesheet: form.stylesheet,
                document: setup.card_form.to_string(),
                return_path: format!(
                    "/console/cards/returned?component={}",
                    form.component.name()
                ),
            }),
            reference: String::new(),
            problem: None,
        }
        .render(),
    );
    if let Ok(policy) = HeaderValue::from_str(&policy) {
        answer
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    answer
}

#[utoipa::path(
    get,
    path = "/console/cards/returned",
    operation_id = "consoleCardFormReturned",
    tag = "console",
    summary = "Where the provider sends the card holder back after authenticating on its own pages: the card it saved, to put on file with one click",
    security(()),
    params(
        ("component" = String, Query, description = "The provider's form (`stripe-payment-element`)"),
        ("setup_intent" = Option<String>, Query, description = "Stripe: the SetupIntent that saved the card"),
        ("redirect_status" = Option<String>, Query, description = "Stripe: `succeeded` when it did"),
    ),
    responses(
        (status = 200, description = "The page: the card to put on file; without the session's cookie (held back on a return from another site), a link to this address again", content_type = "text/html", body = String),
        (status = 303, description = "A session cookie that is no longer a session: to /console/sign-in"),
        (status = 400, description = "A page: a test session, an unknown form, or the provider saved no card", content_type = "text/html", body = String),
    )
)]
pub async fn card_form_returned(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let session = match session(&state, &headers).await {
        Ok(Some(session)) => session,
        Ok(None) if token(&headers).is_none() => {
            return page(
                StatusCode::OK,
                CardFormPage {
                    session: None,
                    continue_to: Some(
                        uri.path_and_query()
                            .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned()),
                    ),
                    form: None,
                    reference: String::new(),
                    problem: None,
                }
                .render(),
            );
        }
        Ok(None) => return see_other("/console/sign-in"),
        Err(answer) => return answer,
    };
    if let Some(refused) = not_in_test(&session) {
        return refused;
    }
    let returned = query
        .get("component")
        .and_then(|name| Component::named(name))
        .ok_or_else(|| "The provider sent you back from a form the console does not know.".into())
        .and_then(|component| component.returned(&query));
    let (status, reference, problem) = match returned {
        Ok(reference) => (StatusCode::OK, reference, None),
        Err(why) => (StatusCode::BAD_REQUEST, String::new(), Some(why)),
    };
    page(
        status,
        CardFormPage {
            session: Some(SessionBar::from(&session)),
            continue_to: None,
            form: None,
            reference,
            problem,
        }
        .render(),
    )
}

#[utoipa::path(
    post,
    path = "/console/cards/attach",
    operation_id = "consoleAttachCard",
    tag = "console",
    summary = "Puts on file the card the provider's form saved (live keys): form fields `provider_ref`, `make_default` and `csrf`",
    security(()),
    request_body(content = String, description = "`provider_ref=…&make_default=on&csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "On file: to /console/cards?done=added; not signed in: to /console/sign-in"),
        (status = 400, description = "A page: a test session, or no reference", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 422, description = "A page: the card was refused (a card number, unknown to the provider, declined)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the provider or the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn attach_card(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) =
        match permitted_form(&state, request, Permission::ManageSettings, "adding cards").await {
            Ok(signed) => signed,
            Err(answer) => return answer,
        };
    if let Some(refused) = not_in_test(&session) {
        return refused;
    }
    let Some(reference) = field(&fields, "provider_ref").filter(|r| !r.trim().is_empty()) else {
        return message(
            StatusCode::BAD_REQUEST,
            Some(&session),
            "No card to put on file",
            "The provider's form did not say which card it saved. Start the form again.",
        );
    };
    let make_default = field(&fields, "make_default").is_some();
    match state
        .payments
        .attach(&session.merchant, reference.trim(), make_default)
        .await
    {
        Ok(_) => see_other("/console/cards?done=added"),
        Err(error) => super::cards::refused(&state, &session, error).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stripe_document(origins: Value, script: &str) -> Value {
        json!({"client_secret": "seti_1_secret_2", "publishable_key": "pk_live_1",
               "browser": {"component": "stripe-payment-element", "script": script,
                           "origins": origins}})
    }

    #[test]
    fn a_stripe_document_is_drawn_with_its_script_and_origins() {
        let document = stripe_document(
            json!([
                "https://js.stripe.com",
                "https://*.js.stripe.com",
                "https://api.stripe.com"
            ]),
            "https://js.stripe.com/v3/",
        );
        let form = provider_form(&document, &[]).unwrap();
        assert_eq!(form.component, Component::StripePaymentElement);
        assert_eq!(form.script, "https://js.stripe.com/v3/");
        let policy = content_security_policy(&form);
        assert!(policy.contains(
            "script-src 'self' https://js.stripe.com https://*.js.stripe.com https://api.stripe.com;"
        ));
        assert!(policy.contains("frame-src https://js.stripe.com"));
        assert!(policy.contains("form-action 'self'"));
    }

    #[test]
    fn an_adyen_document_is_drawn_with_its_stylesheet() {
        let document = json!({"session": {"id": "CS1", "sessionData": "Ab02"},
            "clientKey": "test_KEY", "environment": "test",
            "browser": {"component": "adyen-drop-in",
                "script": "https://checkoutshopper-test.cdn.adyen.com/checkoutshopper/sdk/5.68.0/adyen.js",
                "stylesheet": "https://checkoutshopper-test.cdn.adyen.com/checkoutshopper/sdk/5.68.0/adyen.css",
                "origins": ["https://checkoutshopper-test.cdn.adyen.com", "https://checkoutshopper-test.adyen.com"]}});
        let form = provider_form(&document, &[]).unwrap();
        assert_eq!(form.component, Component::AdyenDropIn);
        assert!(form.stylesheet.unwrap().ends_with("/adyen.css"));
        assert!(Component::AdyenDropIn.returned(&HashMap::new()).is_err());
    }

    #[test]
    fn origins_are_the_provider_s_own_or_the_operator_s() {
        let elsewhere = stripe_document(
            json!(["https://localhost:8443"]),
            "https://localhost:8443/v3/",
        );
        assert!(provider_form(&elsewhere, &[]).is_err());
        let allowed = ["https://localhost:8443".to_owned()];
        assert!(provider_form(&elsewhere, &allowed).is_ok());
        // Another provider's origins are not Stripe's.
        let adyen_s = stripe_document(
            json!(["https://checkoutshopper-test.adyen.com"]),
            "https://checkoutshopper-test.adyen.com/v3/",
        );
        assert!(provider_form(&adyen_s, &[]).is_err());
    }

    #[test]
    fn another_provider_s_component_is_drawn_from_the_operator_s_origins_only() {
        let document = |origins: Value| {
            json!({"session": "ses_1", "browser": {"component": "acme-card-form",
                "script": "https://js.acme-pay.example/card-form.js", "origins": origins}})
        };
        // Its origins are no provider's the console knows: the operator must allow them.
        let acme = json!(["https://js.acme-pay.example"]);
        assert!(provider_form(&document(acme.clone()), &[]).is_err());
        let allowed = ["https://js.acme-pay.example".to_owned()];
        let form = provider_form(&document(acme), &allowed).unwrap();
        assert_eq!(form.component, Component::Provided("acme-card-form".into()));
        assert_eq!(form.component.name(), "acme-card-form");
        let policy = content_security_policy(&form);
        assert!(policy.contains("script-src 'self' https://js.acme-pay.example;"));
        assert!(policy.contains("frame-src https://js.acme-pay.example;"));
        // Nor may it borrow a known provider's origins.
        let borrowed = json!(["https://js.stripe.com"]);
        assert!(provider_form(&document(borrowed), &[]).is_err());
        assert!(
            Component::Provided("acme-card-form".into())
                .returned(&HashMap::new())
                .is_err()
        );
    }

    #[test]
    fn a_component_s_name_is_lower_case_letters_digits_and_inner_hyphens() {
        for good in ["acme-card-form", "checkout-frames", "pay2"] {
            assert_eq!(
                Component::named(good),
                Some(Component::Provided(good.into()))
            );
        }
        let long = "a".repeat(MOST_NAME + 1);
        for bad in [
            "",
            "Acme",
            "acme card",
            "-acme",
            "acme-",
            "acme\"x",
            "<script>",
            &long,
        ] {
            assert_eq!(Component::named(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn adyen_s_page_may_frame_and_post_to_the_card_issuer() {
        let document = json!({"browser": {"component": "adyen-drop-in",
            "script": "https://checkoutshopper-test.cdn.adyen.com/sdk/adyen.js",
            "origins": ["https://checkoutshopper-test.cdn.adyen.com"]}});
        let policy = content_security_policy(&provider_form(&document, &[]).unwrap());
        assert!(policy.contains("frame-src https://checkoutshopper-test.cdn.adyen.com https:;"));
        assert!(policy.contains("form-action 'self' https:;"));
        let stripe = stripe_document(
            json!(["https://js.stripe.com"]),
            "https://js.stripe.com/v3/",
        );
        let policy = content_security_policy(&provider_form(&stripe, &[]).unwrap());
        assert!(policy.contains("frame-src https://js.stripe.com;"));
        assert!(policy.contains("form-action 'self';"));
    }

    #[test]
    fn documents_the_console_cannot_draw_safely_are_refused() {
        let stripe = ["https://js.stripe.com"];
        for document in [
            json!({"client_secret": "s"}),
            json!({"browser": {"component": "paper-form", "script": "https://x.example/a.js", "origins": ["https://x.example"]}}),
            json!({"browser": {"component": "adyen-drop-in", "script": "https://x.adyen.com/a.js",
                               "stylesheet": "https://elsewhere.example/a.css", "origins": ["https://x.adyen.com"]}}),
            stripe_document(
                json!(["https://js.stripe.com; script-src *"]),
                "https://js.stripe.com/v3/",
            ),
            stripe_document(json!(["http://js.stripe.com"]), "http://js.stripe.com/v3/"),
            stripe_document(json!(["https://*"]), "https://js.stripe.com/v3/"),
            stripe_document(json!([]), "https://js.stripe.com/v3/"),
            stripe_document(json!(stripe), "https://evil.example/v3/"),
            stripe_document(json!(stripe), "https://js.stripe.com.evil.example/v3/"),
            stripe_document(json!(["https://*.stripe.com"]), "https://*.stripe.com/v3/"),
            stripe_document(json!(stripe), "https://js.stripe.com/v3/\" onload=\"x"),
            stripe_document(
                json!(vec!["https://a.example"; 9]),
                "https://a.example/x.js",
            ),
        ] {
            assert!(provider_form(&document, &[]).is_err(), "{document}");
        }
    }

    #[test]
    fn origins_are_hosts_with_an_optional_port_and_nothing_else() {
        for good in [
            "https://localhost:8443",
            "https://js.stripe.com",
            "https://*.js.stripe.com",
        ] {
            assert!(is_origin(good), "{good}");
        }
        for bad in [
            "https://",
            "https://a.example/",
            "https://a.example:",
            "https://a.example:123456",
            "https://A.example",
            "https://a.example 'unsafe-inline'",
            "'self'",
            "https://.example",
        ] {
            assert!(!is_origin(bad), "{bad}");
        }
    }

    #[test]
    fn stripes_return_names_the_setup_intent_only_when_it_succeeded() {
        let returned = |pairs: &[(&str, &str)]| {
            let query = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            Component::StripePaymentElement.returned(&query)
        };
        assert_eq!(
            returned(&[("setup_intent", "seti_1"), ("redirect_status", "succeeded")]),
            Ok("seti_1".to_owned())
        );
        assert!(returned(&[("setup_intent", "seti_1"), ("redirect_status", "failed")]).is_err());
        assert!(returned(&[("setup_intent", "pm_1"), ("redirect_status", "succeeded")]).is_err());
        assert!(returned(&[]).is_err());
    }
}
