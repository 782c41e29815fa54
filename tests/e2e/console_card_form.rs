//! A live card added from the merchant console through the payment provider's own card form:
//! the Stripe adapter's card-form document drawn with Stripe.js, and the Adyen adapter's with
//! Adyen Web's Drop-in (the stand-ins', following each provider's reference), the card's
//! number typed into the provider's frame and sent to the provider only, the card the provider
//! saved put on file (Adyen's when its notification arrives); and Stripe's without JavaScript
//! after it sends the card holder back. Over HTTP and in headless Chromium.

use fantoccini::Locator;
use serde_json::{Value, json};

use crate::console::{Visitor, csrf_of};
use crate::console_browser::{arrives_at, click, fill, looked_at};
use crate::support::adyen::AdyenStandIn;
use crate::support::browser::Browser;
use crate::support::stripe::{PUBLISHABLE_KEY, SECRET_KEY, StripeStandIn};
use crate::support::{Authed, MerchantCredentials, TestApp, status_and_json};
use courier_core::merchants::NewMerchant;

/// A service taking live money through the Stripe adapter (configured with `config`) and the
/// stand-in, and a merchant.
async fn live_shop(stripe: &StripeStandIn, config: &Value) -> (TestApp, NewMerchant) {
    let mut env = stripe.service_env_configured(config);
    // The operator allows the stand-in's origin, as one would a mirror of Stripe.js.
    env.push(("COURIER_CARD_FORM_ORIGINS".into(), stripe.api_base()));
    let app = TestApp::spawn_with(move |name| {
        env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    })
    .await;
    let merchant = app.create_merchant("Card Form Goods Ltd").await;
    (app, merchant)
}

/// The card-form document the page holds for the provider's script.
fn document_of(body: &str) -> Value {
    let at = body
        .find("data-document=\"")
        .expect("the card form's document")
        + 15;
    let escaped = body[at..].split('"').next().unwrap();
    let json = escaped
        .replace("&#34;", "\"")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap()
}

/// The merchant's live cards, from the API.
async fn live_cards(app: &TestApp, merchant: &NewMerchant) -> Vec<Value> {
    let response = app
        .request(reqwest::Method::GET, "/v1/payment-methods")
        .auth(&merchant.live())
        .send()
        .await
        .unwrap();
    let (status, cards) = status_and_json(response).await;
    assert_eq!(status, 200, "{cards}");
    cards.as_array().unwrap().clone()
}

