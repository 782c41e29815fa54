//! Live money through the Adyen adapter (`plugins/adyen-payments`), against a local HTTPS
//! stand-in that follows Adyen's documented Checkout API and notifications
//! (`support::adyen`): the card stored by the Drop-in and announced by notification, bookings
//! held on it, captures, releases and refunds that Adyen accepts and confirms later by signed
//! notification, declines by Adyen's refusal reasons, and a capture Adyen reports failed. Each
//! test compares the stand-in's payments with the service's charges.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::live_payments::{book_at, deliver, quoted};
use crate::support::adyen::{
    AdyenStandIn, Fault, NOTIFICATION_PASSWORD, NOTIFICATION_USER, Payment, notification,
};
use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually, status_and_json,
};

const WAIT: Duration = Duration::from_secs(20);

/// A service whose live environment takes money through the Adyen adapter and the stand-in,
/// which sends its notifications to the service; and a merchant with its live credential.
struct Live {
    adyen: AdyenStandIn,
    app: TestApp,
    live: Credential,
    merchant_id: Uuid,
}

impl Live {
    async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// With `extra` settings for the service.
    async fn start_with(extra: &[(&str, &str)]) -> Self {
        let adyen = AdyenStandIn::start().await;
        let mut env = adyen.service_env();
        env.push(("COURIER_CHARGE_RETRY_BASE_MS".into(), "200".into()));
        env.push(("COURIER_CARD_FORM_CURRENCY".into(), "EUR".into()));
        env.extend(
            extra
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
        );
        let app = TestApp::spawn_with(move |name| {
            env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        })
        .await;
        adyen.notify_to(app.url("/v1/provider-events/live"));
        let merchant = app.create_merchant("Adyen Goods BV").await;
        let live = Self {
            adyen,
            live: merchant.live(),
            merchant_id: merchant.merchant_id,
            app,
        };
        eventually(
            "quotes to become available",
            Duration::from_secs(10),
            Duration::from_millis(25),
            || async {
                let (status, _) = live
                    .call(
                        Method::POST,
                        "/v1/quotes",
                        Some(crate::quotes::journey(Some("car"))),
                    )
                    .await;
                (status != 503).then_some(())
            },
        )
        .await;
        live
    }

    /// Sends `notification` as Adyen's webhook does, with its Basic credentials.
    async fn notify(&self, notification: &Value) -> reqwest::Response {
        self.app
            .request(Method::POST, "/v1/provider-events/live")
            .basic_auth(NOTIFICATION_USER, Some(NOTIFICATION_PASSWORD))
            .json(notification)
            .send()
            .await
            .unwrap()
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.app.request(method, path).auth(&self.live);
        if let Some(body) = body {
            request = request.json(&body);
        }
        status_and_json(request.send().await.unwrap()).await
    }

    /// Opens the card form, completes Adyen's Drop-in with `number` under `holder`, and waits
    /// for the card Adyen's notification announces; answers the payment method.
    async fn store_card(&self, number: &str, holder: &str) -> Value {
        let (status, form) = self
            .call(Method::POST, "/v1/payment-methods/setup", None)
            .await;
        assert_eq!(status, 200, "{form}");
        let document = &form["card_form"];
        assert_eq!(
            document["clientKey"],
            crate::support::adyen::CLIENT_KEY,
            "{form}"
        );
        assert_eq!(document["environment"], "test", "{form}");
        let session = document["session"]["id"].as_str().unwrap();
        assert!(document["session"]["sessionData"].is_string(), "{form}");
        let stored = self.adyen.complete_card_form(session, number, holder);
        eventually(
            "the stored card to be announced",
            WAIT,
            Duration::from_millis(50),
            || async {
                let (_, cards) = self.call(Method::GET, "/v1/payment-methods", None).await;
                cards.as_array().and_then(|cards| {
                    cards
                        .iter()
                        .find(|c| c["last_four"] == number[number.len() - 4..])
                        .cloned()
                })
            },
        )
        .await;
        // Attaching it by its id finds the same card (the adapter's canonical reference).
        let (status, card) = self
            .call(
                Method::POST,
                "/v1/payment-methods",
                Some(json!({"provider_ref": stored, "make_default": true})),
            )
            .await;
        assert_eq!(status, 201, "{card}");
        card
    }

