//! The merchant console over HTTP, as a browser without JavaScript uses it: sign-in with a key
//! and its secret, the session cookie and its flags, the jobs list and a job's page, the
//! cancel form; and its security: another merchant's job, a form without its CSRF token, a
//! test key's console never showing live jobs, a revoked key's session, the failure budget.

use std::time::Duration;

use reqwest::Method;
use reqwest::redirect::Policy;
use serde_json::Value;

use crate::live_payments::{book_at, quoted};
use courier_core::merchants::NewMerchant;

use crate::support::receiver::{Receiver, Reply};
use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, attach_working_card, eventually,
    status_and_json,
};

/// A browser without JavaScript: no redirects followed, the session cookie kept by hand.
pub(crate) struct Visitor {
    client: reqwest::Client,
    base: String,
    database_url: String,
    pub cookie: Option<String>,
}

/// The password of every person [`Visitor::sign_in`] makes.
pub(crate) const PASSWORD: &str = "a long test password";

/// The address of the owner [`Visitor::sign_in`] makes for a merchant.
pub(crate) fn owner_email(merchant_id: &str) -> String {
    format!("owner-{merchant_id}@shop.example")
}

/// The link's token of an invitation.
pub(crate) fn invitation_token(invitation: &Value) -> String {
    let url = invitation["invitation_url"].as_str().unwrap();
    url.rsplit('/').next().unwrap().to_owned()
}

/// A form as a browser sends it.
enum Sent<'a> {
    Form(&'a [(&'a str, &'a str)]),
    Multipart(reqwest::multipart::Form),
}

pub(crate) struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub retry_after: Option<String>,
    pub set_cookie: Option<String>,
    pub csp: Option<String>,
    pub body: String,
}

impl Visitor {
    pub fn new(app: &TestApp) -> Self {
        Self {
            client: reqwest::Client::builder()
                .redirect(Policy::none())
                .build()
                .unwrap(),
            base: app.base_url.clone(),
            database_url: app.database_url.clone(),
            cookie: None,
        }
    }

    async fn send(&mut self, method: Method, path: &str, form: Option<Sent<'_>>) -> Page {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request = match form {
            Some(Sent::Form(form)) => request.form(form),
            Some(Sent::Multipart(form)) => request.multipart(form),
            None => request,
        };
        let response = request.send().await.unwrap();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (location, set_cookie, csp, retry_after) = (
            header("location"),
            header("set-cookie"),
            header("content-security-policy"),
            header("retry-after"),
        );
        if let Some(set) = &set_cookie {
            let pair = set.split(';').next().unwrap_or_default().to_owned();
            self.cookie = (!pair.ends_with('=')).then_some(pair);
        }
        Page {
            status: response.status().as_u16(),
            location,
            retry_after,
            set_cookie,
            csp,
            body: response.text().await.unwrap(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        self.send(Method::POST, path, Some(Sent::Form(form))).await
    }

    /// Posts a `multipart/form-data` form, as a form with a file input sends it.
    pub async fn post_multipart(&mut self, path: &str, form: reqwest::multipart::Form) -> Page {
        self.send(Method::POST, path, Some(Sent::Multipart(form)))
            .await
    }

    /// Signs in as an owner of the credential's merchant (made the first time, by invitation,
    /// as an operator would), and switches to the credential's environment: the console as
    /// the merchant's owner sees it. Answers the switch's page (303 to the jobs).
    pub async fn sign_in(&mut self, credential: &Credential) -> Page {
        let pool = sqlx::PgPool::connect(&self.database_url).await.unwrap();
        let (merchant_id, environment): (uuid::Uuid, String) =
            sqlx::query_as("SELECT merchant_id, environment FROM api_keys WHERE key = $1")
                .bind(&credential.key)
                .fetch_one(&pool)
                .await
                .unwrap();
        let email = owner_email(&merchant_id.to_string());
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM people WHERE email_key = $1)")
                .bind(&email)
                .fetch_one(&pool)
                .await
                .unwrap();
        if !exists {
            let teams = courier_core::team::Teams::new(
                pool.clone(),
                courier_core::team::TeamConfig::default(),
                (self.base.clone(), courier_core::mail::Outbox::default()),
                &crate::support::secret_key(),
            );
            let invitation = teams
                .invite(merchant_id, &email, "owner", "system")
                .await
                .unwrap();
            let token = invitation
                .invitation_url
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned();
            teams.accept(&token, "Owner", PASSWORD).await.unwrap();
        }
        pool.close().await;
        let signed_in = self.sign_in_as(&email, PASSWORD).await;
        assert_eq!(signed_in.status, 303, "{}", signed_in.body);
        self.switch_to(&merchant_id.to_string(), &environment).await
    }

    /// Signs in with an address and a password, as the sign-in form sends them.
    pub async fn sign_in_as(&mut self, email: &str, password: &str) -> Page {
        self.post(
            "/console/sign-in",
            &[("email", email), ("password", password)],
        )
        .await
    }

    /// Moves the session to a merchant's team and an environment, as the header's switch does.
    pub async fn switch_to(&mut self, merchant_id: &str, environment: &str) -> Page {
        let jobs = self.get("/console/jobs").await;
        let csrf = csrf_of(&jobs.body);
        self.post(
            "/console/switch",
            &[
                ("csrf", &csrf),
                ("merchant", merchant_id),
                ("environment", environment),
            ],
        )
        .await
    }
}

/// Invites `email` to the merchant's team as `role` through the operator API: the invitation.
pub(crate) async fn invite(app: &TestApp, merchant_id: &str, email: &str, role: &str) -> Value {
    let (status, invitation) = crate::support::status_and_json(
        app.admin(
            Method::POST,
            &format!("/merchants/{merchant_id}/invitations"),
        )
        .json(&serde_json::json!({"email": email, "role": role}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{invitation}");
    invitation
}

/// [`invite`]s `email` to the merchant's team as `role`, and joins with
/// the link as the person would (name, password twice): answers their browser, signed in.
pub(crate) async fn join(app: &TestApp, merchant_id: &str, email: &str, role: &str) -> Visitor {
    let invitation = invite(app, merchant_id, email, role).await;
    let mut visitor = Visitor::new(app);
    let path = format!("/console/invitations/{}", invitation_token(&invitation));
    let joined = visitor
        .post(
            &path,
            &[
                ("name", role),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(
        (joined.status, joined.location.as_deref()),
        (303, Some("/console/jobs")),
        "{}",
        joined.body
    );
    visitor
}

/// The value of the hidden `csrf` field of a page's form.
pub(crate) fn csrf_of(body: &str) -> String {
    let at = body
        .find("name=\"csrf\" value=\"")
        .expect("a form with its token")
        + 19;
    body[at..].split('"').next().unwrap().to_owned()
}

/// Books a sandbox job for the merchant of `credential`; answers it.
pub(crate) async fn book(app: &TestApp, credential: &Credential) -> Value {
    let body = quoted(app, credential).await;
    let key = format!("console-{}", uuid::Uuid::new_v4());
    let (status, job) = book_at(&app.client, &app.base_url, credential, &key, &body).await;
    assert_eq!(status, 201, "{job}");
    job
}

/// A service whose demo market answers quotes, and a merchant with a working test card.
pub(crate) async fn shop(name: &str) -> (TestApp, NewMerchant) {
    shop_with(name, Vec::new()).await
}

/// [`shop`] with settings of its own.
pub(crate) async fn shop_with(
    name: &str,
    settings: Vec<(String, String)>,
) -> (TestApp, NewMerchant) {
    let app = TestApp::spawn_with(move |wanted| {
        settings
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.clone())
    })
    .await;
    let merchant = app.create_merchant(name).await;
    attach_working_card(&app, &merchant.test()).await;
    let credential = merchant.test();
    eventually(
        "quotes to become available",
        Duration::from_secs(10),
        Duration::from_millis(25),
        || async {
            let status = app
                .request(Method::POST, "/v1/quotes")
                .auth(&credential)
                .json(&crate::quotes::journey(Some("car")))
                .send()
                .await
                .unwrap()
                .status();
            (status != 503).then_some(())
        },
    )
    .await;
    (app, merchant)
}

#[tokio::test]
async fn a_merchant_signs_in_sees_its_jobs_cancels_one_and_signs_out() {
    let (app, merchant) = shop("Console Goods").await;
    let first = book(&app, &merchant.test()).await;
    let second = book(&app, &merchant.test()).await;
    let mut visitor = Visitor::new(&app);

    // Signed out: every page leads to the sign-in form.
    let start = visitor.get("/console/jobs").await;
    assert_eq!(
        (start.status, start.location.as_deref()),
        (303, Some("/console/sign-in"))
    );
    let form = visitor.get("/console/sign-in").await;
    assert_eq!(form.status, 200);
    assert!(form.body.contains("name=\"password\""), "{}", form.body);
    assert!(
        !form.body.contains("name=\"secret\""),
        "keys are for machines"
    );
    let csp = form.csp.unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );

    // The merchant's owner, invited by an operator, has set a password (another browser).
    Visitor::new(&app).sign_in(&merchant.test()).await;
    let email = owner_email(&merchant.merchant_id.to_string());

    // A field left out, then a wrong password, then an unknown address: refused alike.
    let half = visitor
        .post("/console/sign-in", &[("email", email.as_str())])
        .await;
    assert_eq!(half.status, 400, "{}", half.body);
    assert!(half.body.contains("Enter both"), "{}", half.body);
    let wrong = visitor.sign_in_as(&email, "not-the-password").await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("do not match"), "{}", wrong.body);
    let unknown = visitor.sign_in_as("nobody@shop.example", PASSWORD).await;
    assert_eq!(unknown.status, 401);
    assert!(unknown.body.contains("do not match"), "{}", unknown.body);
    assert!(visitor.cookie.is_none());

    // Addresses are one whatever their case.
    let signed_in = visitor.sign_in_as(&email.to_uppercase(), PASSWORD).await;
    assert_eq!(
        (signed_in.status, signed_in.location.as_deref()),
        (303, Some("/console/jobs"))
    );
    let cookie = signed_in.set_cookie.unwrap();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(flag), "{cookie}");
    }

    // The jobs, newest first, each linked to its page; the environment is said.
    let list = visitor.get("/console/jobs").await;
    assert_eq!(list.status, 200);
    assert!(list.body.contains(">Test<"), "the environment is shown");
    let at = |job: &Value| list.body.find(job["reference"].as_str().unwrap()).unwrap();
    assert!(at(&second) < at(&first), "newest first");
    let filtered = visitor.get("/console/jobs?status=delivered").await;
    assert!(
        filtered.body.contains("No jobs match."),
        "{}",
        filtered.body
    );
    // Several statuses, as the form's boxes send them: both jobs, the boxes ticked.
    let several = visitor
        .get("/console/jobs?status=pending&status=searching&status=assigned")
        .await;
    assert!(several.body.contains(first["reference"].as_str().unwrap()));
    assert!(several.body.contains(second["reference"].as_str().unwrap()));
    assert!(
        several.body.contains("value=\"searching\" checked"),
        "{}",
        several.body
    );
    assert!(!several.body.contains("value=\"delivered\" checked"));

    // A job's page, and its cancel form.
    let path = format!("/console/jobs/{}", first["id"].as_str().unwrap());
    let job = visitor.get(&path).await;
    assert_eq!(job.status, 200);
    assert!(job.body.contains(first["reference"].as_str().unwrap()));
    assert!(job.body.contains("Cancel this job"));
    // The tracking page's map of it, with the streets around, and the part that follows it.
    assert!(job.body.contains("<svg id=\"map\""), "{}", job.body);
    assert!(job.body.contains("<path id=\"map-streets\" d=\"M"));
    assert!(job.body.contains("data-live=\"5\""));
    let csrf = csrf_of(&job.body);
    let cancelled = visitor
        .post(
            &format!("{path}/cancel"),
            &[("csrf", &csrf), ("reason", "changed my mind")],
        )
        .await;
    let back = format!("{path}?done=cancelled");
    assert_eq!(
        (cancelled.status, cancelled.location.as_deref()),
        (303, Some(back.as_str()))
    );
    let cancelled = visitor.get(&back).await;
    assert!(cancelled.body.contains("The job is cancelled."));
    assert!(
        !cancelled.body.contains("Cancel this job"),
        "no longer cancellable"
    );
    assert!(
        !cancelled.body.contains("data-live="),
        "nothing more to follow"
    );
    assert!(cancelled.body.contains("<svg id=\"map\""), "the map stays");
    let (_, seen) = crate::support::status_and_json(
        app.request(
            Method::GET,
            &format!("/v1/jobs/{}", first["id"].as_str().unwrap()),
        )
        .auth(&merchant.test())
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        seen["status"], "cancelled",
        "the API sees the console's cancel"
    );

    // Signed out: the session is over, even with the old cookie.
    let old = visitor.cookie.clone();
    let out = visitor.post("/console/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!(
        (out.status, out.location.as_deref()),
        (303, Some("/console/sign-in"))
    );
    visitor.cookie = old;
    assert_eq!(visitor.get("/console/jobs").await.status, 303);
    app.stop().await;
}