#[tokio::test]
async fn a_live_session_adds_a_card_through_the_provider_s_form_and_never_takes_a_number() {
    let stripe = StripeStandIn::start().await;
    let (app, merchant) = live_shop(&stripe, &stripe.card_form_config()).await;
    let mut visitor = Visitor::new(&app);
    assert_eq!(visitor.sign_in(&merchant.live()).await.status, 303);
    let cards = visitor.get("/console/cards").await;
    assert!(cards.body.contains("action=\"/console/cards/form\""));
    let csrf = csrf_of(&cards.body);

    // The form: the provider's script and the console's driver, under a policy that admits
    // the provider's origin on this page only.
    let form = visitor
        .post("/console/cards/form", &[("csrf", &csrf)])
        .await;
    assert_eq!(form.status, 200, "{}", form.body);
    let origin = stripe.api_base();
    let policy = form.csp.clone().unwrap();
    for directive in [
        format!("script-src 'self' {origin};"),
        format!("frame-src {origin};"),
        format!("connect-src 'self' {origin};"),
        "form-action 'self'".to_owned(),
        "frame-ancestors 'none'".to_owned(),
    ] {
        assert!(policy.contains(&directive), "{directive} in {policy}");
    }
    assert!(
        form.body
            .contains(&format!("<script src=\"{origin}/v3/\" defer>"))
    );
    assert!(
        form.body
            .contains("<script src=\"/console/card-form.js\" defer>")
    );
    assert!(
        form.body
            .contains("data-component=\"stripe-payment-element\"")
    );
    let document = document_of(&form.body);
    assert_eq!(document["publishable_key"], PUBLISHABLE_KEY);
    assert_eq!(document["browser"]["origins"], json!([origin]));
    let client_secret = document["client_secret"].as_str().unwrap();
    assert!(client_secret.starts_with("seti_"), "{document}");
    // Other console pages keep their own policy.
    let other = visitor.get("/console/cards").await;
    assert!(!other.csp.unwrap().contains(&origin));

    // The provider saved the card (in the browser, from the form); the page puts it on file.
    let saved = stripe.complete_card_form(client_secret, "pm_card_visa");
    let attached = visitor
        .post(
            "/console/cards/attach",
            &[
                ("csrf", &csrf),
                ("provider_ref", &saved),
                ("make_default", "on"),
            ],
        )
        .await;
    assert_eq!(attached.status, 303, "{}", attached.body);
    assert_eq!(
        attached.location.as_deref(),
        Some("/console/cards?done=added")
    );
    let cards = live_cards(&app, &merchant).await;
    assert_eq!(cards.len(), 1, "{cards:?}");
    assert_eq!(cards[0]["last_four"], "4242");
    assert_eq!(cards[0]["is_default"], true);

    // Sent back by the provider after authenticating on its pages: the SetupIntent it names
    // is put on file with one click, without JavaScript, as the card it saved.
    let form = visitor
        .post("/console/cards/form", &[("csrf", &csrf)])
        .await;
    let client_secret = document_of(&form.body)["client_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    stripe.complete_card_form(&client_secret, "pm_card_mastercard");
    let setup_intent = client_secret.split("_secret_").next().unwrap();
    let back = visitor
        .get(&format!(
            "/console/cards/returned?component=stripe-payment-element&setup_intent={setup_intent}\
             &setup_intent_client_secret={client_secret}&redirect_status=succeeded"
        ))
        .await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert!(
        back.body
            .contains(&format!("name=\"provider_ref\" value=\"{setup_intent}\""))
    );
    // Sent back from Stripe's site, the browser holds the `SameSite=Strict` cookie back: the
    // page links to itself, and following that link (from this site) carries it.
    let returned = format!(
        "/console/cards/returned?component=stripe-payment-element&setup_intent={setup_intent}"
    );
    let landing = Visitor::new(&app).get(&returned).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let link = format!("<a href=\"{}\">", returned.replace('&', "&#38;"));
    assert!(landing.body.contains(&link), "{}", landing.body);
    assert!(!landing.body.contains("provider_ref"));
    assert!(
        !back.body.contains("<script src=\"https://"),
        "no provider script"
    );
    let attached = visitor
        .post(
            "/console/cards/attach",
            &[("csrf", &csrf), ("provider_ref", setup_intent)],
        )
        .await;
    assert_eq!(attached.status, 303, "{}", attached.body);
    let cards = live_cards(&app, &merchant).await;
    assert_eq!(cards.len(), 2, "{cards:?}");
    assert!(cards.iter().any(|c| c["last_four"] == "4444"));

    // After a provider that stores the card itself: the list follows itself while no more
    // cards are on file than when the form was drawn, and stops once there are.
    let waiting = visitor.get("/console/cards?done=stored&had=2").await;
    assert!(
        waiting
            .body
            .contains("id=\"cards-on-file\" data-live=\"3\"")
    );
    assert!(
        waiting
            .body
            .contains("<script src=\"/console/live.js\" defer>")
    );
    let arrived = visitor.get("/console/cards?done=stored&had=1").await;
    assert!(arrived.body.contains("id=\"cards-on-file\">"));
    assert!(!arrived.body.contains("data-live"));
    let form = visitor
        .post("/console/cards/form", &[("csrf", &csrf)])
        .await;
    assert!(
        form.body
            .contains("data-stored=\"/console/cards?done=stored&#38;had=2\""),
        "{}",
        form.body
    );

    // What is refused: a card number (never sent on), a return without a saved card, an
    // empty reference, a form without its token.
    let number = visitor
        .post(
            "/console/cards/attach",
            &[("csrf", &csrf), ("provider_ref", "4242424242424242")],
        )
        .await;
    assert_eq!(number.status, 422, "{}", number.body);
    assert!(!number.body.contains("4242424242424242"));
    let failed = visitor
        .get("/console/cards/returned?component=stripe-payment-element&setup_intent=seti_1&redirect_status=failed")
        .await;
    assert_eq!(failed.status, 400);
    assert!(!failed.body.contains("name=\"provider_ref\""));
    let unknown = visitor
        .get("/console/cards/returned?component=paper-form&redirect_status=succeeded")
        .await;
    assert_eq!(unknown.status, 400);
    let empty = visitor
        .post(
            "/console/cards/attach",
            &[("csrf", &csrf), ("provider_ref", " ")],
        )
        .await;
    assert_eq!(empty.status, 400);
    let unsigned = visitor.post("/console/cards/form", &[]).await;
    assert_eq!(unsigned.status, 403);
    let stranger = visitor
        .post(
            "/console/cards/attach",
            &[("csrf", &csrf), ("provider_ref", "pm_doesNotExist")],
        )
        .await;
    assert_eq!(stranger.status, 422, "{}", stranger.body);
    assert_eq!(live_cards(&app, &merchant).await.len(), 2);

    // A test session's cards are the sandbox's: the provider's form is not for it.
    let mut tester = Visitor::new(&app);
    tester.sign_in(&merchant.test()).await;
    let csrf = csrf_of(&tester.get("/console/cards").await.body);
    for path in ["/console/cards/form", "/console/cards/attach"] {
        let refused = tester
            .post(path, &[("csrf", &csrf), ("provider_ref", "pm_card_visa")])
            .await;
        assert_eq!(refused.status, 400, "{path}");
    }
    let returned = tester
        .get("/console/cards/returned?component=stripe-payment-element&setup_intent=seti_1&redirect_status=succeeded")
        .await;
    assert_eq!(returned.status, 400);
}

#[tokio::test]
async fn without_the_provider_s_browser_details_the_console_says_it_cannot_draw_the_form() {
    let stripe = StripeStandIn::start().await;
    // The operator did not configure Stripe's publishable key.
    let config = json!({"secret_key": SECRET_KEY, "api_base": stripe.api_base()});
    let (app, merchant) = live_shop(&stripe, &config).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.live()).await;
    let csrf = csrf_of(&visitor.get("/console/cards").await.body);
    let form = visitor
        .post("/console/cards/form", &[("csrf", &csrf)])
        .await;
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.body.contains("The console cannot draw this card form"));
    assert!(form.body.contains("POST /v1/payment-methods/setup"));
    assert!(!form.body.contains("data-document"));
    assert!(!form.csp.unwrap().contains(&stripe.api_base()));

    // A document naming origins that are neither Stripe's own nor allowed by the operator
    // (here the stand-in's, without `COURIER_CARD_FORM_ORIGINS`) is not drawn: an adapter
    // cannot bring a script of its choosing into the console.
    let env = stripe.service_env_configured(&stripe.card_form_config());
    let app = TestApp::spawn_with(move |name| {
        env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    })
    .await;
    let merchant = app.create_merchant("Unlisted Origins Ltd").await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.live()).await;
    let csrf = csrf_of(&visitor.get("/console/cards").await.body);
    let form = visitor
        .post("/console/cards/form", &[("csrf", &csrf)])
        .await;
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.body.contains("origins the operator has not allowed"));
    assert!(!form.body.contains("<script src=\"https://"));
    assert!(!form.csp.unwrap().contains(&stripe.api_base()));
}