    async fn book(&self) -> (u16, Value) {
        let (key, body) = self.booking_request().await;
        self.book_as(&key, &body).await
    }

    /// A booking of its own, to send and send again: a fresh key and a fresh quote's body.
    async fn booking_request(&self) -> (String, Value) {
        let key = format!("adyen-{}", Uuid::new_v4());
        (key, quoted(&self.app, &self.live).await)
    }

    /// Sends the booking `body` under `key`.
    async fn book_as(&self, key: &str, body: &Value) -> (u16, Value) {
        book_at(&self.app.client, &self.app.base_url, &self.live, key, body).await
    }

    /// Waits until the booking sent under `key` answers that it was abandoned.
    async fn abandoned(&self, key: &str, body: &Value) {
        eventually(
            "the booking to be abandoned",
            WAIT,
            Duration::from_millis(100),
            || async {
                let (_, answer) = self.book_as(key, body).await;
                (answer["code"] == "booking.abandoned").then_some(())
            },
        )
        .await;
    }

    async fn charge_of(&self, job: &Value) -> Value {
        let (_, charges) = self.call(Method::GET, "/v1/charges", None).await;
        charges
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["job_id"] == job["id"])
            .cloned()
            .unwrap_or(Value::Null)
    }

    async fn charge_becomes(
        &self,
        job: &Value,
        what: &str,
        test: impl Fn(&Value) -> bool,
    ) -> Value {
        eventually(what, WAIT, Duration::from_millis(50), || async {
            let charge = self.charge_of(job).await;
            test(&charge).then_some(charge)
        })
        .await
    }

    /// A service that abandons an unfinished booking at once, a card stored, and a booking
    /// sent that is left to be abandoned (Adyen says its hold's key is still in use; the
    /// merchant was answered 409): the service, the booking's key and body. The first
    /// `failing_cancels` cancellations Adyen reports failed.
    async fn booking_left_to_abandon(failing_cancels: usize) -> (Self, String, Value) {
        let live = Self::start_with(&[
            ("COURIER_PAYMENT_DEADLINE_MS", "1000"),
            ("COURIER_BOOKING_ABANDON_AFTER_MS", "1"),
        ])
        .await;
        live.store_card("4111111111111111", "Jo Shopper").await;
        let (key, body) = live.booking_request().await;
        live.adyen.inject("/payments", Fault::Status(409), 1);
        live.adyen.fail_cancels(failing_cancels);
        let (status, answer) = live.book_as(&key, &body).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (409, Some("idempotency.in_progress")),
            "{answer}"
        );
        (live, key, body)
    }

    fn payment_of(&self, job: &Value) -> Payment {
        let key = format!("job_{}_hold", job["id"].as_str().unwrap());
        self.adyen
            .payments()
            .into_iter()
            .find(|p| p.reference == key)
            .expect("Adyen has the job's payment")
    }
}

#[tokio::test]
async fn the_merchant_s_contact_email_reaches_adyen_s_card_form() {
    let live = Live::start().await;
    let settings = format!("/merchants/{}/settings", live.merchant_id);
    let change = |email: &str| {
        live.app
            .admin(Method::PATCH, &settings)
            .json(&json!({"contact_email": email}))
            .send()
    };
    assert_refusal(
        change("billing at adyen-goods").await.unwrap(),
        422,
        "settings.invalid_contact_email",
    )
    .await;
    // Without one, the session has no shopper email.
    let (status, form) = live
        .call(Method::POST, "/v1/payment-methods/setup", None)
        .await;
    assert_eq!(status, 200, "{form}");
    let (status, saved) =
        status_and_json(change("billing@adyen-goods.example").await.unwrap()).await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["contact_email"], "billing@adyen-goods.example");
    let (status, form) = live
        .call(Method::POST, "/v1/payment-methods/setup", None)
        .await;
    assert_eq!(status, 200, "{form}");
    assert_eq!(
        live.adyen.shopper_emails(),
        [None, Some("billing@adyen-goods.example".to_owned())]
    );
    live.app.stop().await;
}

