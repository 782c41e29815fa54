//! Couriers' moves sent again (a phone on a bad connection): with the same `Idempotency-Key`
//! each is made once and answered again; the merchant gets one event and one capture.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::fulfilment::{Floor, PICKUP, Rider};
use crate::support::{assert_refusal, status_and_json};

/// The courier's move `path`, sent with `key`: its status and body.
async fn keyed(
    floor: &Floor,
    rider: &Rider,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = floor
        .courier_request(&rider.token, Method::POST, path)
        .header("Idempotency-Key", key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    status_and_json(request.send().await.unwrap()).await
}

#[tokio::test]
async fn a_courier_move_sent_again_with_its_key_is_made_once() {
    let floor = Floor::start(&[]).await;
    let rider = floor.rider("Kai Keyed", "car", Some(PICKUP)).await;
    let job = floor.book().await;
    let id = job["id"].as_str().unwrap();
    let offer = floor.offer_for(&rider).await;
    let accept = format!("/offers/{}/accept", offer["id"].as_str().unwrap());

    // Accepted, then the same accept again (its answer lost): the same job, assigned once.
    let first = keyed(&floor, &rider, &accept, "accept-1", None).await;
    assert_eq!((first.0, &first.1["status"]), (200, &json!("assigned")));
    let again = keyed(&floor, &rider, &accept, "accept-1", None).await;
    assert_eq!(again, first, "a repeat answers as the first did");
    // Without its key the offer is answered already.
    let response = floor
        .courier_request(&rider.token, Method::POST, &accept)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "offer.not_open").await;

    // A key belongs to one move: used for another, it is refused.
    let collect = format!("/jobs/{id}/collected");
    let response = floor
        .courier_request(&rider.token, Method::POST, &collect)
        .header("Idempotency-Key", "accept-1")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "idempotency.key_reused").await;
    let response = floor
        .courier_request(&rider.token, Method::POST, &collect)
        .header("Idempotency-Key", "not a key")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.invalid_idempotency_key").await;

    // Collected twice at once and once more later: in transit once, one event.
    let (a, b) = tokio::join!(
        keyed(&floor, &rider, &collect, "collect-1", None),
        keyed(&floor, &rider, &collect, "collect-1", None),
    );
    assert_eq!((a.0, b.0), (200, 200), "{a:?} {b:?}");
    assert_eq!(a.1["status"], "in_transit");
    assert_eq!(b.1["status"], "in_transit");

    // Delivered, sent three times (twice at once): delivered once, one capture.
    let deliver = format!("/jobs/{id}/delivered");
    let handover = json!({"outcome": "handed_to_recipient", "recipient_name": "Dana Dropoff"});
    let (a, b) = tokio::join!(
        keyed(
            &floor,
            &rider,
            &deliver,
            "deliver-1",
            Some(handover.clone())
        ),
        keyed(
            &floor,
            &rider,
            &deliver,
            "deliver-1",
            Some(handover.clone())
        ),
    );
    assert_eq!((a.0, b.0), (200, 200), "{a:?} {b:?}");
    assert_eq!(a.1["completed_at"], b.1["completed_at"]);
    let later = keyed(&floor, &rider, &deliver, "deliver-1", Some(handover)).await;
    assert_eq!(later, a);
    let charge = floor.charge_once(&job, "captured").await;
    assert_eq!(charge["amount_minor"], job["price_amount_minor"]);

    // The merchant heard of each move once.
    floor.event_data(&job, "job.delivered").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for event in ["job.courier_assigned", "job.picked_up", "job.delivered"] {
        assert_eq!(floor.event_count(&job, event), 1, "{event}");
    }

    // A return of a delivered job under a new key is refused as any return would be.
    let response = floor
        .courier_request(&rider.token, Method::POST, &format!("/jobs/{id}/returned"))
        .header("Idempotency-Key", "return-1")
        .json(&json!({"reason": "nobody home"}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "job.invalid_transition").await;
}

#[tokio::test]
async fn a_declined_offer_sent_again_with_its_key_is_answered_again() {
    let floor = Floor::start(&[]).await;
    let rider = floor.rider("Dee Declines", "car", Some(PICKUP)).await;
    floor.book().await;
    let offer = floor.offer_for(&rider).await;
    let decline = format!("/offers/{}/decline", offer["id"].as_str().unwrap());
    let first = keyed(&floor, &rider, &decline, "decline-1", None).await;
    assert_eq!(first.0, 204);
    let again = keyed(&floor, &rider, &decline, "decline-1", None).await;
    assert_eq!(again.0, 204);
    let response = floor
        .courier_request(&rider.token, Method::POST, &decline)
        .header("Idempotency-Key", "decline-2")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "offer.not_open").await;
}