/// Types into the provider's frame on the page: `fields` (id and text), each cleared first.
async fn type_in_provider_frame(browser: &Browser, fields: &[(&str, &str)]) {
    let client = &browser.client;
    let frame = client
        .find(Locator::Css("#card-form iframe"))
        .await
        .unwrap();
    frame.enter_frame().await.unwrap();
    let first = fields[0].0;
    browser
        .wait_until("the frame's fields", || async {
            client.find(Locator::Id(first)).await.is_ok()
        })
        .await;
    for (id, text) in fields {
        let field = client.find(Locator::Id(id)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }
    client.enter_parent_frame().await.unwrap();
}

/// A browser signed in with the merchant's live key, on the page with the provider's form
/// (its frame drawn by the provider's script).
async fn at_the_provider_s_form(app: &TestApp, merchant: &NewMerchant) -> Browser {
    // The stand-in's certificate comes from the test's own authority.
    let browser = Browser::start_with(1280, 900, &["--ignore-certificate-errors"]).await;
    let client = &browser.client;
    client.goto(&app.url("/console/sign-in")).await.unwrap();
    crate::console_browser::sign_in_as_owner(&browser, app, &merchant.live()).await;
    client.goto(&app.url("/console/cards")).await.unwrap();
    click(&browser, "form[action='/console/cards/form'] button").await;
    browser
        .wait_until("the provider's frame", || async {
            client.find(Locator::Css("#card-form iframe")).await.is_ok()
        })
        .await;
    browser
}

#[tokio::test]
async fn a_merchant_adds_a_live_card_in_the_provider_s_form_in_a_browser() {
    let stripe = StripeStandIn::start().await;
    let (app, merchant) = live_shop(&stripe, &stripe.card_form_config()).await;
    let browser = at_the_provider_s_form(&app, &merchant).await;
    let client = &browser.client;
    type_in_provider_frame(
        &browser,
        &[
            ("number", "4000 0000 0000 0002"),
            ("expiry", "12 / 34"),
            ("cvc", "123"),
        ],
    )
    .await;
    // What the page's own form sends Courier: its tokens, the provider's reference and the
    // default box; the card's fields are in the provider's frame, not in it.
    let mut sent = Vec::new();
    for input in client
        .find_all(Locator::Css("#attach-card input"))
        .await
        .unwrap()
    {
        sent.push(input.attr("name").await.unwrap().unwrap_or_default());
    }
    assert_eq!(sent, ["csrf", "once", "provider_ref", "make_default"]);
    browser.screenshot("console-card-form.png").await;
    let violations = browser.accessibility_violations_outside_frames().await;
    assert!(violations.is_empty(), "{violations:#?}");

    // A declined card: the provider's word on the page, nothing on file.
    click(&browser, "#attach-card button[type=submit]").await;
    browser
        .wait_until("the decline on the page", || async {
            browser.text("card-form-problem").await.contains("declined")
        })
        .await;
    browser.screenshot("console-card-form-declined.png").await;
    assert!(live_cards(&app, &merchant).await.is_empty());

    // A working card, typed again: on file, and listed.
    type_in_provider_frame(&browser, &[("number", "4242 4242 4242 4242")]).await;
    click(&browser, "#attach-card button[type=submit]").await;
    arrives_at(&browser, "/console/cards").await;
    let page = client.source().await.unwrap();
    assert!(page.contains("The card is on file."), "{page}");
    assert!(page.contains("visa ending 4242"), "{page}");
    browser.screenshot("console-card-added.png").await;
    let cards = live_cards(&app, &merchant).await;
    assert_eq!(cards.len(), 1, "{cards:?}");

    // Sent back by Stripe after the card holder authenticated on Stripe's pages: the saved
    // card, put on file with the page's one button.
    click(&browser, "form[action='/console/cards/form'] button").await;
    arrives_at(&browser, "/console/cards/form").await;
    let document: Value =
        serde_json::from_str(&browser.attr("card-form", "data-document").await.unwrap()).unwrap();
    let client_secret = document["client_secret"].as_str().unwrap();
    stripe.complete_card_form(client_secret, "pm_card_mastercard");
    let setup_intent = client_secret.split("_secret_").next().unwrap();
    client
        .goto(&app.url(&format!(
            "/console/cards/returned?component=stripe-payment-element&setup_intent={setup_intent}\
             &setup_intent_client_secret={client_secret}&redirect_status=succeeded"
        )))
        .await
        .unwrap();
    looked_at(&browser, "console-card-returned.png").await;
    click(&browser, "#attach-card button[type=submit]").await;
    arrives_at(&browser, "/console/cards").await;
    assert!(
        client
            .source()
            .await
            .unwrap()
            .contains("mastercard ending 4444")
    );
    assert_eq!(live_cards(&app, &merchant).await.len(), 2);
    browser.close().await;
}

#[tokio::test]
async fn a_merchant_stores_a_live_card_in_adyen_s_drop_in_in_a_browser() {
    let adyen = AdyenStandIn::start().await;
    let mut env = adyen.service_env_with(&json!({"web_sdk_base": adyen.web_sdk_base()}));
    env.push(("COURIER_CARD_FORM_CURRENCY".into(), "EUR".into()));
    env.push((
        "COURIER_CARD_FORM_ORIGINS".into(),
        format!("https://localhost:{}", adyen.port),
    ));
    let app = TestApp::spawn_with(move |name| {
        env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    })
    .await;
    adyen.notify_to(app.url("/v1/provider-events/live"));
    let merchant = app.create_merchant("Drop-in Goods BV").await;
    let browser = at_the_provider_s_form(&app, &merchant).await;
    let client = &browser.client;

    // Adyen Web's stylesheet and script, and its Drop-in with the card's fields in its frame;
    // the Drop-in's own button stores the card, so the page's is hidden.
    let page = client.source().await.unwrap();
    let sdk = adyen.web_sdk_base();
    assert!(page.contains(&format!(
        "<link rel=\"stylesheet\" href=\"{sdk}adyen.css\">"
    )));
    assert!(page.contains(&format!("<script src=\"{sdk}adyen.js\"")));
    let save = client
        .find(Locator::Css("#attach-card button[type=submit]"))
        .await
        .unwrap();
    assert!(!save.is_displayed().await.unwrap());
    let make_default = client.find(Locator::Id("make_default")).await.unwrap();
    assert!(!make_default.is_displayed().await.unwrap());
    type_in_provider_frame(
        &browser,
        &[
            ("encryptedCardNumber", "4111 1111 1111 1111"),
            ("encryptedExpiryDate", "03/30"),
            ("encryptedSecurityCode", "737"),
            // Adyen's test platform refuses by the holder's name.
            ("holderName", "DECLINED"),
        ],
    )
    .await;
    browser.screenshot("console-card-form-adyen.png").await;
    let violations = browser.accessibility_violations_outside_frames().await;
    assert!(violations.is_empty(), "{violations:#?}");

    click(&browser, "button.adyen-checkout__button--pay").await;
    browser
        .wait_until("the refusal on the page", || async {
            browser.text("card-form-problem").await.contains("Refused")
        })
        .await;
    assert!(live_cards(&app, &merchant).await.is_empty());

    // Stored under another name: the cards page, which follows itself until Adyen's
    // notification (held back a moment here) has put the card on file.
    adyen.hold_notifications(true);
    type_in_provider_frame(&browser, &[("holderName", "Jo Shopper")]).await;
    click(&browser, "button.adyen-checkout__button--pay").await;
    arrives_at(&browser, "/console/cards").await;
    assert_eq!(
        browser.attr("cards-on-file", "data-live").await.as_deref(),
        Some("3")
    );
    assert!(!client.source().await.unwrap().contains("visa ending 1111"));
    looked_at(&browser, "console-card-awaited-adyen.png").await;
    adyen.hold_notifications(false);
    browser
        .wait_until("the stored card listed", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("visa ending 1111"))
        })
        .await;
    assert_eq!(browser.attr("cards-on-file", "data-live").await, None);
    browser.screenshot("console-card-stored-adyen.png").await;
    assert_eq!(live_cards(&app, &merchant).await.len(), 1);
    browser.close().await;
}

