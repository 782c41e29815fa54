//! The couriers' app over HTTP, as a phone without JavaScript uses it: signing in with an
//! operator's one-time code (and with the credential), the shift, a bundle of two offered,
//! accepted, collected, one delivered with a photo and a drawn signature, the other returned,
//! each form sent twice moving its job once; the merchant's events and charges right; a
//! suspended courier signed out at once. The browser test drives the same pages with the
//! script, on a phone.

use std::time::Duration;

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};

use crate::console::{Page, Visitor, csrf_of};
use crate::fulfilment::{Floor, PICKUP, WAIT};
use crate::ops_console::{operator_email, operator_signed_in};
use crate::routes::two_parcels;

/// A PNG's first bytes: what the proof checks a file's type by.
pub(crate) const PHOTO: &[u8] = b"\x89PNG\r\n\x1a\nphoto-of-the-door";

/// The `value` of the hidden field `name` in the form posting to `action`.
pub(crate) fn form_field(body: &str, action: &str, name: &str) -> String {
    let form = body
        .split(&format!("action=\"{action}\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no form posting to {action}: {body}"));
    let form = form.split("</form>").next().unwrap();
    let at = form
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("no {name} in the form to {action}"))
        + name.len()
        + 15;
    form[at..].split('"').next().unwrap().to_owned()
}

/// The text between `start` and the next `end`.
fn between<'a>(body: &'a str, start: &str, end: &str) -> &'a str {
    body.split(start)
        .nth(1)
        .unwrap_or_else(|| panic!("no {start}: {body}"))
        .split(end)
        .next()
        .unwrap()
}

/// A one-time sign-in code for the courier, from an operator's console: the code and the
/// link's path.
pub(crate) async fn sign_in_code(floor: &Floor, courier_id: &str) -> (String, String) {
    let email = operator_email("ops");
    let (mut ops, _) = operator_signed_in(&floor.app, &email, "operations").await;
    let courier = ops.get(&format!("/ops/couriers/{courier_id}")).await;
    let action = format!("/ops/couriers/{courier_id}/sign-in-code");
    assert!(courier.body.contains(&action), "{}", courier.body);
    let issued = ops
        .post(&action, &[("csrf", &csrf_of(&courier.body))])
        .await;
    assert_eq!(issued.status, 200, "{}", issued.body);
    let code = between(&issued.body, "id=\"sign-in-code\"><strong>", "</strong>").to_owned();
    let link = between(&issued.body, "id=\"sign-in-link\" href=\"", "\"").to_owned();
    assert!(
        link.ends_with(&format!("/courier/sign-in?code={code}")),
        "{link}"
    );
    assert!(
        issued
            .body
            .contains("<svg role=\"img\" aria-label=\"QR code of the sign-in link\"")
    );
    let path = link[link.find("/courier/").unwrap()..].to_owned();
    (code, path)
}

/// Posts the form to `action` found on `page` with its hidden fields (and `extra`).
async fn send_form(phone: &mut Visitor, page: &Page, action: &str, extra: &[(&str, &str)]) -> Page {
    let csrf = form_field(&page.body, action, "csrf");
    let action_id = form_field(&page.body, action, "action_id");
    let mut fields = vec![("csrf", csrf.as_str()), ("action_id", action_id.as_str())];
    fields.extend_from_slice(extra);
    phone.post(action, &fields).await
}