#[tokio::test]
async fn a_card_stored_by_adyen_s_drop_in_is_held_then_captured_on_adyen_s_notification() {
    let live = Live::start().await;
    let card = live.store_card("4111111111111111", "Jo Shopper").await;
    assert_eq!(
        (&card["brand"], &card["last_four"]),
        (&json!("visa"), &json!("1111"))
    );

    // Booked: Adyen authorised exactly the quoted price on the stored card.
    let (status, job) = live.book().await;
    assert_eq!(status, 201, "{job}");
    let charge = live.charge_of(&job).await;
    assert_eq!(charge["status"], "authorised", "{charge}");
    let payment = live.payment_of(&job);
    assert_eq!(payment.status, "Authorised");
    assert_eq!(json!(payment.amount), job["price_amount_minor"]);

    // Delivered while Adyen's notifications are held back: Adyen has the capture, the
    // service waits for its word.
    live.adyen.hold_notifications(true);
    deliver(&live.app, &job).await;
    let waiting = live
        .charge_becomes(&job, "the capture to be awaited", |c| {
            c["last_error"]
                .as_str()
                .is_some_and(|e| e.starts_with("awaiting the provider's confirmation"))
        })
        .await;
    assert_eq!(waiting["status"], "authorised");
    assert_eq!(live.payment_of(&job).status, "Captured");
    // The retry worker, meanwhile, never captures twice.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(live.charge_of(&job).await["status"], "authorised");

    // Adyen's CAPTURE notification arrives: the charge is captured, once.
    live.adyen.hold_notifications(false);
    let captured = live
        .charge_becomes(&job, "the capture to be recorded", |c| {
            c["status"] == "captured"
        })
        .await;
    assert_eq!(captured["last_error"], Value::Null);
    let payment = live.payment_of(&job);
    assert_eq!(payment.captured, payment.amount);

    // An operator refunds part: Adyen accepts it (202), and its REFUND notification pays it.
    let part = payment.amount / 4;
    let refund_path = format!("/charges/{}/refund", captured["id"].as_str().unwrap());
    let (status, accepted) = status_and_json(
        live.app
            .admin(Method::POST, &refund_path)
            .header("Idempotency-Key", "adyen-refund-part")
            .json(&json!({"amount_minor": part}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, &accepted["refunded_amount_minor"]),
        (202, &json!(0)),
        "{accepted}"
    );
    let refunded = live
        .charge_becomes(&job, "the refund to be recorded", |c| {
            c["status"] == "refunded"
        })
        .await;
    assert_eq!(refunded["refunded_amount_minor"], json!(part));
    assert_eq!(live.payment_of(&job).refunded, part);

    // Cancelled before a courier: Adyen's CANCELLATION notification releases the hold.
    let (status, cancelled) = live.book().await;
    assert_eq!(status, 201, "{cancelled}");
    let (status, body) = live
        .call(
            Method::POST,
            &format!("/v1/jobs/{}/cancel", cancelled["id"].as_str().unwrap()),
            Some(json!({"reason": "customer changed their mind"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    live.charge_becomes(&cancelled, "the release to be recorded", |c| {
        c["status"] == "voided"
    })
    .await;
    assert_eq!(live.payment_of(&cancelled).status, "Cancelled");

    // Every notification was accepted, and each applied once.
    eventually(
        "every notification to be accepted",
        WAIT,
        Duration::from_millis(50),
        || async { (live.adyen.undelivered() == 0).then_some(()) },
    )
    .await;
    let codes: Vec<String> = live
        .adyen
        .delivered()
        .iter()
        .map(|item| item["eventCode"].as_str().unwrap().to_owned())
        .collect();
    for code in ["AUTHORISATION", "CAPTURE", "REFUND", "CANCELLATION"] {
        assert!(codes.iter().any(|c| c == code), "{codes:?}");
    }
    let pool = live.app.pool().await;
    let moves: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM charge_moves m JOIN charges c ON c.id = m.charge_id \
         WHERE c.job_id = $1::uuid AND m.to_status = 'captured'",
    )
    .bind(job["id"].as_str().unwrap())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(moves, 1);
    pool.close().await;
    live.app.stop().await;
}

#[tokio::test]
async fn adyen_s_refusal_reasons_refuse_the_booking_and_only_a_finished_card_dies() {
    let live = Live::start().await;
    live.store_card("4111111111111111", "NOT_ENOUGH_BALANCE")
        .await;
    let (status, refused) = live.book().await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["code"], "payment.card_declined");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("insufficient_funds"),
        "{refused}"
    );
    let (_, cards) = live.call(Method::GET, "/v1/payment-methods", None).await;
    assert_eq!(cards[0]["status"], "active", "{cards}");

    let expired = live.store_card("5555444433331111", "CARD_EXPIRED").await;
    let (status, refused) = live.book().await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("expired_card"),
        "{refused}"
    );
    let (_, cards) = live.call(Method::GET, "/v1/payment-methods", None).await;
    let dead = cards
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == expired["id"])
        .unwrap();
    assert_eq!(dead["status"], "dead", "{cards}");
    // Nothing is held at Adyen for either.
    assert!(live.adyen.payments().iter().all(|p| p.status == "Refused"));
    live.app.stop().await;
}