/// A third provider, as its adapter's author would set it up: a script of its own that
/// registers its driver with the console (`window.courierCardForms`), served with the card
/// endpoint its field posts the number to, over HTTPS.
struct AcmePay {
    origin: String,
    task: tokio::task::JoinHandle<()>,
}

/// The third provider's card form script: it draws a field in the console's holder, sends
/// the number to the provider only, and answers the console the card's reference.
const ACME_CARD_FORM: &str = r#"
(window.courierCardForms ||= {})["acme-card-form"] = (card, page) => {
  const label = document.createElement("label");
  label.htmlFor = "acme-card-number";
  label.textContent = "Card number (Acme Pay)";
  const input = document.createElement("input");
  input.id = "acme-card-number";
  input.autocomplete = "cc-number";
  page.holder.append(label, input);
  return async () => {
    const answer = await fetch(`${card.acme_base}/cards?session=${card.session}`, {
      method: "POST",
      body: input.value,
    });
    if (!answer.ok) throw new Error("Acme Pay did not take the card.");
    return (await answer.json()).id;
  };
};
"#;

impl AcmePay {
    async fn start() -> Self {
        use http_body_util::{BodyExt, Full};
        use hyper::body::Bytes;

        let (acceptor, _) = crate::support::tls::tls();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = crate::support::tls::serve(listener, Some(acceptor), |request| async move {
            let path = request.uri().path().to_owned();
            let answer = hyper::Response::builder();
            let answer = match path.as_str() {
                "/card-form.js" => answer
                    .header("content-type", "text/javascript")
                    .body(Full::new(Bytes::from_static(ACME_CARD_FORM.as_bytes()))),
                "/cards" => {
                    let number = request.into_body().collect().await?.to_bytes();
                    let digits: String = String::from_utf8_lossy(&number)
                        .chars()
                        .filter(char::is_ascii_digit)
                        .collect();
                    let last = &digits[digits.len().saturating_sub(4)..];
                    answer
                        .header("content-type", "application/json")
                        .header("access-control-allow-origin", "*")
                        .body(Full::new(Bytes::from(format!(
                            "{{\"id\":\"card_probe_{last}\"}}"
                        ))))
                }
                _ => answer.status(404).body(Full::new(Bytes::new())),
            };
            Ok::<_, hyper::Error>(answer.unwrap())
        });
        Self {
            origin: format!("https://localhost:{port}"),
            task,
        }
    }
}

