//! The merchant console in a real browser (headless Chromium, JavaScript off as far as the
//! pages go: they have none): sign in, the jobs list, a job's page, cancelling it, signing
//! out. A screenshot of every page goes to `target/test-artifacts/`, and axe-core finds no
//! serious or critical accessibility violation on any of them.

use fantoccini::Locator;
use reqwest::Method;
use serde_json::json;

use crate::console::{book, shop};
use crate::support::browser::Browser;
use crate::support::{MerchantCredentials, status_and_json};

/// Types `text` into the field `id`.
/// Signs in from the sign-in page (where the browser is) as the owner of the credential's
/// merchant, and switches to the credential's environment with the header's switch.
pub(crate) async fn sign_in_as_owner(
    browser: &Browser,
    app: &crate::support::TestApp,
    credential: &crate::support::Credential,
) {
    // The owner, invited by an operator, has set a password.
    crate::console::Visitor::new(app).sign_in(credential).await;
    let pool = app.pool().await;
    let merchant: uuid::Uuid =
        sqlx::query_scalar("SELECT merchant_id FROM api_keys WHERE key = $1")
            .bind(&credential.key)
            .fetch_one(&pool)
            .await
            .unwrap();
    pool.close().await;
    fill(
        browser,
        "email",
        &crate::console::owner_email(&merchant.to_string()),
    )
    .await;
    fill(browser, "password", crate::console::PASSWORD).await;
    click(browser, "form.sign-in button").await;
    arrives_at(browser, "/console/jobs").await;
    if credential.key.starts_with("ck_live_") {
        click(browser, "form.switch button").await;
        browser
            .wait_until("the live environment", || async {
                browser
                    .client
                    .source()
                    .await
                    .is_ok_and(|s| s.contains("environment-live"))
            })
            .await;
    }
}

pub(crate) async fn fill(browser: &Browser, id: &str, text: &str) {
    let field = browser.client.find(Locator::Id(id)).await.unwrap();
    field.send_keys(text).await.unwrap();
}

/// Clicks what `css` finds.
pub(crate) async fn click(browser: &Browser, css: &str) {
    let found = browser.client.find(Locator::Css(css)).await.unwrap();
    found.click().await.unwrap();
}

/// Fills the sandbox's form (on the page) with a delivery across Demo City, and sends it.
async fn book_test_delivery(browser: &Browser) {
    for (id, text) in [
        ("pickup", "41 4th Street"),
        ("pickup_name", "Pat Pickup"),
        ("pickup_phone", "+966 11 463 5555"),
        ("dropoff", "102 17th Street"),
        ("dropoff_name", "Dana Dropoff"),
        ("dropoff_phone", "+966 11 463 5556"),
    ] {
        fill(browser, id, text).await;
    }
    click(browser, "form.sandbox button").await;
}

/// Takes a screenshot of the page as `name`, and checks it with axe-core: no serious or
/// critical accessibility violation.
pub(crate) async fn looked_at(browser: &Browser, name: &str) {
    browser.screenshot(name).await;
    let violations = browser.accessibility_violations().await;
    assert!(violations.is_empty(), "{name}: {violations:#?}");
}

/// Waits until the browser is on `path`.
pub(crate) async fn arrives_at(browser: &Browser, path: &str) {
    browser
        .wait_until(path, || async {
            browser
                .client
                .current_url()
                .await
                .is_ok_and(|u| u.path() == path)
        })
        .await;
}

