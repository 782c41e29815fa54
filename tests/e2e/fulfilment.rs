//! Fulfilment through the courier and operator APIs: every ending of a job (delivered,
//! returned, cancelled before and after assignment, set by hand), with the job's status and
//! times, the exact `data` of the events a real HTTPS receiver gets, and the charge. Also
//! courier management, the courier API's authentication, proof files, and every code.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use courier_core::merchants::NewMerchant;

use crate::quotes::journey;
use crate::support::receiver::Receiver;
use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually, status_and_json,
};

pub const WAIT: Duration = Duration::from_secs(10);
pub const PICKUP: (f64, f64) = (20.00285, 50.0043);
pub const HOOK: &str = "/hooks";
pub const COURIER_PHONE: &str = "+966 50 123 4567";
/// The courier phone as stored, and its digits as they might show anywhere.
const COURIER_PHONE_FORMS: [&str; 3] = ["+966 50 123 4567", "+966501234567", "501234567"];
const PNG: &[u8] = b"\x89PNG\r\n\x1a\nproof-of-delivery";
const JPEG: &[u8] = b"\xff\xd8\xff\xe0signature";

/// A service with a merchant (card on file, webhook endpoint at the receiver) ready to book.
pub struct Floor {
    pub app: TestApp,
    pub merchant: NewMerchant,
    pub credential: Credential,
    pub receiver: Receiver,
    pub place: Place,
}

/// Where a floor's couriers work and its jobs are booked: a market and a journey in it.
#[derive(Clone, Debug)]
pub struct Place {
    pub market: String,
    pub city: String,
    pub pickup: (f64, f64),
    pub dropoff: (f64, f64),
}

impl Place {
    /// The demo city's journey, on the service's default market.
    pub fn demo() -> Self {
        let journey = journey(None);
        let at = |stop: &Value| {
            (
                stop["latitude"].as_f64().unwrap(),
                stop["longitude"].as_f64().unwrap(),
            )
        };
        Place {
            market: "demo".into(),
            city: "Demo City".into(),
            pickup: at(&journey["pickup"]),
            dropoff: at(&journey["dropoff"]),
        }
    }

    fn journey(&self, vehicle: Option<&str>) -> Value {
        let mut body = json!({
            "pickup": {"latitude": self.pickup.0, "longitude": self.pickup.1},
            "dropoff": {"latitude": self.dropoff.0, "longitude": self.dropoff.1},
        });
        if let Some(vehicle) = vehicle {
            body["vehicle"] = json!(vehicle);
        }
        body
    }
}

/// A courier and its credential.
pub struct Rider {
    pub id: String,
    pub name: String,
    pub token: String,
}

impl Floor {
    pub async fn start(settings: &[(&str, &str)]) -> Self {
        Self::start_at(Place::demo(), settings).await
    }

