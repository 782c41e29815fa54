//! Passkeys over HTTP, with a software authenticator answering as a browser would, and in
//! Chromium with its virtual authenticator: added once the second factor is on, then giving it
//! at sign-in instead of a code; each ceremony used once; another site's answer, a wrong
//! signature and a bad name refused with their codes.

use serde_json::Value;

use crate::console::{PASSWORD, Page, Visitor, csrf_of, owner_email};
use crate::second_factor::{code, key_on};
use crate::support::passkey::SoftPasskey;
use crate::support::{MerchantCredentials, TestApp};

const SITE: &str = "https://shop.example";

fn json_of(page: &Page) -> Value {
    serde_json::from_str(&page.body).unwrap_or_else(|_| panic!("JSON: {}", page.body))
}

#[tokio::test]
async fn a_passkey_is_added_and_gives_the_second_factor_at_sign_in() {
    let app =
        TestApp::spawn_with(|name| (name == "COURIER_PUBLIC_URL").then(|| SITE.to_owned())).await;
    let merchant = app.create_merchant("Passkey Goods").await;
    let email = owner_email(&merchant.merchant_id.to_string());
    let mut owner = Visitor::new(&app);
    owner.sign_in(&merchant.test()).await;

    // Without a second factor there is nothing for a passkey to stand for.
    let page = owner.get("/console/account/second-factor").await;
    assert!(!page.body.contains("id=\"passkey-add\""));
    let csrf = csrf_of(&page.body);
    let refused = owner
        .post("/console/account/passkeys/options", &[("csrf", &csrf)])
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(json_of(&refused)["code"], "passkey.needs_second_factor");

    // The app's codes first.
    let started = owner
        .post("/console/account/second-factor/start", &[("csrf", &csrf)])
        .await;
    let key = key_on(&started);
    let on = owner
        .post(
            "/console/account/second-factor/confirm",
            &[("csrf", &csrf), ("code", &code(&key, 0))],
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    // A sign-in of someone with no passkey yet is asked for the code only.
    let mut early = Visitor::new(&app);
    early.sign_in_as(&email, PASSWORD).await;
    assert!(
        !early
            .get("/console/sign-in/code")
            .await
            .body
            .contains("passkey-sign-in")
    );
    let none = early.post("/console/sign-in/passkey/options", &[]).await;
    assert_eq!(none.status, 404, "{}", none.body);
    assert_eq!(json_of(&none)["code"], "passkey.none");

    let page = owner.get("/console/account/second-factor").await;
    assert!(page.body.contains("id=\"passkey-add\""), "{}", page.body);
    assert!(page.body.contains("/console/passkeys.js"));
    assert!(page.body.contains("No passkeys yet."));

    // Added: the options, the device's answer, a name.
    let begun = json_of(
        &owner
            .post("/console/account/passkeys/options", &[("csrf", &csrf)])
            .await,
    );
    assert_eq!(begun["options"]["publicKey"]["rp"]["id"], "shop.example");
    let ceremony = begun["ceremony"].as_str().unwrap().to_owned();
    let mut device = SoftPasskey::new(SITE, "shop.example", 7);
    let answer = device.register(&begun["options"]);
    let unnamed = owner
        .post(
            "/console/account/passkeys",
            &[
                ("csrf", &csrf),
                ("ceremony", &ceremony),
                ("name", " "),
                ("credential", &answer),
            ],
        )
        .await;
    assert_eq!(unnamed.status, 422, "{}", unnamed.body);
    assert_eq!(json_of(&unnamed)["code"], "passkey.invalid_name");
    let added = owner
        .post(
            "/console/account/passkeys",
            &[
                ("csrf", &csrf),
                ("ceremony", &ceremony),
                ("name", "Laptop"),
                ("credential", &answer),
            ],
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(json_of(&added)["name"], "Laptop");
    let again = owner
        .post(
            "/console/account/passkeys",
            &[
                ("csrf", &csrf),
                ("ceremony", &ceremony),
                ("name", "Laptop"),
                ("credential", &answer),
            ],
        )
        .await;
    assert_eq!(again.status, 410, "a ceremony is used once: {}", again.body);
    assert_eq!(json_of(&again)["code"], "passkey.expired");
    let no_answer = owner
        .post(
            "/console/account/passkeys",
            &[("csrf", &csrf), ("ceremony", &ceremony)],
        )
        .await;
    assert_eq!(json_of(&no_answer)["code"], "passkey.no_answer");
    let no_csrf = owner
        .post("/console/account/passkeys/options", &[("csrf", "forged")])
        .await;
    assert_eq!(no_csrf.status, 403);

    // Another site's page cannot add one: the client data names its origin.
    let begun = json_of(
        &owner
            .post("/console/account/passkeys/options", &[("csrf", &csrf)])
            .await,
    );
    let elsewhere = SoftPasskey::new("https://evil.example", "shop.example", 9);
    let forged = owner
        .post(
            "/console/account/passkeys",
            &[
                ("csrf", &csrf),
                ("ceremony", begun["ceremony"].as_str().unwrap()),
                ("name", "Theirs"),
                ("credential", &elsewhere.register(&begun["options"])),
            ],
        )
        .await;
    assert_eq!(forged.status, 401, "{}", forged.body);
    assert_eq!(json_of(&forged)["code"], "passkey.rejected");
    // The same device twice is one passkey.
    let begun = json_of(
        &owner
            .post("/console/account/passkeys/options", &[("csrf", &csrf)])
            .await,
    );
    let twice = owner
        .post(
            "/console/account/passkeys",
            &[
                ("csrf", &csrf),
                ("ceremony", begun["ceremony"].as_str().unwrap()),
                ("name", "Laptop again"),
                ("credential", &device.register(&begun["options"])),
            ],
        )
        .await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    assert_eq!(json_of(&twice)["code"], "passkey.already_added");
    let page = owner.get("/console/account/second-factor").await;
    assert!(page.body.contains("<td>Laptop</td>"), "{}", page.body);
    assert!(!page.body.contains("Theirs"));

    // Signing in: the password, then the passkey instead of a code.
    let mut visitor = Visitor::new(&app);
    let half = visitor.sign_in_as(&email, PASSWORD).await;
    assert_eq!(half.location.as_deref(), Some("/console/sign-in/code"));
    let code_page = visitor.get("/console/sign-in/code").await;
    assert!(code_page.body.contains("id=\"passkey-sign-in\""));
    let begun = json_of(&visitor.post("/console/sign-in/passkey/options", &[]).await);
    let mut assertion: Value = serde_json::from_str(&device.assert(&begun["options"])).unwrap();
    // A signature of other bytes is refused, and that ceremony is spent.
    let tampered = {
        let mut other = SoftPasskey::new(SITE, "shop.example", 7);
        let mut wrong: Value = serde_json::from_str(&other.assert(&begun["options"])).unwrap();
        wrong["response"]["signature"] = assertion["response"]["authenticatorData"].clone();
        wrong.to_string()
    };
    let ceremony = begun["ceremony"].as_str().unwrap().to_owned();
    let refused = visitor
        .post(
            "/console/sign-in/passkey",
            &[("ceremony", &ceremony), ("credential", &tampered)],
        )
        .await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(json_of(&refused)["code"], "passkey.rejected");
    assert_eq!(
        visitor.get("/console/jobs").await.location.as_deref(),
        Some("/console/sign-in"),
        "nothing opens yet"
    );
    let spent = visitor
        .post(
            "/console/sign-in/passkey",
            &[
                ("ceremony", &ceremony),
                ("credential", &assertion.to_string()),
            ],
        )
        .await;
    assert_eq!(spent.status, 410, "{}", spent.body);
    let begun = json_of(&visitor.post("/console/sign-in/passkey/options", &[]).await);
    assertion = serde_json::from_str(&device.assert(&begun["options"])).unwrap();
    let signed = visitor
        .post(
            "/console/sign-in/passkey",
            &[
                ("ceremony", begun["ceremony"].as_str().unwrap()),
                ("credential", &assertion.to_string()),
            ],
        )
        .await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    assert_eq!(json_of(&signed)["next"], "/console/jobs");
    assert_eq!(visitor.get("/console/jobs").await.status, 200);
    let page = owner.get("/console/account/second-factor").await;
    assert!(!page.body.contains("<td>never</td>"), "its use is noted");

    // No sign-in waits now: nothing to answer.
    let stray = Visitor::new(&app)
        .post("/console/sign-in/passkey/options", &[])
        .await;
    assert_eq!(json_of(&stray)["code"], "passkey.not_waiting");

    // Removed.
    let passkey_id = {
        let at = page.body.find("/console/account/passkeys/").unwrap() + 26;
        page.body[at..].split('/').next().unwrap().to_owned()
    };
    let removed = owner
        .post(
            &format!("/console/account/passkeys/{passkey_id}/remove"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(removed.status, 303);
    let page = owner.get("/console/account/second-factor").await;
    assert!(page.body.contains("No passkeys yet."));
    app.stop().await;
}

/// At an address that is not a host name (`127.0.0.1`) there is no relying party: passkeys are
/// not offered, and asked for anyway they are refused with `passkey.unavailable`.
#[tokio::test]
async fn passkeys_need_the_service_at_a_host_name() {
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_PUBLIC_URL").then(|| "http://127.0.0.1:8080".to_owned())
    })
    .await;
    let merchant = app.create_merchant("Passkey Less").await;
    let mut owner = Visitor::new(&app);
    owner.sign_in(&merchant.test()).await;
    let page = owner.get("/console/account/second-factor").await;
    assert!(!page.body.contains("Passkeys"));
    let refused = owner
        .post(
            "/console/account/passkeys/options",
            &[("csrf", &csrf_of(&page.body))],
        )
        .await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert_eq!(json_of(&refused)["code"], "passkey.unavailable");
    app.stop().await;
}

/// Chromium's virtual authenticator (WebDriver's WebAuthn extension): a platform authenticator
/// with user verification, as a phone's screen lock is.
#[derive(Debug)]
struct AddVirtualAuthenticator;

impl fantoccini::wd::WebDriverCompatibleCommand for AddVirtualAuthenticator {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/webauthn/authenticator",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = serde_json::json!({
            "protocol": "ctap2",
            "transport": "internal",
            "hasResidentKey": true,
            "hasUserVerification": true,
            "isUserVerified": true,
            "automaticPresenceSimulation": true,
        });
        (http::Method::POST, Some(body.to_string()))
    }
}