#[tokio::test]
async fn one_merchant_never_sees_another_s_jobs_nor_live_ones_with_a_test_key() {
    let (app, merchant) = shop("Console Mine").await;
    let other = app.create_merchant("Console Theirs").await;
    attach_working_card(&app, &other.test()).await;
    let theirs = book(&app, &other.test()).await;
    let mine = book(&app, &merchant.test()).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;

    let list = visitor.get("/console/jobs").await;
    assert!(list.body.contains(mine["reference"].as_str().unwrap()));
    assert!(!list.body.contains(theirs["reference"].as_str().unwrap()));
    // By id guessing: their job is no job here, and cannot be cancelled from here.
    let path = format!("/console/jobs/{}", theirs["id"].as_str().unwrap());
    let page = visitor.get(&path).await;
    assert_eq!(page.status, 404);
    assert!(!page.body.contains(theirs["reference"].as_str().unwrap()));
    let own = visitor
        .get(&format!("/console/jobs/{}", mine["id"].as_str().unwrap()))
        .await;
    let csrf = csrf_of(&own.body);
    let refused = visitor
        .post(&format!("{path}/cancel"), &[("csrf", &csrf)])
        .await;
    assert_eq!(refused.status, 404);
    assert_eq!(visitor.get("/console/jobs/not-a-uuid").await.status, 404);

    // The live key's console is the live environment: the test jobs are not there.
    let mut live = Visitor::new(&app);
    live.sign_in(&merchant.live()).await;
    let list = live.get("/console/jobs").await;
    assert!(list.body.contains(">Live<"));
    assert!(!list.body.contains(mine["reference"].as_str().unwrap()));
    assert!(list.body.contains("No jobs match."));
    app.stop().await;
}

#[tokio::test]
async fn a_form_without_its_token_is_refused_and_a_revoked_key_leaves_people_signed_in() {
    let (app, merchant) = shop("Console Careful").await;
    let job = book(&app, &merchant.test()).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;
    let path = format!("/console/jobs/{}/cancel", job["id"].as_str().unwrap());
    let forged = visitor.post(&path, &[("reason", "forged")]).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let wrong = visitor
        .post(&path, &[("csrf", "guessed"), ("reason", "x")])
        .await;
    assert_eq!(wrong.status, 403);
    let out = visitor.post("/console/sign-out", &[]).await;
    assert_eq!(out.status, 403, "signing out needs the token too");

    // Keys are the machines' credentials: revoking one stops its requests, not a person's
    // session.
    let revoked = app
        .admin(
            Method::POST,
            &format!("/keys/{}/revoke", merchant.test().key),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let after = visitor.get("/console/jobs").await;
    assert_eq!(after.status, 200, "{}", after.body);
    app.stop().await;
}

#[tokio::test]
async fn failed_sign_ins_spend_the_address_s_budget() {
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_AUTH_FAILURE_LIMIT" => Some("3".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Console Guarded").await;
    Visitor::new(&app).sign_in(&merchant.test()).await;
    let email = owner_email(&merchant.merchant_id.to_string());
    let mut visitor = Visitor::new(&app);
    for _ in 0..3 {
        assert_eq!(
            visitor.sign_in_as(&email, "wrong password").await.status,
            401
        );
    }
    let refused = visitor.sign_in_as(&email, PASSWORD).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.body.contains("Too many attempts"));
    let missing = Visitor::new(&app)
        .post("/console/sign-in", &[("email", "")])
        .await;
    assert_eq!(missing.status, 429, "the same address");
    app.stop().await;
}