    /// A floor whose couriers and jobs are at `place` (its market in the service's markets,
    /// `COURIER_MARKETS_FILE` among `settings` for another than the default's).
    pub async fn start_at(place: Place, settings: &[(&str, &str)]) -> Self {
        let receiver = Receiver::start().await;
        let mut env: HashMap<String, String> = HashMap::from([
            (
                "COURIER_WEBHOOK_EXTRA_CA".to_owned(),
                receiver.ca_path.to_string_lossy().into_owned(),
            ),
            (
                "COURIER_WEBHOOK_ALLOW_PRIVATE".to_owned(),
                "true".to_owned(),
            ),
            ("COURIER_DISPATCH_INTERVAL_MS".to_owned(), "50".to_owned()),
        ]);
        for (name, value) in settings {
            env.insert((*name).to_owned(), (*value).to_owned());
        }
        let app = TestApp::spawn_with(move |name| env.get(name).cloned()).await;
        let merchant = app.create_merchant("Florist Ltd").await;
        let credential = merchant.test();
        crate::support::attach_working_card(&app, &credential).await;
        let floor = Self {
            app,
            merchant,
            credential,
            receiver,
            place,
        };
        let (status, body) = floor
            .merchant_call(
                Method::POST,
                "/v1/webhooks",
                Some(json!({"url": floor.receiver.url(HOOK)})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        floor
    }

    pub async fn merchant_call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self.app.request(method, path).auth(&self.credential);
        if let Some(body) = body {
            request = request.json(&body);
        }
        status_and_json(request.send().await.unwrap()).await
    }

    pub async fn admin_call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self.app.admin(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        status_and_json(request.send().await.unwrap()).await
    }

    pub fn courier_request(
        &self,
        token: &str,
        method: Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        self.app
            .request(method, &format!("/courier/v1{path}"))
            .bearer_auth(token)
    }

    pub async fn courier_call(
        &self,
        rider: &Rider,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self.courier_request(&rider.token, method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        status_and_json(request.send().await.unwrap()).await
    }

    /// Books a car journey from 41 4th Street to 102 17th Street, for now.
    pub async fn book(&self) -> Value {
        self.book_with(&[]).await
    }

    /// [`Floor::book`] with extra request headers.
    pub async fn book_with(&self, headers: &[(&str, &str)]) -> Value {
        self.book_as(headers, json!({})).await
    }

    /// [`Floor::book`] with extra request headers and body fields.
    pub async fn book_as(&self, headers: &[(&str, &str)], fields: Value) -> Value {
        let (status, job) = self.booking(headers, json!({}), fields).await;
        assert_eq!(status, 201, "{job}");
        // The detail: the booking response and the rest (the tax, for events).
        self.job(&job).await
    }

    /// Quotes the car journey with `quoted` added and books it with `fields` added: the
    /// booking's status and body, whatever they are.
    pub async fn booking(
        &self,
        headers: &[(&str, &str)],
        quoted: Value,
        fields: Value,
    ) -> (u16, Value) {
        let asked = merge(self.place.journey(Some("car")), quoted);
        // The market's network loads in the background.
        let (status, quote) = eventually(
            "quotes to become available",
            Duration::from_secs(60),
            Duration::from_millis(25),
            || async {
                let quote = self
                    .merchant_call(Method::POST, "/v1/quotes", Some(asked.clone()))
                    .await;
                (quote.0 != 503).then_some(quote)
            },
        )
        .await;
        assert_eq!(status, 201, "{quote}");
        let stop = |point: &Value, name: &str| {
            json!({
                "latitude": point["latitude"],
                "longitude": point["longitude"],
                "address": format!("{name}'s door, {}", self.place.city),
                "contact_name": name,
                "contact_phone": "+966 11 463 5555",
            })
        };
        let route = self.place.journey(None);
        let body = merge(
            json!({
                "quote_id": quote["id"],
                "pickup": stop(&route["pickup"], "Pat Pickup"),
                "dropoff": stop(&route["dropoff"], "Dana Dropoff"),
            }),
            fields,
        );
        let mut request = self
            .app
            .request(Method::POST, "/v1/jobs")
            .auth(&self.credential)
            .header("Idempotency-Key", Uuid::new_v4().to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        status_and_json(request.json(&body).send().await.unwrap()).await
    }

    /// Creates a courier with a car, online at `at` (None: offline, nowhere).
    pub async fn rider(&self, name: &str, vehicle: &str, at: Option<(f64, f64)>) -> Rider {
        let (status, created) = self
            .admin_call(
                Method::POST,
                "/couriers",
                Some(json!({"name": name, "phone": COURIER_PHONE, "vehicle": vehicle, "market": self.place.market})),
            )
            .await;
        assert_eq!(status, 201, "{created}");
        let rider = Rider {
            id: created["id"].as_str().unwrap().to_owned(),
            name: name.to_owned(),
            token: created["credential"].as_str().unwrap().to_owned(),
        };
        if let Some(at) = at {
            let (status, body) = self
                .courier_call(&rider, Method::POST, "/online", None)
                .await;
            assert_eq!((status, &body["online"]), (200, &json!(true)), "{body}");
            self.report_position(&rider, at).await;
        }
        rider
    }

    /// `rider` reports where it is.
    pub async fn report_position(&self, rider: &Rider, (latitude, longitude): (f64, f64)) {
        let position = json!({"latitude": latitude, "longitude": longitude});
        let (status, body) = self
            .courier_call(rider, Method::POST, "/position", Some(position))
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// Waits for the courier's open offer.
    pub async fn offer_for(&self, rider: &Rider) -> Value {
        let what = format!("an offer to {}", rider.name);
        eventually(&what, WAIT, Duration::from_millis(25), || async {
            let (status, offers) = self.courier_call(rider, Method::GET, "/offers", None).await;
            assert_eq!(status, 200, "{offers}");
            offers.as_array().unwrap().first().cloned()
        })
        .await
    }

    /// Books a job and has `rider` accept it.
    pub async fn assigned_job(&self, rider: &Rider) -> Value {
        let job = self.book().await;
        self.take(rider, &job).await;
        job
    }

    /// `rider` accepts its offer, which must be for `job`.
    pub async fn take(&self, rider: &Rider, job: &Value) {
        let offer = self.offer_for(rider).await;
        assert_eq!(offer["job"]["id"], job["id"]);
        let path = format!("/offers/{}/accept", offer["id"].as_str().unwrap());
        let (status, accepted) = self.courier_call(rider, Method::POST, &path, None).await;
        assert_eq!(status, 200, "{accepted}");
        assert_eq!(accepted["status"], "assigned");
    }

    /// `rider` collects `job` at the pickup.
    pub async fn collect(&self, rider: &Rider, job: &Value) {
        let path = format!("/jobs/{}/collected", job["id"].as_str().unwrap());
        let (status, collected) = self.courier_call(rider, Method::POST, &path, None).await;
        assert_eq!(status, 200, "{collected}");
    }

    /// `rider` hands `job` to Dana Dropoff, with no photo or signature.
    pub async fn deliver(&self, rider: &Rider, job: &Value) {
        let path = format!("/jobs/{}/delivered", job["id"].as_str().unwrap());
        let handover = json!({"outcome": "handed_to_recipient", "recipient_name": "Dana Dropoff"});
        let (status, delivered) = self
            .courier_call(rider, Method::POST, &path, Some(handover))
            .await;
        assert_eq!(status, 200, "{delivered}");
    }

    pub async fn job(&self, job: &Value) -> Value {
        let path = format!("/v1/jobs/{}", job["id"].as_str().unwrap());
        let (status, detail) = self.merchant_call(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{detail}");
        detail
    }

    /// The job's charge once its status is `status`.
    pub async fn charge_once(&self, job: &Value, status: &str) -> Value {
        let what = format!("the charge of job {} to be {status}", job["id"]);
        eventually(&what, WAIT, Duration::from_millis(25), || async {
            let (code, charges) = self.merchant_call(Method::GET, "/v1/charges", None).await;
            assert_eq!(code, 200, "{charges}");
            let charge = charges
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["job_id"] == job["id"])
                .cloned()
                .expect("every job has a charge");
            (charge["status"] == status).then_some(charge)
        })
        .await
    }

    /// The `data` of the job's `name` event at the receiver (its signature checked).
    pub async fn event_data(&self, job: &Value, name: &str) -> Value {
        let what = format!("{name} of job {} at the receiver", job["id"]);
        eventually(&what, WAIT, Duration::from_millis(25), || async {
            let found: Vec<Value> = self
                .receiver
                .received(HOOK)
                .iter()
                .map(|r| r.json())
                .filter(|b| b["type"] == name && b["data"]["jobId"] == job["id"])
                .collect();
            let body = found.first()?;
            assert_eq!(body["environment"], "test");
            Some(body["data"].clone())
        })
        .await
    }

    /// How many `name` events of the job arrived.
    pub fn event_count(&self, job: &Value, name: &str) -> usize {
        self.receiver
            .received(HOOK)
            .iter()
            .map(|r| r.json())
            .filter(|b| b["type"] == name && b["data"]["jobId"] == job["id"])
            .count()
    }

    /// The fields every job event's `data` has, plus `extra`; `occurredAt` taken from `actual`.
    pub fn expected_data(&self, job: &Value, actual: &Value, extra: Value) -> Value {
        assert!(actual["occurredAt"].is_string(), "{actual}");
        let mut expected = json!({
            "occurredAt": actual["occurredAt"],
            "environment": 0,
            "jobId": job["id"],
            "reference": job["reference"],
            "merchant": self.merchant.merchant_id.to_string(),
        });
        for (k, v) in extra.as_object().unwrap() {
            expected[k] = v.clone();
        }
        expected
    }

    /// Everything merchants were sent (webhook bodies) says nothing of couriers but their id.
    pub fn assert_no_courier_details(&self, riders: &[&Rider]) {
        for request in self.receiver.received(HOOK) {
            let body = String::from_utf8(request.body.clone()).unwrap();
            assert_private(&body, riders);
        }
    }
}

pub fn assert_private(text: &str, riders: &[&Rider]) {
    for rider in riders {
        assert!(!text.contains(&rider.name), "courier name leaked: {text}");
    }
    for phone in COURIER_PHONE_FORMS {
        assert!(!text.contains(phone), "courier phone leaked: {text}");
    }
    assert!(!text.contains("crk_"), "courier credential leaked: {text}");
}

fn money(job: &Value) -> Value {
    json!({
        "market": "demo",
        "currency": job["currency"],
        "priceAmountMinor": job["price_amount_minor"],
        "taxAmountMinor": job["tax_amount_minor"],
    })
}

/// `a` with `b`'s fields written over its own.
fn merge(mut a: Value, b: Value) -> Value {
    for (k, v) in b.as_object().unwrap() {
        a[k] = v.clone();
    }
    a
}

fn upload(content_type: &str, bytes: &[u8]) -> Value {
    json!({
        "content_type": content_type,
        "data": base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

#[tokio::test]
async fn a_job_is_delivered_with_proof_and_its_charge_captured() {
    let floor = Floor::start(&[("COURIER_PROOF_MAX_BYTES", "1024")]).await;
    let settings = format!("/merchants/{}/settings", floor.merchant.merchant_id);
    let (status, _) = floor
        .admin_call(
            Method::PATCH,
            &settings,
            Some(json!({"proof_photo_required": true, "proof_signature_required": true})),
        )
        .await;
    assert_eq!(status, 200);
    let rider = floor.rider("Rafi Rider", "car", Some(PICKUP)).await;
    let job = floor.assigned_job(&rider).await;
    let id = job["id"].as_str().unwrap();

    let detail = floor.job(&job).await;
    assert_eq!(detail["status"], "assigned");
    assert!(detail["assigned_at"].is_string() && detail["completed_at"].is_null());
    assert_eq!(
        detail["proof_requirement"],
        json!({"photo_required": true, "signature_required": true})
    );
    let assigned = floor.event_data(&job, "job.courier_assigned").await;
    assert_eq!(
        assigned,
        floor.expected_data(&job, &assigned, json!({"courier": rider.id}))
    );

    // Where the courier is, while it is on the job.
    let position_path = format!("/v1/jobs/{id}/courier-position");
    let (status, position) = floor.merchant_call(Method::GET, &position_path, None).await;
    assert_eq!(status, 200, "{position}");
    assert_eq!(
        (
            position["latitude"].as_f64(),
            position["longitude"].as_f64()
        ),
        (Some(PICKUP.0), Some(PICKUP.1))
    );
    assert!(position["seen_at"].is_string());
    assert_private(&position.to_string(), &[&rider]);

    // Its own jobs, with the contacts it needs.
    let (status, jobs) = floor.courier_call(&rider, Method::GET, "/jobs", None).await;
    assert_eq!(status, 200);
    assert_eq!(jobs[0]["id"], job["id"]);
    assert_eq!(jobs[0]["pickup"]["contact_name"], "Pat Pickup");

    // Delivering before collecting is not a move.
    let delivered_path = format!("/jobs/{id}/delivered");
    let handover = json!({"outcome": "handed_to_recipient", "recipient_name": "Dana Dropoff",
        "note": "At the door", "photo": upload("image/png", PNG), "signature": upload("image/jpeg", JPEG)});
    let response = floor
        .courier_request(&rider.token, Method::POST, &delivered_path)
        .json(&handover)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "job.invalid_transition").await;

    let (status, collected) = floor
        .courier_call(&rider, Method::POST, &format!("/jobs/{id}/collected"), None)
        .await;
    assert_eq!(
        (status, &collected["status"]),
        (200, &json!("in_transit")),
        "{collected}"
    );
    let picked_up = floor.event_data(&job, "job.picked_up").await;
    assert_eq!(
        picked_up,
        floor.expected_data(&job, &picked_up, json!({"courier": rider.id}))
    );
    // Collected: the merchant can no longer call it off.
    let response = floor
        .app
        .request(Method::POST, &format!("/v1/jobs/{id}/cancel"))
        .auth(&floor.credential)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "job.not_cancellable").await;

    // Proof refusals.
    let refusals = [
        (json!({"photo": null}), "proof.photo_required"),
        (json!({"signature": null}), "proof.signature_required"),
        (
            json!({"outcome": "thrown_over_fence"}),
            "proof.invalid_outcome",
        ),
        (
            json!({"recipient_name": " "}),
            "proof.recipient_name_required",
        ),
        (
            json!({"photo": upload("image/gif", b"GIF89a")}),
            "proof.unsupported_content_type",
        ),
        (
            json!({"photo": upload("image/jpeg", PNG)}),
            "proof.invalid_file",
        ),
        (
            json!({"photo": upload("image/png", &[PNG, &[0u8; 1024][..]].concat())}),
            "proof.file_too_large",
        ),
        (json!({"note": "n".repeat(1001)}), "request.invalid_body"),
    ];
    for (change, code) in refusals {
        let mut body = handover.clone();
        for (k, v) in change.as_object().unwrap() {
            if v.is_null() {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        let response = floor
            .courier_request(&rider.token, Method::POST, &delivered_path)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, code).await;
    }
    // Only the assigned courier moves the job.
    let other = floor.rider("Otto Other", "car", None).await;
    let response = floor
        .courier_request(&other.token, Method::POST, &delivered_path)
        .json(&handover)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 404, "job.not_found").await;

    let (status, delivered) = floor
        .courier_call(
            &rider,
            Method::POST,
            &delivered_path,
            Some(handover.clone()),
        )
        .await;
    assert_eq!(
        (status, &delivered["status"]),
        (200, &json!("delivered")),
        "{delivered}"
    );

    let detail = floor.job(&job).await;
    assert_eq!(detail["status"], "delivered");
    assert!(detail["completed_at"].is_string());
    let proof = &detail["proof"];
    assert_eq!(proof["outcome"], "handed_to_recipient");
    assert_eq!(proof["recipient_name"], "Dana Dropoff");
    assert_eq!(proof["note"], "At the door");
    assert!(proof["recorded_at"].is_string());
    let photo_url = proof["photo_url"].as_str().unwrap();
    let signature_url = proof["signature_url"].as_str().unwrap();
    assert!(
        photo_url.ends_with(&format!("/v1/jobs/{id}/proof/photo")),
        "{photo_url}"
    );
    assert_private(&detail.to_string(), &[&rider, &other]);

    // The files, to the job's merchant only.
    for (url, content_type, bytes) in [
        (photo_url, "image/png", PNG),
        (signature_url, "image/jpeg", JPEG),
    ] {
        // The links name `COURIER_PUBLIC_URL`; the test service listens elsewhere.
        let url = &floor.app.url(&url[url.find("/v1/").unwrap()..]);
        let response = floor
            .app
            .client
            .get(url)
            .auth(&floor.credential)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], content_type);
        // A recipient's photo and signature are kept by no cache, the browser's included.
        assert_eq!(response.headers()["cache-control"], "private, no-store");
        assert_eq!(response.bytes().await.unwrap().as_ref(), bytes);
        let stranger = floor.app.create_merchant("Stranger Ltd").await.test();
        let response = floor
            .app
            .client
            .get(url)
            .auth(&stranger)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 404, "job.not_found").await;
        let response = floor.app.client.get(url).send().await.unwrap();
        assert_refusal(response, 401, "auth.missing_credentials").await;
    }

    let data = floor.event_data(&job, "job.delivered").await;
    let expected = merge(
        money(&job),
        json!({"courier": rider.id, "proof": {"outcome": "handed_to_recipient",
            "recipientName": "Dana Dropoff", "hasPhoto": true, "hasSignature": true}}),
    );
    assert_eq!(data, floor.expected_data(&job, &data, expected));

    let charge = floor.charge_once(&job, "captured").await;
    assert!(charge["captured_at"].is_string());
    assert_eq!(charge["amount_minor"], job["price_amount_minor"]);

    // Over: nobody is on the job any more, and it moves no further.
    let (status, _) = floor.merchant_call(Method::GET, &position_path, None).await;
    assert_eq!(status, 204);
    let response = floor
        .courier_request(&rider.token, Method::POST, &format!("/jobs/{id}/returned"))
        .json(&json!({"reason": "too late"}))
        .send()
        .await
        .unwrap();
    let refusal = assert_refusal(response, 409, "job.invalid_transition").await;
    assert!(refusal["message"].as_str().unwrap().contains("delivered"));
    floor.assert_no_courier_details(&[&rider, &other]);
}

#[tokio::test]
async fn a_job_is_returned_with_a_reason_and_its_charge_captured() {
    let floor = Floor::start(&[]).await;
    let rider = floor.rider("Rosa Rider", "car", Some(PICKUP)).await;
    let job = floor.assigned_job(&rider).await;
    let id = job["id"].as_str().unwrap();
    let (status, _) = floor
        .courier_call(&rider, Method::POST, &format!("/jobs/{id}/collected"), None)
        .await;
    assert_eq!(status, 200);
    let path = format!("/jobs/{id}/returned");
    for body in [
        json!({}),
        json!({"reason": "  "}),
        json!({"reason": "r".repeat(501)}),
    ] {
        let response = floor
            .courier_request(&rider.token, Method::POST, &path)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, "job.reason_required").await;
    }
    let (status, returned) = floor
        .courier_call(
            &rider,
            Method::POST,
            &path,
            Some(json!({"reason": "recipient_absent"})),
        )
        .await;
    assert_eq!(
        (status, &returned["status"]),
        (200, &json!("returned")),
        "{returned}"
    );
    let detail = floor.job(&job).await;
    assert_eq!(detail["status"], "returned");
    assert!(detail["completed_at"].is_string() && detail["proof"].is_null());
    let data = floor.event_data(&job, "job.returned").await;
    let expected = merge(
        money(&job),
        json!({"courier": rider.id, "reason": "recipient_absent"}),
    );
    assert_eq!(data, floor.expected_data(&job, &data, expected));
    floor.charge_once(&job, "captured").await;
    // No proof was taken: there is no file to fetch.
    for kind in ["photo", "signature", "selfie"] {
        let path = format!("/v1/jobs/{id}/proof/{kind}");
        let response = floor
            .app
            .request(Method::GET, &path)
            .auth(&floor.credential)
            .send()
            .await;
        assert_refusal(response.unwrap(), 404, "proof.not_found").await;
    }
    floor.assert_no_courier_details(&[&rider]);
}

#[tokio::test]
async fn a_job_cancelled_before_assignment_voids_the_hold_and_stays_cancelled() {
    let floor = Floor::start(&[]).await;
    let job = floor.book().await;
    let id = job["id"].as_str().unwrap();
    let path = format!("/v1/jobs/{id}/cancel");
    // No body at all: the default reason.
    let response = floor
        .app
        .request(Method::POST, &path)
        .auth(&floor.credential)
        .send()
        .await;
    let (status, cancelled) = status_and_json(response.unwrap()).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["cancellation_reason"], "cancelled_by_merchant");
    assert!(cancelled["assigned_at"].is_null() && cancelled["completed_at"].is_null());
    let data = floor.event_data(&job, "job.cancelled").await;
    assert_eq!(
        data,
        floor.expected_data(&job, &data, json!({"reason": "cancelled_by_merchant"}))
    );
    floor.charge_once(&job, "voided").await;

