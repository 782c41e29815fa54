//! The operator console over HTTP, as a browser without JavaScript uses it: operators invited,
//! joining, setting up their second factor and signing in with it; roles enforced; a
//! price-book comparison whose numbers and histogram match the API's comparison, an activation
//! from the console seen by the next quote, the audit trail naming the operator; and its
//! security: the session cookie's flags, a form without its CSRF token, a session whose person
//! is no longer an operator, the failure budgets, and a listener of its own.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use crate::console::{PASSWORD, Page, Visitor, csrf_of};
use crate::quotes::{Quoting, journey, upload_dearer_book};
use crate::second_factor::{code, key_on};
use crate::support::{Authed, MerchantCredentials, TestApp, status_and_json};

/// The text of the element with `id` on a page.
fn text_of(body: &str, id: &str) -> String {
    let at = body
        .find(&format!("id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no #{id} on the page"))
        + id.len()
        + 6;
    body[at..].split('<').next().unwrap().trim().to_owned()
}

/// The histogram's table: (direction, from, to, count) per bin.
fn bins(body: &str) -> Vec<(String, i64, i64, u64)> {
    body.split("<tr class=\"change-")
        .skip(1)
        .filter(|row| row.contains("data-from=\""))
        .map(|row| {
            let direction = row.split('"').next().unwrap().to_owned();
            let attribute = |name: &str| -> i64 {
                let at = row.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                row[at..].split('"').next().unwrap().parse().unwrap()
            };
            let count = row
                .split("<td class=\"number\">")
                .nth(1)
                .unwrap()
                .split('<')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (
                direction,
                attribute("data-from"),
                attribute("data-to"),
                count,
            )
        })
        .collect()
}

