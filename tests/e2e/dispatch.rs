//! Dispatch: offers go to the nearest available courier by road, move on when declined or
//! expired, are never shown to merchants, are accepted by exactly one courier, and a search
//! that finds nobody fails at the deadline with its hold voided. Settlements left behind by
//! a crash are finished by the worker.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::fulfilment::{Floor, PICKUP, WAIT};
use crate::support::{assert_refusal, eventually};

/// Farther from the pickup than `PICKUP` itself, still in Demo City.
const ACROSS_TOWN: (f64, f64) = (20.0150, 50.0150);

#[tokio::test]
async fn offers_go_to_the_nearest_available_courier_and_move_on() {
    let floor = Floor::start(&[("COURIER_OFFER_TIMEOUT_MS", "600")]).await;
    let near = floor.rider("Nia Near", "car", Some(PICKUP)).await;
    let far = floor.rider("Fen Far", "car", Some(ACROSS_TOWN)).await;
    // Never offered: wrong vehicle, offline, suspended, or not heard from lately.
    let cyclist = floor.rider("Cy Cyclist", "bicycle", Some(PICKUP)).await;
    let offline = floor.rider("Off Line", "car", Some(PICKUP)).await;
    floor
        .courier_call(&offline, Method::POST, "/offline", None)
        .await;
    let suspended = floor.rider("Sus Pended", "car", Some(PICKUP)).await;
    let path = format!("/couriers/{}/suspend", suspended.id);
    assert_eq!(
        floor
            .admin_call(Method::POST, &path, Some(json!({})))
            .await
            .0,
        200
    );
    let stale = floor.rider("Stan Stale", "car", Some(PICKUP)).await;
    let pool = floor.app.pool().await;
    sqlx::query("UPDATE courier_positions SET seen_at = now() - interval '3 minutes' WHERE courier_id = $1::uuid")
        .bind(&stale.id)
        .execute(&pool)
        .await
        .unwrap();

    let job = floor.book().await;
    let first = floor.offer_for(&near).await;
    assert_eq!(first["job"]["id"], job["id"]);
    assert!(first["travel_seconds"].as_i64().unwrap() >= 0);
    assert!(
        first["job"]["pickup"]["contact_name"].is_null(),
        "offers carry no contacts"
    );
    let (_, others) = floor.courier_call(&far, Method::GET, "/offers", None).await;
    assert_eq!(others, json!([]));

    // Declined: the next nearest gets it.
    let decline = format!("/offers/{}/decline", first["id"].as_str().unwrap());
    let (status, _) = floor
        .courier_call(&near, Method::POST, &decline, None)
        .await;
    assert_eq!(status, 204);
    let response = floor
        .courier_request(&near.token, Method::POST, &decline)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "offer.not_open").await;
    let second = floor.offer_for(&far).await;
    assert_eq!(second["job"]["id"], job["id"]);

    // Left to expire: nobody else qualifies, so nothing more is offered.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let accept = format!("/offers/{}/accept", second["id"].as_str().unwrap());
    let response = floor
        .courier_request(&far.token, Method::POST, &accept)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "offer.expired").await;
    for rider in [&near, &far, &cyclist, &offline, &stale] {
        let (_, offers) = floor
            .courier_call(rider, Method::GET, "/offers", None)
            .await;
        assert_eq!(offers, json!([]), "{} was offered the job", rider.name);
    }
    let offered: Vec<(String, String)> = sqlx::query_as(
        "SELECT courier_id::text, status FROM courier_offers WHERE job_id = $1::uuid ORDER BY offered_at",
    )
    .bind(job["id"].as_str().unwrap())
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        offered,
        [
            (near.id.clone(), "declined".to_owned()),
            (far.id.clone(), "expired".to_owned())
        ]
    );

    // The merchant sees a searching job and nothing of the offers.
    let detail = floor.job(&job).await;
    assert_eq!(detail["status"], "searching");
    let text = detail.to_string();
    assert!(
        !text.contains("offer") && !text.contains(&near.id) && !text.contains(&far.id),
        "{text}"
    );
    let (status, _) = floor
        .merchant_call(
            Method::GET,
            &format!("/v1/jobs/{}/courier-position", job["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 204);

    // A courier coming online is offered it at once.
    let late = floor.rider("Lia Late", "car", Some(ACROSS_TOWN)).await;
    let third = floor.offer_for(&late).await;
    assert_eq!(third["job"]["id"], job["id"]);
    // Going offline withdraws it.
    floor
        .courier_call(&late, Method::POST, "/offline", None)
        .await;
    let accept = format!("/offers/{}/accept", third["id"].as_str().unwrap());
    let response = floor
        .courier_request(&late.token, Method::POST, &accept)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "offer.not_open").await;
}

#[tokio::test]
async fn of_couriers_racing_to_accept_one_offer_exactly_one_wins() {
    let floor = Floor::start(&[]).await;
    let offered = floor.rider("Ora Offered", "car", Some(PICKUP)).await;
    let rival = floor.rider("Riv Rival", "car", Some(ACROSS_TOWN)).await;
    let job = floor.book().await;
    let offer = floor.offer_for(&offered).await;
    let accept = format!("/offers/{}/accept", offer["id"].as_str().unwrap());
    let mut attempts = Vec::new();
    for n in 0..16 {
        let rider = if n % 2 == 0 { &offered } else { &rival };
        attempts.push(
            floor
                .courier_request(&rider.token, Method::POST, &accept)
                .send(),
        );
    }
    let mut statuses: Vec<u16> = Vec::new();
    for response in futures_like_join(attempts).await {
        statuses.push(response.status().as_u16());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    // The rival was never offered it; the offered courier's other tries find it taken.
    assert!(
        statuses.iter().all(|s| [200, 404, 409].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 404).count(),
        8,
        "{statuses:?}"
    );
    let detail = floor.job(&job).await;
    assert_eq!(detail["status"], "assigned");
    let data = floor.event_data(&job, "job.courier_assigned").await;
    assert_eq!(data["courier"], json!(offered.id));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(floor.event_count(&job, "job.courier_assigned"), 1);
    floor.assert_no_courier_details(&[&offered, &rival]);
}

/// Runs the requests at once and waits for all.
async fn futures_like_join(
    requests: Vec<
        impl std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send + 'static,
    >,
) -> Vec<reqwest::Response> {
    let handles: Vec<_> = requests.into_iter().map(tokio::spawn).collect();
    let mut responses = Vec::new();
    for handle in handles {
        responses.push(handle.await.unwrap().unwrap());
    }
    responses
}

#[tokio::test]
async fn a_search_that_finds_nobody_fails_at_the_deadline_and_voids_the_hold() {
    let floor = Floor::start(&[("COURIER_DISPATCH_DEADLINE_SECS", "1")]).await;
    let job = floor.book().await;
    let data = floor.event_data(&job, "job.failed").await;
    assert_eq!(
        data,
        floor.expected_data(&job, &data, json!({"reason": "no_courier_before_deadline"}))
    );
    let detail = floor.job(&job).await;
    assert_eq!(detail["status"], "failed");
    assert!(detail["assigned_at"].is_null() && detail["cancellation_reason"].is_null());
    floor.charge_once(&job, "voided").await;
    // Ended: not cancellable, and a courier coming online is offered nothing.
    let response = floor
        .app
        .request(
            Method::POST,
            &format!("/v1/jobs/{}/cancel", job["id"].as_str().unwrap()),
        )
        .basic_auth(&floor.credential.key, Some(&floor.credential.secret))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "job.not_cancellable").await;
    let rider = floor.rider("Tim Toolate", "car", Some(PICKUP)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, offers) = floor
        .courier_call(&rider, Method::GET, "/offers", None)
        .await;
    assert_eq!(offers, json!([]));
}

#[tokio::test]
async fn a_settlement_left_behind_by_a_crash_is_finished_by_the_worker() {
    let floor = Floor::start(&[]).await;
    let job = floor.book().await;
    let id = job["id"].as_str().unwrap();
    // What a process that died between committing a cancellation and voiding leaves.
    let pool = floor.app.pool().await;
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(
        "UPDATE jobs SET status = 'cancelled', cancellation_reason = 'x' WHERE id = $1::uuid",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO job_settlements (job_id, operation, due_at) VALUES ($1::uuid, 'void', now())",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    floor.charge_once(&job, "voided").await;
    eventually(
        "the settlement to be done",
        WAIT,
        Duration::from_millis(25),
        || async {
            let left: i64 = sqlx::query_scalar("SELECT count(*) FROM job_settlements")
                .fetch_one(&pool)
                .await
                .unwrap();
            (left == 0).then_some(())
        },
    )
    .await;
}