    // Again, with another reason: the same job, the first reason, no second event.
    let (status, again) = floor
        .merchant_call(
            Method::POST,
            &path,
            Some(json!({"reason": "changed my mind"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(again["cancellation_reason"], "cancelled_by_merchant");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(floor.event_count(&job, "job.cancelled"), 1);

    // Other merchants' jobs and non-jobs are not found; a bad body is refused.
    let stranger = floor.app.create_merchant("Stranger Ltd").await.test();
    let response = floor
        .app
        .request(Method::POST, &path)
        .auth(&stranger)
        .send()
        .await;
    assert_refusal(response.unwrap(), 404, "job.not_found").await;
    let response = floor
        .app
        .request(Method::POST, "/v1/jobs/nope/cancel")
        .auth(&floor.credential)
        .send()
        .await;
    assert_refusal(response.unwrap(), 404, "job.not_found").await;
    let (status, body) = floor
        .merchant_call(Method::POST, &path, Some(json!({"reason": 7})))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (422, &json!("request.invalid_body"))
    );
}

#[tokio::test]
async fn a_job_cancelled_after_assignment_names_the_courier_on_the_way() {
    let floor = Floor::start(&[]).await;
    let rider = floor.rider("Cato Courier", "car", Some(PICKUP)).await;
    let job = floor.assigned_job(&rider).await;
    let id = job["id"].as_str().unwrap();
    let (status, cancelled) = floor
        .merchant_call(
            Method::POST,
            &format!("/v1/jobs/{id}/cancel"),
            Some(json!({"reason": "customer left"})),
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["cancellation_reason"], "customer left");
    let data = floor.event_data(&job, "job.cancelled").await;
    assert_eq!(
        data,
        floor.expected_data(
            &job,
            &data,
            json!({"reason": "customer left", "assignedCourier": rider.id})
        )
    );
    floor.charge_once(&job, "voided").await;
    // The courier can no longer move it.
    let response = floor
        .courier_request(&rider.token, Method::POST, &format!("/jobs/{id}/collected"))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "job.invalid_transition").await;
    let (_, jobs) = floor.courier_call(&rider, Method::GET, "/jobs", None).await;
    assert_eq!(jobs, json!([]));
    let (status, _) = floor
        .merchant_call(
            Method::GET,
            &format!("/v1/jobs/{id}/courier-position"),
            None,
        )
        .await;
    assert_eq!(status, 204);
    floor.assert_no_courier_details(&[&rider]);
}

#[tokio::test]
async fn operators_reassign_and_set_statuses_with_events_money_and_audit() {
    let floor = Floor::start(&[]).await;
    let first = floor.rider("Fay First", "car", None).await;
    let second = floor.rider("Sam Second", "car", None).await;
    let job = floor.book().await;
    let id = job["id"].as_str().unwrap();
    let reassign = format!("/jobs/{id}/reassign");

    // Searching → assigned by hand, then handed to another courier.
    let (status, detail) = floor
        .admin_call(
            Method::POST,
            &reassign,
            Some(json!({"courier_id": first.id})),
        )
        .await;
    assert_eq!(
        (status, &detail["status"]),
        (200, &json!("assigned")),
        "{detail}"
    );
    let (status, _) = floor
        .admin_call(
            Method::POST,
            &reassign,
            Some(json!({"courier_id": second.id})),
        )
        .await;
    assert_eq!(status, 200);
    eventually(
        "two assignments at the receiver",
        WAIT,
        Duration::from_millis(25),
        || async { (floor.event_count(&job, "job.courier_assigned") >= 2).then_some(()) },
    )
    .await;
    let couriers: Vec<Value> = floor
        .receiver
        .received(HOOK)
        .iter()
        .map(|r| r.json())
        .filter(|b| b["type"] == "job.courier_assigned")
        .map(|b| b["data"]["courier"].clone())
        .collect();
    assert!(couriers.contains(&json!(first.id)) && couriers.contains(&json!(second.id)));
    let (status, jobs) = floor
        .courier_call(&second, Method::GET, "/jobs", None)
        .await;
    assert_eq!((status, jobs[0]["id"].clone()), (200, job["id"].clone()));

    // Refusals.
    let (_, suspended) = floor
        .admin_call(
            Method::POST,
            &format!("/couriers/{}/suspend", first.id),
            Some(json!({})),
        )
        .await;
    assert_eq!(suspended["status"], "suspended");
    let cases = [
        (
            json!({"courier_id": first.id}),
            422,
            "courier.not_available",
        ),
        (
            json!({"courier_id": Uuid::new_v4()}),
            404,
            "courier.not_found",
        ),
        (json!({"courier_id": "nobody"}), 404, "courier.not_found"),
    ];
    for (body, status, code) in cases {
        let response = floor
            .app
            .admin(Method::POST, &reassign)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_refusal(response, status, code).await;
    }
    let status_path = format!("/jobs/{id}/status");
    let cases = [
        (json!({"status": "delivered"}), 422, "job.reason_required"),
        (
            json!({"status": "lost", "reason": "x"}),
            422,
            "request.unknown_status",
        ),
        (
            json!({"status": "pending", "reason": "x"}),
            409,
            "job.invalid_transition",
        ),
        (
            json!({"status": "assigned", "reason": "x"}),
            409,
            "job.invalid_transition",
        ),
    ];
    for (body, status, code) in cases {
        let response = floor
            .app
            .admin(Method::POST, &status_path)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_refusal(response, status, code).await;
    }
    let response = floor
        .app
        .admin(Method::POST, &format!("/jobs/{}/status", Uuid::new_v4()))
        .json(&json!({"status": "failed", "reason": "x"}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 404, "job.not_found").await;

    // Delivered by hand: job.status_changed, and the money is taken.
    let (status, detail) = floor
        .admin_call(
            Method::POST,
            &status_path,
            Some(json!({"status": "delivered", "reason": "courier app down; confirmed by phone"})),
        )
        .await;
    assert_eq!(
        (status, &detail["status"]),
        (200, &json!("delivered")),
        "{detail}"
    );
    assert!(detail["completed_at"].is_string());
    let data = floor.event_data(&job, "job.status_changed").await;
    assert_eq!(
        data,
        floor.expected_data(
            &job,
            &data,
            json!({"from": "assigned", "to": "delivered",
            "reason": "courier app down; confirmed by phone"})
        )
    );
    floor.charge_once(&job, "captured").await;
    let response = floor
        .app
        .admin(Method::POST, &reassign)
        .json(&json!({"courier_id": second.id}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "job.invalid_transition").await;

    // All of it in the audit trail, under the operator's name.
    let pool = floor.app.pool().await;
    let actions: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, operator FROM audit_log WHERE target_id = $1 ORDER BY occurred_at",
    )
    .bind(id)
    .fetch_all(&pool)
    .await
    .unwrap();
    let names: Vec<&str> = actions.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        names,
        [
            "job.courier_reassigned",
            "job.courier_reassigned",
            "job.status_set"
        ]
    );
    assert!(actions.iter().all(|(_, operator)| operator == "admin"));
    floor.assert_no_courier_details(&[&first, &second]);
}

#[tokio::test]
async fn couriers_are_managed_by_operators_and_authenticated_on_their_api() {
    let floor = Floor::start(&[(
        "COURIER_MARKETS_FILE",
        crate::support::car_only_market_file().to_str().unwrap(),
    )])
    .await;
    let valid =
        json!({"name": "Vic Valid", "phone": COURIER_PHONE, "vehicle": "car", "market": "wide"});
    let cases = [
        (json!({"name": " "}), "courier.invalid_name"),
        (json!({"phone": "12"}), "courier.invalid_phone"),
        (json!({"vehicle": "rocket"}), "request.unknown_vehicle"),
        (json!({"market": "atlantis"}), "courier.unknown_market"),
        (json!({"vehicle": "bicycle"}), "courier.vehicle_not_offered"),
    ];
    for (change, code) in cases {
        let body = merge(valid.clone(), change);
        let response = floor
            .app
            .admin(Method::POST, "/couriers")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, code).await;
    }
    let (status, created) = floor
        .admin_call(Method::POST, "/couriers", Some(valid.clone()))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["phone"], COURIER_PHONE_FORMS[1]);
    assert_eq!(
        (created["status"].clone(), created["online"].clone()),
        (json!("active"), json!(false))
    );
    let token = created["credential"].as_str().unwrap().to_owned();
    assert!(token.starts_with("crk_"));
    let id = created["id"].as_str().unwrap().to_owned();
    let rider = Rider {
        id: id.clone(),
        name: "Vic Valid".into(),
        token: token.clone(),
    };