/// Past its failure budget an account is closed to sign-ins for a while, the right password
/// included, whichever address the attempts come from; a good sign-in before that starts the
/// count again.
#[tokio::test]
async fn failed_sign_ins_spend_the_account_s_budget() {
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_SIGN_IN_FAILURE_LIMIT" => Some("3".into()),
        "COURIER_SIGN_IN_BLOCK_MS" => Some("1500".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Console Locked").await;
    Visitor::new(&app).sign_in(&merchant.test()).await;
    let email = owner_email(&merchant.merchant_id.to_string());
    let mut visitor = Visitor::new(&app);
    for _ in 0..2 {
        assert_eq!(
            visitor.sign_in_as(&email, "wrong password").await.status,
            401
        );
    }
    assert_eq!(visitor.sign_in_as(&email, PASSWORD).await.status, 303);
    let mut visitor = Visitor::new(&app);
    for _ in 0..3 {
        assert_eq!(
            visitor.sign_in_as(&email, "wrong password").await.status,
            401
        );
    }
    let blocked = visitor.sign_in_as(&email, PASSWORD).await;
    assert_eq!(blocked.status, 429, "{}", blocked.body);
    assert!(
        blocked.body.contains("closed to sign-ins"),
        "{}",
        blocked.body
    );
    let wait: u64 = blocked.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    eventually(
        "the account to open again",
        Duration::from_secs(5),
        Duration::from_millis(200),
        || async {
            let mut fresh = Visitor::new(&app);
            (fresh.sign_in_as(&email, PASSWORD).await.status == 303).then_some(())
        },
    )
    .await;
    app.stop().await;
}

/// A sign-in form another site's page sends (login CSRF: signing the visitor's browser in to
/// the sender's account) is refused by both consoles, by `Sec-Fetch-Site` or else by
/// `Origin`; this site's own page, and a client that says neither, sign in.
#[tokio::test]
async fn a_sign_in_sent_from_another_site_is_refused() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Console Forged").await;
    Visitor::new(&app).sign_in(&merchant.test()).await;
    let email = owner_email(&merchant.merchant_id.to_string());
    let host = app.base_url.trim_start_matches("http://").to_owned();
    let attempt = |path: &'static str,
                   form: Vec<(&'static str, String)>,
                   headers: Vec<(&'static str, String)>| {
        let client = reqwest::Client::builder()
            .redirect(Policy::none())
            .build()
            .unwrap();
        let url = app.url(path);
        async move {
            let mut request = client.post(url).form(&form);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            let response = request.send().await.unwrap();
            let cookie = response.headers().get("set-cookie").is_some();
            (
                response.status().as_u16(),
                cookie,
                response.text().await.unwrap(),
            )
        }
    };
    let merchant_form = vec![("email", email), ("password", PASSWORD.to_owned())];
    crate::ops_console::operator(&app, "forged@ops.example", "viewer").await;
    let operator_form = vec![
        ("email", "forged@ops.example".to_owned()),
        ("password", PASSWORD.to_owned()),
    ];
    for (path, form) in [
        ("/console/sign-in", merchant_form),
        ("/ops/sign-in", operator_form),
    ] {
        for forged in [
            vec![("sec-fetch-site", "cross-site".to_owned())],
            vec![("sec-fetch-site", "same-site".to_owned())],
            vec![("origin", "https://attacker.example".to_owned())],
            vec![("origin", "null".to_owned())],
        ] {
            let (status, cookie, body) = attempt(path, form.clone(), forged.clone()).await;
            assert_eq!(status, 403, "{path} {forged:?}: {body}");
            assert!(!cookie, "{path} {forged:?}: no session");
            assert!(body.contains("sent from another site"), "{body}");
        }
        for own in [
            vec![("sec-fetch-site", "same-origin".to_owned())],
            vec![("origin", format!("http://{host}"))],
            vec![],
        ] {
            let (status, cookie, body) = attempt(path, form.clone(), own.clone()).await;
            assert_eq!(status, 303, "{path} {own:?}: {body}");
            assert!(cookie, "{path} {own:?}");
        }
    }
    app.stop().await;
}

/// The console spends the merchant's request budgets as its API keys do: past the reads
/// budget its pages and forms answer 429 with `Retry-After`, and the API's reads, which share
/// the budget, are refused too.
#[tokio::test]
async fn the_console_spends_the_merchant_s_request_budgets() {
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_RATE_LIMIT_READS_PER_MINUTE" => Some("4".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Console Budgeted").await;
    let mut visitor = Visitor::new(&app);
    // Signing in spends two: the jobs page the switch's form is on, and the switch.
    assert_eq!(visitor.sign_in(&merchant.test()).await.status, 303);
    for _ in 0..2 {
        assert_eq!(visitor.get("/console/jobs").await.status, 200);
    }
    let refused = visitor.get("/console/webhooks").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(
        refused.body.contains("budget of requests"),
        "{}",
        refused.body
    );
    let response = app
        .request(Method::GET, "/v1/jobs")
        .auth(&merchant.test())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    app.stop().await;
}