#[tokio::test]
async fn a_merchant_uses_the_console_in_a_browser() {
    let (app, merchant) = shop("Console Browser Ltd").await;
    let job = book(&app, &merchant.test()).await;
    book(&app, &merchant.test()).await;
    let browser = Browser::start(1280, 900).await;
    let client = &browser.client;

    client.goto(&app.url("/console/")).await.unwrap();
    arrives_at(&browser, "/console/sign-in").await;
    looked_at(&browser, "console-sign-in.png").await;
    sign_in_as_owner(&browser, &app, &merchant.test()).await;

    // The jobs list.
    arrives_at(&browser, "/console/jobs").await;
    let rows = client.find_all(Locator::Css("tbody tr")).await.unwrap();
    assert_eq!(rows.len(), 2);
    looked_at(&browser, "console-jobs.png").await;

    // A job's page, from its link.
    let reference = job["reference"].as_str().unwrap();
    let link = client.find(Locator::LinkText(reference)).await.unwrap();
    link.click().await.unwrap();
    arrives_at(
        &browser,
        &format!("/console/jobs/{}", job["id"].as_str().unwrap()),
    )
    .await;
    let heading = client
        .find(Locator::Css("h1"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(heading.contains(reference), "{heading}");
    looked_at(&browser, "console-job.png").await;

    // Cancelled from its form.
    fill(&browser, "reason", "booked twice").await;
    click(&browser, "form.cancel button").await;
    browser
        .wait_until("the job to be cancelled", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("The job is cancelled."))
        })
        .await;
    assert!(client.source().await.unwrap().contains("booked twice"));
    looked_at(&browser, "console-job-cancelled.png").await;

    // The webhook portal: an endpoint added, its secret shown once, its page.
    let nav = client.find(Locator::LinkText("Webhooks")).await.unwrap();
    nav.click().await.unwrap();
    arrives_at(&browser, "/console/webhooks").await;
    looked_at(&browser, "console-webhooks.png").await;
    fill(&browser, "url", "https://example.com/courier-hooks").await;
    fill(&browser, "events", "job.booked, job.delivered").await;
    click(&browser, "form.add-endpoint button").await;
    browser
        .wait_until("the new endpoint's secret", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("Copy it now"))
        })
        .await;
    looked_at(&browser, "console-webhook-added.png").await;
    let endpoint = client
        .find(Locator::LinkText("https://example.com/courier-hooks"))
        .await
        .unwrap();
    endpoint.click().await.unwrap();
    browser
        .wait_until("the endpoint's page", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("<h2>Deliveries</h2>"))
        })
        .await;
    looked_at(&browser, "console-webhook.png").await;

    // A test event, chosen from the list.
    let endpoint_page = client.current_url().await.unwrap();
    client
        .find(Locator::Css("select#test-event-name"))
        .await
        .unwrap()
        .select_by_value("job.cancelled")
        .await
        .unwrap();
    click(&browser, "form.test-event button").await;
    browser
        .wait_until("the test event's notice", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("The test event is on its way"))
        })
        .await;
    looked_at(&browser, "console-webhook-test-event.png").await;

    // A delivery's own page, from the log: a job booked now makes one.
    book(&app, &merchant.test()).await;
    browser
        .wait_until("the new delivery in the log", || async {
            client.goto(endpoint_page.as_str()).await.is_ok()
                && client
                    .source()
                    .await
                    // The booking's own delivery: the test event's may be logged first.
                    .is_ok_and(|s| s.contains(">job.booked</a>"))
        })
        .await;
    let delivery = client.find(Locator::LinkText("job.booked")).await.unwrap();
    delivery.click().await.unwrap();
    browser
        .wait_until("the delivery's page", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("Courier-Delivery:"))
        })
        .await;
    looked_at(&browser, "console-webhook-delivery.png").await;
    // Its attempts, each with its answer, and the endpoint's health over the day.
    assert!(client.source().await.unwrap().contains("id=\"attempts\""));
    client.goto(endpoint_page.as_str()).await.unwrap();
    looked_at(&browser, "console-webhook-failing.png").await;
    client
        .find(Locator::Id("health-link"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser
        .wait_until("the endpoint's health", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("In the last 24 hours"))
        })
        .await;
    looked_at(&browser, "console-webhook-health-page.png").await;
    browser
        .screenshot_of("health", "console-webhook-health.png")
        .await;

    // The event catalog.
    client
        .goto(&app.url("/console/webhooks/events"))
        .await
        .unwrap();
    let source = client.source().await.unwrap();
    assert!(source.contains("payment_method.dead") && source.contains("Courier-Signature"));
    looked_at(&browser, "console-event-catalog.png").await;

    // Cards and charges: a test card added from the sandbox's list.
    let nav = client
        .find(Locator::LinkText("Cards and charges"))
        .await
        .unwrap();
    nav.click().await.unwrap();
    arrives_at(&browser, "/console/cards").await;
    looked_at(&browser, "console-cards.png").await;
    click(&browser, "#card-4000000000009995").await;
    click(&browser, "form.add-card button").await;
    browser
        .wait_until("the card added", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("The card is on file") && s.contains("9995"))
        })
        .await;
    looked_at(&browser, "console-card-added.png").await;

    // Keys and settings.
    let nav = client
        .find(Locator::LinkText("Keys and settings"))
        .await
        .unwrap();
    nav.click().await.unwrap();
    arrives_at(&browser, "/console/keys").await;
    looked_at(&browser, "console-keys.png").await;
    fill(&browser, "label", "warehouse").await;
    click(&browser, "form.add-key button").await;
    browser
        .wait_until("the new key's secret", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("copy it now"))
        })
        .await;
    looked_at(&browser, "console-key-made.png").await;
    // Revoking it asks first, saying what stops; confirmed, it is revoked.
    let source = client.source().await.unwrap();
    let at = source.find("<strong>Key ").unwrap() + 12;
    let made = source[at..].split(' ').next().unwrap().to_owned();
    click(
        &browser,
        &format!("form[action='/console/keys/{made}/revoke'] button"),
    )
    .await;
    browser
        .wait_until("the confirmation", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains(&format!("Revoke {made}?")))
        })
        .await;
    looked_at(&browser, "console-key-revoke-confirm.png").await;
    click(&browser, "form.confirm button").await;
    arrives_at(&browser, "/console/keys").await;
    browser
        .wait_until("the key revoked", || async {
            client.source().await.is_ok_and(|s| s.contains("revoked "))
        })
        .await;

    // The sandbox: a test delivery booked between two addresses, its run's page.
    client
        .find(Locator::LinkText("Sandbox"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(&browser, "/console/sandbox").await;
    looked_at(&browser, "console-sandbox.png").await;
    book_test_delivery(&browser).await;
    browser
        .wait_until("the run's page", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("id=\"run-stage\""))
        })
        .await;
    looked_at(&browser, "console-sandbox-run.png").await;

    // A job that does not exist: a page that says so.
    client
        .goto(&app.url(&format!("/console/jobs/{}", uuid::Uuid::new_v4())))
        .await
        .unwrap();
    looked_at(&browser, "console-no-such-job.png").await;

    // Signed out.
    click(&browser, "form.sign-out button").await;
    arrives_at(&browser, "/console/sign-in").await;

    // Signed in again, in the live environment: the account's settings changed.
    sign_in_as_owner(&browser, &app, &merchant.live()).await;
    client.goto(&app.url("/console/keys")).await.unwrap();
    arrives_at(&browser, "/console/keys").await;
    click(&browser, "#proof_photo_required").await;
    fill(&browser, "sms_sender_name", "ShopCo").await;
    click(&browser, "form.settings button").await;
    browser
        .wait_until("the settings saved", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("Settings saved."))
        })
        .await;
    looked_at(&browser, "console-settings-saved.png").await;
    let (status, settings) = status_and_json(
        app.admin(
            Method::GET,
            &format!("/merchants/{}/settings", merchant.merchant_id),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(settings["proof_photo_required"], true, "{settings}");
    assert_eq!(settings["sms_sender_name"], "ShopCo", "{settings}");
    browser.close().await;
    app.stop().await;
}

#[tokio::test]
async fn an_operator_uses_the_operator_console_in_a_browser() {
    // Past one mark the board draws groups: the courier alone is drawn, with a job beside it
    // the two are a group each.
    let quoting = crate::quotes::Quoting::start_with(|name| {
        (name == "COURIER_TRACKING_BOARD_MARKS").then(|| "1".to_owned())
    })
    .await;
    let app = &quoting.app;
    for vehicle in ["car", "van", "car"] {
        let (status, _) = quoting.quote(&crate::quotes::journey(Some(vehicle))).await;
        assert_eq!(status, 201);
    }
    let upload = crate::quotes::upload_dearer_book(app, 250).await;
    let browser = Browser::start(1280, 900).await;
    let client = &browser.client;

    client.goto(&app.url("/ops/")).await.unwrap();
    arrives_at(&browser, "/ops/sign-in").await;
    looked_at(&browser, "ops-sign-in.png").await;
    // An operator invited through the operator API joins through the link, signs in, and
    // sets up the second factor that every operator has.
    let invitation = crate::ops_console::invite_operator(app, "vera@ops.example", "admin").await;
    let token = invitation["invitation_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    client
        .goto(&app.url(&format!("/ops/invitations/{token}")))
        .await
        .unwrap();
    looked_at(&browser, "ops-invitation.png").await;
    fill(&browser, "name", "Vera Operator").await;
    fill(&browser, "password", crate::console::PASSWORD).await;
    fill(&browser, "password_again", crate::console::PASSWORD).await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/ops/sign-in").await;
    fill(&browser, "email", "vera@ops.example").await;
    fill(&browser, "password", crate::console::PASSWORD).await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/ops/second-factor").await;
    looked_at(&browser, "ops-second-factor.png").await;
    let key = browser.text("totp-key").await;
    fill(&browser, "code", &crate::second_factor::code(&key, 0)).await;
    click(&browser, "form.sign-in button").await;
    browser
        .wait_until("the recovery codes", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("Your recovery codes"))
        })
        .await;
    looked_at(&browser, "ops-recovery-codes.png").await;
    client
        .find(Locator::LinkText("Go on to the console"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(&browser, "/ops/").await;
    looked_at(&browser, "ops-home.png").await;
    client
        .find(Locator::LinkText("Markets"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(&browser, "/ops/markets").await;
    looked_at(&browser, "ops-markets.png").await;

    // A courier online, on the market's map.
    let (status, courier) = status_and_json(
        app.admin(Method::POST, "/couriers")
            .json(&json!({"name": "Vera Van", "phone": "+966 50 123 4567", "vehicle": "van", "market": "demo"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{courier}");
    let token = courier["credential"].as_str().unwrap();
    let online = app
        .request(Method::POST, "/courier/v1/online")
        .bearer_auth(token);
    let position = app
        .request(Method::POST, "/courier/v1/position")
        .bearer_auth(token)
        .json(&json!({"latitude": 20.00285, "longitude": 50.0043}));
    for request in [online, position] {
        assert_eq!(request.send().await.unwrap().status(), 200);
    }
    client
        .find(Locator::LinkText("Map of Demo City"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(&browser, "/ops/markets/demo").await;
    assert!(
        client
            .find(Locator::Css("#market-map .map-courier"))
            .await
            .is_ok()
    );
    looked_at(&browser, "ops-market.png").await;
    // The admin's forms that move jobs and couriers by hand, below the board.
    assert!(
        browser
            .text("by-hand")
            .await
            .contains("Suspend the courier")
    );
    browser.screenshot_of("by-hand", "ops-by-hand.png").await;
    // A job searching: its reference on the board opens its page.
    crate::support::attach_working_card(app, &quoting.credential).await;
    let job = book(app, &quoting.credential).await;
    let reference = job["reference"].as_str().unwrap();
    let board = app.url("/ops/markets/demo?jobs=all");
    for _ in 0..200 {
        client.goto(&board).await.unwrap();
        if client.source().await.is_ok_and(|s| s.contains(reference)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Two marks: drawn as groups, each opening a closer map, where they are drawn one by one.
    assert!(
        client
            .find(Locator::Css("#market-map .map-group"))
            .await
            .is_ok()
    );
    assert!(
        client
            .find(Locator::Css("#market-map .map-courier"))
            .await
            .is_err()
    );
    looked_at(&browser, "ops-market-groups.png").await;
    browser
        .screenshot_of("market-map", "ops-market-groups-map.png")
        .await;
    client
        .find(Locator::Css("#market-map a"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser
        .wait_until("the closer map", || async {
            client
                .current_url()
                .await
                .is_ok_and(|u| u.query().is_some_and(|q| q.contains("area=")))
        })
        .await;
    assert!(
        client
            .find(Locator::Css("#market-map .map-courier"))
            .await
            .is_ok()
    );
    assert!(
        browser
            .text("part-shown")
            .await
            .contains("The whole market")
    );
    looked_at(&browser, "ops-market-closer.png").await;
    browser
        .screenshot_of("market-map", "ops-market-closer-map.png")
        .await;
    client.goto(&board).await.unwrap();
    client
        .find(Locator::LinkText(reference))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(
        &browser,
        &format!("/ops/jobs/{}", job["id"].as_str().unwrap()),
    )
    .await;
    assert!(browser.text("offers").await.contains("Offers to couriers"));
    looked_at(&browser, "ops-job.png").await;
    // Ways to steer it: the courier online nearest by road, with its trip.
    let steer = browser.text("steer").await;
    assert!(steer.contains("Vera Van (van, "), "{steer}");
    browser.screenshot_of("steer", "ops-job-steer.png").await;
    // Its merchant's page, from the job's.
    client
        .find(Locator::LinkText("Quoting Ltd"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser
        .wait_until("the merchant's page", || async {
            client
                .current_url()
                .await
                .is_ok_and(|u| u.path().starts_with("/ops/merchants/"))
        })
        .await;
    assert!(browser.text("jobs").await.contains("live jobs"));
    looked_at(&browser, "ops-merchant.png").await;
    // The header's search finds the job by its reference, typed in lower case.
    fill(&browser, "bar-search", &reference.to_lowercase()).await;
    click(&browser, "form.search button").await;
    arrives_at(&browser, "/ops/search").await;
    assert!(browser.text("found-jobs").await.contains(reference));
    looked_at(&browser, "ops-search.png").await;
    client.goto(&board).await.unwrap();
    client
        .find(Locator::LinkText("Vera Van"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(
        &browser,
        &format!("/ops/couriers/{}", courier["id"].as_str().unwrap()),
    )
    .await;
    assert!(browser.text("courier-shift").await.starts_with("online"));
    looked_at(&browser, "ops-courier.png").await;
    client.goto(&app.url("/ops/markets")).await.unwrap();
    arrives_at(&browser, "/ops/markets").await;

    client
        .find(Locator::LinkText("Price books of Demo City"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(&browser, "/ops/markets/demo/price-books").await;
    looked_at(&browser, "ops-price-books.png").await;

    // An upload from the form: the component's file chosen, the settings typed.
    let settings = crate::price_books::demo_settings(app).await;
    let component = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/dist/standard-price-book.wasm")
        .canonicalize()
        .unwrap();
    fill(&browser, "component", component.to_str().unwrap()).await;
    let field = client.find(Locator::Id("settings")).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(&settings.to_string()).await.unwrap();
    click(&browser, "form.upload button").await;
    browser
        .wait_until("the upload's notice", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains(&format!("Upload {} is in.", upload + 1)))
        })
        .await;
    looked_at(&browser, "ops-price-book-uploaded.png").await;

    client
        .find(Locator::LinkText(&format!("Compare upload {upload}")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let comparison = format!("/ops/markets/demo/price-books/{upload}/comparison");
    arrives_at(&browser, &comparison).await;
    let bars = client
        .find_all(Locator::Css("svg.histogram rect"))
        .await
        .unwrap();
    assert!(!bars.is_empty());
    looked_at(&browser, "ops-comparison.png").await;

    client
        .find(Locator::LinkText(&format!("Activate upload {upload}")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    arrives_at(
        &browser,
        &format!("/ops/markets/demo/price-books/{upload}/activate"),
    )
    .await;
    looked_at(&browser, "ops-activate.png").await;
    click(&browser, "form.actions button").await;
    arrives_at(&browser, "/ops/markets/demo/price-books").await;
    let notice = client
        .find(Locator::Css(".notice"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(notice.contains("now in force"), "{notice}");
    let (_, next) = quoting.quote(&crate::quotes::journey(Some("car"))).await;
    assert_eq!(next["price_book_version"], 2);

    // A merchant's captured charge, for the payments page to list.
    let payer = app.create_merchant("Paying Ltd").await;
    crate::support::attach_working_card(app, &payer.test()).await;
    let charge = crate::audit::captured_charge(app, payer.merchant_id).await;
    client.goto(&app.url("/ops/payments")).await.unwrap();
    arrives_at(&browser, "/ops/payments").await;
    let listed = client.source().await.unwrap();
    assert!(listed.contains(&charge.to_string()), "the charge is listed");
    looked_at(&browser, "ops-payments.png").await;
    client.goto(&app.url("/ops/plugins")).await.unwrap();
    arrives_at(&browser, "/ops/plugins").await;
    looked_at(&browser, "ops-plugins.png").await;

    client.goto(&app.url("/ops/audit")).await.unwrap();
    arrives_at(&browser, "/ops/audit").await;
    looked_at(&browser, "ops-audit.png").await;
    click(&browser, "form.sign-out button").await;
    arrives_at(&browser, "/ops/sign-in").await;
    browser.close().await;
    quoting.app.stop().await;
}

#[tokio::test]
async fn a_test_delivery_s_run_follows_itself_in_a_browser() {
    // The simulator at ten times real speed: the courier is found within seconds.
    let settings = vec![
        ("COURIER_SANDBOX_SPEED".to_owned(), "10".to_owned()),
        ("COURIER_SANDBOX_INTERVAL_MS".to_owned(), "100".to_owned()),
    ];
    let (app, merchant) = crate::console::shop_with("Console Live Ltd", settings).await;
    let browser = Browser::start(1280, 900).await;
    let client = &browser.client;
    client.goto(&app.url("/console/sign-in")).await.unwrap();
    sign_in_as_owner(&browser, &app, &merchant.test()).await;
    client.goto(&app.url("/console/sandbox")).await.unwrap();
    book_test_delivery(&browser).await;
    browser
        .wait_until("the run's page", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("data-live=\"3\""))
        })
        .await;
    // Read from the page as it is now (an element found before an update would be stale).
    let stage = || async {
        let source = client.source().await.unwrap_or_default();
        source
            .split("<dd id=\"run-stage\">")
            .nth(1)
            .and_then(|rest| rest.split('<').next())
            .unwrap_or_default()
            .to_owned()
    };
    let first = stage().await;
    assert!(!first.is_empty());
    // A mark on this very page: it is still there after the update, so nothing reloaded it.
    client
        .execute("window.courierMark = 'same page'; return null;", vec![])
        .await
        .unwrap();
    looked_at(&browser, "console-sandbox-live.png").await;
    browser
        .wait_until("the run's stage to move on the page", || async {
            let now = stage().await;
            !now.is_empty() && now != first
        })
        .await;
    let mark = client
        .execute("return window.courierMark || null;", vec![])
        .await
        .unwrap();
    assert_eq!(mark, serde_json::json!("same page"), "updated in place");
    looked_at(&browser, "console-sandbox-live-moved.png").await;
    browser.close().await;
    app.stop().await;
}

/// A merchant's first owner joins by an operator's invitation, invites a colleague, looks at
/// their account, and makes a key after giving the password again, in a browser: each page
/// drawn and checked.
#[tokio::test]
async fn a_team_is_joined_and_managed_in_a_browser() {
    let app = crate::support::TestApp::spawn_with(|name| match name {
        "COURIER_REAUTHENTICATION_MS" => Some("1".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Team Browser Ltd").await;
    let (status, invitation) = status_and_json(
        app.admin(
            Method::POST,
            &format!("/merchants/{}/invitations", merchant.merchant_id),
        )
        .json(&json!({"email": "ana@browser.example", "role": "owner"}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{invitation}");
    let browser = Browser::start(1280, 900).await;
    let client = &browser.client;

    // The link names the service's public URL; the test's service listens elsewhere.
    let token = crate::console::invitation_token(&invitation);
    client
        .goto(&app.url(&format!("/console/invitations/{token}")))
        .await
        .unwrap();
    looked_at(&browser, "console-invitation.png").await;
    fill(&browser, "name", "Ana Owner").await;
    fill(&browser, "password", crate::console::PASSWORD).await;
    fill(&browser, "password_again", crate::console::PASSWORD).await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/console/jobs").await;

    client.goto(&app.url("/console/team")).await.unwrap();
    arrives_at(&browser, "/console/team").await;
    fill(&browser, "email", "vic@browser.example").await;
    click(&browser, "form[action='/console/team/invitations'] button").await;
    browser
        .wait_until("the invitation's link", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("/console/invitations/"))
        })
        .await;
    looked_at(&browser, "console-team.png").await;

    client.goto(&app.url("/console/account")).await.unwrap();
    arrives_at(&browser, "/console/account").await;
    looked_at(&browser, "console-account.png").await;

    // Past the re-authentication window, a key asks for the password first.
    client.goto(&app.url("/console/keys")).await.unwrap();
    arrives_at(&browser, "/console/keys").await;
    fill(&browser, "label", "warehouse").await;
    click(&browser, "form.add-key button").await;
    browser
        .wait_until("the password asked for", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("Confirm it is you"))
        })
        .await;
    looked_at(&browser, "console-reauthenticate.png").await;
    fill(&browser, "reauthentication", crate::console::PASSWORD).await;
    click(&browser, "form.sign-in button").await;
    browser
        .wait_until("the new key", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("new-secret"))
        })
        .await;

    // A second factor: the app's key as a QR code, its first code, the recovery codes; then
    // the code asked at the next sign-in.
    client
        .goto(&app.url("/console/account/second-factor"))
        .await
        .unwrap();
    arrives_at(&browser, "/console/account/second-factor").await;
    click(
        &browser,
        "form[action='/console/account/second-factor/start'] button",
    )
    .await;
    browser
        .wait_until("the app's key", || async {
            client.source().await.is_ok_and(|s| s.contains("totp-key"))
        })
        .await;
    looked_at(&browser, "console-second-factor.png").await;
    let key = client
        .find(Locator::Id("totp-key"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    fill(&browser, "code", &crate::second_factor::code(&key, 0)).await;
    click(&browser, "form.sign-in button").await;
    browser
        .wait_until("the recovery codes", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("Your recovery codes"))
        })
        .await;
    looked_at(&browser, "console-recovery-codes.png").await;
    click(&browser, "form.sign-out button").await;
    arrives_at(&browser, "/console/sign-in").await;
    fill(&browser, "email", "ana@browser.example").await;
    fill(&browser, "password", crate::console::PASSWORD).await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/console/sign-in/code").await;
    looked_at(&browser, "console-sign-in-code.png").await;
    fill(&browser, "code", &crate::second_factor::code(&key, 30)).await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/console/jobs").await;

    // Signed out, a forgotten password is asked for from the sign-in page.
    click(&browser, "form.sign-out button").await;
    arrives_at(&browser, "/console/sign-in").await;
    let forgotten = client
        .find(Locator::LinkText("Forgotten your password?"))
        .await
        .unwrap();
    forgotten.click().await.unwrap();
    arrives_at(&browser, "/console/password-reset").await;
    looked_at(&browser, "console-password-reset.png").await;
    browser.close().await;
    app.stop().await;
}