    // Read back without the credential, which is kept only as a keyed hash.
    let (status, listed) = floor
        .admin_call(Method::GET, "/couriers?market=wide", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert!(listed[0]["credential"].is_null());
    let (_, none) = floor
        .admin_call(Method::GET, "/couriers?market=demo", None)
        .await;
    assert_eq!(none, json!([]));
    let response = floor
        .app
        .admin(Method::GET, "/couriers?market=demo%00")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.invalid_query").await;
    let pool = floor.app.pool().await;
    let (key, hash): (String, Vec<u8>) =
        sqlx::query_as("SELECT credential_key, secret_hash FROM couriers WHERE id = $1::uuid")
            .bind(&id)
            .fetch_one(&pool)
            .await
            .unwrap();
    let secret = token.split_once('.').unwrap().1;
    assert!(
        token.starts_with(&key)
            && hash.len() == 32
            && !String::from_utf8_lossy(&hash).contains(secret)
    );

    // The courier API's refusals.
    let me = floor
        .courier_request(&token, Method::GET, "/me")
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(me).await;
    assert_eq!((status, body["id"].clone()), (200, json!(id)));
    let response = floor
        .app
        .request(Method::GET, "/courier/v1/me")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer realm=\"courier-couriers\""
    );
    assert_refusal(response, 401, "auth.missing_credentials").await;
    let response = floor
        .app
        .request(Method::GET, "/courier/v1/me")
        .auth(&floor.credential)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.malformed_credentials").await;
    let forged = format!("{}.{}", key, "x".repeat(40));
    let response = floor
        .courier_request(&forged, Method::GET, "/me")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.invalid_credentials").await;
    // A merchant credential is no courier credential, and the reverse.
    let response = floor
        .app
        .request(Method::GET, "/v1/jobs")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    for (body, code) in [
        (
            json!({"latitude": 91, "longitude": 0}),
            "request.invalid_location",
        ),
        (json!({"latitude": "north"}), "request.invalid_body"),
    ] {
        let response = floor
            .courier_request(&token, Method::POST, "/position")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, code).await;
    }
    for path in [
        format!("/offers/{}/accept", Uuid::new_v4()),
        "/offers/nope/decline".to_owned(),
    ] {
        let response = floor
            .courier_request(&token, Method::POST, &path)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 404, "offer.not_found").await;
    }
    let (status, online) = floor
        .courier_call(&rider, Method::POST, "/online", None)
        .await;
    assert_eq!((status, online["online"].clone()), (200, json!(true)));

    // Suspended: refused at once, and offline; reinstated: back in.
    let suspend = format!("/couriers/{id}/suspend");
    let response = floor
        .app
        .admin(Method::POST, &suspend)
        .json(&json!({"reason": "r".repeat(501)}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "courier.invalid_reason").await;
    let (status, suspended) = floor
        .admin_call(
            Method::POST,
            &suspend,
            Some(json!({"reason": "documents expired"})),
        )
        .await;
    assert_eq!(status, 200, "{suspended}");
    assert_eq!(
        (suspended["status"].clone(), suspended["online"].clone()),
        (json!("suspended"), json!(false))
    );
    assert_eq!(suspended["suspension_reason"], "documents expired");
    let response = floor
        .courier_request(&token, Method::GET, "/me")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 403, "courier.suspended").await;
    let (status, again) = floor
        .admin_call(Method::POST, &suspend, Some(json!({})))
        .await;
    assert_eq!(
        (status, again["suspension_reason"].clone()),
        (200, json!("documents expired"))
    );
    let (status, reinstated) = floor
        .admin_call(Method::POST, &format!("/couriers/{id}/reinstate"), None)
        .await;
    assert_eq!(
        (status, reinstated["status"].clone()),
        (200, json!("active"))
    );
    let response = floor
        .courier_request(&token, Method::GET, "/me")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    for path in [
        format!("/couriers/{}", Uuid::new_v4()),
        "/couriers/nope".to_owned(),
    ] {
        let response = floor.app.admin(Method::GET, &path).send().await.unwrap();
        assert_refusal(response, 404, "courier.not_found").await;
    }
    let response = floor
        .app
        .request(Method::GET, "/admin/v1/couriers")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE target_type = 'courier' AND target_id = $1 ORDER BY occurred_at",
    )
    .bind(&id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        actions,
        ["courier.created", "courier.suspended", "courier.reinstated"]
    );
}

