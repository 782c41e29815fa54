//! Mail to people through a local SMTP stand-in: invitations (the operator's and the
//! console's), password resets, and notices to a team's owners; a relay that refuses, then a
//! restart: each mail owed is sent, once.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::console::{PASSWORD, Visitor, csrf_of, invitation_token, once_of};
use crate::support::smtp::{Received, SmtpStandIn};
use crate::support::{MerchantCredentials, TestApp, eventually, status_and_json};

const FROM: &str = "Courier <courier@shop.example>";

async fn mailing(smtp: &SmtpStandIn, extra: &[(&'static str, &'static str)]) -> TestApp {
    let url = smtp.url();
    let extra = extra.to_vec();
    TestApp::spawn_with(move |name| match name {
        "COURIER_SMTP_URL" => Some(url.clone()),
        "COURIER_MAIL_FROM" => Some(FROM.into()),
        "COURIER_SCHEDULER_INTERVAL_MS" => Some("50".into()),
        _ => extra
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned()),
    })
    .await
}

/// Waits for the stand-in to hold `count` mails to `to`; answers them.
async fn mails_to(smtp: &SmtpStandIn, to: &str, count: usize) -> Vec<Received> {
    eventually(
        &format!("{count} mail(s) to {to}"),
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async {
            let mails: Vec<Received> = smtp
                .received()
                .into_iter()
                .filter(|m| m.to == [to.to_owned()])
                .collect();
            (mails.len() >= count).then_some(mails)
        },
    )
    .await
}

