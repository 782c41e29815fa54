//! The second factor over HTTP: TOTP set up with its first code, asked at every sign-in after
//! the password, each code used once; recovery codes, each used once; an owner requiring it of
//! the whole team, whose members are sent to set it up.

use reqwest::Method;
use totp_rs::{Algorithm, Secret, TOTP};

use crate::console::{PASSWORD, Page, Visitor, csrf_of, join, once_of, owner_email, shop};

/// The code the app shows `offset_secs` from now for the key on an enrolment page.
pub(crate) fn code(key: &str, offset_secs: i64) -> String {
    let totp = TOTP::new_unchecked(
        Algorithm::SHA1,
        6,
        1,
        30,
        Secret::Encoded(key.to_owned()).to_bytes().unwrap(),
        None,
        String::new(),
    );
    let now = chrono::Utc::now().timestamp() + offset_secs;
    totp.generate(u64::try_from(now).unwrap())
}

/// The app's key on a second factor's setup page.
pub(crate) fn key_on(page: &Page) -> String {
    let at = page.body.find("<code id=\"totp-key\">").expect("the key") + 20;
    page.body[at..].split('<').next().unwrap().to_owned()
}

async fn post_code(visitor: &mut Visitor, code: &str) -> Page {
    visitor
        .post("/console/sign-in/code", &[("code", code)])
        .await
}