#[tokio::test]
async fn the_cli_manages_couriers_with_the_operator_in_the_audit_trail() {
    let database_url = crate::support::fresh_database_url().await;
    let secret_key = "5e".repeat(32);
    let run = |args: &[&str]| {
        let scratch = crate::support::scratch_path("cli");
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
            .args(args)
            .env("DATABASE_URL", &database_url)
            .env("COURIER_SECRET_KEY", &secret_key)
            .env("COURIER_DATA_DIR", scratch)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let created = run(&[
        "courier",
        "create",
        "--name",
        "Cli Courier",
        "--phone",
        "+966 11 463 5555",
        "--vehicle",
        "van",
        "--market",
        "demo",
        "--operator",
        "night-shift",
    ]);
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["vehicle"], "van");
    assert!(created["credential"].as_str().unwrap().starts_with("crk_"));
    let suspended = run(&[
        "courier",
        "suspend",
        "--id",
        &id,
        "--reason",
        "paperwork",
        "--operator",
        "night-shift",
    ]);
    assert_eq!(suspended["status"], "suspended");
    let reinstated = run(&[
        "courier",
        "reinstate",
        "--id",
        &id,
        "--operator",
        "day-shift",
    ]);
    assert_eq!(reinstated["status"], "active");
    let listed = run(&["courier", "list", "--market", "demo"]);
    assert_eq!(listed[0]["id"], json!(id));
    assert!(listed[0]["credential"].is_null());

    // The credential works on the courier API.
    let db = database_url.clone();
    let app = TestApp::spawn_with(move |name| (name == "DATABASE_URL").then(|| db.clone())).await;
    let response = app
        .request(Method::GET, "/courier/v1/me")
        .bearer_auth(created["credential"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let pool = app.pool().await;
    let trail: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, operator FROM audit_log WHERE target_id = $1 ORDER BY occurred_at",
    )
    .bind(&id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        trail,
        [
            ("courier.created".to_owned(), "night-shift".to_owned()),
            ("courier.suspended".to_owned(), "night-shift".to_owned()),
            ("courier.reinstated".to_owned(), "day-shift".to_owned()),
        ]
    );
}
