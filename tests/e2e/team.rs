//! Merchants' teams over HTTP, as people use the console without JavaScript: an owner invited
//! by an operator (the command line, the operator API), joining by the link, inviting others
//! from the console; roles enforced on every form; a removed member's session ending; a key
//! change asking for the password again; invitations used twice, expired or withdrawn.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::console::{
    PASSWORD, Visitor, book, csrf_of, invitation_token, invite, join, once_of, shop,
};
use crate::support::{MerchantCredentials, TestApp, assert_refusal, status_and_json};

/// Sends the form posting to `action` on `page` (its CSRF and one-time tokens, and `fields`).
async fn send_form(
    visitor: &mut Visitor,
    page: &str,
    action: &str,
    fields: &[(&str, &str)],
) -> crate::console::Page {
    let (csrf, once) = (csrf_of(page), once_of(page, action));
    let mut form = vec![("csrf", csrf.as_str()), ("once", once.as_str())];
    form.extend_from_slice(fields);
    visitor.post(action, &form).await
}

async fn audited(app: &TestApp, action: &str) -> Vec<Value> {
    let (_, audit) = status_and_json(
        app.admin(Method::GET, &format!("/audit?action={action}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    audit["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_owner_joins_by_invitation_and_brings_in_a_team_whose_roles_are_enforced() {
    let (app, merchant) = shop("Team Goods").await;
    let merchant_id = merchant.merchant_id.to_string();
    let job = book(&app, &merchant.test()).await;

    // The operator invites the first owner; the link opens the form to join.
    let invitation = invite(&app, &merchant_id, "Ana@Team.example", "owner").await;
    assert_eq!(invitation["role"], "owner");
    assert_eq!(invitation["email"], "Ana@Team.example");
    let path = format!("/console/invitations/{}", invitation_token(&invitation));
    let mut owner = Visitor::new(&app);
    let form = owner.get(&path).await;
    assert_eq!(form.status, 200);
    assert!(form.body.contains("Join Team Goods"), "{}", form.body);
    assert!(form.body.contains("name=\"password_again\""));

    // Passwords that differ, one too short, a name left out: refused, the link still open.
    let differ = owner
        .post(
            &path,
            &[
                ("name", "Ana"),
                ("password", PASSWORD),
                ("password_again", "other"),
            ],
        )
        .await;
    assert_eq!(differ.status, 422);
    assert!(differ.body.contains("differ"), "{}", differ.body);
    let short = owner
        .post(
            &path,
            &[
                ("name", "Ana"),
                ("password", "short"),
                ("password_again", "short"),
            ],
        )
        .await;
    assert_eq!(short.status, 422);
    assert!(
        short.body.contains("at least 10 characters"),
        "{}",
        short.body
    );
    let nameless = owner
        .post(
            &path,
            &[
                ("name", " "),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(nameless.status, 422);
    let joined = owner
        .post(
            &path,
            &[
                ("name", "Ana"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(
        (joined.status, joined.location.as_deref()),
        (303, Some("/console/jobs"))
    );
    let jobs = owner.get("/console/jobs").await;
    assert!(
        jobs.body.contains("Team Goods"),
        "the merchant's name is shown"
    );
    assert!(jobs.body.contains("Ana (Owner)"), "{}", jobs.body);

    // Sent again from the browser it signed in (a double click): on to the console.
    let repeat = owner
        .post(
            &path,
            &[
                ("name", "Ana"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(repeat.location.as_deref(), Some("/console/jobs"));

    // The link works once.
    let again = Visitor::new(&app).get(&path).await;
    assert_eq!(again.status, 410);
    assert!(again.body.contains("was used"), "{}", again.body);
    let twice = Visitor::new(&app)
        .post(
            &path,
            &[
                ("name", "Eve"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(twice.status, 410);

    // The owner invites a viewer from the team page; the link is on that page, once.
    let team = owner.get("/console/team").await;
    assert!(team.body.contains("Invite someone"), "{}", team.body);
    let csrf = csrf_of(&team.body);
    let once = once_of(&team.body, "/console/team/invitations");
    let invited = owner
        .post(
            "/console/team/invitations",
            &[
                ("csrf", &csrf),
                ("once", &once),
                ("email", "vic@team.example"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(invited.status, 200, "{}", invited.body);
    let at = invited.body.find("/console/invitations/").unwrap();
    let link = invited.body[at..].split('<').next().unwrap().to_owned();
    let repeat = owner
        .post(
            "/console/team/invitations",
            &[
                ("csrf", &csrf),
                ("once", &once),
                ("email", "vic@team.example"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert!(!repeat.body.contains(&link), "the link is shown once");
    let mut viewer = Visitor::new(&app);
    let joined = viewer
        .post(
            &link,
            &[
                ("name", "Vic"),
                ("password", PASSWORD),
                ("password_again", PASSWORD),
            ],
        )
        .await;
    assert_eq!(joined.status, 303, "{}", joined.body);

    // The viewer reads, is offered no form, and is refused every one sent anyway.
    let job_path = format!("/console/jobs/{}", job["id"].as_str().unwrap());
    let page = viewer.get(&job_path).await;
    assert_eq!(page.status, 200);
    assert!(!page.body.contains("Cancel this job"), "not offered");
    let keys = viewer.get("/console/keys").await;
    assert!(!keys.body.contains("Make the key"), "{}", keys.body);
    assert!(!keys.body.contains("action=\"/console/settings\""));
    let hooks = viewer.get("/console/webhooks").await;
    assert!(
        !hooks.body.contains("class=\"add-endpoint\""),
        "{}",
        hooks.body
    );
    let team = viewer.get("/console/team").await;
    assert!(!team.body.contains("Invite someone"));
    assert!(team.body.contains("Your role (Viewer) reads the team"));
    let sandbox = viewer.get("/console/sandbox").await;
    assert_eq!(sandbox.status, 403);
    let csrf = csrf_of(&page.body);
    for (action, form) in [
        (format!("{job_path}/cancel"), vec![("reason", "viewer")]),
        ("/console/keys".to_owned(), vec![("label", "sneaky")]),
        (
            "/console/settings".to_owned(),
            vec![("notify_customer", "on")],
        ),
        (
            "/console/webhooks".to_owned(),
            vec![("url", "https://example.com/hook"), ("events", "")],
        ),
        (
            "/console/team/invitations".to_owned(),
            vec![("email", "mal@team.example"), ("role", "owner")],
        ),
        (
            "/console/cards".to_owned(),
            vec![("card", "4242424242424242")],
        ),
    ] {
        let mut fields = vec![("csrf", csrf.as_str())];
        fields.extend(form);
        let refused = viewer.post(&action, &fields).await;
        assert_eq!(refused.status, 403, "{action}: {}", refused.body);
        assert!(
            refused.body.contains("Your role in Team Goods"),
            "{}",
            refused.body
        );
    }
    let (_, seen) = status_and_json(
        app.request(
            Method::GET,
            &format!("/v1/jobs/{}", job["id"].as_str().unwrap()),
        )
        .basic_auth(&merchant.test().key, Some(&merchant.test().secret))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_ne!(seen["status"], "cancelled");

    // The owner makes the viewer support: now they cancel.
    let vic = member_id(&owner.get("/console/team").await.body, "vic@team.example");
    let team = owner.get("/console/team").await;
    let action = format!("/console/team/members/{vic}/role");
    let changed = send_form(&mut owner, &team.body, &action, &[("role", "support")]).await;
    assert_eq!(
        changed.location.as_deref(),
        Some("/console/team?done=role_changed")
    );
    let page = viewer.get(&job_path).await;
    assert!(page.body.contains("Cancel this job"), "{}", page.body);
    assert!(page.body.contains("Vic (Support)"));

    // An admin invites, but makes no owner; nobody changes their own place; a team keeps an
    // owner.
    let mut admin = join(&app, &merchant_id, "ada@team.example", "admin").await;
    let team = admin.get("/console/team").await;
    assert!(
        !team.body.contains("<option value=\"owner\""),
        "not offered"
    );
    let refused = admin
        .post(
            "/console/team/invitations",
            &[
                ("csrf", &csrf_of(&team.body)),
                ("email", "own@team.example"),
                ("role", "owner"),
            ],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // Ana's row offers the admin no form; her id, as a forged form would name it.
    let pool = app.pool().await;
    let ana: uuid::Uuid = sqlx::query_scalar("SELECT id FROM people WHERE email_key = $1")
        .bind("ana@team.example")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert!(!team.body.contains(&format!("/console/team/members/{ana}/")));
    let refused = admin
        .post(
            &format!("/console/team/members/{ana}/remove"),
            &[("csrf", &csrf_of(&team.body))],
        )
        .await;
    assert_eq!(refused.status, 403, "an admin does not remove an owner");
    let team = owner.get("/console/team").await;
    let own = owner
        .post(
            &format!("/console/team/members/{ana}/role"),
            &[("csrf", &csrf_of(&team.body)), ("role", "viewer")],
        )
        .await;
    assert_eq!(own.status, 409, "{}", own.body);

    // The owner removes the support member: their session ends at once.
    let action = format!("/console/team/members/{vic}/remove");
    let removed = send_form(&mut owner, &team.body, &action, &[]).await;
    assert_eq!(
        removed.location.as_deref(),
        Some("/console/team?done=removed")
    );
    let gone = viewer.get("/console/jobs").await;
    assert_eq!(
        (gone.status, gone.location.as_deref()),
        (303, Some("/console/sign-in"))
    );
    let refused = Visitor::new(&app)
        .sign_in_as("vic@team.example", PASSWORD)
        .await;
    assert_eq!(refused.status, 403, "in no team: {}", refused.body);

    // The trail names each person.
    let invited = audited(&app, "team.member_invited").await;
    assert!(invited.iter().any(|e| e["operator"] == "admin"));
    assert!(invited.iter().any(|e| e["operator"] == "Ana@Team.example"));
    let joined = audited(&app, "team.member_joined").await;
    assert_eq!(joined.len(), 3, "{joined:?}");
    let changed = audited(&app, "team.role_changed").await;
    assert_eq!(changed[0]["before"]["role"], "viewer");
    assert_eq!(changed[0]["after"]["role"], "support");
    let removed = audited(&app, "team.member_removed").await;
    assert_eq!(removed[0]["operator"], "Ana@Team.example");
    assert_eq!(removed[0]["target_id"], vic.as_str());

    // The header switches to live, and to no team the person is not in.
    let jobs = owner.get("/console/jobs").await;
    assert!(jobs.body.contains("Switch to Live"));
    let live = owner.switch_to(&merchant_id, "live").await;
    assert_eq!(live.location.as_deref(), Some("/console/jobs"));
    let jobs = owner.get("/console/jobs").await;
    assert!(jobs.body.contains(">Live<"));
    assert!(
        !jobs.body.contains(job["reference"].as_str().unwrap()),
        "test jobs stay in test"
    );
    let other = app.create_merchant("Not Ana's").await;
    let refused = owner
        .switch_to(&other.merchant_id.to_string(), "test")
        .await;
    assert_eq!(refused.status, 404);
    app.stop().await;
}

/// The id in the team page's forms for the member with `email` (in their row).
fn member_id(body: &str, email: &str) -> String {
    let row = &body[body.find(&format!("<td>{email}</td>")).expect("the member")..];
    let row = row.split("</tr>").next().unwrap();
    let at = row.find("/console/team/members/").expect("their forms") + 22;
    row[at..].split('/').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_key_change_asks_for_the_password_again_past_the_window() {
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_REAUTHENTICATION_MS" => Some("1".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Team Careful").await;
    let mut owner = Visitor::new(&app);
    owner.sign_in(&merchant.test()).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let keys = owner.get("/console/keys").await;
    let csrf = csrf_of(&keys.body);
    let once = once_of(&keys.body, "/console/keys");
    let form = [
        ("csrf", csrf.as_str()),
        ("once", once.as_str()),
        ("label", "till"),
    ];

    // Asked, with the form kept to be sent again; nothing made.
    let asked = owner.post("/console/keys", &form).await;
    assert_eq!(asked.status, 401, "{}", asked.body);
    assert!(asked.body.contains("Confirm it is you"), "{}", asked.body);
    assert!(
        asked.body.contains("name=\"label\" value=\"till\""),
        "{}",
        asked.body
    );
    assert!(!asked.body.contains("<code id=\"new-secret\">"));
    // A wrong password: asked again.
    let mut wrong = form.to_vec();
    wrong.push(("reauthentication", "not it at all"));
    let refused = owner.post("/console/keys", &wrong).await;
    assert_eq!(refused.status, 401);
    assert!(
        refused.body.contains("neither your password nor a code"),
        "{}",
        refused.body
    );
    // The right one: the key is made, once.
    let mut right = form.to_vec();
    right.push(("reauthentication", PASSWORD));
    let made = owner.post("/console/keys", &right).await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert!(made.body.contains("<code id=\"new-secret\">"));
    let (_, detail) = status_and_json(
        app.admin(Method::GET, &format!("/merchants/{}", merchant.merchant_id))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(detail["keys"].as_array().unwrap().len(), 3, "{detail}");

    // The settings too, and revoking.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let asked = owner
        .post(
            "/console/settings",
            &[("csrf", &csrf), ("notify_customer", "on")],
        )
        .await;
    assert_eq!(asked.status, 401, "{}", asked.body);
    let key = merchant.live().key;
    let asked = owner
        .post(
            &format!("/console/keys/{key}/revoke"),
            &[("csrf", &csrf), ("confirm", "yes")],
        )
        .await;
    assert_eq!(
        asked.status, 404,
        "a live key is no key in the test environment"
    );
    let key = merchant.test().key;
    let asked = owner
        .post(
            &format!("/console/keys/{key}/revoke"),
            &[("csrf", &csrf), ("confirm", "yes")],
        )
        .await;
    assert_eq!(asked.status, 401, "{}", asked.body);
    assert!(asked.body.contains("name=\"confirm\" value=\"yes\""));
    app.stop().await;
}

#[tokio::test]
async fn invitations_are_refused_with_codes_and_closed_links_say_why() {
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_INVITATION_TTL_MS" => Some("1500".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Team Rules").await;
    let merchant_id = merchant.merchant_id.to_string();
    let post = |merchant: &str, body: Value| {
        app.admin(Method::POST, &format!("/merchants/{merchant}/invitations"))
            .json(&body)
            .send()
    };
    assert_refusal(
        post(
            &merchant_id,
            json!({"email": "not an address", "role": "viewer"}),
        )
        .await
        .unwrap(),
        422,
        "team.invalid_email",
    )
    .await;
    assert_refusal(
        post(
            &merchant_id,
            json!({"email": "a@team.example", "role": "root"}),
        )
        .await
        .unwrap(),
        422,
        "team.invalid_role",
    )
    .await;
    assert_refusal(
        post(
            &uuid::Uuid::new_v4().to_string(),
            json!({"email": "a@team.example", "role": "viewer"}),
        )
        .await
        .unwrap(),
        404,
        "merchant.not_found",
    )
    .await;
    join(&app, &merchant_id, "in@team.example", "owner").await;
    assert_refusal(
        post(
            &merchant_id,
            json!({"email": "IN@team.example", "role": "viewer"}),
        )
        .await
        .unwrap(),
        409,
        "team.already_member",
    )
    .await;

    // A link that names nothing; one withdrawn; one expired.
    let unknown = Visitor::new(&app)
        .get("/console/invitations/nothing-here")
        .await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.body.contains("No such invitation"));
    let withdrawn = invite(&app, &merchant_id, "late@team.example", "viewer").await;
    let mut owner = Visitor::new(&app);
    owner.sign_in_as("in@team.example", PASSWORD).await;
    let team = owner.get("/console/team").await;
    let id = withdrawn["invitation_id"].as_str().unwrap();
    let action = format!("/console/team/invitations/{id}/withdraw");
    let done = send_form(&mut owner, &team.body, &action, &[]).await;
    assert_eq!(
        done.location.as_deref(),
        Some("/console/team?done=withdrawn")
    );
    let page = Visitor::new(&app)
        .get(&format!(
            "/console/invitations/{}",
            invitation_token(&withdrawn)
        ))
        .await;
    assert_eq!(page.status, 410);
    assert!(page.body.contains("withdrawn"), "{}", page.body);
    let expiring = invite(&app, &merchant_id, "slow@team.example", "viewer").await;
    crate::support::eventually(
        "the invitation to expire",
        Duration::from_secs(5),
        Duration::from_millis(100),
        || async {
            let page = Visitor::new(&app)
                .get(&format!(
                    "/console/invitations/{}",
                    invitation_token(&expiring)
                ))
                .await;
            (page.status == 410 && page.body.contains("expired")).then_some(())
        },
    )
    .await;

    // Someone with an account joins a second team with that account's password.
    let second = app.create_merchant("Team Second").await;
    let invitation = invite(
        &app,
        &second.merchant_id.to_string(),
        "in@team.example",
        "viewer",
    )
    .await;
    let path = format!("/console/invitations/{}", invitation_token(&invitation));
    let mut visitor = Visitor::new(&app);
    let form = visitor.get(&path).await;
    assert!(
        form.body.contains("has a Courier account already"),
        "{}",
        form.body
    );
    assert!(!form.body.contains("password_again"));
    let wrong = visitor
        .post(&path, &[("password", "not the password")])
        .await;
    assert_eq!(wrong.status, 401);
    let joined = visitor.post(&path, &[("password", PASSWORD)]).await;
    assert_eq!(joined.status, 303, "{}", joined.body);
    let account = visitor.get("/console/account").await;
    assert!(account.body.contains("Team Rules") && account.body.contains("Team Second"));
    assert!(account.body.contains("This session is in it"));

    // Sessions are listed and revocable: the person's other browsers (the one that joined
    // the first team, the owner's) are signed out from here.
    let listed = account.body.matches("/revoke\"").count();
    assert_eq!(listed, 3, "{}", account.body);
    let others: Vec<String> = account
        .body
        .split("action=\"/console/sessions/")
        .skip(1)
        .filter(|form| {
            !form
                .split("</form>")
                .next()
                .unwrap()
                .contains("Sign out here")
        })
        .map(|form| form.split('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(others.len(), 2, "{others:?}");
    for other in others {
        let revoked = visitor
            .post(
                &format!("/console/sessions/{other}/revoke"),
                &[("csrf", &csrf_of(&account.body))],
            )
            .await;
        assert_eq!(
            revoked.location.as_deref(),
            Some("/console/account?done=revoked")
        );
    }
    let gone = owner.get("/console/jobs").await;
    assert_eq!(gone.location.as_deref(), Some("/console/sign-in"));
    assert_eq!(visitor.get("/console/jobs").await.status, 200);
    app.stop().await;
}