#[tokio::test]
async fn a_capture_adyen_reports_failed_keeps_the_hold_and_is_shown_to_operators() {
    let live = Live::start().await;
    live.store_card("4111111111111111", "Jo Shopper").await;
    let (status, job) = live.book().await;
    assert_eq!(status, 201, "{job}");
    live.adyen.fail_captures(true);
    deliver(&live.app, &job).await;
    let failed = live
        .charge_becomes(&job, "the failed capture to be shown", |c| {
            c["last_error"]
                .as_str()
                .is_some_and(|e| e.starts_with("the provider reports the capture failed"))
        })
        .await;
    assert_eq!(failed["status"], "authorised");
    assert_eq!(
        live.payment_of(&job).status,
        "Authorised",
        "Adyen took nothing"
    );
    live.app.stop().await;
}

#[tokio::test]
async fn a_forged_or_replayed_notification_moves_nothing() {
    let live = Live::start().await;
    live.store_card("4111111111111111", "Jo Shopper").await;
    let (status, job) = live.book().await;
    assert_eq!(status, 201, "{job}");
    let psp = live.payment_of(&job).psp;
    let capture = json!({
        "pspReference": "CAPFORGED0000001", "originalReference": psp,
        "merchantAccountCode": crate::support::adyen::MERCHANT_ACCOUNT,
        "merchantReference": "forged", "amount": {"value": 1, "currency": "EUR"},
        "eventCode": "CAPTURE", "success": "true", "reason": "", "additionalData": {},
    });
    // Signed, then altered: refused, and the charge stays held.
    let mut forged = notification(std::slice::from_ref(&capture));
    forged["notificationItems"][0]["NotificationRequestItem"]["success"] = json!("true ");
    let response = live.notify(&forged).await;
    assert_refusal(response, 401, "provider_event.unverified").await;
    assert_eq!(live.charge_of(&job).await["status"], "authorised");
    // Signed, but without the webhook's Basic credentials, or with others (the HMAC leaves
    // `additionalData` unsigned): refused.
    let genuine = notification(&[capture]);
    let unauthenticated = live
        .app
        .request(Method::POST, "/v1/provider-events/live")
        .json(&genuine);
    for request in [
        unauthenticated.try_clone().unwrap(),
        unauthenticated.basic_auth(NOTIFICATION_USER, Some("guessed")),
    ] {
        let response = request.send().await.unwrap();
        assert_refusal(response, 401, "provider_event.unverified").await;
    }
    // Genuine, but for another amount than the charge's: kept, never recorded as captured.
    for _ in 0..2 {
        assert_eq!(live.notify(&genuine).await.status(), 200);
    }
    assert_eq!(live.charge_of(&job).await["status"], "authorised");
    live.app.stop().await;
}

#[tokio::test]
async fn outages_and_lost_answers_are_asked_again_under_the_same_key_and_move_money_once() {
    let live = Live::start().await;
    live.store_card("4111111111111111", "Jo Shopper").await;

    // A revoked API key: the hold is refused for good, nothing is booked or held.
    live.adyen.revoke_key(true);
    let (status, refused) = live.book().await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (503, Some("payment.provider_refused")),
        "{refused}"
    );
    live.adyen.revoke_key(false);
    assert!(live.adyen.payments().is_empty());

    // Adyen answers 500 twice, then the capture's answer is lost after Adyen acted: the
    // retries carry the same key, Adyen answers the first capture again, and its one
    // notification captures the charge once.
    let (status, job) = live.book().await;
    assert_eq!(status, 201, "{job}");
    live.adyen.inject("/captures", Fault::Status(500), 2);
    live.adyen.inject("/captures", Fault::ActThenDrop, 1);
    deliver(&live.app, &job).await;
    let captured = live
        .charge_becomes(&job, "the capture to be recorded", |c| {
            c["status"] == "captured"
        })
        .await;
    assert_eq!(captured["last_error"], Value::Null);
    let payment = live.payment_of(&job);
    assert_eq!(
        (payment.status.as_str(), payment.captured),
        ("Captured", payment.amount)
    );
    let captures = live
        .adyen
        .delivered()
        .iter()
        .filter(|item| {
            item["eventCode"] == "CAPTURE" && item["originalReference"] == json!(payment.psp)
        })
        .count();
    assert_eq!(captures, 1, "Adyen captured once");

    live.app.stop().await;
}