#[tokio::test]
async fn a_courier_works_a_bundle_from_the_app_without_javascript() {
    let floor = Floor::start(&[("COURIER_OFFER_TIMEOUT_MS", "30000")]).await;
    let settings = format!("/merchants/{}/settings", floor.merchant.merchant_id);
    let (status, _) = floor
        .admin_call(
            Method::PATCH,
            &settings,
            Some(json!({"proof_photo_required": true, "proof_signature_required": true})),
        )
        .await;
    assert_eq!(status, 200);
    let rider = floor.rider("Ada App", "car", None).await;
    let mut phone = Visitor::new(&floor.app);

    // Signed out: the sign-in page, one field.
    let page = phone.get("/courier/").await;
    assert_eq!(page.location.as_deref(), Some("/courier/sign-in"));
    let page = phone.get("/courier/sign-in").await;
    assert_eq!(page.status, 200);
    let form = between(&page.body, "<form", "</form>");
    assert_eq!(form.matches("<input").count(), 1, "{form}");
    assert!(form.contains("name=\"credential\""));
    let csp = page.csp.clone().unwrap();
    assert!(
        csp.contains("manifest-src 'self'") && csp.contains("worker-src 'self'"),
        "{csp}"
    );
    assert!(
        page.body
            .contains("<link rel=\"manifest\" href=\"/courier/manifest.webmanifest\">")
    );
    // Installable: every icon the manifest names is served, of the type and size it says.
    let manifest: serde_json::Value = floor
        .app
        .request(reqwest::Method::GET, "/courier/manifest.webmanifest")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(manifest["display"], "standalone");
    for icon in manifest["icons"].as_array().unwrap() {
        let response = floor
            .app
            .request(reqwest::Method::GET, icon["src"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{icon}");
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(kind, icon["type"].as_str().unwrap(), "{icon}");
        let bytes = response.bytes().await.unwrap();
        if kind == "image/png" {
            // The PNG header's width and height (IHDR, bytes 16 to 24).
            let side = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
            let sizes = format!("{}x{}", side(16), side(20));
            assert_eq!(sizes, icon["sizes"].as_str().unwrap(), "{icon}");
        }
    }
    let wrong = phone
        .post("/courier/sign-in", &[("credential", "ABCD-EFGH")])
        .await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(wrong.body.contains("id=\"sign-in-error\""));

    // An operator's code: typed any way, once.
    let (code, link) = sign_in_code(&floor, &rider.id).await;
    let page = phone.get(&link).await;
    assert!(
        page.body.contains(&format!("value=\"{code}\"")),
        "{}",
        page.body
    );
    let signed_in = phone
        .post(
            "/courier/sign-in",
            &[("credential", &code.to_lowercase().replace('-', " "))],
        )
        .await;
    assert_eq!(
        signed_in.location.as_deref(),
        Some("/courier/"),
        "{}",
        signed_in.body
    );
    let cookie = signed_in.set_cookie.unwrap();
    for part in [
        "courier_app=",
        "Path=/courier",
        "HttpOnly",
        "SameSite=Strict",
    ] {
        assert!(cookie.contains(part), "{cookie}");
    }
    // The audit trail names who gave the code, never the code.
    let (status, trail) = floor
        .admin_call(
            Method::GET,
            "/audit?action=courier.sign_in_code_issued",
            None,
        )
        .await;
    assert_eq!(status, 200, "{trail}");
    assert_eq!(trail["items"][0]["target_id"], rider.id.as_str());
    assert!(!trail.to_string().contains(&code), "{trail}");
    let mut someone = Visitor::new(&floor.app);
    let reused = someone
        .post("/courier/sign-in", &[("credential", &code)])
        .await;
    assert_eq!(reused.status, 401, "a code works once");

    // The shift: offline, then online (the form needs the session's token).
    let home = phone.get("/courier/").await;
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("You are offline"), "{}", home.body);
    let csrf = csrf_of(&home.body);
    let refused = phone.post("/courier/shift", &[("online", "true")]).await;
    assert_eq!(refused.status, 403);
    // Two parcels of one pickup, booked before anyone is online: one offer of both.
    let [first, second] = two_parcels(&floor).await;
    let online = phone
        .post("/courier/shift", &[("csrf", &csrf), ("online", "true")])
        .await;
    assert_eq!(online.location.as_deref(), Some("/courier/"));
    let (latitude, longitude) = (PICKUP.0.to_string(), PICKUP.1.to_string());
    let position = phone
        .post(
            "/courier/position",
            &[
                ("csrf", &csrf),
                ("latitude", &latitude),
                ("longitude", &longitude),
            ],
        )
        .await;
    assert_eq!(position.status, 204, "{}", position.body);
    let nowhere = phone
        .post(
            "/courier/position",
            &[("csrf", &csrf), ("latitude", "91"), ("longitude", "0")],
        )
        .await;
    assert_eq!(nowhere.status, 422);

    let started = std::time::Instant::now();
    let home = loop {
        let home = phone.get("/courier/").await;
        if home.body.contains("class=\"offer\"") {
            break home;
        }
        assert!(
            started.elapsed() < WAIT,
            "no offer in the app: {}",
            home.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let offer = between(&home.body, "<article class=\"offer\"", "</article>");
    assert!(offer.contains("2 jobs"), "{offer}");
    for job in [&first, &second] {
        assert!(
            offer.contains(job["reference"].as_str().unwrap()),
            "{offer}"
        );
    }
    assert_eq!(
        between(offer, "<ol class=\"stops\">", "</ol>")
            .matches("<li")
            .count(),
        4
    );
    assert!(
        offer.contains("<time class=\"countdown\" datetime=\""),
        "{offer}"
    );
    assert!(
        offer.contains("<svg viewBox=") && offer.contains("class=\"route\""),
        "{offer}"
    );
    // The demo market pays its couriers 2.50 a job and 0.60 a km of each job's road
    // distance as quoted: the offer says what both earn.
    let pool = floor.app.pool().await;
    let ids = vec![
        first["id"].as_str().unwrap().to_owned(),
        second["id"].as_str().unwrap().to_owned(),
    ];
    let metres: i64 = sqlx::query_scalar(
        "SELECT sum(q.distance_metres)::bigint FROM jobs j JOIN quotes q ON q.id = j.quote_id \
         WHERE j.id = ANY($1::uuid[])",
    )
    .bind(&ids)
    .fetch_one(&pool)
    .await
    .unwrap();
    let earns = 2 * 250 + (60 * metres + 500) / 1000;
    let pay = format!("{}.{:02} USD", earns / 100, earns % 100);
    assert!(
        offer.contains(&format!("You earn <strong>{pay}</strong>")),
        "{pay}: {offer}"
    );
    let offer_id = between(offer, "id=\"offer-", "\"").to_owned();
    let accept = format!("/courier/offers/{offer_id}/accept");

    // Accepted (and the same form sent again): both jobs the courier's, once.
    let accepted = send_form(&mut phone, &home, &accept, &[]).await;
    assert_eq!(
        accepted.location.as_deref(),
        Some("/courier/"),
        "{}",
        accepted.body
    );
    let again = send_form(&mut phone, &home, &accept, &[]).await;
    assert_eq!(
        again.location.as_deref(),
        Some("/courier/"),
        "{}",
        again.body
    );

    // The route: both pickups, then both drop-offs, with calls and navigation.
    let home = phone.get("/courier/").await;
    let cards = between(&home.body, "<ol class=\"stop-cards\">", "</ol>\n</section>");
    assert_eq!(
        cards.matches("<li class=\"stop-card pickup\"").count(),
        2,
        "{cards}"
    );
    assert_eq!(
        cards.matches("<li class=\"stop-card dropoff\"").count(),
        2,
        "{cards}"
    );
    assert!(cards.contains("href=\"tel:+966114635555\""), "{cards}");
    assert!(cards.contains("href=\"geo:"), "{cards}");
    for job in [&first, &second] {
        let action = format!("/courier/jobs/{}/collected", job["id"].as_str().unwrap());
        let collected = send_form(&mut phone, &home, &action, &[]).await;
        assert_eq!(
            collected.location.as_deref(),
            Some("/courier/"),
            "{}",
            collected.body
        );
        let twice = send_form(&mut phone, &home, &action, &[]).await;
        assert_eq!(
            twice.location.as_deref(),
            Some("/courier/"),
            "{}",
            twice.body
        );
    }

    // The first delivered: the job's proof is asked for before it is taken.
    let first_id = first["id"].as_str().unwrap();
    let deliver = phone
        .get(&format!("/courier/jobs/{first_id}/deliver"))
        .await;
    assert_eq!(deliver.status, 200, "{}", deliver.body);
    assert!(deliver.body.contains("capture=\"environment\""));
    assert!(deliver.body.contains("enctype=\"multipart/form-data\""));
    let delivered_action = format!("/courier/jobs/{first_id}/delivered");
    let csrf = form_field(&deliver.body, &delivered_action, "csrf");
    let action_id = form_field(&deliver.body, &delivered_action, "action_id");
    let base64 = base64::engine::general_purpose::STANDARD;
    let signature = format!(
        "data:image/png;base64,{}",
        base64.encode(b"\x89PNG\r\n\x1a\nsigned")
    );
    let form = |photo: bool| {
        let mut form = reqwest::multipart::Form::new()
            .text("csrf", csrf.clone())
            .text("action_id", action_id.clone())
            .text("outcome", "handed_to_recipient")
            .text("recipient_name", "Dana Dropoff")
            .text("signature", signature.clone())
            .text("note", "At the door");
        let part = reqwest::multipart::Part::bytes(if photo { PHOTO.to_vec() } else { Vec::new() })
            .file_name(if photo { "door.png" } else { "" })
            .mime_str(if photo {
                "image/png"
            } else {
                "application/octet-stream"
            })
            .unwrap();
        form = form.part("photo", part);
        form
    };
    let missing = phone.post_multipart(&delivered_action, form(false)).await;
    assert_eq!(missing.status, 422, "{}", missing.body);
    assert!(
        missing.body.contains("proof.photo_required"),
        "{}",
        missing.body
    );
    assert!(
        missing.body.contains("value=\"Dana Dropoff\""),
        "what was typed stays"
    );
    let delivered = phone.post_multipart(&delivered_action, form(true)).await;
    assert_eq!(
        delivered.location.as_deref(),
        Some("/courier/"),
        "{}",
        delivered.body
    );
    let again = phone.post_multipart(&delivered_action, form(true)).await;
    assert_eq!(
        again.location.as_deref(),
        Some("/courier/"),
        "{}",
        again.body
    );

    // The second returned, with its reason.
    let second_id = second["id"].as_str().unwrap();
    let deliver = phone
        .get(&format!("/courier/jobs/{second_id}/deliver"))
        .await;
    let returned_action = format!("/courier/jobs/{second_id}/returned");
    let no_reason = send_form(&mut phone, &deliver, &returned_action, &[("reason", " ")]).await;
    assert_eq!(no_reason.status, 422, "{}", no_reason.body);
    assert!(
        no_reason.body.contains("job.reason_required"),
        "{}",
        no_reason.body
    );
    let returned = send_form(
        &mut phone,
        &deliver,
        &returned_action,
        &[("reason", "Nobody at the door")],
    )
    .await;
    assert_eq!(
        returned.location.as_deref(),
        Some("/courier/"),
        "{}",
        returned.body
    );

    // The merchant heard of each move once, with the proof and the reason; both captured.
    let data = floor.event_data(&first, "job.delivered").await;
    assert_eq!(
        data["proof"],
        json!({"outcome": "handed_to_recipient", "recipientName": "Dana Dropoff",
            "hasPhoto": true, "hasSignature": true})
    );
    let data = floor.event_data(&second, "job.returned").await;
    assert_eq!(data["reason"], "Nobody at the door");
    for job in [&first, &second] {
        floor.charge_once(job, "captured").await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (job, events) in [
        (
            &first,
            ["job.courier_assigned", "job.picked_up", "job.delivered"],
        ),
        (
            &second,
            ["job.courier_assigned", "job.picked_up", "job.returned"],
        ),
    ] {
        for event in events {
            assert_eq!(
                floor.event_count(job, event),
                1,
                "{event} of {}",
                job["reference"]
            );
        }
    }
    let detail: Value = floor.job(&first).await;
    assert_eq!(detail["status"], "delivered");
    let home = phone.get("/courier/").await;
    assert!(
        home.body.contains("<dd id=\"today-delivered\">1</dd>"),
        "{}",
        home.body
    );
    assert!(
        home.body.contains("<dd id=\"today-returned\">1</dd>"),
        "{}",
        home.body
    );
    // Both finished, both earned: the same as offered.
    assert!(
        home.body
            .contains(&format!("<dd id=\"today-earned\">{pay}</dd>")),
        "{}",
        home.body
    );
    assert!(home.body.contains("No job under way."));
    // The operators see the same day on the courier's page.
    let mut ops = crate::ops_console::signed_in(&floor.app).await;
    let page = ops.get(&format!("/ops/couriers/{}", rider.id)).await;
    let day = page.body.split("id=\"courier-day\"").nth(1).unwrap();
    let day = day.split("</dl>").next().unwrap();
    assert!(day.contains("1 delivered, 1 returned"), "{day}");
    assert!(
        day.contains(&format!("<dd id=\"courier-earned\">{pay}</dd>")),
        "{day}"
    );
}

#[tokio::test]
async fn a_suspended_courier_is_signed_out_at_once_and_signing_out_ends_the_session() {
    let floor = Floor::start(&[]).await;
    let rider = floor.rider("Sam Suspended", "car", None).await;
    let mut phone = Visitor::new(&floor.app);
    let signed_in = phone
        .post("/courier/sign-in", &[("credential", &rider.token)])
        .await;
    assert_eq!(
        signed_in.location.as_deref(),
        Some("/courier/"),
        "{}",
        signed_in.body
    );
    let home = phone.get("/courier/").await;
    assert_eq!(home.status, 200);
    let kept = phone.cookie.clone();

    // The courier's forms carry its own token, the same in its next session: a move kept on
    // the phone while signed out is still its move.
    let mut again = Visitor::new(&floor.app);
    assert_eq!(
        again
            .post("/courier/sign-in", &[("credential", &rider.token)])
            .await
            .status,
        303
    );
    assert_eq!(
        csrf_of(&again.get("/courier/").await.body),
        csrf_of(&home.body)
    );
    // Signing out ends the session, also for a copy of its cookie.
    let out = phone
        .post("/courier/sign-out", &[("csrf", &csrf_of(&home.body))])
        .await;
    assert_eq!(out.location.as_deref(), Some("/courier/sign-in"));
    let mut copy = Visitor::new(&floor.app);
    copy.cookie = kept;
    assert_eq!(
        copy.get("/courier/").await.location.as_deref(),
        Some("/courier/sign-in")
    );

    // Suspended while signed in: the next page says so and the session is over.
    let signed_in = phone
        .post("/courier/sign-in", &[("credential", &rider.token)])
        .await;
    assert_eq!(signed_in.status, 303);
    let email = operator_email("ops");
    let (mut ops, _) = operator_signed_in(&floor.app, &email, "operations").await;
    let courier = ops.get(&format!("/ops/couriers/{}", rider.id)).await;
    let suspended = ops
        .post(
            "/ops/markets/demo/couriers/suspend",
            &[
                ("csrf", &csrf_of(&courier.body)),
                ("courier", &rider.id),
                ("reason", "kit check"),
            ],
        )
        .await;
    assert_eq!(suspended.status, 303, "{}", suspended.body);
    let page = phone.get("/courier/").await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("You are suspended") && page.body.contains("kit check"));
    assert!(page.set_cookie.unwrap().contains("Max-Age=0"));
    let again = phone
        .post("/courier/sign-in", &[("credential", &rider.token)])
        .await;
    assert_eq!(again.status, 403, "{}", again.body);
    // No code for a suspended courier.
    let courier = ops.get(&format!("/ops/couriers/{}", rider.id)).await;
    assert!(!courier.body.contains("sign-in-code"));
    let refused = ops
        .post(
            &format!("/ops/couriers/{}/sign-in-code", rider.id),
            &[("csrf", &csrf_of(&courier.body))],
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);

    // Viewers may not give codes.
    let (mut viewer, _) = operator_signed_in(&floor.app, "viewer@ops.example", "viewer").await;
    let page = viewer.get(&format!("/ops/couriers/{}", rider.id)).await;
    let refused = viewer
        .post(
            &format!("/ops/couriers/{}/sign-in-code", rider.id),
            &[("csrf", &csrf_of(&page.body))],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
}

#[tokio::test]
async fn a_courier_past_its_budget_of_requests_waits() {
    let floor = Floor::start(&[("COURIER_RATE_LIMIT_COURIER_PER_MINUTE", "3")]).await;
    let busy = floor.rider("Bea Busy", "car", None).await;
    let calm = floor.rider("Cal Calm", "car", None).await;
    for _ in 0..3 {
        let response = floor
            .courier_request(&busy.token, Method::GET, "/me")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["ratelimit-limit"], "3");
    }
    let response = floor
        .courier_request(&busy.token, Method::GET, "/me")
        .send()
        .await
        .unwrap();
    assert!(response.headers().contains_key("retry-after"));
    crate::support::assert_refusal(response, 429, "rate_limited").await;
    // Another courier has its own budget; the app spends the same one.
    let (status, _) = floor.courier_call(&calm, Method::GET, "/me", None).await;
    assert_eq!(status, 200);
    let mut phone = Visitor::new(&floor.app);
    let signed_in = phone
        .post("/courier/sign-in", &[("credential", &busy.token)])
        .await;
    assert_eq!(signed_in.status, 303);
    let page = phone.get("/courier/").await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.retry_after.is_some());
}