/// Invites `email` to be an operator with `role` through the operator API: the invitation.
pub(crate) async fn invite_operator(app: &TestApp, email: &str, role: &str) -> Value {
    let (status, invitation) = status_and_json(
        app.admin(Method::POST, "/operators/invitations")
            .json(&serde_json::json!({"email": email, "role": role}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{invitation}");
    invitation
}

/// The path of an invitation's link.
fn invitation_path(invitation: &Value) -> String {
    let url = invitation["invitation_url"].as_str().unwrap();
    format!("/ops/invitations/{}", url.rsplit('/').next().unwrap())
}

/// An address no other operator has, in letters only: a run of digits in a body may read as a
/// card number, which the service refuses.
pub(crate) fn operator_email(prefix: &str) -> String {
    let letters: String = uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .chars()
        .map(|c| char::from(b'a' + c.to_digit(16).unwrap_or(0) as u8))
        .collect();
    format!("{prefix}-{letters}@ops.example")
}

/// Makes `email` an operator with `role`, its password [`PASSWORD`].
pub(crate) async fn operator(app: &TestApp, email: &str, role: &str) {
    let invitation = invite_operator(app, email, role).await;
    let joined = Visitor::new(app)
        .post(
            &invitation_path(&invitation),
            &[
                ("name", "Olga Operator"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(joined.status, 303, "{}", joined.body);
}

/// A new operator `email` with `role`, signed in: password, then the second factor set up.
/// Answers the browser and the authenticator app's key.
pub(crate) async fn operator_signed_in(
    app: &TestApp,
    email: &str,
    role: &str,
) -> (Visitor, String) {
    operator(app, email, role).await;
    let mut visitor = Visitor::new(app);
    let page = visitor
        .post("/ops/sign-in", &[("email", email), ("password", PASSWORD)])
        .await;
    assert_eq!(
        (page.status, page.location.as_deref()),
        (303, Some("/ops/second-factor")),
        "{}",
        page.body
    );
    let setup = visitor.get("/ops/second-factor").await;
    let key = key_on(&setup);
    let on = visitor
        .post(
            "/ops/second-factor/confirm",
            &[("csrf", &csrf_of(&setup.body)), ("code", &code(&key, 0))],
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    (visitor, key)
}

/// An admin operator of their own, signed in.
pub(crate) async fn signed_in(app: &TestApp) -> Visitor {
    let email = operator_email("admin");
    operator_signed_in(app, &email, "admin").await.0
}

async fn api_comparison(app: &TestApp, upload: i64) -> Value {
    let (status, comparison) = status_and_json(
        app.admin(
            Method::GET,
            &format!("/markets/demo/price-books/{upload}/comparison"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{comparison}");
    comparison
}

#[tokio::test]
async fn an_operator_compares_activates_and_finds_it_in_the_audit_trail() {
    let quoting = Quoting::start().await;
    let app = &quoting.app;
    for vehicle in ["car", "car", "van", "bicycle", "car"] {
        let (status, quote) = quoting.quote(&journey(Some(vehicle))).await;
        assert_eq!(status, 201, "{quote}");
    }
    let upload = upload_dearer_book(app, 400).await;

    // Signed out, every page leads to the sign-in form; a wrong password is refused.
    let (mut first, key) = operator_signed_in(app, "ana@ops.example", "admin").await;
    let csrf = csrf_of(&first.get("/ops/markets").await.body);
    first.post("/ops/sign-out", &[("csrf", &csrf)]).await;
    let mut visitor = Visitor::new(app);
    let page = visitor.get("/ops/markets").await;
    assert_eq!(
        (page.status, page.location.as_deref()),
        (303, Some("/ops/sign-in"))
    );
    let page = visitor
        .post(
            "/ops/sign-in",
            &[
                ("email", "ana@ops.example"),
                ("password", "not her password"),
            ],
        )
        .await;
    assert_eq!(page.status, 401);
    assert!(page.body.contains("do not match an operator"));
    assert!(visitor.cookie.is_none());
    let page = visitor
        .post(
            "/ops/sign-in",
            &[("email", "ana@ops.example"), ("password", "")],
        )
        .await;
    assert_eq!(page.status, 400);

    // The password, then the code: nothing opens in between.
    let page = visitor
        .post(
            "/ops/sign-in",
            &[("email", "ana@ops.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(
        (page.status, page.location.as_deref()),
        (303, Some("/ops/sign-in/code"))
    );
    let waiting = visitor.get("/ops/markets").await;
    assert_eq!(waiting.location.as_deref(), Some("/ops/sign-in/code"));
    let form = visitor.get("/ops/sign-in/code").await;
    let wrong = visitor
        .post(
            "/ops/sign-in/code",
            &[("csrf", &csrf_of(&form.body)), ("code", "000000")],
        )
        .await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    let page = visitor
        .post(
            "/ops/sign-in/code",
            &[("csrf", &csrf_of(&form.body)), ("code", &code(&key, 30))],
        )
        .await;
    assert_eq!(
        (page.status, page.location.as_deref()),
        (303, Some("/ops/")),
        "{}",
        page.body
    );
    let cookie = page.set_cookie.unwrap();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/ops"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    let page = visitor.get("/ops/markets").await;
    assert_eq!(page.status, 200);
    assert!(page.csp.unwrap().contains("default-src 'none'"));
    assert!(page.body.contains("/ops/markets/demo/price-books"));
    let page = visitor.get("/ops/markets/demo/price-books").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains(&format!(
        "/ops/markets/demo/price-books/{upload}/comparison"
    )));

    // The comparison: the API's numbers, and a histogram that counts the same quotes.
    let api = api_comparison(app, upload).await;
    let page = visitor
        .get(&format!(
            "/ops/markets/demo/price-books/{upload}/comparison"
        ))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    for (id, field) in [
        ("quotes-compared", "quotes_compared"),
        ("changed", "changed"),
        ("increased", "increased"),
        ("decreased", "decreased"),
        ("refused", "refused"),
    ] {
        assert_eq!(
            text_of(&page.body, id),
            api[field].to_string(),
            "{id} against {api}"
        );
    }
    let drawn = bins(&page.body);
    let count =
        |direction: &str| -> u64 { drawn.iter().filter(|b| b.0 == direction).map(|b| b.3).sum() };
    let as_u64 = |field: &str| api[field].as_u64().unwrap();
    assert_eq!(count("up"), as_u64("increased"), "{drawn:?}");
    assert_eq!(count("down"), as_u64("decreased"), "{drawn:?}");
    assert_eq!(
        count("same"),
        as_u64("quotes_compared") - as_u64("refused") - as_u64("changed")
    );
    // The largest increase falls in the last bin.
    let last = drawn.last().unwrap();
    let largest = api["largest_increase_minor"].as_i64().unwrap();
    assert!(last.1 <= largest && largest <= last.2, "{drawn:?} {api}");
    assert!(page.body.contains("<svg class=\"histogram\""));
    assert!(page.body.contains("The largest increases"));

    // Filtered by vehicle: only the van's quote (it is dearer by the raise too).
    let page = visitor
        .get(&format!(
            "/ops/markets/demo/price-books/{upload}/comparison?vehicle=van&distance="
        ))
        .await;
    assert_eq!(page.status, 200);
    let vans = bins(&page.body).iter().map(|b| b.3).sum::<u64>();
    assert_eq!(vans, 1, "{}", text_of(&page.body, "scope"));
    assert!(text_of(&page.body, "scope").contains("van"));

    // An unknown upload is a page that says so.
    let page = visitor
        .get("/ops/markets/demo/price-books/99/comparison")
        .await;
    assert_eq!(page.status, 404);
    let page = visitor.get("/ops/markets/nowhere/price-books").await;
    assert_eq!(page.status, 404);

    // Activation: a confirmation naming the upload, refused without the form's token.
    let activate = format!("/ops/markets/demo/price-books/{upload}/activate");
    let page = visitor.get(&activate).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains(&format!("Activate upload {upload} (")));
    let csrf = csrf_of(&page.body);
    let refused = visitor.post(&activate, &[("csrf", "forged")]).await;
    assert_eq!(refused.status, 403);
    let (_, still) = quoting.quote(&journey(Some("car"))).await;
    assert_eq!(still["price_book_version"], 1, "nothing was activated");
    let done = visitor.post(&activate, &[("csrf", &csrf)]).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let location = done.location.unwrap();
    assert_eq!(
        location,
        format!("/ops/markets/demo/price-books?activated={upload}&as_version=2")
    );
    let page = visitor.get(&location).await;
    assert!(
        page.body
            .contains("is now in force, as price-book version 2")
    );
    // The next quote is priced by it.
    let (_, next) = quoting.quote(&journey(Some("car"))).await;
    assert_eq!(next["price_book_version"], 2, "{next}");

    // The components in use: the upload just activated, the sandbox adapter, the shaper.
    let (_, uploads) = status_and_json(
        app.admin(Method::GET, "/markets/demo/price-books")
            .send()
            .await
            .unwrap(),
    )
    .await;
    let active = uploads
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["active"] == true)
        .unwrap();
    assert_eq!(active["version"], upload);
    let page = visitor.get("/ops/plugins").await;
    assert_eq!(page.status, 200);
    let table = page.body.split("<table id=\"components\">").nth(1).unwrap();
    assert!(
        table.contains(&format!("title=\"{}\"", active["sha256"].as_str().unwrap())),
        "{table}"
    );
    for expected in [
        "market demo",
        "courier:pricing/price-book@1.0.0",
        "test payments",
        "courier:payments/payment-adapter@2.3.0",
        "courier:webhooks/payload-shaper@1.0.0",
    ] {
        assert!(table.contains(expected), "{expected}: {table}");
    }

    // The audit trail names the operator.
    let page = visitor.get("/ops/audit?action=price_book.activated").await;
    assert_eq!(page.status, 200);
    let table = page.body.split("<table id=\"audit\">").nth(1).unwrap();
    assert!(table.contains("<td>ana@ops.example</td>"), "{table}");
    assert!(table.contains(&format!("demo/{upload}")), "{table}");
    // The wrong password tried at the start is there too, without the password.
    let page = visitor
        .get("/ops/audit?action=operator.sign_in_failed")
        .await;
    assert!(page.body.contains("client_address"), "{}", page.body);
    assert!(!page.body.contains("not her password"));
    let page = visitor.get("/ops/audit?action=no.such.action").await;
    assert_eq!(page.status, 422);
    let page = visitor.get("/ops/audit?operator=nobody").await;
    assert!(page.body.contains("None of 0 entries"));

    // Signing out ends the session.
    let page = visitor.get("/ops/markets").await;
    let csrf = csrf_of(&page.body);
    let page = visitor.post("/ops/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!(page.status, 303);
    let page = visitor.get("/ops/markets").await;
    assert_eq!(page.location.as_deref(), Some("/ops/sign-in"));
    quoting.app.stop().await;
}

/// The upload form as a browser sends it: `csrf`, the component's file, the settings.
fn upload_form(csrf: &str, component: Vec<u8>, settings: &str) -> reqwest::multipart::Form {
    let file = reqwest::multipart::Part::bytes(component)
        .file_name("book.wasm")
        .mime_str("application/wasm")
        .unwrap();
    reqwest::multipart::Form::new()
        .text("csrf", csrf.to_owned())
        .part("component", file)
        .text("settings", settings.to_owned())
}

#[tokio::test]
async fn an_operator_uploads_a_price_book_from_the_console() {
    let app = TestApp::spawn().await;
    let mut visitor = operator_signed_in(&app, "ana@ops.example", "admin").await.0;
    let page = visitor.get("/ops/markets/demo/price-books").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("enctype=\"multipart/form-data\""));
    let csrf = csrf_of(&page.body);
    let settings = crate::price_books::demo_settings(&app).await;
    let component = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/dist/standard-price-book.wasm"
    ))
    .unwrap();
    let path = "/ops/markets/demo/price-books";
    let uploads = || async {
        let (status, listed) = status_and_json(
            app.admin(Method::GET, "/markets/demo/price-books")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200);
        listed.as_array().unwrap().len()
    };
    let before = uploads().await;

    // Refused, and nothing kept: without the form's token, without a file, with settings
    // that are not JSON, with a file that is not a component, in an unknown market.
    let settings_text = settings.to_string();
    let forged = visitor
        .post_multipart(
            path,
            upload_form("guessed", component.clone(), &settings_text),
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let empty = visitor
        .post_multipart(path, upload_form(&csrf, Vec::new(), &settings_text))
        .await;
    assert_eq!(empty.status, 400, "{}", empty.body);
    assert!(empty.body.contains("choose the price book"));
    let not_json = visitor
        .post_multipart(
            path,
            upload_form(&csrf, component.clone(), "{\"vehicles\": "),
        )
        .await;
    assert_eq!(not_json.status, 400, "{}", not_json.body);
    assert!(not_json.body.contains("not JSON"));
    let not_wasm = visitor
        .post_multipart(path, upload_form(&csrf, b"not a component".to_vec(), "{}"))
        .await;
    assert_eq!(not_wasm.status, 422, "{}", not_wasm.body);
    let nowhere = visitor
        .post_multipart(
            "/ops/markets/atlantis/price-books",
            upload_form(&csrf, component.clone(), &settings_text),
        )
        .await;
    assert_eq!(nowhere.status, 404, "{}", nowhere.body);
    let huge = visitor
        .post_multipart(path, upload_form(&csrf, vec![0; 17 << 20], "{}"))
        .await;
    assert_eq!(huge.status, 413, "{}", huge.body);
    assert_eq!(uploads().await, before, "nothing kept");

    // Uploaded: listed, not in force, in the audit trail under the operator's name.
    let uploaded = visitor
        .post_multipart(path, upload_form(&csrf, component, &settings_text))
        .await;
    assert_eq!(uploaded.status, 303, "{}", uploaded.body);
    let version = before + 1;
    assert_eq!(
        uploaded.location.as_deref(),
        Some(format!("{path}?uploaded={version}").as_str())
    );
    assert_eq!(uploads().await, version);
    let page = visitor.get(&format!("{path}?uploaded={version}")).await;
    assert!(page.body.contains(&format!("Upload {version} is in.")));
    assert!(page.body.contains(&format!("Activate upload {version}")));
    let audit = visitor.get("/ops/audit?action=price_book.uploaded").await;
    let table = audit.body.split("<table id=\"audit\">").nth(1).unwrap();
    assert!(table.contains("<td>ana@ops.example</td>"), "{table}");
    assert!(table.contains(&format!("demo/{version}")), "{table}");
    app.stop().await;
}

#[tokio::test]
async fn a_session_ends_when_its_person_stops_being_an_operator_and_sign_ins_spend_budgets() {
    let app =
        TestApp::spawn_with(|name| (name == "COURIER_AUTH_FAILURE_LIMIT").then(|| "3".to_owned()))
            .await;
    let (mut visitor, _) = operator_signed_in(&app, "bo@ops.example", "viewer").await;
    assert_eq!(visitor.get("/ops/markets").await.status, 200);
    let cookie = visitor.cookie.clone().unwrap();
    let token = cookie.split_once('=').unwrap().1.to_owned();

    // No longer an operator: the session opens nothing.
    sqlx::query(
        "DELETE FROM operator_members WHERE person_id = \
         (SELECT id FROM people WHERE email_key = 'bo@ops.example')",
    )
    .execute(&app.pool().await)
    .await
    .unwrap();
    assert_eq!(
        visitor.get("/ops/markets").await.location.as_deref(),
        Some("/ops/sign-in")
    );
    let page = visitor
        .post(
            "/ops/sign-in",
            &[("email", "bo@ops.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 403);
    assert!(page.body.contains("not an operator"), "{}", page.body);

    // A merchant console cookie is no operator session.
    let mut merchant = Visitor::new(&app);
    merchant.cookie = Some(format!("courier_console={token}"));
    assert_eq!(
        merchant.get("/ops/markets").await.location.as_deref(),
        Some("/ops/sign-in")
    );

    // Three failures from one address, then even the right password waits.
    operator(&app, "cy@ops.example", "viewer").await;
    let mut guesser = Visitor::new(&app);
    for _ in 0..3 {
        let page = guesser
            .post(
                "/ops/sign-in",
                &[("email", "cy@ops.example"), ("password", "a guess at it")],
            )
            .await;
        assert_eq!(page.status, 401);
    }
    let page = guesser
        .post(
            "/ops/sign-in",
            &[("email", "cy@ops.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 429);
    app.stop().await;
}

/// Operators are invited through the operator API (as the command line does), join through
/// the link, and each role is held to what it may do: what it may not is not offered, and a
/// form sent anyway is refused with a page naming the role.
#[tokio::test]
async fn operators_are_invited_and_each_role_does_only_its_own() {
    let quoting = Quoting::start().await;
    let app = &quoting.app;
    for (body, code) in [
        (
            serde_json::json!({"email": "x@ops.example", "role": "owner"}),
            "operator.invalid_role",
        ),
        (
            serde_json::json!({"email": "not an address", "role": "viewer"}),
            "team.invalid_email",
        ),
        (
            serde_json::json!({"email": "x@ops.example"}),
            "request.invalid_body",
        ),
    ] {
        let response = app
            .admin(Method::POST, "/operators/invitations")
            .json(&body)
            .send()
            .await
            .unwrap();
        crate::support::assert_refusal(response, 422, code).await;
    }
    let invitation = invite_operator(app, "fin@ops.example", "finance").await;
    assert_eq!(invitation["role"], "finance");
    assert_eq!(invitation["mailed"], false);
    let path = invitation_path(&invitation);
    let mut joining = Visitor::new(app);
    let page = joining.get(&path).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("<strong>Finance</strong>"),
        "{}",
        page.body
    );
    let differ = joining
        .post(
            &path,
            &[
                ("name", "Fin"),
                ("password", PASSWORD),
                ("password_again", "something else"),
            ],
        )
        .await;
    assert_eq!(differ.status, 422);
    let joined = joining
        .post(
            &path,
            &[
                ("name", "Fin"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(joined.location.as_deref(), Some("/ops/sign-in?joined=1"));
    let again = joining
        .post(
            &path,
            &[
                ("name", "Fin"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(
        again.location.as_deref(),
        Some("/ops/sign-in?joined=1"),
        "the same form sent again goes on to sign in"
    );
    assert_eq!(
        joining.get(&path).await.status,
        410,
        "the link shows it was used"
    );
    assert_eq!(
        joining.get("/ops/invitations/no-such-token").await.status,
        404
    );
    let response = app
        .admin(Method::POST, "/operators/invitations")
        .json(&serde_json::json!({"email": "FIN@ops.example", "role": "viewer"}))
        .send()
        .await
        .unwrap();
    crate::support::assert_refusal(response, 409, "operator.already_operator").await;

    // The first sign-in sets up the second factor before anything else opens.
    let mut finance = Visitor::new(app);
    let page = finance
        .post(
            "/ops/sign-in",
            &[("email", "fin@ops.example"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.location.as_deref(), Some("/ops/second-factor"));
    for path in ["/ops/markets", "/ops/payments", "/ops/sign-in/code"] {
        let page = finance.get(path).await;
        assert_eq!(
            page.location.as_deref(),
            Some("/ops/second-factor"),
            "{path}"
        );
    }
    let setup = finance.get("/ops/second-factor").await;
    assert!(setup.body.contains("<svg"), "the QR code is drawn inline");
    let key = key_on(&setup);
    assert_eq!(
        key_on(&finance.get("/ops/second-factor").await),
        key,
        "a reload keeps the key"
    );
    let csrf = csrf_of(&setup.body);
    let wrong = finance
        .post(
            "/ops/second-factor/confirm",
            &[("csrf", &csrf), ("code", "000000")],
        )
        .await;
    assert_eq!(wrong.status, 422);
    let on = finance
        .post(
            "/ops/second-factor/confirm",
            &[("csrf", &csrf), ("code", &code(&key, 0))],
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    assert!(on.body.contains("Your recovery codes"));
    assert!(on.body.contains("Finance"), "the header names the role");

    // Finance refunds, and neither uploads nor activates price books.
    let payments = finance.get("/ops/payments").await;
    assert!(payments.body.contains("Refund a charge"));
    let books = finance.get("/ops/markets/demo/price-books").await;
    assert_eq!(books.status, 200);
    assert!(!books.body.contains("Upload a price book"));
    assert!(books.body.contains("Your role (Finance) reads price books"));
    let upload = upload_dearer_book(app, 400).await;
    assert!(!books.body.contains("/activate\""));
    let activate = format!("/ops/markets/demo/price-books/{upload}/activate");
    assert_eq!(finance.get(&activate).await.status, 403);
    let refused = finance
        .post(&activate, &[("csrf", &csrf_of(&payments.body))])
        .await;
    assert_eq!(refused.status, 403);
    assert!(
        refused.body.contains("Your role (Finance"),
        "{}",
        refused.body
    );

    // A viewer is offered no refund, and a refund sent anyway is refused.
    let (mut viewer, _) = operator_signed_in(app, "view@ops.example", "viewer").await;
    let payments = viewer.get("/ops/payments").await;
    assert!(!payments.body.contains("Refund a charge"));
    let refused = viewer
        .post(
            "/ops/payments/refund",
            &[
                ("csrf", &csrf_of(&payments.body)),
                ("charge", "ch_x"),
                ("amount_minor", "100"),
            ],
        )
        .await;
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("Viewer"));

    // The audit trail names who invited and who joined.
    let (status, entries) = status_and_json(
        app.admin(Method::GET, "/audit?action=operator.joined")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{entries}");
    assert!(entries.to_string().contains("fin@ops.example"), "{entries}");

    // A merchant's person who is no operator is refused at the operator console.
    let merchant = app.create_merchant("Not Ops Ltd").await;
    Visitor::new(app).sign_in(&merchant.test()).await;
    let owner = crate::console::owner_email(&merchant.merchant_id.to_string());
    let page = Visitor::new(app)
        .post("/ops/sign-in", &[("email", &owner), ("password", PASSWORD)])
        .await;
    assert_eq!(page.status, 403, "{}", page.body);
    quoting.app.stop().await;
}

/// With `COURIER_OPS_LISTEN` the operator console answers only on its own listener, and the
/// main one answers 404 under `/ops/`; invitation links name the console's own address.
#[tokio::test]
async fn the_operator_console_can_listen_apart() {
    let port = crate::support::process::free_port();
    let ops = format!("127.0.0.1:{port}");
    let listen = ops.clone();
    let app =
        TestApp::spawn_with(move |name| (name == "COURIER_OPS_LISTEN").then(|| listen.clone()))
            .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let status = |url: String| {
        let client = client.clone();
        async move { client.get(url).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(app.url("/ops/sign-in")).await, 404);
    assert_eq!(status(app.url("/console/sign-in")).await, 200);
    assert_eq!(status(format!("http://{ops}/ops/sign-in")).await, 200);
    assert_eq!(
        status(format!("http://{ops}/console/console.css")).await,
        200
    );
    assert_eq!(status(format!("http://{ops}/console/sign-in")).await, 404);
    assert_eq!(status(format!("http://{ops}/v1/jobs")).await, 404);
    let invitation = invite_operator(&app, "apart@ops.example", "viewer").await;
    assert!(
        invitation["invitation_url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("http://{ops}/ops/invitations/")),
        "{invitation}"
    );

    // Joined and signed in on the console's own address; its public address is https, so
    // the cookie is Secure though the service's is not.
    let url = invitation["invitation_url"].as_str().unwrap();
    let joined = client
        .post(url)
        .form(&[
            ("name", "Apart"),
            ("password", PASSWORD),
            ("password_again", PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 303);
    let signed = client
        .post(format!("http://{ops}/ops/sign-in"))
        .form(&[("email", "apart@ops.example"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 303);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap();
    assert!(!cookie.contains("Secure"), "http here: {cookie}");
    app.stop().await;

    let port = crate::support::process::free_port();
    let listen = format!("127.0.0.1:{port}");
    let app = TestApp::spawn_with(move |name| match name {
        "COURIER_OPS_LISTEN" => Some(listen.clone()),
        "COURIER_OPS_PUBLIC_URL" => Some("https://ops.internal.example".into()),
        _ => None,
    })
    .await;
    let invitation = invite_operator(&app, "secure@ops.example", "viewer").await;
    let url = invitation["invitation_url"].as_str().unwrap();
    assert!(
        url.starts_with("https://ops.internal.example/ops/invitations/"),
        "{url}"
    );
    let token = url.rsplit('/').next().unwrap();
    let joined = client
        .post(format!("http://127.0.0.1:{port}/ops/invitations/{token}"))
        .form(&[
            ("name", "Secure"),
            ("password", PASSWORD),
            ("password_again", PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 303);
    let signed = client
        .post(format!("http://127.0.0.1:{port}/ops/sign-in"))
        .form(&[("email", "secure@ops.example"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 303);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("; Secure"), "{cookie}");
    app.stop().await;
}

/// Posts a refund form drawn on `drawn` (with its one-time token).
async fn refund(visitor: &mut Visitor, drawn: &Page, charge: &str, amount: &str) -> Page {
    let csrf = csrf_of(&drawn.body);
    let request = request_of(&drawn.body);
    visitor
        .post(
            "/ops/payments/refund",
            &[
                ("charge", charge),
                ("amount_minor", amount),
                ("request", &request),
                ("csrf", &csrf),
            ],
        )
        .await
}

/// The refund form's one-time token on a page.
fn request_of(body: &str) -> String {
    let at = body
        .find("name=\"request\" value=\"")
        .expect("a refund form with its one-time token")
        + 22;
    body[at..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn an_operator_refunds_a_charge_from_the_console() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Refunded Ltd").await;
    crate::support::attach_working_card(&app, &merchant.test()).await;
    let charge = crate::audit::captured_charge(&app, merchant.merchant_id)
        .await
        .to_string();
    let mut visitor = operator_signed_in(&app, "rita@ops.example", "finance")
        .await
        .0;
    let drawn = visitor.get("/ops/payments").await;
    assert_eq!(drawn.status, 200);
    assert!(drawn.body.contains("Reconciliation found no open mismatch"));
    let csrf = csrf_of(&drawn.body);

    // Refused without the session's token, without the form's one-time token, for nonsense,
    // for another amount than is left.
    let forged = visitor
        .post(
            "/ops/payments/refund",
            &[
                ("charge", &charge),
                ("amount_minor", "100"),
                ("request", &request_of(&drawn.body)),
                ("csrf", "forged"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
    let tokenless = visitor
        .post(
            "/ops/payments/refund",
            &[
                ("charge", &charge),
                ("amount_minor", "100"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(tokenless.status, 422);
    assert!(
        tokenless.body.contains("request.missing_idempotency_key"),
        "{}",
        tokenless.body
    );
    let page = refund(
        &mut visitor,
        &drawn,
        &uuid::Uuid::new_v4().to_string(),
        "100",
    )
    .await;
    assert_eq!(page.status, 404);
    let page = refund(&mut visitor, &drawn, &charge, "ten").await;
    assert_eq!(page.status, 422);
    let refused = refund(&mut visitor, &drawn, &charge, "901").await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.body.contains("charge.refund_exceeds_captured"),
        "{}",
        refused.body
    );
    // The refused form is drawn again with its own token: nothing was paid under it.
    assert_eq!(request_of(&refused.body), request_of(&drawn.body));

    // Refunded: redirected to the page that says so. Reloading that page sends nothing, and
    // sending the same form again (a double click, the back button) pays nothing more.
    let sent = refund(&mut visitor, &drawn, &charge, "250").await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    let answer = sent.location.clone().expect("to the refund's page");
    assert!(answer.starts_with("/ops/payments?refunded="), "{answer}");
    for _ in 0..2 {
        let page = visitor.get(&answer).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let said = text_of(&page.body, "refunded");
        assert!(
            said.contains("Refunded.") && said.contains("2.50"),
            "{said}"
        );
    }
    let again = refund(&mut visitor, &drawn, &charge, "250").await;
    assert_eq!(again.location.as_deref(), Some(answer.as_str()));
    let page = visitor.get(&answer).await;
    assert!(
        text_of(&page.body, "refunded").contains("2.50 USD refunded"),
        "{}",
        page.body
    );
    // The same form for another amount is refused: it is the first refund's.
    let reused = refund(&mut visitor, &drawn, &charge, "100").await;
    assert_eq!(reused.status, 409);
    assert!(
        reused.body.contains("idempotency.key_reused"),
        "{}",
        reused.body
    );
    // The charge as the merchant's API shows it, and the audit trail under the operator.
    let (_, charges) = status_and_json(
        app.request(Method::GET, "/v1/charges")
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(charges[0]["refunded_amount_minor"], 250, "{charges}");
    let page = visitor.get(&format!("/ops/audit?target_id={charge}")).await;
    assert!(
        page.body.contains("<td>rita@ops.example</td>"),
        "{}",
        page.body
    );

    // The charge in every merchant's list, with its merchant, filtered and not; the refund in
    // the refunds' list under the operator; the list's link fills the refund form.
    let page = visitor.get("/ops/payments").await;
    let list = page
        .body
        .split("<table id=\"charge-list\">")
        .nth(1)
        .unwrap();
    let row = list
        .split("<tr>")
        .find(|row| row.contains(&charge))
        .expect("the charge is listed");
    assert!(
        row.contains(">Refunded Ltd</a></td>") && row.contains("<td>refunded</td>"),
        "{row}"
    );
    assert!(row.contains("2.50"), "{row}");
    let refunds = page
        .body
        .split("<table id=\"refund-list\">")
        .nth(1)
        .unwrap();
    assert!(
        refunds.contains(&charge) && refunds.contains("<td>rita@ops.example</td>"),
        "{refunds}"
    );
    for (query, listed) in [
        ("?environment=test&status=refunded", true),
        ("?environment=live", false),
        ("?status=captured", false),
        ("?environment=&status=", true),
    ] {
        let page = visitor.get(&format!("/ops/payments{query}")).await;
        assert_eq!(page.status, 200, "{query}");
        assert_eq!(
            page.body
                .contains(&format!("<code title=\"charge {charge}, job")),
            listed,
            "{query}"
        );
    }
    for nonsense in [
        "?environment=moon",
        "?status=lost",
        "?before=yesterday",
        "?before=1_x",
    ] {
        assert_eq!(
            visitor
                .get(&format!("/ops/payments{nonsense}"))
                .await
                .status,
            400,
            "{nonsense}"
        );
    }
    let page = visitor.get(&format!("/ops/payments?charge={charge}")).await;
    assert!(
        page.body.contains(&format!("value=\"{charge}\"")),
        "the form is filled"
    );
    app.stop().await;
}

/// The board at `board` once the job `reference` searches on it (a job booked for now opens
/// its search at the next dispatch pass).
async fn board_once_searching(visitor: &mut Visitor, board: &str, reference: &str) -> Page {
    let mut page = visitor.get(board).await;
    for _ in 0..200 {
        if page.body.contains(reference) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        page = visitor.get(board).await;
    }
    page
}

#[tokio::test]
async fn an_operator_sees_the_couriers_online_and_the_jobs_searching_on_the_market_map() {
    use crate::fulfilment::{Floor, PICKUP};
    // The tables beside the map list one of each kind unless asked for all.
    let floor = Floor::start(&[("COURIER_TRACKING_BOARD_ROWS", "1")]).await;
    // A van free at the pickup, a bicycle online without a position, a car offline. The car
    // job booked next finds no car, so it keeps searching.
    let van = floor.rider("Vera Van", "van", Some(PICKUP)).await;
    let bicycle = floor.rider("Bo Bicycle", "bicycle", None).await;
    let (status, body) = floor
        .courier_call(&bicycle, Method::POST, "/online", None)
        .await;
    assert_eq!(status, 200, "{body}");
    floor.rider("Otto Offline", "car", None).await;
    let job = floor.book().await;
    let reference = job["reference"].as_str().unwrap();

    let mut visitor = signed_in(&floor.app).await;
    let markets = visitor.get("/ops/markets").await;
    assert!(
        markets.body.contains("href=\"/ops/markets/demo\""),
        "{}",
        markets.body
    );
    // A job booked for now opens its search at the next dispatch pass. It is a test job: the
    // board shows those when asked.
    let board = "/ops/markets/demo?jobs=test";
    let page = board_once_searching(&mut visitor, board, reference).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    // The map: the area, its roads, one courier on it (the bicycle was never seen), the job.
    assert!(body.contains("id=\"market-area\" d=\"M"), "{body}");
    assert!(body.contains("id=\"market-streets\" d=\"M"), "{body}");
    assert_eq!(body.matches("class=\"map-courier\"").count(), 1, "{body}");
    assert!(
        body.contains(&format!("<title>{} (van, free)</title>", van.name)),
        "{body}"
    );
    assert_eq!(
        body.matches("class=\"map-search wait-").count(),
        1,
        "{body}"
    );
    assert!(
        body.contains(&format!("<title>{reference}: searching, 0 of ")),
        "{body}"
    );
    // The tables: one courier by name (the other is on the map), never the offline one; the
    // job, not offered; and all of them when asked.
    let table = |body: &str, id: &str| {
        let table = body.split(&format!("id=\"{id}\"")).nth(1).unwrap();
        table.split("</table>").next().unwrap().to_owned()
    };
    let couriers = table(body, "couriers");
    assert!(
        couriers.contains("Bo Bicycle") && !couriers.contains("Vera Van"),
        "{couriers}"
    );
    assert!(couriers.contains("not lately"), "{couriers}");
    assert!(!body.contains("Otto Offline"), "{body}");
    assert!(
        body.contains("The tables list the first 1 couriers by name")
            && body.contains("href=\"/ops/markets/demo?jobs=test&amp;list=all\""),
        "{body}"
    );
    let all = visitor.get("/ops/markets/demo?jobs=test&list=all").await;
    let couriers = table(&all.body, "couriers");
    assert!(
        couriers.contains("Bo Bicycle") && couriers.contains("Vera Van"),
        "{couriers}"
    );
    assert!(!all.body.contains("id=\"listed\""), "{}", all.body);
    let searching = body.split("id=\"searching\"").nth(1).unwrap();
    let searching = searching.split("</table>").next().unwrap();
    assert!(searching.contains(reference), "{searching}");
    assert!(
        searching.contains("<td>car</td>") && searching.contains("<td>no</td>"),
        "{searching}"
    );
    // The part that follows itself asks for it.
    assert!(
        body.contains("id=\"board\"") && body.contains("data-live=\"5\""),
        "{body}"
    );

    // Cancelled, the job stops searching, and the board says so.
    let (status, cancelled) = floor
        .merchant_call(
            Method::POST,
            &format!("/v1/jobs/{}/cancel", job["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    let page = visitor.get("/ops/markets/demo").await;
    assert!(page.body.contains("No job is searching."), "{}", page.body);

    // An unknown market; signed out.
    assert_eq!(visitor.get("/ops/markets/atlantis").await.status, 404);
    let mut stranger = Visitor::new(&floor.app);
    assert_eq!(stranger.get("/ops/markets/demo").await.status, 303);
}

#[tokio::test]
async fn a_busy_board_draws_groups_by_area_that_open_closer_maps() {
    use crate::fulfilment::{Floor, PICKUP};
    // Past two marks the map draws groups.
    let floor = Floor::start(&[("COURIER_TRACKING_BOARD_MARKS", "2")]).await;
    let far = (20.014, 50.011);
    let near = floor.rider("Nell Near", "bicycle", Some(PICKUP)).await;
    let away = floor.rider("Abe Away", "bicycle", Some(far)).await;
    let job = floor.book().await;
    let reference = job["reference"].as_str().unwrap();
    let mut visitor = signed_in(&floor.app).await;
    let board = "/ops/markets/demo?jobs=test";
    let page = board_once_searching(&mut visitor, board, reference).await;
    let body = &page.body;
    // Three marks: a group for each courier (far apart) and one for the search, no single
    // marks; the tables still list every one.
    assert_eq!(body.matches("class=\"map-courier").count(), 0, "{body}");
    assert_eq!(
        body.matches("class=\"map-group couriers\"").count(),
        2,
        "{body}"
    );
    assert_eq!(
        body.matches("class=\"map-group search wait-fresh\"")
            .count(),
        1,
        "{body}"
    );
    assert!(
        body.contains("<title>1 courier online here, 0 on a job: open a closer map</title>"),
        "{body}"
    );
    assert!(
        body.contains("Couriers online: 2. Jobs searching: 1. Jobs under way: 0.")
            && body.contains("drawn in 3 groups by area"),
        "{body}"
    );
    let couriers = body.split("<table id=\"couriers\">").nth(1).unwrap();
    let couriers = couriers.split("</table>").next().unwrap();
    assert!(
        couriers.contains(&near.name) && couriers.contains(&away.name),
        "{couriers}"
    );
    // Each group opens its cell; the far courier's holds it alone.
    let areas: Vec<[f64; 4]> = body
        .split("?jobs=test&amp;area=")
        .skip(1)
        .map(|rest| {
            let area = rest.split('"').next().unwrap();
            let n: Vec<f64> = area.split(',').map(|n| n.parse().unwrap()).collect();
            [n[0], n[1], n[2], n[3]]
        })
        .collect();
    assert_eq!(areas.len(), 3, "{body}");
    let holding = |point: (f64, f64)| {
        *areas
            .iter()
            .find(|a| (a[0]..=a[2]).contains(&point.0) && (a[1]..=a[3]).contains(&point.1))
            .expect("a group's cell holds the point")
    };
    let cell = holding(far);
    let closer = format!(
        "/ops/markets/demo?jobs=test&area={},{},{},{}",
        cell[0], cell[1], cell[2], cell[3]
    );
    let page = visitor.get(&closer).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    assert_eq!(body.matches("class=\"map-courier\"").count(), 1, "{body}");
    assert!(!body.contains("class=\"map-group"), "{body}");
    assert!(
        body.contains(&format!("<title>{} (bicycle, free)</title>", away.name)),
        "{body}"
    );
    let couriers = body.split("<table id=\"couriers\">").nth(1).unwrap();
    let couriers = couriers.split("</table>").next().unwrap();
    assert!(
        couriers.contains(&away.name) && !couriers.contains(&near.name),
        "{couriers}"
    );
    assert!(body.contains("No job is searching."), "{body}");
    assert!(
        body.contains("id=\"part-shown\"")
            && body.contains("href=\"/ops/markets/demo?jobs=test\">The whole market</a>"),
        "{body}"
    );
    // The courier and the search at the pickup: two marks, drawn one by one.
    let cell = holding(PICKUP);
    let page = visitor
        .get(&format!(
            "/ops/markets/demo?jobs=test&area={},{},{},{}",
            cell[0], cell[1], cell[2], cell[3]
        ))
        .await;
    assert_eq!(page.body.matches("class=\"map-courier\"").count(), 1);
    assert_eq!(page.body.matches("class=\"map-search wait-").count(), 1);

    // Past what the board reads (one of each there), its counts say so.
    assert!(!page.body.contains("those counts are at least"));
    let floor_read = crate::fulfilment::Floor::start(&[("COURIER_TRACKING_BOARD_READ", "1")]).await;
    floor_read.rider("Ann One", "bicycle", Some(PICKUP)).await;
    floor_read.rider("Bob Two", "bicycle", Some(far)).await;
    let mut reader = signed_in(&floor_read.app).await;
    let page = reader.get("/ops/markets/demo").await;
    assert!(
        page.body.contains("Couriers online: 1.")
            && page.body.contains("those counts are at least"),
        "{}",
        page.body
    );

    // Not an area: refused with a page that says what one is.
    for bad in [
        "nonsense",
        "1,2,3",
        "20.01,50.0,20.0,50.01",
        "20.0,50.0,91,50.01",
    ] {
        let page = visitor.get(&format!("/ops/markets/demo?area={bad}")).await;
        assert_eq!(page.status, 400, "{bad}: {}", page.body);
        assert!(page.body.contains("Not an area"), "{}", page.body);
    }
}

#[tokio::test]
async fn an_operator_opens_a_job_and_its_courier_from_the_board() {
    use crate::fulfilment::{Floor, PICKUP};
    // Every position reported goes on the courier's trail.
    let floor = Floor::start(&[("COURIER_TRACKING_TRAIL_EVERY_MS", "0")]).await;
    let driver = floor.rider("Cara Car", "car", Some(PICKUP)).await;
    let job = floor.book().await;
    let offer = floor.offer_for(&driver).await;
    let job_id = job["id"].as_str().unwrap();
    let reference = job["reference"].as_str().unwrap();

    let (mut viewer, _) = operator_signed_in(&floor.app, "viewer@ops.example", "viewer").await;
    // The board links the job, in its table and on its map.
    let board = viewer.get("/ops/markets/demo?jobs=test").await;
    let link = format!("<a href=\"/ops/jobs/{job_id}\">");
    assert!(board.body.contains(&link), "{}", board.body);
    // Just booked: little of its dispatch deadline has gone.
    assert!(
        board.body.contains("class=\"map-search wait-fresh\""),
        "{}",
        board.body
    );
    let page = viewer.get(&format!("/ops/jobs/{job_id}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    assert!(
        body.contains(&format!("<h1>Job {reference}</h1>")),
        "{body}"
    );
    assert!(
        body.contains("<dd id=\"job-status\">searching</dd>"),
        "{body}"
    );
    // Offers are operators' alone: to whom, how far, answered or not.
    let offers = body.split("id=\"offers\"").nth(1).unwrap();
    let offers = offers.split("</table>").next().unwrap();
    assert!(offers.contains("Cara Car</a> (car)"), "{offers}");
    assert!(offers.contains("<td>open</td>"), "{offers}");
    assert!(offers.contains("this job alone"), "{offers}");
    // Why: the planner's round that chose it, kept with the offer.
    assert!(
        offers.contains("Planned over 1 open job and 1 free courier of its vehicle at once"),
        "{offers}"
    );

    // Accepted, the page says who is on it and that the offer was taken.
    let path = format!("/offers/{}/accept", offer["id"].as_str().unwrap());
    let (status, accepted) = floor.courier_call(&driver, Method::POST, &path, None).await;
    assert_eq!(status, 200, "{accepted}");
    let page = viewer.get(&format!("/ops/jobs/{job_id}")).await;
    assert!(
        page.body.contains("<dd id=\"job-status\">assigned</dd>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("<td>accepted</td>"), "{}", page.body);
    assert!(
        page.body.contains("<td>Courier assigned</td>"),
        "{}",
        page.body
    );
    // On the board the job is under way now, at its pickup, on its courier's route.
    let board = viewer.get("/ops/markets/demo?jobs=test").await;
    let under_way = board.body.split("<table id=\"under-way\">").nth(1).unwrap();
    let under_way = under_way.split("</table>").next().unwrap();
    assert!(under_way.contains(&link), "{under_way}");
    assert!(under_way.contains("<td>assigned</td>"), "{under_way}");
    assert!(
        under_way.contains(&format!(
            "<a href=\"/ops/couriers/{}\">Cara Car</a>",
            driver.id
        )),
        "{under_way}"
    );
    assert!(
        board.body.contains(&format!(
            "class=\"map-route\" data-courier=\"{}\"",
            driver.id
        )),
        "{}",
        board.body
    );
    assert!(
        board.body.contains("class=\"map-under-way\""),
        "{}",
        board.body
    );
    // The courier's page, linked from the job's: its shift and its jobs of the day.
    let courier_path = format!("/ops/couriers/{}", driver.id);
    assert!(
        page.body
            .contains(&format!("<a href=\"{courier_path}\">Cara Car ("))
    );
    // It moves on: its trail has three points.
    for step in [0.0005, 0.001] {
        floor
            .report_position(&driver, (PICKUP.0 + step, PICKUP.1 + step))
            .await;
    }
    let courier = viewer.get(&courier_path).await;
    assert_eq!(courier.status, 200, "{}", courier.body);
    let trail = courier.body.split("id=\"trail\"").nth(1).unwrap();
    let trail = trail.split("</section>").next().unwrap();
    assert!(trail.contains("class=\"map-trail\" d=\"M"), "{trail}");
    assert!(trail.contains("3 positions from "), "{trail}");
    assert!(
        courier
            .body
            .contains("<dd id=\"courier-status\">active</dd>"),
        "{}",
        courier.body
    );
    assert!(
        courier.body.contains("<dd id=\"courier-shift\">online"),
        "{}",
        courier.body
    );
    let today = courier.body.split("id=\"jobs-today\"").nth(1).unwrap();
    assert!(
        today.contains(&format!(">{reference}</a></td><td>assigned</td>")),
        "{today}"
    );
    assert!(today.contains("1, 0 delivered"), "{today}");
    // A viewer is not offered what it may not do.
    assert!(
        !courier.body.contains("Suspend the courier"),
        "{}",
        courier.body
    );
    let (mut operations, _) = operator_signed_in(&floor.app, "ops@ops.example", "operations").await;
    let courier = operations.get(&courier_path).await;
    assert!(
        courier.body.contains("Suspend the courier"),
        "{}",
        courier.body
    );
    let unknown = viewer
        .get(&format!("/ops/couriers/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(viewer.get("/ops/couriers/someone").await.status, 404);

    // No such job, an id that is not one, and signed out.
    let unknown = viewer
        .get(&format!("/ops/jobs/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert!(unknown.body.contains("No such job"));
    assert_eq!(viewer.get("/ops/jobs/JOB-1").await.status, 404);
    let mut stranger = Visitor::new(&floor.app);
    assert_eq!(
        stranger.get(&format!("/ops/jobs/{job_id}")).await.status,
        303
    );
}

#[tokio::test]
async fn an_operator_steers_a_job_from_its_page() {
    use crate::fulfilment::{Floor, PICKUP};
    let floor = Floor::start(&[]).await;
    let job = floor.book().await;
    let job_id = job["id"].as_str().unwrap();
    let dropoff = (
        job["dropoff"]["latitude"].as_f64().unwrap(),
        job["dropoff"]["longitude"].as_f64().unwrap(),
    );
    let far = floor.rider("Fay Far", "car", Some(dropoff)).await;
    let near = floor.rider("Nia Near", "car", Some(PICKUP)).await;
    let path = format!("/ops/jobs/{job_id}");

    // A viewer sees the job but is not offered ways to steer it.
    let (mut viewer, _) = operator_signed_in(&floor.app, "viewer@ops.example", "viewer").await;
    let page = viewer.get(&path).await;
    assert!(!page.body.contains("id=\"steer\""), "{}", page.body);

    let (mut ops, _) = operator_signed_in(&floor.app, "ops@ops.example", "operations").await;
    let page = ops.get(&path).await;
    let steer = page
        .body
        .split("id=\"steer\"")
        .nth(1)
        .expect("a steer section");
    // The couriers nearest by road first, each with its trip to the pickup.
    let at_near = steer
        .find("Nia Near (car, ")
        .expect("the near courier suggested");
    let at_far = steer
        .find("Fay Far (car, ")
        .expect("the far courier suggested");
    assert!(at_near < at_far, "{steer}");
    assert!(steer.contains("trip to the pickup"), "{steer}");
    assert!(steer.contains(" by road ("), "{steer}");
    // A searching job may be cancelled or failed by hand, nothing else.
    assert!(steer.contains("value=\"cancelled\""), "{steer}");
    assert!(!steer.contains("value=\"delivered\""), "{steer}");
    let csrf = csrf_of(&page.body);

    // Given to the far courier by hand, with a reason: back to the job's page, saying so.
    // Sent twice (a double click), it moves the job once and tells the merchant once.
    for _ in 0..2 {
        let given = ops
            .post(
                "/ops/markets/demo/assign",
                &[
                    ("csrf", &csrf),
                    ("job", job_id),
                    ("courier", &far.id),
                    ("reason", "Fay has the cool box"),
                    ("back", "job"),
                ],
            )
            .await;
        assert_eq!(
            (given.status, given.location.as_deref()),
            (
                303,
                Some(format!("/ops/jobs/{job_id}?done=assigned#steer").as_str())
            ),
            "{}",
            given.body
        );
    }
    floor.event_data(&job, "job.courier_assigned").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(floor.event_count(&job, "job.courier_assigned"), 1);
    let page = ops.get(&format!("{path}?done=assigned")).await;
    assert!(
        page.body.contains("The courier is on the job."),
        "{}",
        page.body
    );
    assert!(page.body.contains("<dd id=\"job-status\">assigned</dd>"));
    let steer = page.body.split("id=\"steer\"").nth(1).unwrap();
    assert!(steer.contains("Give the job to another courier"), "{steer}");
    assert!(
        !steer.contains("Fay Far (car, "),
        "not the courier already on it"
    );
    assert!(steer.contains("Back to searching"), "{steer}");
    assert!(
        page.body
            .contains(&format!("<a href=\"/ops/couriers/{}\">Fay Far (", far.id)),
        "{}",
        page.body
    );

    // Back to searching: the courier comes off it.
    let back = ops
        .post(
            "/ops/markets/demo/status",
            &[
                ("csrf", &csrf),
                ("job", job_id),
                ("status", "searching"),
                ("reason", "the van of Fay broke down"),
                ("back", "job"),
            ],
        )
        .await;
    assert_eq!(back.status, 303, "{}", back.body);
    let seen = floor.job(&job).await;
    assert_eq!(seen["status"], "searching", "{seen}");
    let page = ops.get(&path).await;
    assert!(
        page.body.contains("<dt>Courier</dt><dd>none yet</dd>"),
        "{}",
        page.body
    );

    // A move the job cannot make is refused in words, with the code, and changes nothing.
    let refused = ops
        .post(
            "/ops/markets/demo/status",
            &[
                ("csrf", &csrf),
                ("job", job_id),
                ("status", "delivered"),
                ("reason", "no"),
                ("back", "job"),
            ],
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.body.contains("job.invalid_transition"),
        "{}",
        refused.body
    );
    let too_long = "x".repeat(501);
    let refused = ops
        .post(
            "/ops/markets/demo/assign",
            &[
                ("csrf", &csrf),
                ("job", job_id),
                ("courier", &near.id),
                ("reason", &too_long),
                ("back", "job"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("job.reason_required"),
        "{}",
        refused.body
    );

    // Cancelled: the hold is released and the page says nothing more can be done.
    let cancelled = ops
        .post(
            "/ops/markets/demo/status",
            &[
                ("csrf", &csrf),
                ("job", job_id),
                ("status", "cancelled"),
                ("reason", "the shop closed early"),
                ("back", "job"),
            ],
        )
        .await;
    assert_eq!(cancelled.status, 303, "{}", cancelled.body);
    floor.charge_once(&job, "voided").await;
    let page = ops.get(&path).await;
    assert!(page.body.contains("<dd id=\"job-status\">cancelled</dd>"));
    assert!(
        page.body.contains("nothing more can be done to it"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("id=\"assign\""), "{}", page.body);

    // Each move is in the audit trail with its reason.
    let audit = ops.get("/ops/audit?operator=ops@ops.example").await;
    for said in [
        "Fay has the cool box",
        "the van of Fay broke down",
        "the shop closed early",
    ] {
        assert!(audit.body.contains(said), "{said}: {}", audit.body);
    }
    floor.app.stop().await;
}

/// The home page of `environment`, read again until it holds `wanted` (or 10 s pass).
async fn home_holding(visitor: &mut Visitor, environment: &str, wanted: &str) -> Page {
    let path = format!("/ops/?environment={environment}");
    for _ in 0..100 {
        let page = visitor.get(&path).await;
        assert_eq!(page.status, 200, "{}", page.body);
        if page.body.contains(wanted) {
            return page;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the home page never held {wanted}");
}

/// The rows of the table `id` on `page`.
fn table<'a>(page: &'a Page, id: &str) -> &'a str {
    let table = page
        .body
        .split(&format!("<table id=\"{id}\">"))
        .nth(1)
        .unwrap_or_else(|| panic!("no #{id}: {}", page.body));
    table.split("</table>").next().unwrap()
}

#[tokio::test]
async fn an_operator_sees_what_needs_a_person_and_finds_jobs_merchants_and_couriers() {
    use crate::fulfilment::{Floor, PICKUP};
    use crate::support::receiver::Reply;
    let floor = Floor::start(&[
        ("COURIER_DISPATCH_DEADLINE_SECS", "6"),
        ("COURIER_WEBHOOK_SUSPEND_AFTER", "1"),
        ("COURIER_WEBHOOK_RETRY_BASE_MS", "600000"),
    ])
    .await;
    floor.receiver.script("/down", |_| Reply::Status(500));
    let (status, endpoint) = floor
        .merchant_call(
            Method::POST,
            "/v1/webhooks",
            Some(serde_json::json!({"url": floor.receiver.url("/down")})),
        )
        .await;
    assert_eq!(status, 201, "{endpoint}");
    // A courier goes offline holding a job; then a job searches with nobody to take it.
    let olly = floor.rider("Olly Offline", "car", Some(PICKUP)).await;
    floor.assigned_job(&olly).await;
    let (status, body) = floor
        .courier_call(&olly, Method::POST, "/offline", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let waiting = floor.book().await;
    let reference = waiting["reference"].as_str().unwrap();

    let (mut ops, _) = operator_signed_in(&floor.app, "viewer@ops.example", "viewer").await;
    // In the last quarter of its 6 seconds, the search needs a person.
    let page = home_holding(&mut ops, "test", reference).await;
    let searches = table(&page, "near-deadline");
    assert!(
        searches.contains(&format!(
            "<a href=\"/ops/jobs/{}\">{reference}</a>",
            waiting["id"].as_str().unwrap()
        )),
        "{searches}"
    );
    assert!(
        searches.contains(&format!(
            "<a href=\"/ops/merchants/{}\">Florist Ltd</a>",
            floor.merchant.merchant_id
        )),
        "{searches}"
    );
    assert!(!page.body.contains("id=\"all-clear\""));
    let away = table(&page, "away-with-jobs");
    assert!(
        away.contains(&format!(
            "<a href=\"/ops/couriers/{}\">Olly Offline</a>",
            olly.id
        )),
        "{away}"
    );
    assert!(away.contains("<td>offline</td><td>1</td>"), "{away}");
    // The endpoint failed once and, at a threshold of one, is suspended.
    let page = home_holding(&mut ops, "test", "id=\"suspended-endpoints\"").await;
    let endpoints = table(&page, "suspended-endpoints");
    assert!(
        endpoints.contains(&floor.receiver.url("/down")),
        "{endpoints}"
    );
    // Live only by default: the merchant's test trials are not the fleet's work.
    let live = ops.get("/ops/").await;
    assert!(!live.body.contains(reference), "{}", live.body);
    assert!(!live.body.contains("id=\"suspended-endpoints\""));
    assert!(
        live.body.contains("Olly Offline"),
        "couriers are in no environment"
    );

    // Search: a job by its reference however typed, merchants by name, couriers by name or
    // phone.
    let typed = reference
        .trim_start_matches("CR-")
        .to_lowercase()
        .replace('-', " ");
    let found = ops
        .get(&format!("/ops/search?q={}", typed.replace(' ', "+")))
        .await;
    assert_eq!(found.status, 200);
    assert!(
        table(&found, "found-jobs").contains(reference),
        "{}",
        found.body
    );
    let found = ops.get("/ops/search?q=florist").await;
    assert!(table(&found, "found-merchants").contains(">Florist Ltd</a>"));
    for typed in ["olly", "123+45+67"] {
        let found = ops.get(&format!("/ops/search?q={typed}")).await;
        assert!(
            table(&found, "found-couriers").contains(">Olly Offline</a>"),
            "{typed}: {}",
            found.body
        );
    }
    let none = ops.get("/ops/search?q=nobody+at+all").await;
    assert!(none.body.contains("id=\"nothing-found\""), "{}", none.body);
    // The bar's search box is on every page.
    assert!(live.body.contains("action=\"/ops/search\""));

    // Once the courier is back online, it no longer needs a person.
    let (status, _) = floor
        .courier_call(&olly, Method::POST, "/online", None)
        .await;
    assert_eq!(status, 200);
    let page = ops.get("/ops/").await;
    assert!(!page.body.contains("Olly Offline"), "{}", page.body);
    let mut stranger = Visitor::new(&floor.app);
    assert_eq!(stranger.get("/ops/search?q=olly").await.status, 303);
    assert_eq!(stranger.get("/ops/").await.status, 303);
    floor.app.stop().await;
}

#[tokio::test]
async fn an_operator_opens_a_merchant_s_page() {
    use crate::fulfilment::Floor;
    // Keys' last use is written every 50 ms.
    let floor = Floor::start(&[("COURIER_KEY_USAGE_FLUSH_MS", "50")]).await;
    let job = floor.book().await;
    let job_id = job["id"].as_str().unwrap();
    let reference = job["reference"].as_str().unwrap();
    let merchant_id = floor.merchant.merchant_id;
    let path = format!("/ops/merchants/{merchant_id}");

    let (mut viewer, _) = operator_signed_in(&floor.app, "viewer@ops.example", "viewer").await;
    // The job's page links its merchant.
    let job_page = viewer.get(&format!("/ops/jobs/{job_id}")).await;
    assert!(
        job_page
            .body
            .contains(&format!("<a href=\"{path}\">Florist Ltd</a> (test)")),
        "{}",
        job_page.body
    );
    let mut page = viewer.get(&path).await;
    for _ in 0..100 {
        let used = |row: &&str| row.contains(&floor.merchant.test_key) && !row.contains(">never<");
        if table(&page, "keys").split("<tr>").any(|row| used(&row)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        page = viewer.get(&path).await;
    }
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<h1>Florist Ltd</h1>"), "{}", page.body);
    assert!(page.body.contains("<dt>Photo required at delivery</dt>"));
    // Its keys with their last use: the test key booked just now, the live one never.
    let keys = table(&page, "keys");
    let test_key = keys
        .split("<tr>")
        .find(|row| row.contains(&floor.merchant.test_key))
        .unwrap_or_else(|| panic!("the test key: {keys}"));
    assert!(!test_key.contains("<td>never</td>"), "{test_key}");
    let live_key = keys
        .split("<tr>")
        .find(|row| row.contains(&floor.merchant.live_key))
        .unwrap_or_else(|| panic!("the live key: {keys}"));
    assert!(live_key.contains("<td>never</td>"), "{live_key}");
    assert!(
        !page.body.contains(&floor.merchant.test_secret),
        "no secret shown"
    );
    // Live jobs by default (none); its test jobs asked for.
    assert!(table(&page, "jobs").contains("No live job yet."));
    let tests = viewer.get(&format!("{path}?jobs=test")).await;
    assert!(
        table(&tests, "jobs").contains(&format!("<a href=\"/ops/jobs/{job_id}\">{reference}</a>")),
        "{}",
        tests.body
    );
    // Its charges, and every one of them on the payments page, that merchant's only.
    let charges = table(&page, "charges");
    assert!(
        charges.contains(&format!("/ops/jobs/{job_id}")),
        "{charges}"
    );
    let only = viewer
        .get(&format!("/ops/payments?merchant={merchant_id}"))
        .await;
    assert_eq!(only.status, 200, "{}", only.body);
    let listed = table(&only, "charge-list");
    assert!(listed.contains(&format!("/ops/jobs/{job_id}")), "{listed}");
    assert!(!only.body.contains("Every merchant"), "{}", only.body);
    assert_eq!(
        viewer.get("/ops/payments?merchant=florist").await.status,
        400
    );
    // Its endpoint, answering.
    let endpoints = table(&page, "endpoints");
    assert!(
        endpoints.contains(&floor.receiver.url(crate::fulfilment::HOOK)),
        "{endpoints}"
    );
    assert!(endpoints.contains("<td>active</td>"), "{endpoints}");
    // No such merchant, not an id, and signed out.
    let unknown = viewer
        .get(&format!("/ops/merchants/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.body.contains("No such merchant"));
    assert_eq!(viewer.get("/ops/merchants/florist").await.status, 404);
    assert_eq!(Visitor::new(&floor.app).get(&path).await.status, 303);
    floor.app.stop().await;
}

#[tokio::test]
async fn an_operator_sees_each_component_s_recent_calls() {
    let quoting = Quoting::start().await;
    let app = &quoting.app;
    let mut visitor = signed_in(app).await;
    let before = visitor.get("/ops/plugins").await;
    assert_eq!(before.status, 200);
    let price_calls = |body: &str| body.matches("<td><code>price</code></td>").count();
    let already = price_calls(&before.body);

    // A quote is one call of the market's price book; a card attached in test, one of the
    // test environment's adapter.
    let (status, _) = quoting.quote(&journey(Some("car"))).await;
    assert_eq!(status, 201);
    crate::support::attach_working_card(app, &quoting.credential).await;

    let page = visitor.get("/ops/plugins").await;
    assert_eq!(page.status, 200);
    let body = &page.body;
    assert_eq!(price_calls(body), already + 1, "{body}");
    // Time and memory against their limits (a price book's deadline is 50 ms); how it ended.
    let attach = body
        .split("<tr>")
        .find(|row| row.contains("<td><code>attach-card</code></td>"))
        .unwrap_or_else(|| panic!("no attach-card call: {body}"));
    assert!(
        attach.contains(" ms of ") && attach.contains(" of 64.0 MiB</td>"),
        "{attach}"
    );
    assert!(attach.contains("<td>answered</td>"), "{attach}");
    assert!(
        body.contains("<th scope=\"col\" class=\"number\">Fuel</th>"),
        "{body}"
    );
    assert!(body.contains(" of 50.0 ms</td>"), "{body}");
    assert!(!body.contains("class=\"failed\""), "{body}");
    // The shaper has been called by nothing yet.
    assert!(
        body.contains("No call since this instance started."),
        "{body}"
    );
}

/// The operations role moves jobs and couriers by hand from a market's board: a courier put on
/// a searching job, a status set with a reason (refused without one), a courier suspended and
/// reinstated; another role is offered none of it and refused each form.
#[tokio::test]
async fn operations_moves_jobs_and_couriers_by_hand() {
    let (app, merchant) = crate::console::shop("By Hand Ltd").await;
    let job = crate::console::book(&app, &merchant.test()).await;
    let job_id = job["id"].as_str().unwrap().to_owned();
    let (status, courier) = status_and_json(
        app.admin(Method::POST, "/couriers")
            .json(&serde_json::json!({
                "name": "Hana Hand", "phone": "+966 50 765 4321",
                "vehicle": job["vehicle"], "market": "demo"
            }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{courier}");
    let courier_id = courier["id"].as_str().unwrap().to_owned();
    let token = courier["credential"].as_str().unwrap();
    let online = app
        .request(Method::POST, "/courier/v1/online")
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(online.status(), 200);

    let (mut ops, _) = operator_signed_in(&app, "ops@ops.example", "operations").await;
    let board = ops.get("/ops/markets/demo").await;
    assert!(board.body.contains("id=\"by-hand\""), "{}", board.body);
    // Test jobs are a merchant's trials: hidden unless asked for, and counted.
    let reference = job["reference"].as_str().unwrap();
    assert!(!board.body.contains(reference), "live jobs only by default");
    assert!(
        board
            .body
            .contains("1 of the other kind searching not shown"),
        "{}",
        board.body
    );
    let tests = ops.get("/ops/markets/demo?jobs=test").await;
    assert!(tests.body.contains(reference), "{}", tests.body);
    assert!(
        tests.body.contains(">By Hand Ltd</a>"),
        "the merchant by name"
    );
    assert!(
        ops.get("/ops/markets/demo?jobs=all")
            .await
            .body
            .contains(reference)
    );
    assert!(board.body.contains("Hana Hand"));
    let csrf = csrf_of(&board.body);
    let assigned = ops
        .post(
            "/ops/markets/demo/assign",
            &[("csrf", &csrf), ("job", &job_id), ("courier", &courier_id)],
        )
        .await;
    assert_eq!(
        (assigned.status, assigned.location.as_deref()),
        (303, Some("/ops/markets/demo?done=assigned#by-hand")),
        "{}",
        assigned.body
    );
    let (_, seen) = status_and_json(
        app.request(Method::GET, &format!("/v1/jobs/{job_id}"))
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(seen["status"], "assigned", "{seen}");
    let page = ops.get("/ops/markets/demo?done=assigned").await;
    assert!(page.body.contains("The courier is on the job."));

    let no_reason = ops
        .post(
            "/ops/markets/demo/status",
            &[
                ("csrf", &csrf),
                ("job", &job_id),
                ("status", "failed"),
                ("reason", ""),
            ],
        )
        .await;
    assert_eq!(no_reason.status, 422, "{}", no_reason.body);
    assert!(
        no_reason.body.contains("job.reason_required"),
        "{}",
        no_reason.body
    );
    let not_an_id = ops
        .post(
            "/ops/markets/demo/status",
            &[
                ("csrf", &csrf),
                ("job", "JOB-1"),
                ("status", "failed"),
                ("reason", "x"),
            ],
        )
        .await;
    assert_eq!(not_an_id.status, 400);

    let suspended = ops
        .post(
            "/ops/markets/demo/couriers/suspend",
            &[
                ("csrf", &csrf),
                ("courier", &courier_id),
                ("reason", "kit check"),
            ],
        )
        .await;
    assert_eq!(suspended.status, 303, "{}", suspended.body);
    let board = ops.get("/ops/markets/demo").await;
    assert!(
        board.body.contains("id=\"reinstate-courier\""),
        "{}",
        board.body
    );
    let reinstated = ops
        .post(
            "/ops/markets/demo/couriers/reinstate",
            &[("csrf", &csrf), ("courier", &courier_id)],
        )
        .await;
    assert_eq!(reinstated.status, 303, "{}", reinstated.body);
    let set = ops
        .post(
            "/ops/markets/demo/status",
            &[
                ("csrf", &csrf),
                ("job", &job_id),
                ("status", "cancelled"),
                ("reason", "the shop closed early"),
            ],
        )
        .await;
    assert_eq!(set.status, 303, "{}", set.body);

    // The audit trail names the operator for each.
    let audit = ops.get("/ops/audit?operator=ops@ops.example").await;
    for action in [
        "job.courier_reassigned",
        "courier.suspended",
        "courier.reinstated",
        "job.status_set",
    ] {
        assert!(audit.body.contains(action), "{action}");
    }

    // Finance moves nothing.
    let (mut finance, _) = operator_signed_in(&app, "money@ops.example", "finance").await;
    let board = finance.get("/ops/markets/demo").await;
    assert!(!board.body.contains("id=\"by-hand\""));
    let refused = finance
        .post(
            "/ops/markets/demo/couriers/suspend",
            &[("csrf", &csrf_of(&board.body)), ("courier", &courier_id)],
        )
        .await;
    assert_eq!(refused.status, 403);
    assert!(
        refused.body.contains("Your role (Finance"),
        "{}",
        refused.body
    );
    app.stop().await;
}