/// In Chromium, through the pages and `passkeys.js`: the second factor turned on, a passkey
/// added with the browser's own authenticator, then a sign-in whose second factor it gives.
#[tokio::test]
async fn a_passkey_is_added_and_used_in_a_browser() {
    use crate::console_browser::{arrives_at, click, fill, looked_at};
    use crate::support::browser::Browser;
    use fantoccini::Locator;

    // The browser's origin is the relying party's: a host name (localhost), this port.
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_PUBLIC_URL").then(|| "http://localhost:{port}".to_owned())
    })
    .await;
    let site = app.base_url.replace("127.0.0.1", "localhost");
    let merchant = app.create_merchant("Passkey Browser Ltd").await;
    let email = owner_email(&merchant.merchant_id.to_string());
    Visitor::new(&app).sign_in(&merchant.test()).await;

    let browser = Browser::start(1280, 900).await;
    let client = &browser.client;
    client
        .issue_cmd(AddVirtualAuthenticator)
        .await
        .expect("Chromium's virtual authenticator");
    client
        .goto(&format!("{site}/console/sign-in"))
        .await
        .unwrap();
    fill(&browser, "email", &email).await;
    fill(&browser, "password", PASSWORD).await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/console/jobs").await;

    // The app's codes first.
    client
        .goto(&format!("{site}/console/account/second-factor"))
        .await
        .unwrap();
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
    let key = browser.text("totp-key").await;
    fill(&browser, "code", &code(&key, 0)).await;
    click(
        &browser,
        "form[action='/console/account/second-factor/confirm'] button",
    )
    .await;
    browser
        .wait_until("the recovery codes", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("Your recovery codes"))
        })
        .await;
    client
        .goto(&format!("{site}/console/account/second-factor"))
        .await
        .unwrap();
    browser
        .wait_until("the passkey form, shown by the script", || async {
            client
                .execute(
                    "return !document.getElementById('passkey-add').hidden",
                    Vec::new(),
                )
                .await
                .is_ok_and(|shown| shown == serde_json::Value::Bool(true))
        })
        .await;
    looked_at(&browser, "console-passkeys.png").await;
    let name = client.find(Locator::Id("passkey-name")).await.unwrap();
    name.clear().await.unwrap();
    name.send_keys("Work laptop").await.unwrap();
    click(&browser, "#passkey-add button").await;
    browser
        .wait_until("the passkey listed", || async {
            client
                .source()
                .await
                .is_ok_and(|s| s.contains("<td>Work laptop</td>"))
        })
        .await;
    looked_at(&browser, "console-passkey-added.png").await;

    // Signed out, then in: the password, then the passkey.
    click(&browser, "form.sign-out button").await;
    arrives_at(&browser, "/console/sign-in").await;
    fill(&browser, "email", &email).await;
    fill(&browser, "password", PASSWORD).await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/console/sign-in/code").await;
    browser
        .wait_until("the passkey button", || async {
            client
                .execute(
                    "return !document.getElementById('passkey-sign-in').hidden",
                    Vec::new(),
                )
                .await
                .is_ok_and(|shown| shown == serde_json::Value::Bool(true))
        })
        .await;
    looked_at(&browser, "console-sign-in-passkey.png").await;
    click(&browser, "#passkey-use").await;
    arrives_at(&browser, "/console/jobs").await;
    browser.close().await;
    app.stop().await;
}