/// A shop whose webhooks may go to the tests' local receiver, with `settings` besides.
async fn hooked(name: &str, settings: &[(&str, &str)]) -> (TestApp, NewMerchant, Receiver) {
    let receiver = Receiver::start().await;
    let mut all = vec![
        (
            "COURIER_WEBHOOK_EXTRA_CA".to_owned(),
            receiver.ca_path.to_string_lossy().into_owned(),
        ),
        (
            "COURIER_WEBHOOK_ALLOW_PRIVATE".to_owned(),
            "true".to_owned(),
        ),
    ];
    all.extend(
        settings
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let (app, merchant) = shop_with(name, all).await;
    (app, merchant, receiver)
}

/// Signs in to the merchant's test console and adds an endpoint for `url` subscribed to
/// `events` (comma-separated; empty for every event): the visitor, the form token and the
/// endpoint's page.
async fn portal_with_endpoint(
    app: &TestApp,
    merchant: &NewMerchant,
    url: &str,
    events: &str,
) -> (Visitor, String, String) {
    let mut visitor = Visitor::new(app);
    visitor.sign_in(&merchant.test()).await;
    let csrf = csrf_of(&visitor.get("/console/webhooks").await.body);
    let added = visitor
        .post(
            "/console/webhooks",
            &[("csrf", &csrf), ("url", url), ("events", events)],
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    let id = first_endpoint(app, merchant).await;
    (visitor, csrf, format!("/console/webhooks/{id}"))
}

/// The id of the merchant's first test endpoint, as the API lists it.
async fn first_endpoint(app: &TestApp, merchant: &NewMerchant) -> String {
    let (_, endpoints) = crate::support::status_and_json(
        app.request(Method::GET, "/v1/webhooks")
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    endpoints[0]["id"].as_str().unwrap().to_owned()
}

/// The portal edits an endpoint's URL, events and description in place (the secret stays), a
/// refused edit keeps what was typed, and a rotation can let the old secret sign for a while.
#[tokio::test]
async fn the_webhook_portal_edits_an_endpoint_and_rotates_with_an_overlap() {
    let (app, merchant, receiver) = hooked("Console Edits", &[]).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;
    let csrf = csrf_of(&visitor.get("/console/webhooks").await.body);
    let url = receiver.url("/first");
    let added = visitor
        .post(
            "/console/webhooks",
            &[
                ("csrf", &csrf),
                ("url", &url),
                ("events", ""),
                ("description", "Orders service"),
            ],
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert!(
        added.body.contains("<td>Orders service</td>"),
        "{}",
        added.body
    );
    let id = first_endpoint(&app, &merchant).await;
    let path = format!("/console/webhooks/{id}");

    let refused = visitor
        .post(
            &format!("{path}/edit"),
            &[
                ("csrf", &csrf),
                ("url", "http://example.com/plain"),
                ("events", "job.failed"),
                ("description", "Kept as typed"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("must be an https URL"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("value=\"http://example.com/plain\""));
    assert!(refused.body.contains("value=\"Kept as typed\""));

    let second = receiver.url("/second");
    let saved = visitor
        .post(
            &format!("{path}/edit"),
            &[
                ("csrf", &csrf),
                ("url", &second),
                ("events", "job.booked, job.failed"),
                ("description", "Orders, moved"),
            ],
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert!(
        saved
            .body
            .contains("The settings are saved; the signing secret is unchanged."),
        "{}",
        saved.body
    );
    assert!(saved.body.contains(&format!("<code>{second}</code>")));
    assert!(saved.body.contains("job.booked, job.failed"));
    assert!(saved.body.contains("Orders, moved"));
    assert!(
        !saved.body.contains("New signing secret"),
        "the secret stays"
    );

    let too_long = visitor
        .post(
            &format!("{path}/rotate"),
            &[("csrf", &csrf), ("overlap", "86401")],
        )
        .await;
    assert_eq!(too_long.status, 400, "{}", too_long.body);
    let rotated = visitor
        .post(
            &format!("{path}/rotate"),
            &[("csrf", &csrf), ("overlap", "3600")],
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    assert!(rotated.body.contains("New signing secret"));
    assert!(
        rotated
            .body
            .contains("each delivery carries two signatures"),
        "{}",
        rotated.body
    );
    let page = visitor.get(&path).await;
    assert!(
        page.body.contains("<dt>Previous secret</dt>"),
        "{}",
        page.body
    );
    let at_once = visitor
        .post(
            &format!("{path}/rotate"),
            &[("csrf", &csrf), ("overlap", "0")],
        )
        .await;
    assert!(
        at_once
            .body
            .contains("The old secret signs nothing from now on")
    );
    assert!(!at_once.body.contains("<dt>Previous secret</dt>"));
}

/// Every attempt of a delivery is listed with its answer, a resend's included, and the
/// endpoint's page counts them in its health view.
#[tokio::test]
async fn the_webhook_portal_lists_every_attempt_and_draws_the_endpoints_health() {
    let (app, merchant, receiver) = hooked(
        "Console Attempts",
        &[("COURIER_WEBHOOK_RETRY_BASE_MS", "50")],
    )
    .await;
    receiver.script("/flaky", |n| {
        if n < 2 {
            Reply::Said(503, "busy, try later")
        } else {
            Reply::Status(200)
        }
    });
    let (mut visitor, csrf, path) =
        portal_with_endpoint(&app, &merchant, &receiver.url("/flaky"), "").await;
    let id = path.rsplit('/').next().unwrap().to_owned();
    let fresh = visitor.get(&format!("{path}/health")).await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    assert!(fresh.body.contains("No attempts in the last 24 hours."));
    let sent = visitor
        .post(
            &format!("{path}/test-event"),
            &[("csrf", &csrf), ("event", "job.booked")],
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let deliveries = |attempts: i64| {
        let app = &app;
        let id = id.clone();
        let credential = merchant.test();
        async move {
            eventually(
                &format!("the delivery to be delivered after {attempts} attempts"),
                Duration::from_secs(15),
                Duration::from_millis(50),
                || async {
                    let response = app
                        .request(Method::GET, &format!("/v1/webhooks/{id}/deliveries"))
                        .basic_auth(&credential.key, Some(&credential.secret))
                        .send()
                        .await
                        .ok()?;
                    let (_, records) = status_and_json(response).await;
                    let record = records.get(0)?.clone();
                    (record["status"] == "delivered" && record["attempts"] == attempts)
                        .then_some(record)
                },
            )
            .await
        }
    };
    let delivered = deliveries(3).await;
    let delivery_path = format!("{path}/deliveries/{}", delivered["id"].as_str().unwrap());
    let page = visitor.get(&delivery_path).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let table = &page.body[page.body.find("id=\"attempts\"").expect("the attempts")..];
    assert_eq!(table.matches("<td>failed</td>").count(), 2, "{table}");
    assert_eq!(table.matches("<td>succeeded</td>").count(), 1, "{table}");
    assert_eq!(table.matches("<td>503</td>").count(), 2);
    assert!(table.contains("busy, try later"));
    assert!(
        table.find("<td>succeeded</td>") < table.find("<td>failed</td>"),
        "newest first"
    );

    // A resend's attempt is listed beside the success it follows.
    let resent = visitor
        .post(&format!("{delivery_path}/resend"), &[("csrf", &csrf)])
        .await;
    assert_eq!(resent.status, 200, "{}", resent.body);
    deliveries(4).await;
    let page = visitor.get(&delivery_path).await;
    let table = &page.body[page.body.find("id=\"attempts\"").unwrap()..];
    assert_eq!(table.matches("<td>succeeded</td>").count(), 2, "{table}");
    assert_eq!(table.matches("<td>failed</td>").count(), 2);
    assert!(!page.body.contains("before attempts were recorded"));

    let endpoint = visitor.get(&path).await;
    assert!(endpoint.body.contains(&format!("{path}/health")), "linked");
    assert!(
        !endpoint.body.contains("id=\"failing\""),
        "no warning for 2 failures"
    );
    let health = visitor.get(&format!("{path}/health")).await;
    assert!(
        health
            .body
            .contains("In the last 24 hours 50.0% of 4 attempts succeeded (2 failed)"),
        "{}",
        health.body
    );
    assert_eq!(health.body.matches("class=\"bar bar-ok\"").count(), 1);
    assert_eq!(health.body.matches("class=\"bar bar-failed\"").count(), 1);

    // Another merchant's delivery page is not found.
    let other = app.create_merchant("Console Attempts Rival").await;
    let mut rival = Visitor::new(&app);
    rival.sign_in(&other.test()).await;
    assert_eq!(rival.get(&delivery_path).await.status, 404);
    assert_eq!(rival.get(&format!("{path}/health")).await.status, 404);
}

#[tokio::test]
async fn the_webhook_portal_adds_an_endpoint_shows_its_deliveries_rotates_and_deletes_it() {
    let (app, merchant, receiver) = hooked("Console Hooks", &[]).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;
    let list = visitor.get("/console/webhooks").await;
    assert_eq!(list.status, 200);
    assert!(list.body.contains("No endpoints yet."));
    let csrf = csrf_of(&list.body);

    // The API's own rules: a URL that is not https is refused, the form kept.
    let refused = visitor
        .post(
            "/console/webhooks",
            &[
                ("csrf", &csrf),
                ("url", "http://example.com/h"),
                ("events", ""),
            ],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("http://example.com/h"));
    let unknown = visitor
        .post(
            "/console/webhooks",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/h"),
                ("events", "job.exploded"),
            ],
        )
        .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);

    // Added: its signing secret is shown once, then never again.
    let url = receiver.url("/console-hooks");
    let added = visitor
        .post(
            "/console/webhooks",
            &[("csrf", &csrf), ("url", &url), ("events", "job.booked")],
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    let id = first_endpoint(&app, &merchant).await;
    let secret_at = added.body.find("<code>").expect("the secret is shown") + 6;
    let secret = added.body[secret_at..]
        .split('<')
        .next()
        .unwrap()
        .to_owned();
    assert!(secret.len() >= 16, "{secret}");
    let again = visitor.get("/console/webhooks").await;
    assert!(again.body.contains(&url));
    assert!(
        !again.body.contains(&secret),
        "the secret is never shown again"
    );

    // A booking's event is delivered; the endpoint's page shows the delivery.
    book(&app, &merchant.test()).await;
    let path = format!("/console/webhooks/{id}");
    let delivered = eventually(
        "the delivery to be shown",
        Duration::from_secs(15),
        Duration::from_millis(100),
        || {
            let client = reqwest::Client::new();
            let (url, cookie) = (app.url(&path), visitor.cookie.clone().unwrap());
            async move {
                let body = client
                    .get(url)
                    .header("cookie", cookie)
                    .send()
                    .await
                    .ok()?
                    .text()
                    .await
                    .ok()?;
                (body.contains("job.booked") && body.contains("<td>delivered</td>")).then_some(body)
            }
        },
    )
    .await;
    assert!(
        delivered.contains("<td>200</td>"),
        "the receiver's answer is shown"
    );
    assert!(!delivered.contains(&secret));

    // Rotated: a new secret, shown once.
    let rotated = visitor
        .post(&format!("{path}/rotate"), &[("csrf", &csrf)])
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    assert!(rotated.body.contains("New signing secret"));
    assert!(!rotated.body.contains(&secret));
    let section = rotated.body.find("New signing secret").unwrap();
    let rotated_at = section + rotated.body[section..].find("<code>").unwrap() + 6;
    let new_secret = rotated.body[rotated_at..]
        .split('<')
        .next()
        .unwrap()
        .to_owned();

    // A test event, of an event the endpoint does not subscribe to, goes to it and only it,
    // signed with the current secret and saying it is a test.
    let bystander_url = receiver.url("/console-hooks-bystander");
    let bystander = visitor
        .post(
            "/console/webhooks",
            &[("csrf", &csrf), ("url", &bystander_url), ("events", "")],
        )
        .await;
    assert_eq!(bystander.status, 201, "{}", bystander.body);
    let unknown = visitor
        .post(
            &format!("{path}/test-event"),
            &[("csrf", &csrf), ("event", "job.exploded")],
        )
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    let tested = visitor
        .post(
            &format!("{path}/test-event"),
            &[("csrf", &csrf), ("event", "job.delivered")],
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.body);
    assert!(tested.body.contains("The test event is on its way"));
    let arrived = receiver
        .wait_for("/console-hooks", 2, Duration::from_secs(15))
        .await;
    let test = arrived
        .iter()
        .find(|r| r.event == "job.delivered")
        .expect("the test event arrived");
    assert!(
        test.verifies_with(&new_secret),
        "signed with the new secret"
    );
    let body: Value = serde_json::from_slice(&test.body).unwrap();
    assert_eq!(body["type"], "job.delivered");
    assert_eq!(body["environment"], "test");
    assert_eq!(body["data"]["reference"], "test-event");
    assert_eq!(body["data"]["currency"], "XTS");
    assert_eq!(body["data"]["proof"]["outcome"], "handed_to_recipient");
    let logged = visitor.get(&path).await;
    assert!(logged.body.contains("job.delivered"), "in the delivery log");
    // The rival's form for the same endpoint is refused as if it did not exist.
    let rival_test = {
        let other = app.create_merchant("Console Hooks Tester").await;
        let mut tester = Visitor::new(&app);
        tester.sign_in(&other.test()).await;
        let tester_csrf = csrf_of(&tester.get("/console/webhooks").await.body);
        tester
            .post(
                &format!("{path}/test-event"),
                &[("csrf", &tester_csrf), ("event", "job.booked")],
            )
            .await
    };
    assert_eq!(rival_test.status, 404);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        receiver
            .received("/console-hooks-bystander")
            .iter()
            .all(|r| r.event != "job.delivered"),
        "the merchant's other endpoint was not sent the test event"
    );

    // Another merchant cannot see or touch it.
    let other = app.create_merchant("Console Hooks Rival").await;
    let mut rival = Visitor::new(&app);
    rival.sign_in(&other.test()).await;
    assert_eq!(rival.get(&path).await.status, 404);
    let rival_csrf = csrf_of(&rival.get("/console/webhooks").await.body);
    let denied = rival
        .post(&format!("{path}/delete"), &[("csrf", &rival_csrf)])
        .await;
    assert_eq!(denied.status, 404);

    // Deleted.
    let deleted = visitor
        .post(&format!("{path}/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(
        (deleted.status, deleted.location.as_deref()),
        (303, Some("/console/webhooks"))
    );
    assert_eq!(visitor.get(&path).await.status, 404);
    let listed = visitor.get("/console/webhooks").await.body;
    assert!(listed.contains(&bystander_url), "the other endpoint stays");
    app.stop().await;
}

#[tokio::test]
async fn a_failed_delivery_found_in_the_log_is_resent_and_received_again() {
    let (app, merchant, receiver) =
        hooked("Console Resends", &[("COURIER_WEBHOOK_RETRY_BASE_MS", "5")]).await;
    // The receiver is down until told otherwise.
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = down.clone();
    receiver.script("/down-then-up", move |_| {
        if flag.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::Said(500, "database <down> & out")
        } else {
            Reply::Status(200)
        }
    });
    let url = receiver.url("/down-then-up");
    let (mut visitor, csrf, path) = portal_with_endpoint(&app, &merchant, &url, "job.booked").await;
    let id = path.rsplit('/').next().unwrap().to_owned();
    book(&app, &merchant.test()).await;

    // The delivery fails every attempt; the log shows it failed, with the receiver's 500.
    let page_of = |cookie: String| {
        let url = app.url(&path);
        async move {
            reqwest::Client::new()
                .get(url)
                .header("cookie", cookie)
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()
        }
    };
    let cookie = visitor.cookie.clone().unwrap();
    let failed = eventually(
        "the delivery to fail",
        Duration::from_secs(20),
        Duration::from_millis(100),
        || {
            let page = page_of(cookie.clone());
            async move { page.await.filter(|b| b.contains("<td>failed</td>")) }
        },
    )
    .await;
    assert!(
        failed.contains("<td>500</td>"),
        "the receiver's answer is shown"
    );
    let before = receiver.received("/down-then-up").len();

    // The failed delivery's own page: the request as sent, and what the receiver answered
    // (its body escaped, as every text on the pages).
    let detail_at = failed
        .find("/deliveries/")
        .expect("a link to the failed delivery");
    let detail_link = &failed[failed[..detail_at].rfind('"').unwrap() + 1..];
    let detail_link = detail_link.split('"').next().unwrap().to_owned();
    let detail = visitor.get(&detail_link).await;
    assert_eq!(detail.status, 200, "{}", detail.body);
    let sent = receiver.received("/down-then-up");
    let delivery_id = &sent.last().unwrap().delivery;
    assert!(
        detail
            .body
            .contains(&format!("Courier-Delivery: {delivery_id}"))
    );
    assert!(detail.body.contains("Courier-Event: job.booked"));
    assert!(detail.body.contains(&format!("POST {url}")));
    // Escaped by name or by number alike; what matters is that nothing is markup.
    let shown = [
        ("&#34;", "&quot;"),
        ("&#60;", "&lt;"),
        ("&#62;", "&gt;"),
        ("&#38;", "&amp;"),
    ]
    .iter()
    .fold(detail.body.clone(), |page, (number, name)| {
        page.replace(number, name)
    });
    assert!(
        shown.contains("&quot;type&quot;: &quot;job.booked&quot;"),
        "the body, indented"
    );
    assert!(
        shown.contains("database &lt;down&gt; &amp; out"),
        "the answer's start, escaped"
    );
    assert!(detail.body.contains(" ms</dd>"), "the time to answer");
    assert!(detail.body.contains("<dd>500</dd>"));
    // Another endpoint's id, or a delivery id that is not one, finds nothing.
    let elsewhere = detail_link.replacen(&id, &uuid::Uuid::new_v4().to_string(), 1);
    assert_eq!(visitor.get(&elsewhere).await.status, 404);
    assert_eq!(
        visitor
            .get(&format!("{path}/deliveries/not-an-id"))
            .await
            .status,
        404
    );

    // The receiver is back: the failed delivery is resent from the log, and arrives again.
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    let resend_at = failed
        .find("/resend\"")
        .expect("a resend form for the failed delivery");
    let action = &failed[failed[..resend_at].rfind('"').unwrap() + 1..];
    let action = action.split('"').next().unwrap().to_owned();
    assert!(action.ends_with("/resend"), "{action}");
    let page = visitor.post(&action, &[("csrf", &csrf)]).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("The delivery is sent again."));
    receiver
        .wait_for("/down-then-up", before + 1, Duration::from_secs(10))
        .await;
    eventually(
        "the resent delivery to be shown delivered",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || {
            let page = page_of(cookie.clone());
            async move { page.await.filter(|b| b.contains("<td>delivered</td>")) }
        },
    )
    .await;
    let received = receiver.received("/down-then-up");
    let last = received.last().unwrap();
    assert_eq!(last.json()["type"], "job.booked");

    // Recovering since a time sends again what was not delivered since; all was, now.
    let recovered = visitor
        .post(
            &format!("{path}/recover"),
            &[("csrf", &csrf), ("since", "2020-01-01T00:00")],
        )
        .await;
    assert_eq!(recovered.status, 200, "{}", recovered.body);
    assert!(
        recovered
            .body
            .contains("Every delivery since then was delivered or is on its way.")
    );
    let bad = visitor
        .post(
            &format!("{path}/recover"),
            &[("csrf", &csrf), ("since", "yesterday")],
        )
        .await;
    assert_eq!(bad.status, 400);
    app.stop().await;
}

#[tokio::test]
async fn the_delivery_log_pages_back_and_filters_by_status() {
    let (app, merchant, receiver) = hooked("Console Log Pages", &[]).await;
    let (mut visitor, csrf, path) =
        portal_with_endpoint(&app, &merchant, &receiver.url("/log-pages"), "").await;
    // One more delivery than a page holds.
    for _ in 0..51 {
        let sent = visitor
            .post(
                &format!("{path}/test-event"),
                &[("csrf", &csrf), ("event", "job.booked")],
            )
            .await;
        assert_eq!(sent.status, 200, "{}", sent.body);
    }
    let rows = |body: &str| {
        body.matches(&format!("<a href=\"{path}/deliveries/"))
            .count()
    };

    // The events fan out into deliveries in the background.
    let mut first = visitor.get(&path).await;
    for _ in 0..200 {
        if first.body.contains("rel=\"next\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        first = visitor.get(&path).await;
    }
    assert_eq!(first.status, 200);
    assert_eq!(rows(&first.body), 50, "{}", first.body);
    let at = first
        .body
        .find("rel=\"next\"")
        .expect("a link to older deliveries");
    let older = &first.body[first.body[..at].rfind("href=\"").unwrap() + 6..];
    let older = older.split('"').next().unwrap().replace("&amp;", "&");
    let second = visitor.get(&older).await;
    assert_eq!(second.status, 200);
    assert_eq!(rows(&second.body), 1, "{}", second.body);
    assert!(!second.body.contains("rel=\"next\""), "{}", second.body);
    // The two pages hold every delivery once.
    let ids = |body: &str| -> Vec<String> {
        body.split(&format!("<a href=\"{path}/deliveries/"))
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap().to_owned())
            .collect()
    };
    let mut all = ids(&first.body);
    all.extend(ids(&second.body));
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 51);

    // By status: none was cancelled.
    let cancelled = visitor.get(&format!("{path}?status=cancelled")).await;
    assert_eq!(cancelled.status, 200);
    assert!(
        cancelled.body.contains("No cancelled delivery."),
        "{}",
        cancelled.body
    );
    assert!(
        cancelled
            .body
            .contains("<option value=\"cancelled\" selected>")
    );
    // Not a status, not a delivery; another endpoint's delivery pages nothing.
    assert_eq!(
        visitor.get(&format!("{path}?status=lost")).await.status,
        400
    );
    assert_eq!(
        visitor
            .get(&format!("{path}?before=yesterday"))
            .await
            .status,
        400
    );
    let elsewhere = visitor
        .get(&format!("{path}?before={}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(elsewhere.status, 200);
    assert!(
        elsewhere.body.contains("No older deliveries."),
        "{}",
        elsewhere.body
    );
    app.stop().await;
}

#[tokio::test]
async fn a_job_s_page_shows_its_charge_s_moves_its_proof_and_the_events_sent_for_it() {
    use crate::fulfilment::{Floor, HOOK, PICKUP};
    use base64::Engine;
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\nproof-of-delivery";
    let floor = Floor::start(&[]).await;
    let rider = floor.rider("Pat Rider", "car", Some(PICKUP)).await;
    let job = floor.book().await;
    let id = job["id"].as_str().unwrap().to_owned();
    floor.take(&rider, &job).await;
    floor.collect(&rider, &job).await;
    let handover = serde_json::json!({
        "outcome": "handed_to_recipient", "recipient_name": "Dana Dropoff", "note": "At the door",
        "photo": {"content_type": "image/png",
                  "data": base64::engine::general_purpose::STANDARD.encode(PNG)},
    });
    let (status, delivered) = floor
        .courier_call(
            &rider,
            Method::POST,
            &format!("/jobs/{id}/delivered"),
            Some(handover),
        )
        .await;
    assert_eq!(status, 200, "{delivered}");
    floor.charge_once(&job, "captured").await;
    // Booked, assigned, collected, delivered, captured: wait for the last to reach the receiver.
    let what = "job.delivered at the receiver";
    crate::support::eventually(
        what,
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async {
            floor
                .receiver
                .received(HOOK)
                .iter()
                .any(|r| r.json()["type"] == "job.delivered")
                .then_some(())
        },
    )
    .await;

    let mut visitor = Visitor::new(&floor.app);
    visitor.sign_in(&floor.credential).await;
    let path = format!("/console/jobs/{id}");
    let page = visitor.get(&path).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    // The charge's moves, oldest first, ending captured.
    let moves = body
        .split("id=\"charge-moves\"")
        .nth(1)
        .expect("the charge's moves");
    let moves = moves.split("</table>").next().unwrap();
    assert!(moves.contains("<td>captured</td>"), "{moves}");
    // The proof: who took it, the note, the photo served to this session; no signature.
    let proof = body.split("id=\"proof\"").nth(1).expect("the proof");
    assert!(
        proof.contains("Dana Dropoff") && proof.contains("At the door"),
        "{proof}"
    );
    assert!(
        body.contains(&format!("src=\"{path}/proof/photo\"")),
        "{body}"
    );
    assert!(!body.contains(&format!("{path}/proof/signature")), "{body}");
    let photo = reqwest::Client::new()
        .get(floor.app.url(&format!("{path}/proof/photo")))
        .header("cookie", visitor.cookie.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(photo.status(), 200);
    assert_eq!(photo.headers()["content-type"], "image/png");
    assert_eq!(photo.bytes().await.unwrap().as_ref(), PNG);
    assert_eq!(
        visitor.get(&format!("{path}/proof/signature")).await.status,
        404
    );
    assert_eq!(
        visitor.get(&format!("{path}/proof/selfie")).await.status,
        404
    );
    // The events sent, each linked to its delivery's page.
    let events = body
        .split("id=\"job-events\"")
        .nth(1)
        .expect("the events sent");
    for name in ["job.booked", "job.delivered"] {
        assert!(events.contains(&format!("<code>{name}</code>")), "{events}");
    }
    let at = events.find("/deliveries/").expect("a delivery linked");
    let link = &events[events[..at].rfind('"').unwrap() + 1..];
    let link = link.split('"').next().unwrap().to_owned();
    let delivery = visitor.get(&link).await;
    assert_eq!(delivery.status, 200, "{}", delivery.body);

    // Another merchant sees neither the page nor the photo.
    let other = floor.app.create_merchant("Nosy Ltd").await;
    let mut stranger = Visitor::new(&floor.app);
    stranger.sign_in(&other.test()).await;
    assert_eq!(stranger.get(&path).await.status, 404);
    assert_eq!(
        stranger.get(&format!("{path}/proof/photo")).await.status,
        404
    );
}

#[tokio::test]
async fn cards_are_added_made_default_and_removed_and_charges_are_listed() {
    let (app, merchant) = shop("Card Console Ltd").await;
    let job = book(&app, &merchant.test()).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;

    let page = visitor.get("/console/cards").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Visa ending 4242") || page.body.contains("ending 4242"));
    assert!(page.body.contains("<strong>default</strong>"));
    // The booking's charge, linked to its job.
    assert!(
        page.body
            .contains(&format!("/console/jobs/{}", job["id"].as_str().unwrap()))
    );
    let csrf = csrf_of(&page.body);

    // A form without the session's token adds nothing.
    let refused = visitor
        .post(
            "/console/cards",
            &[("card", "4000000000009995"), ("csrf", "x")],
        )
        .await;
    assert_eq!(refused.status, 403);
    // Only the sandbox's designated cards.
    let refused = visitor
        .post(
            "/console/cards",
            &[("card", "4111111111111111"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("Choose one of the sandbox"));

    let added = visitor
        .post(
            "/console/cards",
            &[
                ("card", "4000000000009995"),
                ("make_default", "on"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(
        (added.status, added.location.as_deref()),
        (303, Some("/console/cards?done=added"))
    );
    let (status, cards) = crate::support::status_and_json(
        app.request(Method::GET, "/v1/payment-methods")
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let cards = cards.as_array().unwrap().clone();
    assert_eq!(cards.len(), 2);
    let id_of = |last_four: &str| {
        cards.iter().find(|c| c["last_four"] == last_four).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (first, second) = (id_of("4242"), id_of("9995"));
    let default_of = |cards: &Value| {
        cards
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["is_default"] == true)
            .map(|c| c["last_four"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        default_of(&Value::Array(cards.clone())).as_deref(),
        Some("9995")
    );

    // The default moves back by the card's form, and a card is removed by its own.
    let done = visitor
        .post(
            &format!("/console/cards/{first}/default"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(
        done.location.as_deref(),
        Some("/console/cards?done=default")
    );
    let done = visitor
        .post(
            &format!("/console/cards/{second}/remove"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(
        done.location.as_deref(),
        Some("/console/cards?done=removed")
    );
    let (_, cards) = crate::support::status_and_json(
        app.request(Method::GET, "/v1/payment-methods")
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(default_of(&cards).as_deref(), Some("4242"));
    assert_eq!(cards.as_array().unwrap().len(), 1);

    // Another merchant's card, and nonsense, are no card at all.
    let (other_app_merchant, other_card) = {
        let other = app.create_merchant("Other Card Ltd").await;
        attach_working_card(&app, &other.test()).await;
        let (_, cards) = crate::support::status_and_json(
            app.request(Method::GET, "/v1/payment-methods")
                .auth(&other.test())
                .send()
                .await
                .unwrap(),
        )
        .await;
        (other, cards[0]["id"].as_str().unwrap().to_owned())
    };
    for path in [
        format!("/console/cards/{other_card}/remove"),
        format!("/console/cards/{other_card}/default"),
        "/console/cards/not-a-card/remove".to_owned(),
        format!("/console/cards/{first}/explode"),
    ] {
        let page = visitor.post(&path, &[("csrf", &csrf)]).await;
        assert_eq!(page.status, 404, "{path}");
    }
    let (_, still) = crate::support::status_and_json(
        app.request(Method::GET, "/v1/payment-methods")
            .auth(&other_app_merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(still.as_array().unwrap().len(), 1);

    // A live key's console adds no sandbox card.
    let mut live = Visitor::new(&app);
    live.sign_in(&merchant.live()).await;
    let page = live.get("/console/cards").await;
    assert!(page.body.contains("action=\"/console/cards/form\""));
    assert!(!page.body.contains("name=\"card\""));
    let csrf = csrf_of(&page.body);
    let refused = live
        .post(
            "/console/cards",
            &[("card", "4242424242424242"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(
        !page.body.contains("ending 4242"),
        "a live console shows no test card"
    );
    app.stop().await;
}

#[tokio::test]
async fn keys_are_made_with_their_secret_shown_once_and_revoked_by_their_merchant_only() {
    let (app, merchant) = shop("Key Console Ltd").await;
    let other = app.create_merchant("Other Key Ltd").await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;
    let jobs_with = |credential: Credential| {
        let request = app.request(Method::GET, "/v1/jobs").auth(&credential);
        async move { request.send().await.unwrap().status().as_u16() }
    };

    let page = visitor.get("/console/keys").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains(&format!("<code>{}</code>", merchant.test().key))
    );
    assert!(
        !page.body.contains(&merchant.live().key),
        "a test console shows no live key"
    );
    assert!(page.body.contains("Account settings"));
    let csrf = csrf_of(&page.body);

    let refused = visitor
        .post("/console/keys", &[("label", "   "), ("csrf", &csrf)])
        .await;
    assert_eq!(refused.status, 422);
    let refused = visitor
        .post(
            "/console/keys",
            &[("label", "warehouse"), ("csrf", "forged")],
        )
        .await;
    assert_eq!(refused.status, 403);

    let made = visitor
        .post("/console/keys", &[("label", "warehouse"), ("csrf", &csrf)])
        .await;
    assert_eq!(made.status, 201);
    let at = made.body.find("<code id=\"new-secret\">").unwrap() + 22;
    let secret = made.body[at..].split('<').next().unwrap().to_owned();
    let at = made.body.find("<strong>Key ").unwrap() + 12;
    let key = made.body[at..].split(' ').next().unwrap().to_owned();
    assert!(key.starts_with("ck_test_"), "{key}");
    let new = Credential {
        key: key.clone(),
        secret: secret.clone(),
    };
    assert_eq!(jobs_with(new.clone()).await, 200, "the new key works");
    // Never shown again.
    let page = visitor.get("/console/keys").await;
    assert!(page.body.contains(&key) && !page.body.contains(&secret));

    // The audit trail says who made it.
    let (_, audit) = crate::support::status_and_json(
        app.admin(Method::GET, "/audit?action=key.created")
            .send()
            .await
            .unwrap(),
    )
    .await;
    let made_by = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["target_id"] == key.as_str())
        .map(|e| e["operator"].as_str().unwrap().to_owned());
    assert_eq!(
        made_by,
        Some(owner_email(&merchant.merchant_id.to_string()))
    );

    // Another merchant's key, or this merchant's live key, is no key here.
    for foreign in [other.test().key, merchant.live().key] {
        let page = visitor
            .post(
                &format!("/console/keys/{foreign}/revoke"),
                &[("csrf", &csrf)],
            )
            .await;
        assert_eq!(page.status, 404, "{foreign}");
    }
    assert_eq!(jobs_with(other.test()).await, 200);
    assert_eq!(jobs_with(merchant.live()).await, 200);

    // Revoking asks first, saying what stops; nothing is revoked until it is confirmed.
    let asked = visitor
        .post(&format!("/console/keys/{key}/revoke"), &[("csrf", &csrf)])
        .await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert!(
        asked.body.contains(&format!("Revoke {key}?")),
        "{}",
        asked.body
    );
    assert!(asked.body.contains("name=\"confirm\" value=\"yes\""));
    assert!(
        !asked.body.contains("only test key"),
        "two test keys are in use"
    );
    assert_eq!(jobs_with(new.clone()).await, 200, "not revoked yet");
    let revoked = visitor
        .post(
            &format!("/console/keys/{key}/revoke"),
            &[("csrf", &csrf), ("confirm", "yes")],
        )
        .await;
    assert_eq!(revoked.location.as_deref(), Some("/console/keys"));
    assert_eq!(jobs_with(new).await, 401);

    // Revoking the last test key in use says so; the person's session goes on (keys are
    // for machines).
    let own = merchant.test().key;
    let asked = visitor
        .post(&format!("/console/keys/{own}/revoke"), &[("csrf", &csrf)])
        .await;
    assert!(
        asked.body.contains("your only test key in use"),
        "{}",
        asked.body
    );
    let revoked = visitor
        .post(
            &format!("/console/keys/{own}/revoke"),
            &[("csrf", &csrf), ("confirm", "yes")],
        )
        .await;
    assert_eq!(revoked.location.as_deref(), Some("/console/keys"));
    assert_eq!(jobs_with(merchant.test()).await, 401);
    assert_eq!(visitor.get("/console/jobs").await.status, 200);

    // A key of the other environment is made from here too.
    let made = visitor
        .post(
            "/console/keys",
            &[
                ("label", "new live"),
                ("environment", "live"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let at = made.body.find("<code id=\"new-secret\">").unwrap() + 22;
    let secret = made.body[at..].split('<').next().unwrap().to_owned();
    let at = made.body.find("<strong>Key ").unwrap() + 12;
    let key = made.body[at..].split(' ').next().unwrap().to_owned();
    assert!(key.starts_with("ck_live_"), "{key}");
    assert_eq!(jobs_with(Credential { key, secret }).await, 200);
    app.stop().await;
}

#[tokio::test]
async fn an_owner_changes_the_account_s_settings_and_a_developer_cannot() {
    let (app, merchant) = shop("Settings Console Ltd").await;
    let settings = || async {
        let (status, body) = crate::support::status_and_json(
            app.admin(
                Method::GET,
                &format!("/merchants/{}/settings", merchant.merchant_id),
            )
            .send()
            .await
            .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body
    };
    let before = settings().await;

    // A developer reads them, has no form, and is refused if they post one.
    let merchant_id = merchant.merchant_id.to_string();
    let mut tester = join(&app, &merchant_id, "dev@settings.example", "developer").await;
    let page = tester.get("/console/keys").await;
    assert!(
        !page.body.contains("action=\"/console/settings\""),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("Your role (Developer) reads the settings"),
        "{}",
        page.body
    );
    let csrf = csrf_of(&page.body);
    let refused = tester
        .post(
            "/console/settings",
            &[("csrf", &csrf), ("notify_customer", "on")],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(settings().await, before);

    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.live()).await;
    let page = visitor.get("/console/keys").await;
    assert!(
        page.body.contains("action=\"/console/settings\""),
        "{}",
        page.body
    );
    let csrf = csrf_of(&page.body);
    let form = |csrf: &str, sender: &str| -> Vec<(String, String)> {
        [
            ("csrf", csrf),
            ("notify_customer", "on"),
            ("proof_signature_required", "on"),
            ("sms_sender_name", sender),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .to_vec()
    };
    let mut post = async |fields: Vec<(String, String)>| {
        let fields: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        visitor.post("/console/settings", &fields).await
    };
    // Without the form's token; a sender name that cannot be one: nothing changes.
    assert_eq!(post(form("forged", "Shop")).await.status, 403);
    let refused = post(form(&csrf, "12345")).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("class=\"problem\""),
        "{}",
        refused.body
    );
    assert_eq!(settings().await, before);

    // Saved: ticked boxes are yes, unticked no, and the sender as typed.
    let saved = post(form(&csrf, "ShopCo")).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert!(saved.body.contains("Settings saved."), "{}", saved.body);
    let after = settings().await;
    assert_eq!(after["notify_customer"], true, "{after}");
    assert_eq!(after["proof_photo_required"], false, "{after}");
    assert_eq!(after["proof_signature_required"], true, "{after}");
    assert_eq!(after["sms_sender_name"], "ShopCo", "{after}");
    // The budgets are the operators' alone.
    for budget in [
        "rate_limit_quotes_per_minute",
        "rate_limit_bookings_per_minute",
        "rate_limit_reads_per_minute",
    ] {
        assert_eq!(after[budget], before[budget], "{budget}");
    }
    assert!(
        saved.body.contains(
            "id=\"sms_sender_name\" name=\"sms_sender_name\" maxlength=\"11\" value=\"ShopCo\""
        ),
        "{}",
        saved.body
    );
    // The billing contact: an address, or refused with the reason.
    let mut with_email = form(&csrf, "ShopCo");
    with_email.push(("contact_email".to_owned(), "billing at shop".to_owned()));
    let refused = post(with_email.clone()).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("contact_email is an email address"),
        "{}",
        refused.body
    );
    // Drawn again as typed, to be corrected.
    assert!(
        refused.body.contains("value=\"billing at shop\""),
        "{}",
        refused.body
    );
    with_email.last_mut().unwrap().1 = "billing@shop.example".to_owned();
    let saved = post(with_email).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert!(
        saved.body.contains("billing@shop.example"),
        "{}",
        saved.body
    );
    assert_eq!(settings().await["contact_email"], "billing@shop.example");
    // The preparation time: whole minutes from 0 to 240, or refused with the reason.
    for typed in ["soon", "241"] {
        let mut with_minutes = form(&csrf, "ShopCo");
        with_minutes.push(("preparation_minutes".to_owned(), typed.to_owned()));
        let refused = post(with_minutes).await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert!(
            refused
                .body
                .contains("preparation_minutes is a whole number of minutes"),
            "{}",
            refused.body
        );
        assert!(
            refused.body.contains(&format!("value=\"{typed}\"")),
            "{}",
            refused.body
        );
    }
    assert_eq!(
        settings().await["preparation_minutes"],
        serde_json::Value::Null
    );
    let mut with_minutes = form(&csrf, "ShopCo");
    with_minutes.push(("preparation_minutes".to_owned(), "15".to_owned()));
    let saved = post(with_minutes).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert!(saved.body.contains("15 min"), "{}", saved.body);
    assert_eq!(settings().await["preparation_minutes"], 15);
    // An empty sender is the service's own again.
    let empty = vec![
        ("csrf".to_owned(), csrf.clone()),
        ("sms_sender_name".to_owned(), String::new()),
    ];
    assert_eq!(post(empty).await.status, 200);
    let after = settings().await;
    assert_eq!(after["sms_sender_name"], serde_json::Value::Null, "{after}");
    assert_eq!(after["notify_customer"], false, "{after}");

    // The audit trail says who changed them.
    let (_, audit) = crate::support::status_and_json(
        app.admin(Method::GET, "/audit?action=merchant.settings_changed")
            .send()
            .await
            .unwrap(),
    )
    .await;
    let by: Vec<_> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["target_id"] == merchant.merchant_id.to_string().as_str())
        .map(|e| e["operator"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(by, vec![owner_email(&merchant_id); 4]);
    app.stop().await;
}

/// The `once` token of the first form after `action` on a page.
pub(crate) fn once_of(body: &str, action: &str) -> String {
    let form = &body[body
        .find(&format!("action=\"{action}\""))
        .expect("the form")..];
    let at = form
        .find("name=\"once\" value=\"")
        .expect("a one-time token")
        + 19;
    form[at..].split('"').next().unwrap().to_owned()
}

/// Every state-changing form acts once, however often it is sent: a reload or a double click
/// of a form that redirects is sent to the first answer's page; one whose answer is a page
/// is answered by a redirect to that page (redirect after post), and its repeats too; one
/// that showed a secret acts once and says so when sent again; a refused one may be sent
/// again once corrected. Another merchant reads no answer.
#[tokio::test]
async fn a_form_sent_twice_acts_once() {
    let (app, merchant, receiver) = hooked("Console Twice", &[]).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;

    // A webhook endpoint, sent twice (a double click): one endpoint, its secret shown once.
    let page = visitor.get("/console/webhooks").await;
    let csrf = csrf_of(&page.body);
    let once = once_of(&page.body, "/console/webhooks");
    let url = receiver.url("/twice");
    let form = [
        ("csrf", csrf.as_str()),
        ("once", &once),
        ("url", &url),
        ("events", ""),
    ];
    let made = visitor.post("/console/webhooks", &form).await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert!(made.body.contains("whsec_"), "the secret, this once");
    let again = visitor.post("/console/webhooks", &form).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(
        again.body.contains("This form was already sent"),
        "{}",
        again.body
    );
    assert!(!again.body.contains("whsec_"), "never shown again");
    let (_, endpoints) = status_and_json(
        app.request(Method::GET, "/v1/webhooks")
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(endpoints.as_array().unwrap().len(), 1, "{endpoints}");
    let id = endpoints[0]["id"].as_str().unwrap().to_owned();

    // A test event, whose answer is a page: the post redirects to it, a reload of the answer
    // only reads, and the form sent again is sent to the same answer; one event goes out.
    let path = format!("/console/webhooks/{id}");
    let page = visitor.get(&path).await;
    let action = format!("{path}/test-event");
    let once = once_of(&page.body, &action);
    let form = [
        ("csrf", csrf.as_str()),
        ("once", &once),
        ("event", "job.booked"),
    ];
    let sent = visitor.post(&action, &form).await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    let answer = sent.location.unwrap();
    assert_eq!(answer, format!("/console/answers/{once}"));
    let shown = visitor.get(&answer).await;
    assert_eq!(shown.status, 200);
    assert!(shown.body.contains("test event"), "{}", shown.body);
    assert_eq!(visitor.get(&answer).await.body, shown.body);
    let again = visitor.post(&action, &form).await;
    assert_eq!(again.location.as_deref(), Some(answer.as_str()));
    receiver
        .wait_for("/twice", 1, Duration::from_secs(10))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received("/twice").len(), 1, "one test event");

    // Another merchant's session reads no answer of this one.
    let other = app.create_merchant("Console Elsewhere").await;
    let mut stranger = Visitor::new(&app);
    stranger.sign_in(&other.test()).await;
    assert_eq!(stranger.get(&answer).await.status, 404);

    // A key, refused (an empty label), then sent again corrected with the same token: the
    // refusal changed nothing, so the corrected form acts.
    let page = visitor.get("/console/keys").await;
    let once = once_of(&page.body, "/console/keys");
    let refused = visitor
        .post(
            "/console/keys",
            &[("csrf", &csrf), ("once", &once), ("label", " ")],
        )
        .await;
    assert_eq!(refused.status, 422);
    let made = visitor
        .post(
            "/console/keys",
            &[("csrf", &csrf), ("once", &once), ("label", "once")],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let again = visitor
        .post(
            "/console/keys",
            &[("csrf", &csrf), ("once", &once), ("label", "once")],
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.body);
    let keys = app
        .admin(Method::GET, &format!("/merchants/{}", merchant.merchant_id))
        .send()
        .await
        .unwrap();
    let (_, detail) = status_and_json(keys).await;
    let labelled = detail["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["label"] == "once")
        .count();
    assert_eq!(labelled, 1, "{detail}");
    app.stop().await;
}

/// A sandbox booking sent twice books once: the repeat is sent to the first one's run.
#[tokio::test]
async fn a_sandbox_booking_sent_twice_books_once() {
    let (app, merchant) = shop("Console Sandbox Twice").await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;
    let page = visitor.get("/console/sandbox").await;
    let csrf = csrf_of(&page.body);
    let once = once_of(&page.body, "/console/sandbox");
    let mut form = test_delivery(&csrf, "41 4th Street", "manual");
    form.push(("once", &once));
    let booked = visitor.post("/console/sandbox", &form).await;
    assert_eq!(booked.status, 303, "{}", booked.body);
    let again = visitor.post("/console/sandbox", &form).await;
    assert_eq!(again.status, 303, "{}", again.body);
    assert_eq!(again.location, booked.location);
    let (_, jobs) = status_and_json(
        app.request(Method::GET, "/v1/jobs")
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(jobs["items"].as_array().map(Vec::len), Some(1), "{jobs}");
    app.stop().await;
}

/// The sandbox form as a person fills it.
fn test_delivery<'a>(csrf: &'a str, pickup: &'a str, scenario: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("csrf", csrf),
        ("pickup", pickup),
        ("pickup_name", "Pat Pickup"),
        ("pickup_phone", "+966 11 463 5555"),
        ("dropoff", "102 17th Street"),
        ("dropoff_name", "Dana Dropoff"),
        ("dropoff_phone", "+966 11 463 5556"),
        ("vehicle", "car"),
        ("scenario", scenario),
    ]
}

#[tokio::test]
async fn the_sandbox_page_books_a_test_delivery_and_plays_it_out() {
    // The simulator runs at real speed: a run's first step is half a minute away.
    let speed = vec![("COURIER_SANDBOX_SPEED".to_owned(), "1".to_owned())];
    let (app, merchant) = shop_with("Console Sandbox", speed).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in(&merchant.test()).await;
    let page = visitor.get("/console/sandbox").await;
    assert_eq!(page.status, 200);
    let csrf = csrf_of(&page.body);

    // An address no market knows, an unknown scenario: refused, the form kept.
    let nowhere = visitor
        .post(
            "/console/sandbox",
            &test_delivery(&csrf, "1 Nowhere Lane Atlantis", "manual"),
        )
        .await;
    assert_eq!(nowhere.status, 422, "{}", nowhere.body);
    assert!(nowhere.body.contains("no place is called"));
    assert!(nowhere.body.contains("value=\"1 Nowhere Lane Atlantis\""));
    let unknown = visitor
        .post(
            "/console/sandbox",
            &test_delivery(&csrf, "41 4th Street", "teleport"),
        )
        .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    let forged = visitor
        .post(
            "/console/sandbox",
            &test_delivery("forged", "41 4th Street", "manual"),
        )
        .await;
    assert_eq!(forged.status, 403);

    // Booked in manual mode: the run waits for each step, and the page does not reload.
    let booked = visitor
        .post(
            "/console/sandbox",
            &test_delivery(&csrf, "41 4th Street", "manual"),
        )
        .await;
    assert_eq!(booked.status, 303, "{}", booked.body);
    let run_path = booked.location.unwrap();
    let job = run_path.rsplit('/').next().unwrap().to_owned();
    let (status, detail) = status_and_json(
        app.request(Method::GET, &format!("/v1/jobs/{job}"))
            .auth(&merchant.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "the API sees the job: {detail}");
    assert_eq!(detail["pickup"]["contact_name"], "Pat Pickup");
    let run = visitor.get(&run_path).await;
    assert_eq!(run.status, 200);
    assert!(run.body.contains("<dd id=\"run-scenario\">manual</dd>"));
    assert!(
        !run.body.contains("data-live="),
        "a manual run waits: nothing to follow"
    );
    assert!(run.body.contains("when you take it"));

    // The next step, taken from the page: a courier is on it, so the scenario is locked.
    let advanced = visitor
        .post(&format!("{run_path}/advance"), &[("csrf", &csrf)])
        .await;
    assert_eq!(advanced.status, 200, "{}", advanced.body);
    assert!(advanced.body.contains("The next step is taken."));
    assert!(
        !advanced
            .body
            .contains("<dd id=\"run-stage\">searching</dd>")
    );
    let locked = visitor
        .post(
            &format!("{run_path}/scenario"),
            &[("csrf", &csrf), ("scenario", "returned")],
        )
        .await;
    assert_eq!(locked.status, 409, "{}", locked.body);
    assert!(locked.body.contains("sandbox.scenario_locked"));
    assert_eq!(
        visitor
            .post(&format!("{run_path}/fly"), &[("csrf", &csrf)])
            .await
            .status,
        404
    );

    // Another, whose scenario is changed before a courier takes it, runs by itself: its
    // page reloads while it runs.
    let second = visitor
        .post(
            "/console/sandbox",
            &test_delivery(&csrf, "41 4th Street", "manual"),
        )
        .await;
    let second_path = second.location.unwrap();
    let changed = visitor
        .post(
            &format!("{second_path}/scenario"),
            &[("csrf", &csrf), ("scenario", "happy_path")],
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert!(
        changed
            .body
            .contains("<dd id=\"run-scenario\">happy_path</dd>")
    );
    assert!(
        changed.body.contains("data-live=\"3\""),
        "its part of the page follows it"
    );
    assert!(
        changed
            .body
            .contains("<script src=\"/console/live.js\" defer></script>")
    );
    let script = visitor.get("/console/live.js").await;
    assert_eq!(script.status, 200);
    assert!(script.body.contains("data-live"));

    // Not another merchant's, and not a live session's.
    let rival = app.create_merchant("Console Sandbox Rival").await;
    let mut stranger = Visitor::new(&app);
    stranger.sign_in(&rival.test()).await;
    assert_eq!(stranger.get(&run_path).await.status, 404);
    let mut live = Visitor::new(&app);
    live.sign_in(&merchant.live()).await;
    assert_eq!(live.get("/console/sandbox").await.status, 404);
    assert_eq!(live.get(&run_path).await.status, 404);
    assert!(
        !live
            .get("/console/jobs")
            .await
            .body
            .contains("/console/sandbox\">")
    );
    app.stop().await;
}

/// The delivery log is searched by event and by the reference of the job an event is about;
/// the page after carries the search, and an event no one sends is no filter (400).
#[tokio::test]
async fn the_delivery_log_is_searched_by_event_and_job_reference() {
    let (app, merchant, receiver) = hooked("Console Log Search", &[]).await;
    let (mut visitor, _, path) =
        portal_with_endpoint(&app, &merchant, &receiver.url("/log-search"), "").await;
    let first = book(&app, &merchant.test()).await;
    let second = book(&app, &merchant.test()).await;
    let reference = |job: &Value| job["reference"].as_str().unwrap().to_owned();
    let rows = |body: &str| {
        body.matches(&format!("<a href=\"{path}/deliveries/"))
            .count()
    };
    // Each booking's job.booked (and what follows it) fans out in the background.
    let cookie = visitor.cookie.clone().unwrap();
    eventually(
        "both bookings' deliveries",
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async {
            let body = app
                .request(Method::GET, &format!("{path}?event=job.booked"))
                .header("cookie", &cookie)
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            (rows(&body) == 2).then_some(())
        },
    )
    .await;
    let only_first = visitor
        .get(&format!("{path}?reference={}", reference(&first)))
        .await;
    assert!(rows(&only_first.body) >= 1, "{}", only_first.body);
    let booked_second = visitor
        .get(&format!(
            "{path}?event=job.booked&reference={}",
            reference(&second)
        ))
        .await;
    assert_eq!(rows(&booked_second.body), 1, "{}", booked_second.body);
    assert!(
        booked_second
            .body
            .contains(&format!("value=\"{}\"", reference(&second))),
        "the search is kept in its form"
    );
    assert!(booked_second.body.contains("value=\"job.booked\" selected"));
    let nobody = visitor.get(&format!("{path}?reference=CR-NOBODY")).await;
    assert_eq!(rows(&nobody.body), 0);
    let unknown = visitor.get(&format!("{path}?event=job.exploded")).await;
    assert_eq!(unknown.status, 400);
    app.stop().await;
}