#[tokio::test]
async fn a_second_factor_is_set_up_asked_at_sign_in_and_required_by_an_owner() {
    let (app, merchant) = shop("Factor Goods").await;
    let merchant_id = merchant.merchant_id.to_string();
    let email = owner_email(&merchant_id);
    let mut owner = Visitor::new(&app);
    owner
        .sign_in(&crate::support::MerchantCredentials::test(&merchant))
        .await;

    // An owner without one cannot require it of the team.
    let team = owner.get("/console/team").await;
    let refused = owner
        .post(
            "/console/team/second-factor",
            &[("csrf", &csrf_of(&team.body)), ("required", "on")],
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);

    // Set up: the key (text and QR code), then the app's first code turns it on.
    let page = owner.get("/console/account/second-factor").await;
    assert!(
        page.body.contains("Off: your password alone"),
        "{}",
        page.body
    );
    let csrf = csrf_of(&page.body);
    let started = owner
        .post("/console/account/second-factor/start", &[("csrf", &csrf)])
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    assert!(started.body.contains("<svg"), "the QR code is drawn inline");
    let key = key_on(&started);
    let wrong = owner
        .post(
            "/console/account/second-factor/confirm",
            &[("csrf", &csrf), ("code", "000000")],
        )
        .await;
    assert_eq!(wrong.status, 422);
    assert_eq!(key_on(&wrong), key, "the same key, to try again");
    let on = owner
        .post(
            "/console/account/second-factor/confirm",
            &[("csrf", &csrf), ("code", &code(&key, 0))],
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    let recovery: Vec<String> = on
        .body
        .split("<li><code>")
        .skip(1)
        .map(|s| s.split('<').next().unwrap().to_owned())
        .collect();
    assert_eq!(recovery.len(), 10, "{}", on.body);
    let page = owner.get("/console/account/second-factor").await;
    assert!(
        page.body.contains("Recovery codes left: 10"),
        "{}",
        page.body
    );
    assert!(!page.body.contains(&recovery[0]), "shown once");

    // Signing in now asks for a code; the session opens nothing until it is given.
    let mut visitor = Visitor::new(&app);
    let half = visitor.sign_in_as(&email, PASSWORD).await;
    assert_eq!(half.location.as_deref(), Some("/console/sign-in/code"));
    assert_eq!(
        visitor.get("/console/jobs").await.location.as_deref(),
        Some("/console/sign-in")
    );
    assert_eq!(visitor.get("/console/sign-in/code").await.status, 200);
    assert_eq!(post_code(&mut visitor, "123456").await.status, 401);
    // The code that turned it on was used: the app's next one signs in.
    let used = post_code(&mut visitor, &code(&key, 0)).await;
    assert_eq!(used.status, 401, "a code is used once");
    let signed = post_code(&mut visitor, &code(&key, 30)).await;
    assert_eq!(
        signed.location.as_deref(),
        Some("/console/jobs"),
        "{}",
        signed.body
    );
    assert_eq!(visitor.get("/console/jobs").await.status, 200);

    // A recovery code stands in for a code, once.
    for (attempt, expected) in [(0, "/console/jobs"), (1, "")] {
        let mut lost = Visitor::new(&app);
        lost.sign_in_as(&email, PASSWORD).await;
        let answer = post_code(&mut lost, &recovery[3].to_uppercase()).await;
        if attempt == 0 {
            assert_eq!(answer.location.as_deref(), Some(expected));
        } else {
            assert_eq!(answer.status, 401, "a recovery code is used once");
        }
    }

    // The owner requires it of the team: a developer without one is sent to set it up, and
    // reaches nothing else (but signing out).
    let mut developer = join(&app, &merchant_id, "dev@factor.example", "developer").await;
    let team = owner.get("/console/team").await;
    let done = owner
        .post(
            "/console/team/second-factor",
            &[
                ("csrf", &csrf_of(&team.body)),
                ("once", &once_of(&team.body, "/console/team/second-factor")),
                ("required", "on"),
            ],
        )
        .await;
    assert_eq!(
        done.location.as_deref(),
        Some("/console/team?done=second_factor")
    );
    let sent = developer.get("/console/jobs").await;
    assert_eq!(
        sent.location.as_deref(),
        Some("/console/account/second-factor")
    );
    let setup = developer.get("/console/account/second-factor").await;
    assert!(
        setup.body.contains("Your team requires a second factor"),
        "{}",
        setup.body
    );
    assert!(setup.body.contains("Required by Factor Goods"));
    let refused = developer
        .post(
            "/console/team/second-factor",
            &[("csrf", &csrf_of(&setup.body))],
        )
        .await;
    assert_eq!(
        refused.location.as_deref(),
        Some("/console/account/second-factor")
    );

    // While it is required, the owner's cannot be turned off.
    let page = owner.get("/console/account/second-factor").await;
    let kept = owner
        .post(
            "/console/account/second-factor/disable",
            &[("csrf", &csrf_of(&page.body)), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(kept.status, 409, "{}", kept.body);

    // The trail names the owner.
    let (_, audit) = crate::support::status_and_json(
        app.admin(Method::GET, "/audit?action=team.second_factor_rule")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(audit["items"][0]["operator"], email.as_str());
    assert_eq!(audit["items"][0]["after"]["require_second_factor"], true);

    // Not required any more: turned off with the password (a wrong one changes nothing).
    let team = owner.get("/console/team").await;
    owner
        .post(
            "/console/team/second-factor",
            &[
                ("csrf", &csrf_of(&team.body)),
                ("once", &once_of(&team.body, "/console/team/second-factor")),
            ],
        )
        .await;
    assert_eq!(developer.get("/console/jobs").await.status, 200);
    let wrong = owner
        .post(
            "/console/account/second-factor/disable",
            &[
                ("csrf", &csrf_of(&page.body)),
                ("password", "not it at all"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 401);
    let off = owner
        .post(
            "/console/account/second-factor/disable",
            &[("csrf", &csrf_of(&page.body)), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(off.status, 200, "{}", off.body);
    let mut plain = Visitor::new(&app);
    let signed = plain.sign_in_as(&email, PASSWORD).await;
    assert_eq!(signed.location.as_deref(), Some("/console/jobs"));
    app.stop().await;
}

/// Past the re-authentication window, a code of the second factor confirms a key change as the
/// password does, once.
#[tokio::test]
async fn a_code_confirms_a_key_change_like_the_password() {
    let app = crate::support::TestApp::spawn_with(|name| match name {
        "COURIER_REAUTHENTICATION_MS" => Some("1".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Factor Keys").await;
    let mut owner = Visitor::new(&app);
    owner
        .sign_in(&crate::support::MerchantCredentials::test(&merchant))
        .await;
    let page = owner.get("/console/account/second-factor").await;
    let csrf = csrf_of(&page.body);
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
    let keys = owner.get("/console/keys").await;
    let once = once_of(&keys.body, "/console/keys");
    let form = |given: &str| {
        vec![
            ("csrf".to_owned(), csrf.clone()),
            ("once".to_owned(), once.clone()),
            ("label".to_owned(), "till".to_owned()),
            ("reauthentication".to_owned(), given.to_owned()),
        ]
    };
    let send = async |visitor: &mut Visitor, fields: Vec<(String, String)>| {
        let fields: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        visitor.post("/console/keys", &fields).await
    };
    let asked = send(&mut owner, form("")).await;
    assert!(asked.body.contains("Password or code"), "{}", asked.body);
    // The code that turned it on was used; a made-up one is no code.
    assert_eq!(send(&mut owner, form(&code(&key, 0))).await.status, 401);
    assert_eq!(send(&mut owner, form("123456")).await.status, 401);
    let made = send(&mut owner, form(&code(&key, 30))).await;
    assert_eq!(made.status, 201, "{}", made.body);
    app.stop().await;
}