/// A card the merchant removed stays removed when Adyen names it again: a later authorisation
/// with the card's recurring details (a hold on it, or Adyen sending its notice again under a
/// new reference) is a stored-card event for a card the merchant no longer wants, and no
/// booking charges it. A card the merchant never had is still kept from its event.
#[tokio::test]
async fn a_card_the_merchant_removed_is_not_brought_back_by_an_authorisation_naming_it() {
    let live = Live::start().await;
    let card = live.store_card("4111111111111111", "Jo Shopper").await;
    let announced = live
        .adyen
        .delivered()
        .into_iter()
        .find(|item| item["additionalData"]["recurring.recurringDetailReference"].is_string())
        .expect("Adyen announced the stored card");
    let (status, _) = live
        .call(
            Method::DELETE,
            &format!("/v1/payment-methods/{}", card["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert!((200..300).contains(&status), "{status}");

    let webhook = &live;
    let send = |item: Value| async move {
        status_and_json(webhook.notify(&notification(&[item])).await).await
    };
    let mut again = announced.clone();
    again["pspReference"] = json!("9915550000000001");
    let (status, received) = send(again).await;
    assert_eq!(
        (status, &received["received"], &received["duplicates"]),
        (200, &json!(1), &json!(0)),
        "{received}"
    );
    let (_, cards) = live.call(Method::GET, "/v1/payment-methods", None).await;
    assert_eq!(cards, json!([]), "the removed card is not back");
    let (status, refused) = live.book().await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (422, Some("payment.no_payment_method")),
        "{refused}"
    );

    // Another card of the same shopper, stored outside the card form, is kept.
    let mut other = announced;
    other["pspReference"] = json!("9915550000000002");
    other["additionalData"]["recurring.recurringDetailReference"] = json!("M5N7TQ4TG5PFWR51");
    other["additionalData"]["cardSummary"] = json!("4444");
    let (status, _) = send(other).await;
    assert_eq!(status, 200);
    let (_, cards) = live.call(Method::GET, "/v1/payment-methods", None).await;
    assert_eq!(cards.as_array().map(Vec::len), Some(1), "{cards}");
    assert_eq!(cards[0]["last_four"], "4444", "{cards}");
    live.app.stop().await;
}

/// A hold Adyen answers `Received` is an outcome: the job is booked with its charge
/// `pending` (the same key answers the booking again, never 409 `idempotency.in_progress`),
/// and Adyen's `AUTHORISATION` notification places the hold.
#[tokio::test]
async fn a_hold_adyen_answers_received_books_the_job_and_its_notification_places_it() {
    let live = Live::start().await;
    live.store_card("4111111111111111", "Jo Shopper").await;
    live.adyen.hold_notifications(true);
    live.adyen.pend_holds(true);
    let (key, body) = live.booking_request().await;
    let book = || live.book_as(&key, &body);
    let (status, job) = book().await;
    assert_eq!(status, 201, "{job}");
    assert_eq!(live.charge_of(&job).await["status"], "pending");
    let (status, again) = book().await;
    assert_eq!((status, &again["id"]), (201, &job["id"]), "{again}");

    live.adyen.hold_notifications(false);
    live.charge_becomes(&job, "the hold to be placed", |c| {
        c["status"] == "authorised"
    })
    .await;
    assert_eq!(live.payment_of(&job).status, "Authorised");
    live.app.stop().await;
}

/// A booking abandoned with Adyen ends: its hold is cancelled, and Adyen's `received` for the
/// cancellation (all it ever answers, however often asked) finishes the abandoning: the key
/// answers 409 `booking.abandoned` and the quote books under a new key.
#[tokio::test]
async fn an_abandoned_booking_ends_although_adyen_answers_its_release_only_received() {
    // Adyen says the hold's key is still in use: the booking is left to the recovery worker,
    // which finds it overdue and abandons it.
    let (live, key, body) = Live::booking_left_to_abandon(0).await;
    live.abandoned(&key, &body).await;
    let payments = live.adyen.payments();
    assert_eq!(payments.len(), 1, "{payments:?}");
    assert_eq!(payments[0].status, "Cancelled", "nothing stays held");
    let (status, job) = live
        .book_as(&format!("adyen-{}", Uuid::new_v4()), &body)
        .await;
    assert_eq!(status, 201, "the quote is free again: {job}");
    live.app.stop().await;
}

/// An abandoned booking whose cancellation Adyen receives, then reports failed: the hold is
/// asked to be released again under a new key (the first key would only replay `received`),
/// and is cancelled.
#[tokio::test]
async fn an_abandoned_booking_s_release_adyen_reports_failed_is_asked_again_under_a_new_key() {
    let (live, key, body) = Live::booking_left_to_abandon(1).await;
    live.abandoned(&key, &body).await;
    let payments = eventually(
        "the hold to be cancelled",
        WAIT,
        Duration::from_millis(100),
        || async {
            let payments = live.adyen.payments();
            (payments.len() == 1 && payments[0].status == "Cancelled").then_some(payments)
        },
    )
    .await;
    let hold_key = &payments[0].reference;
    assert_eq!(
        live.adyen.cancellations(),
        [
            format!("{hold_key}_release"),
            format!("{hold_key}_release_2")
        ],
        "asked once more, under a new key"
    );
    // Adyen's confirmation ends it: nothing is asked again.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(live.adyen.cancellations().len(), 2);
    live.app.stop().await;
}

/// A service that gives up on a provider call after a second and abandons an unfinished
/// booking at once, with a card stored and Adyen's notifications held back.
async fn impatient() -> Live {
    let live = Live::start_with(&[
        ("COURIER_PAYMENT_DEADLINE_MS", "1000"),
        ("COURIER_BOOKING_ABANDON_AFTER_MS", "1"),
    ])
    .await;
    live.store_card("4111111111111111", "Jo Shopper").await;
    live.adyen.hold_notifications(true);
    live
}

/// Waits for Adyen to have made the one hold it was asked for (after the service stopped
/// waiting), still `Authorised`; answers its reference (the hold's key).
async fn late_hold(live: &Live) -> String {
    let payments = eventually(
        "Adyen to place the hold it was first asked for",
        WAIT,
        Duration::from_millis(100),
        || async {
            let payments = live.adyen.payments();
            (payments.len() == 1).then_some(payments)
        },
    )
    .await;
    assert_eq!(payments[0].status, "Authorised");
    payments[0].reference.clone()
}

/// Lets Adyen's notifications go and waits for the hold to be cancelled.
async fn cancelled_once_notified(live: &Live) {
    assert!(live.adyen.cancellations().is_empty());
    live.adyen.hold_notifications(false);
    eventually(
        "the hold to be cancelled",
        WAIT,
        Duration::from_millis(100),
        || async { (live.adyen.payments()[0].status == "Cancelled").then_some(()) },
    )
    .await;
}

/// A hold Adyen places after the service stopped waiting for it, whose charge then failed
/// (asked again, Adyen refused): the charge never heard the payment's reference, and Adyen's
/// `AUTHORISATION` notification names it only by the hold's key (`merchantReference`, the
/// event's request key). The failed charge keeps it and releases it under its release key.
#[tokio::test]
async fn a_hold_placed_after_its_charge_failed_unheard_is_released_by_its_key() {
    let live = impatient().await;
    live.adyen
        .inject("/payments", Fault::Hang(Duration::from_secs(3)), 1);
    live.adyen.inject("/payments", Fault::Status(422), 1);
    let (status, job) = live.book().await;
    assert_eq!(status, 201, "booked, its charge pending: {job}");
    let charge = live
        .charge_becomes(&job, "the charge to fail", |c| c["status"] == "failed")
        .await;
    let hold_key = late_hold(&live).await;
    assert_eq!(
        hold_key,
        format!("job_{}_hold", job["id"].as_str().unwrap())
    );
    cancelled_once_notified(&live).await;
    let charge_id = charge["id"].as_str().unwrap();
    assert_eq!(
        live.adyen.cancellations(),
        [format!("charge_{charge_id}_void")]
    );
    assert_eq!(live.charge_of(&job).await["status"], "failed");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(live.adyen.cancellations().len(), 1, "released once");
    live.app.stop().await;
}

/// A booking left between its phases (Adyen said the hold's key was in use), whose hold the
/// abandoning asks for again: Adyen takes that request but answers it too late, then refuses
/// the next, so the booking is abandoned holding nothing it knows of. The hold Adyen then
/// places (its notification naming the hold's key) belongs to no charge: it is cancelled
/// under `<hold key>_release`, once.
#[tokio::test]
async fn a_hold_placed_for_an_abandoned_booking_is_cancelled_by_its_key() {
    let live = impatient().await;
    live.adyen.inject("/payments", Fault::Status(409), 1);
    live.adyen
        .inject("/payments", Fault::Hang(Duration::from_secs(3)), 1);
    live.adyen.inject("/payments", Fault::Status(422), 1);
    let (key, body) = live.booking_request().await;
    let (status, answer) = live.book_as(&key, &body).await;
    assert_eq!(status, 409, "{answer}");
    live.abandoned(&key, &body).await;
    let hold_key = late_hold(&live).await;
    cancelled_once_notified(&live).await;
    assert_eq!(live.adyen.cancellations(), [format!("{hold_key}_release")]);
    let (_, charges) = live.call(Method::GET, "/v1/charges", None).await;
    assert_eq!(charges, json!([]), "no job, no charge");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(live.adyen.cancellations().len(), 1, "released once");
    live.app.stop().await;
}

/// Payments on the same Adyen account that the service did not make (another sales channel
/// of the operator's, its own `merchantReference`) are left alone, while a hold under a key of
/// the service's that no booking holds is released.
#[tokio::test]
async fn a_hold_under_a_key_the_service_never_makes_is_left_alone() {
    let live = Live::start().await;
    let held = |psp: &str, reference: &str| {
        json!({
            "pspReference": psp, "originalReference": "",
            "merchantAccountCode": crate::support::adyen::MERCHANT_ACCOUNT,
            "merchantReference": reference, "amount": {"value": 2500, "currency": "EUR"},
            "eventCode": "AUTHORISATION", "success": "true", "reason": "",
            "paymentMethod": "visa", "additionalData": {},
        })
    };
    let ours = format!("job_{}_hold", Uuid::new_v4());
    let response = live
        .notify(&notification(&[
            held("OTHERCHANNEL0001", "order-5512"),
            held("OURS000000000001", &ours),
        ]))
        .await;
    assert_eq!(response.status(), 200);
    eventually(
        "the hold under the service's key to be released",
        WAIT,
        Duration::from_millis(50),
        || async {
            let asked = live.adyen.cancellations();
            asked.contains(&format!("{ours}_release")).then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let asked = live.adyen.cancellations();
    assert!(
        asked.iter().all(|key| key.starts_with(&ours)),
        "only the service's own hold is released: {asked:?}"
    );
    live.app.stop().await;
}

/// A hold whose every release Adyen reports failed is asked for five times, each under its
/// own key, then left to operators, whose payments page names it.
#[tokio::test]
async fn a_hold_adyen_never_releases_is_shown_to_operators_after_five_rounds() {
    let (live, _, _) = Live::booking_left_to_abandon(usize::MAX).await;
    let mut operator = crate::ops_console::signed_in(&live.app).await;
    let started = std::time::Instant::now();
    let page = loop {
        let page = operator.get("/ops/payments").await;
        if page
            .body
            .contains("<strong>release it at the provider</strong>")
        {
            break page;
        }
        assert!(
            started.elapsed() < WAIT,
            "not left to operators: {}",
            page.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let payments = live.adyen.payments();
    assert_eq!(payments[0].status, "Authorised", "Adyen still holds it");
    let hold_key = &payments[0].reference;
    assert!(page.body.contains(hold_key.as_str()), "{}", page.body);
    assert!(
        page.body.contains("Cancellation failed at the acquirer"),
        "{}",
        page.body
    );
    let keys: Vec<String> = std::iter::once(format!("{hold_key}_release"))
        .chain((2..=5).map(|n| format!("{hold_key}_release_{n}")))
        .collect();
    assert_eq!(live.adyen.cancellations(), keys);
    live.app.stop().await;
}