impl Drop for AcmePay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A third provider's card form works without any change to the console: the adapter's
/// document names the provider's own component and script, from an origin the operator
/// allowed; the script registers its driver, draws its field, sends the number to the
/// provider only, and the reference it answers goes on file. A name the console drives
/// itself cannot be taken over by a provider's script.
#[tokio::test]
async fn a_third_provider_s_own_component_draws_its_card_form_in_a_browser() {
    let acme = AcmePay::start().await;
    let dir = std::env::temp_dir().join(format!("courier-acme-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let adapter = dir.join("live.wasm");
    std::fs::copy(repo.join("plugins/dist/http-probe.wasm"), &adapter).unwrap();
    let document = json!({"acme_base": acme.origin, "session": "ses_acme_1",
        "browser": {"component": "acme-card-form",
                    "script": format!("{}/card-form.js", acme.origin),
                    "origins": [acme.origin]}});
    let config = dir.join("live.json");
    std::fs::write(
        &config,
        json!({"card_form_document": document.to_string()}).to_string(),
    )
    .unwrap();
    let origin = acme.origin.clone();
    let app = TestApp::spawn_with(move |name| match name {
        "COURIER_LIVE_PAYMENT_ADAPTER" => Some(adapter.to_string_lossy().into_owned()),
        "COURIER_LIVE_PAYMENT_CONFIG" => Some(config.to_string_lossy().into_owned()),
        "COURIER_CARD_FORM_ORIGINS" => Some(origin.clone()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Acme Card Goods Ltd").await;

    let browser = Browser::start_with(1280, 900, &["--ignore-certificate-errors"]).await;
    let client = &browser.client;
    client.goto(&app.url("/console/sign-in")).await.unwrap();
    crate::console_browser::sign_in_as_owner(&browser, &app, &merchant.live()).await;
    client.goto(&app.url("/console/cards")).await.unwrap();
    click(&browser, "form[action='/console/cards/form'] button").await;
    browser
        .wait_until("the third provider's field", || async {
            client.find(Locator::Id("acme-card-number")).await.is_ok()
        })
        .await;
    browser
        .screenshot("console-card-form-third-provider.png")
        .await;
    let violations = browser.accessibility_violations_outside_frames().await;
    assert!(violations.is_empty(), "{violations:#?}");
    fill(&browser, "acme-card-number", "4242 4242 4242 4242").await;
    click(&browser, "#attach-card button[type=submit]").await;
    browser
        .wait_until("the card on file", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("The card is on file"))
        })
        .await;
    let cards = live_cards(&app, &merchant).await;
    assert_eq!(cards.len(), 1, "{cards:?}");
    assert_eq!(cards[0]["last_four"], "4242");
    assert_eq!(cards[0]["brand"], "visa");
    app.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