/// The path of the console link in a mail's body that starts with `prefix`.
fn link_in(mail: &Received, prefix: &str) -> String {
    let body = mail.body();
    let at = body.find(prefix).expect("the link");
    body[at..]
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn invitations_resets_and_owner_notices_are_mailed() {
    let smtp = SmtpStandIn::start().await;
    let app = mailing(&smtp, &[]).await;
    let merchant = app.create_merchant("Mail Goods").await;
    let merchant_id = merchant.merchant_id.to_string();

    // The operator's invitation is mailed; the link in it joins the team.
    let (status, invitation) = status_and_json(
        app.admin(
            Method::POST,
            &format!("/merchants/{merchant_id}/invitations"),
        )
        .json(&json!({"email": "ana@mail.example", "role": "owner"}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{invitation}");
    assert_eq!(invitation["mailed"], true);
    let mail = mails_to(&smtp, "ana@mail.example", 1).await.remove(0);
    assert_eq!(
        mail.header("Subject").unwrap(),
        "You are invited to Mail Goods's team on Courier"
    );
    assert_eq!(mail.header("From").unwrap(), FROM);
    assert_eq!(mail.from, "courier@shop.example");
    assert!(
        mail.header("Message-ID")
            .unwrap()
            .ends_with("@courier.invalid>")
    );
    let path = link_in(&mail, "/console/invitations/");
    assert_eq!(
        path,
        format!("/console/invitations/{}", invitation_token(&invitation))
    );
    let mut ana = Visitor::new(&app);
    let joined = ana
        .post(
            &path,
            &[
                ("name", "Ana"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(joined.status, 303, "{}", joined.body);

    // An invitation from the console is mailed, and not shown on the page.
    let team = ana.get("/console/team").await;
    let invited = ana
        .post(
            "/console/team/invitations",
            &[
                ("csrf", &csrf_of(&team.body)),
                ("once", &once_of(&team.body, "/console/team/invitations")),
                ("email", "bo@mail.example"),
                ("role", "owner"),
            ],
        )
        .await;
    assert_eq!(invited.status, 200, "{}", invited.body);
    assert!(
        invited.body.contains("on its way to them by mail"),
        "{}",
        invited.body
    );
    assert!(!invited.body.contains("/console/invitations/"));
    let mail = mails_to(&smtp, "bo@mail.example", 1).await.remove(0);
    let mut bo = Visitor::new(&app);
    let joined = bo
        .post(
            &link_in(&mail, "/console/invitations/"),
            &[
                ("name", "Bo"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(joined.status, 303, "{}", joined.body);

    // A key made: every owner is told, with the key and who made it.
    let keys = ana.get("/console/keys").await;
    let made = ana
        .post(
            "/console/keys",
            &[
                ("csrf", &csrf_of(&keys.body)),
                ("once", &once_of(&keys.body, "/console/keys")),
                ("label", "till"),
            ],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    for owner in ["ana@mail.example", "bo@mail.example"] {
        let notices = mails_to(&smtp, owner, 2).await;
        let notice = notices.last().unwrap();
        let subject = notice.header("Subject").unwrap();
        assert!(
            subject.starts_with("Mail Goods: a test key, ck_test_"),
            "{subject}"
        );
        assert!(
            notice.body().contains("by ana@mail.example"),
            "{}",
            notice.body()
        );
    }

    // A forgotten password: the page says the same for any address; the link is mailed.
    for address in [
        "nobody@mail.example",
        "ana@mail.example",
        "ana@mail.example",
    ] {
        let asked = Visitor::new(&app)
            .post("/console/password-reset", &[("email", address)])
            .await;
        assert_eq!(asked.status, 200);
        assert!(
            asked.body.contains("If a Courier account has this address"),
            "{}",
            asked.body
        );
        assert!(
            !asked.body.contains("/console/password-reset/"),
            "never shown"
        );
    }
    let reset = mails_to(&smtp, "ana@mail.example", 2)
        .await
        .into_iter()
        .find(|m| m.header("Subject").as_deref() == Some("Reset your Courier password"));
    let reset = match reset {
        Some(mail) => mail,
        None => mails_to(&smtp, "ana@mail.example", 3).await.pop().unwrap(),
    };
    let path = link_in(&reset, "/console/password-reset/");
    let pool = app.pool().await;
    let strangers: i64 =
        sqlx::query_scalar("SELECT count(*) FROM mail_outbox WHERE to_address = $1")
            .bind("nobody@mail.example")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(strangers, 0, "no mail to an address without an account");
    let resets: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM mail_outbox WHERE to_address = $1 AND kind = 'password_reset'",
    )
    .bind("ana@mail.example")
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(resets, 1, "asked twice at once: one link mailed");
    pool.close().await;

    let mut visitor = Visitor::new(&app);
    let form = visitor.get(&path).await;
    assert_eq!(form.status, 200);
    assert!(form.body.contains("ana@mail.example"));
    let differ = visitor
        .post(
            &path,
            &[
                ("password", "a new long password"),
                ("password_again", "other"),
            ],
        )
        .await;
    assert_eq!(differ.status, 422);
    let short = visitor
        .post(&path, &[("password", "short"), ("password_again", "short")])
        .await;
    assert_eq!(short.status, 422);
    let set = visitor
        .post(
            &path,
            &[
                ("password", "a new long password"),
                ("password_again", "a new long password"),
            ],
        )
        .await;
    assert_eq!(
        (set.status, set.location.as_deref()),
        (303, Some("/console/jobs"))
    );
    // Sent again from that browser (a double click): on to the console, nothing set twice.
    let repeat = visitor
        .post(
            &path,
            &[
                ("password", "a new long password"),
                ("password_again", "a new long password"),
            ],
        )
        .await;
    assert_eq!(repeat.location.as_deref(), Some("/console/jobs"));
    // Signed out everywhere else; the old password no longer opens, the new one does.
    assert_eq!(
        ana.get("/console/jobs").await.location.as_deref(),
        Some("/console/sign-in")
    );
    assert_eq!(visitor.get("/console/jobs").await.status, 200);
    let old = Visitor::new(&app)
        .sign_in_as("ana@mail.example", PASSWORD)
        .await;
    assert_eq!(old.status, 401);
    let new = Visitor::new(&app)
        .sign_in_as("ana@mail.example", "a new long password")
        .await;
    assert_eq!(new.status, 303);
    // The link works once.
    assert_eq!(Visitor::new(&app).get(&path).await.status, 410);
    let again = Visitor::new(&app)
        .post(
            &path,
            &[
                ("password", "another password!"),
                ("password_again", "another password!"),
            ],
        )
        .await;
    assert_eq!(again.status, 410);
    app.stop().await;
}

/// A relay that refuses (451) leaves the mail owed; a service stopped meanwhile loses nothing:
/// the next one sends it, once, when the relay takes mail again.
#[tokio::test]
async fn a_refused_mail_waits_survives_a_restart_and_is_sent_once() {
    let smtp = SmtpStandIn::start().await;
    smtp.refuse(true);
    let app = mailing(&smtp, &[("COURIER_MAIL_RETRY_BASE_MS", "100")]).await;
    let merchant = app.create_merchant("Mail Later").await;
    let (status, _) = status_and_json(
        app.admin(
            Method::POST,
            &format!("/merchants/{}/invitations", merchant.merchant_id),
        )
        .json(&json!({"email": "late@mail.example", "role": "owner"}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201);
    let pool = app.pool().await;
    let row = || async {
        sqlx::query_as::<_, (String, i32, Option<String>)>(
            "SELECT status, attempts, last_error FROM mail_outbox WHERE to_address = $1",
        )
        .bind("late@mail.example")
        .fetch_one(&pool)
        .await
        .unwrap()
    };
    eventually(
        "a refused attempt",
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async {
            let (status, attempts, error) = row().await;
            (status == "queued" && attempts >= 1 && error.is_some_and(|e| e.contains("451")))
                .then_some(())
        },
    )
    .await;
    assert!(smtp.received().is_empty());
    let database_url = app.database_url.clone();
    app.stop().await;

    smtp.refuse(false);
    let url = smtp.url();
    let again = TestApp::spawn_with(move |name| match name {
        "DATABASE_URL" => Some(database_url.clone()),
        "COURIER_SMTP_URL" => Some(url.clone()),
        "COURIER_SCHEDULER_INTERVAL_MS" => Some("50".into()),
        "COURIER_MAIL_RETRY_BASE_MS" => Some("100".into()),
        _ => None,
    })
    .await;
    let mails = mails_to(&smtp, "late@mail.example", 1).await;
    assert_eq!(mails.len(), 1);
    eventually(
        "the mail marked sent",
        Duration::from_secs(5),
        Duration::from_millis(50),
        || async { (row().await.0 == "sent").then_some(()) },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let to_late: Vec<Value> = smtp
        .received()
        .into_iter()
        .filter(|m| m.to == ["late@mail.example".to_owned()])
        .map(|m| json!(m.header("Message-ID")))
        .collect();
    assert_eq!(to_late.len(), 1, "sent once: {to_late:?}");
    pool.close().await;
    again.stop().await;
}

/// An endpoint that keeps failing: at `COURIER_WEBHOOK_WARN_AFTER` failures in a row its page
/// warns and the people who manage webhooks (owners, admins, developers; not support) are
/// mailed, once; at the suspension, once more.
#[tokio::test]
async fn a_failing_endpoint_warns_its_developers_before_it_is_suspended() {
    let smtp = SmtpStandIn::start().await;
    let receiver = crate::support::receiver::Receiver::start().await;
    receiver.script("/down", |_| crate::support::receiver::Reply::Status(500));
    let settings = [
        ("COURIER_SMTP_URL", smtp.url()),
        ("COURIER_MAIL_FROM", FROM.to_owned()),
        ("COURIER_SCHEDULER_INTERVAL_MS", "50".to_owned()),
        (
            "COURIER_WEBHOOK_EXTRA_CA",
            receiver.ca_path.to_string_lossy().into_owned(),
        ),
        ("COURIER_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        // One attempt per event within the test: each test event below is one failure.
        ("COURIER_WEBHOOK_RETRY_BASE_MS", "600000".to_owned()),
        ("COURIER_WEBHOOK_WARN_AFTER", "3".to_owned()),
        ("COURIER_WEBHOOK_SUSPEND_AFTER", "5".to_owned()),
    ];
    let app = TestApp::spawn_with(move |name| {
        settings
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    })
    .await;
    let merchant = app.create_merchant("Failing Hooks").await;
    let merchant_id = merchant.merchant_id.to_string();
    let mut owner = Visitor::new(&app);
    owner.sign_in(&merchant.test()).await;
    let owner_address = crate::console::owner_email(&merchant_id);
    crate::console::join(&app, &merchant_id, "dev@hooks.example", "developer").await;
    crate::console::join(&app, &merchant_id, "help@hooks.example", "support").await;
    let (status, endpoint) = status_and_json(
        app.request(Method::POST, "/v1/webhooks")
            .basic_auth(&merchant.test().key, Some(&merchant.test().secret))
            .json(&json!({"url": receiver.url("/down")}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{endpoint}");
    let path = format!("/console/webhooks/{}", endpoint["id"].as_str().unwrap());
    let csrf = csrf_of(&owner.get(&path).await.body);
    let notices = |to: &str| -> Vec<String> {
        smtp.received()
            .into_iter()
            .filter(|m| m.to == [to.to_owned()])
            .filter_map(|m| m.header("Subject"))
            .filter(|s| s.contains("webhook endpoint"))
            .collect()
    };
    fail_once(&mut owner, &receiver, (&path, &csrf), 1).await;
    fail_once(&mut owner, &receiver, (&path, &csrf), 2).await;
    let page = owner.get(&path).await;
    assert!(!page.body.contains("id=\"failing\""));
    fail_once(&mut owner, &receiver, (&path, &csrf), 3).await;
    let warned = mails_to(&smtp, "dev@hooks.example", 2).await;
    let warning = warned
        .iter()
        .find(|m| m.header("Subject").unwrap().contains("failing"))
        .expect("the warning");
    assert_eq!(
        warning.header("Subject").unwrap(),
        format!(
            "Failing Hooks: webhook endpoint failing ({})",
            receiver.url("/down")
        )
    );
    assert!(warning.body().contains("The last 3 deliveries"));
    assert!(warning.body().contains("After 5 failures in a row"));
    assert_eq!(link_in(warning, "/console/webhooks/"), path);
    let mut page = owner.get(&path).await;
    for _ in 0..200 {
        if page.body.contains("id=\"failing\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        page = owner.get(&path).await;
    }
    assert!(
        page.body
            .contains("The last 3 deliveries to this endpoint failed")
    );

    fail_once(&mut owner, &receiver, (&path, &csrf), 4).await;
    fail_once(&mut owner, &receiver, (&path, &csrf), 5).await;
    mails_to(&smtp, "dev@hooks.example", 3).await;
    mails_to(&smtp, &owner_address, 2).await;
    // Later failures (none here: it is suspended) and the mails already owed are not repeated.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for to in ["dev@hooks.example", owner_address.as_str()] {
        let subjects = notices(to);
        assert_eq!(subjects.len(), 2, "{to}: {subjects:?}");
        assert!(subjects[0].contains("failing") && subjects[1].contains("suspended"));
    }
    assert!(
        notices("help@hooks.example").is_empty(),
        "support does not manage webhooks"
    );
    let page = owner.get(&path).await;
    assert!(page.body.contains("<dd>suspended</dd>"));
    assert!(
        !page.body.contains("id=\"failing\""),
        "the suspension says it all"
    );
}

/// Sends the endpoint at `path` a test event from its page and waits for the receiver to have
/// had `count` requests.
async fn fail_once(
    owner: &mut Visitor,
    receiver: &crate::support::receiver::Receiver,
    (path, csrf): (&str, &str),
    count: usize,
) {
    let sent = owner
        .post(
            &format!("{path}/test-event"),
            &[("csrf", csrf), ("event", "job.booked")],
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    receiver
        .wait_for("/down", count, Duration::from_secs(10))
        .await;
}
