//! Every operation against scripted answers: what is sent, and what each answer becomes; and
//! notifications, signed and not.

use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use serde_json::{Value, json};

use crate::adyen::{from_adyen, to_adyen};
use crate::notifications::sign;
use adapter_kit::{
    Attached, CardFormRequest, Decline, EventKind, Finished, Method, Outcome, Refusal, Request,
    Response, Transport,
};

use crate::{Adapter, Settings, verify};

/// Answers requests from a list, in order, and keeps what was sent.
struct Script {
    answers: RefCell<Vec<Result<(u16, Value), &'static str>>>,
    sent: RefCell<Vec<Request>>,
}

impl Script {
    fn new(answers: Vec<Result<(u16, Value), &'static str>>) -> Self {
        Script {
            answers: RefCell::new(answers.into_iter().rev().collect()),
            sent: RefCell::new(Vec::new()),
        }
    }

    fn sent(&self, n: usize) -> Request {
        self.sent.borrow()[n].clone()
    }

    fn body(&self, n: usize) -> Value {
        serde_json::from_slice(&self.sent(n).body).unwrap()
    }

    fn header(&self, n: usize, name: &str) -> Option<String> {
        self.sent(n)
            .headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    fn count(&self) -> usize {
        self.sent.borrow().len()
    }
}

impl Transport for Script {
    fn send(&self, request: Request) -> Result<Response, String> {
        self.sent.borrow_mut().push(request);
        match self.answers.borrow_mut().pop().expect("a scripted answer") {
            Ok((status, body)) => Ok(Response {
                status,
                body: body.to_string().into_bytes(),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

const HMAC_HEX: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

fn settings() -> Settings {
    Settings::read(|name| match name {
        "api_key" => Some("AQE_test_key".into()),
        "merchant_account" => Some("CourierECOM".into()),
        "api_base" => Some("https://checkout-test.adyen.com/v71".into()),
        "client_key" => Some("test_CLIENTKEY".into()),
        "hmac_key" => Some(HMAC_HEX.into()),
        _ => None,
    })
    .unwrap()
}

fn hold(script: &Script) -> Outcome {
    let settings = settings();
    Adapter::new(&settings, script).authorise(
        1250,
        "EUR",
        "8415718415172200",
        "courier-m1",
        "job_1_hold",
    )
}

fn error(status: u16, code: &str) -> Result<(u16, Value), &'static str> {
    Ok((
        status,
        json!({"status": status, "errorCode": code, "message": "m", "errorType": "validation"}),
    ))
}

#[test]
fn a_hold_is_a_merchant_initiated_manual_capture_payment_on_the_stored_card() {
    let script = Script::new(alloc::vec![Ok((
        200,
        json!({
            "pspReference": "PSP0000000000001",
            "resultCode": "Authorised",
            "amount": {"value": 1250, "currency": "EUR"},
            "merchantReference": "job_1_hold",
        })
    ))]);
    assert_eq!(hold(&script), Outcome::Approved("PSP0000000000001".into()));
    let sent = script.sent(0);
    assert_eq!(sent.method, Method::Post);
    assert_eq!(sent.url, "https://checkout-test.adyen.com/v71/payments");
    assert_eq!(
        script.header(0, "x-api-key").as_deref(),
        Some("AQE_test_key")
    );
    assert_eq!(
        script.header(0, "idempotency-key").as_deref(),
        Some("job_1_hold")
    );
    let body = script.body(0);
    assert_eq!(body["merchantAccount"], "CourierECOM");
    assert_eq!(body["amount"], json!({"value": 1250, "currency": "EUR"}));
    assert_eq!(
        body["paymentMethod"]["storedPaymentMethodId"],
        "8415718415172200"
    );
    assert_eq!(body["shopperInteraction"], "ContAuth");
    assert_eq!(body["recurringProcessingModel"], "UnscheduledCardOnFile");
    assert_eq!(body["additionalData"]["manualCapture"], "true");
    assert_eq!(body["metadata"]["courier_hold_key"], "job_1_hold");
}

#[test]
fn refusal_reasons_become_the_canonical_declines() {
    let cases = [
        ("12", "Not enough balance", "insufficient_funds", None),
        ("6", "Expired Card", "expired_card", Some(Finished::Expired)),
        (
            "5",
            "Blocked Card",
            "card_closed",
            Some(Finished::RefusedForGood),
        ),
        ("24", "CVC Declined", "incorrect_cvc", None),
        ("2", "Refused", "card_declined", None),
        ("20", "FRAUD", "fraudulent", Some(Finished::RefusedForGood)),
        ("27", "Declined Non Generic", "do_not_honor", None),
    ];
    for (code, reason, canonical, finished) in cases {
        let script = Script::new(alloc::vec![Ok((
            200,
            json!({
                "pspReference": "PSP0000000000002",
                "resultCode": "Refused",
                "refusalReason": reason,
                "refusalReasonCode": code,
            })
        ))]);
        assert_eq!(
            hold(&script),
            Outcome::Declined(Decline {
                code: canonical.into(),
                finished
            }),
            "{reason}"
        );
    }
}

#[test]
fn credentials_and_validation_are_refused_for_good_and_outages_are_unreachable() {
    for (answer, expected) in [
        (error(401, "000"), "refused"),
        (error(403, "010"), "refused"),
        (error(422, "14_012"), "refused"),
        (error(422, "704"), "in-flight"),
        (error(409, "704"), "in-flight"),
        (error(500, "905"), "unreachable"),
        (error(429, "429"), "unreachable"),
        (Err("connection reset"), "unreachable"),
        (Ok((200, json!("not an object"))), "unreachable"),
    ] {
        let outcome = hold(&Script::new(alloc::vec![answer.clone()]));
        let kind = match outcome {
            Outcome::Refused(_) => "refused",
            Outcome::InFlight(_) => "in-flight",
            Outcome::Unreachable(_) => "unreachable",
            ref other => panic!("{other:?}"),
        };
        assert_eq!(kind, expected, "{answer:?}");
    }
}

#[test]
fn a_hold_of_another_amount_is_cancelled_and_never_approved() {
    let script = Script::new(alloc::vec![
        Ok((
            200,
            json!({
                "pspReference": "PSP0000000000003",
                "resultCode": "Authorised",
                "amount": {"value": 1251, "currency": "EUR"},
            })
        )),
        Ok((
            201,
            json!({"status": "received", "paymentPspReference": "PSP0000000000003"})
        )),
    ]);
    assert!(matches!(hold(&script), Outcome::Unreachable(_)));
    assert_eq!(
        script.sent(1).url,
        "https://checkout-test.adyen.com/v71/payments/PSP0000000000003/cancels"
    );
}

#[test]
fn a_pending_payment_is_pending_with_its_reference() {
    let script = Script::new(alloc::vec![Ok((
        200,
        json!({
            "pspReference": "PSP0000000000004", "resultCode": "Received",
        })
    ))]);
    assert_eq!(hold(&script), Outcome::Pending("PSP0000000000004".into()));
}

#[test]
fn captures_cancels_and_refunds_are_received_and_so_pending() {
    let settings = settings();
    let script = Script::new(alloc::vec![
        Ok((
            201,
            json!({
                "status": "received", "paymentPspReference": "PSP0000000000005",
                "pspReference": "CAP0000000000001", "amount": {"value": 1250, "currency": "EUR"},
            })
        )),
        Ok((
            201,
            json!({
                "status": "received", "paymentPspReference": "PSP0000000000005",
                "pspReference": "CAN0000000000001",
            })
        )),
        Ok((
            201,
            json!({
                "status": "received", "paymentPspReference": "PSP0000000000005",
                "pspReference": "REF0000000000001", "amount": {"value": 500, "currency": "EUR"},
            })
        )),
    ]);
    let adapter = Adapter::new(&settings, &script);
    assert_eq!(
        adapter.capture("PSP0000000000005", 1250, "EUR", "charge_1_capture"),
        Outcome::Pending("PSP0000000000005".into())
    );
    assert_eq!(
        adapter.void("PSP0000000000005", "charge_1_void"),
        Outcome::Pending("PSP0000000000005".into())
    );
    assert_eq!(
        adapter.refund("PSP0000000000005", 500, "EUR", "refund_1"),
        Outcome::Pending("REF0000000000001".into())
    );
    assert_eq!(
        script.sent(0).url,
        "https://checkout-test.adyen.com/v71/payments/PSP0000000000005/captures"
    );
    assert_eq!(
        script.body(0)["amount"],
        json!({"value": 1250, "currency": "EUR"})
    );
    assert_eq!(
        script.header(1, "idempotency-key").as_deref(),
        Some("charge_1_void")
    );
    assert_eq!(script.body(2)["reference"], "refund_1");
}

#[test]
fn a_capture_of_an_unknown_payment_is_declined_and_of_another_amount_is_not_taken() {
    let settings = settings();
    let script = Script::new(alloc::vec![
        error(404, "000"),
        Ok((
            201,
            json!({
                "status": "received", "paymentPspReference": "PSP0000000000006",
                "amount": {"value": 99, "currency": "EUR"},
            })
        )),
    ]);
    let adapter = Adapter::new(&settings, &script);
    assert!(matches!(
        adapter.capture("PSP0000000000006", 1250, "EUR", "k1"),
        Outcome::Declined(_)
    ));
    assert!(matches!(
        adapter.capture("PSP0000000000006", 1250, "EUR", "k2"),
        Outcome::Unreachable(_)
    ));
    // A reference that could reach another path is never sent.
    assert!(matches!(
        adapter.capture("../x", 1, "EUR", "k3"),
        Outcome::Declined(_)
    ));
    assert_eq!(script.count(), 2);
}

#[test]
fn amounts_follow_adyen_s_decimals_where_they_differ_from_iso() {
    assert_eq!(to_adyen(1250, "EUR").unwrap()["value"], 1250);
    assert_eq!(to_adyen(500, "JPY").unwrap()["value"], 500);
    // ISO counts Chilean pesos whole; Adyen in hundredths.
    assert_eq!(to_adyen(1000, "CLP").unwrap()["value"], 100_000);
    assert_eq!(
        from_adyen(&json!({"value": 100_000, "currency": "CLP"})),
        Some((1000, "CLP".into()))
    );
    // Adyen counts rupiah whole; ISO in hundredths: a fraction cannot be sent.
    assert_eq!(to_adyen(150_000, "IDR").unwrap()["value"], 1500);
    assert_eq!(to_adyen(150_050, "IDR"), None);
    let script = Script::new(Vec::new());
    let settings = settings();
    let outcome =
        Adapter::new(&settings, &script).authorise(150_050, "IDR", "8415718415172200", "c", "k");
    assert!(matches!(outcome, Outcome::Refused(_)), "{outcome:?}");
    assert_eq!(script.count(), 0);
}

#[test]
fn the_card_form_is_a_session_that_stores_the_card_for_the_shopper() {
    let settings = settings();
    let script = Script::new(alloc::vec![Ok((
        201,
        json!({
            "id": "CS0000000000001", "sessionData": "Ab02b4c0!BQABAg", "expiresAt": "2026-12-01T00:00:00Z",
        })
    ))]);
    let form = Adapter::new(&settings, &script)
        .setup_card_form(&CardFormRequest {
            customer_id: Some("courier-m1".into()),
            contact_email: Some("billing@m1.example".into()),
            ..card_form()
        })
        .unwrap();
    assert_eq!(form.customer_id, "courier-m1");
    assert_eq!(
        form.document,
        json!({
            "session": {"id": "CS0000000000001", "sessionData": "Ab02b4c0!BQABAg"},
            "clientKey": "test_CLIENTKEY",
            "environment": "test",
            "browser": {
                "component": "adyen-drop-in",
                "script": "https://checkoutshopper-test.cdn.adyen.com/checkoutshopper/sdk/5.68.0/adyen.js",
                "stylesheet": "https://checkoutshopper-test.cdn.adyen.com/checkoutshopper/sdk/5.68.0/adyen.css",
                "origins": ["https://checkoutshopper-test.cdn.adyen.com", "https://checkoutshopper-test.adyen.com"],
            },
        })
    );
    let body = script.body(0);
    assert_eq!(body["amount"], json!({"value": 0, "currency": "EUR"}));
    assert_eq!(body["shopperReference"], "courier-m1");
    assert_eq!(body["storePaymentMethodMode"], "enabled");
    assert_eq!(body["countryCode"], "NL");
    assert_eq!(body["shopperLocale"], "nl-NL");
    assert_eq!(body["returnUrl"], "https://shop.example/back");
    assert_eq!(body["shopperEmail"], "billing@m1.example");
}

/// The card form's request of merchant `m1`, the first time, without a contact email.
fn card_form() -> CardFormRequest {
    CardFormRequest {
        merchant: "m1".into(),
        customer_id: None,
        currency: "EUR".into(),
        country: "NL".into(),
        locale: "nl-NL".into(),
        return_url: "https://shop.example/back".into(),
        contact_email: None,
    }
}

#[test]
fn adyen_web_comes_from_where_the_operator_says_and_only_from_https() {
    let read = |base: &str| {
        Settings::read(|name| match name {
            "api_key" => Some("AQE_test_key".into()),
            "merchant_account" => Some("CourierECOM".into()),
            "client_key" => Some("test_CLIENTKEY".into()),
            "web_sdk_base" => Some(base.into()),
            _ => None,
        })
    };
    let settings = read("https://localhost:8443/checkoutshopper/sdk/").unwrap();
    let script = Script::new(alloc::vec![Ok((
        201,
        json!({"id": "CS1", "sessionData": "Ab02"})
    ))]);
    let form = Adapter::new(&settings, &script)
        .setup_card_form(&card_form())
        .unwrap();
    assert_eq!(
        form.document["browser"]["script"],
        "https://localhost:8443/checkoutshopper/sdk/adyen.js"
    );
    assert_eq!(
        form.document["browser"]["origins"],
        json!(["https://localhost:8443"])
    );
    for bad in [
        "http://cdn.example/sdk/",
        "https://cdn.example/sdk",
        "https:///sdk/",
    ] {
        assert!(read(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_stored_card_is_found_among_the_shopper_s() {
    let settings = settings();
    let stored = json!({"storedPaymentMethods": [
        {"id": "M5N7TQ4TG5PFWR50", "brand": "visa", "lastFour": "1111", "expiryMonth": "03", "expiryYear": "30", "type": "scheme"},
    ]});
    let script = Script::new(alloc::vec![Ok((200, stored.clone())), Ok((200, stored))]);
    let adapter = Adapter::new(&settings, &script);
    let card = adapter
        .attach_card("courier-m1", "M5N7TQ4TG5PFWR50")
        .unwrap();
    assert_eq!(
        (
            card.brand.as_str(),
            card.last_four.as_str(),
            card.expiry_month,
            card.expiry_year
        ),
        ("visa", "1111", 3, 2030)
    );
    assert!(script.sent(0).url.ends_with(
        "/storedPaymentMethods?merchantAccount=CourierECOM&shopperReference=courier-m1"
    ));
    assert!(matches!(
        adapter.attach_card("courier-m1", "OTHER00000000000"),
        Err(Refusal::UnknownReference(_))
    ));
}

/// A notification of `items`, each signed with `key`.
fn notification(key: &str, items: &[Value]) -> Vec<u8> {
    let key = (0..key.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&key[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>();
    let items: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut item = item.clone();
            let signing = alloc::format!(
                "{}:{}:{}:{}:{}:{}:{}:{}",
                item["pspReference"].as_str().unwrap_or_default(),
                item["originalReference"].as_str().unwrap_or_default(),
                item["merchantAccountCode"].as_str().unwrap_or_default(),
                item["merchantReference"].as_str().unwrap_or_default(),
                item["amount"]["value"],
                item["amount"]["currency"].as_str().unwrap_or_default(),
                item["eventCode"].as_str().unwrap_or_default(),
                item["success"].as_str().unwrap_or_default(),
            );
            item["additionalData"]["hmacSignature"] = json!(sign(&key, &signing));
            json!({"NotificationRequestItem": item})
        })
        .collect();
    json!({"live": "false", "notificationItems": items})
        .to_string()
        .into_bytes()
}

fn capture_item(success: &str) -> Value {
    json!({
        "pspReference": "CAP0000000000001", "originalReference": "PSP0000000000005",
        "merchantAccountCode": "CourierECOM", "merchantReference": "charge_1_capture",
        "amount": {"value": 1250, "currency": "EUR"}, "eventCode": "CAPTURE",
        "success": success, "reason": "", "eventDate": "2026-11-28T10:00:00+01:00",
        "additionalData": {},
    })
}

#[test]
fn signed_notifications_become_events_naming_what_the_pending_answer_named() {
    let refund = json!({
        "pspReference": "REF0000000000001", "originalReference": "PSP0000000000005",
        "merchantAccountCode": "CourierECOM", "merchantReference": "refund_1",
        "amount": {"value": 500, "currency": "EUR"}, "eventCode": "REFUND",
        "success": "true", "reason": "", "additionalData": {},
    });
    let body = notification(HMAC_HEX, &[capture_item("true"), refund]);
    let events = verify(&settings(), &[], &body).unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].reference, "PSP0000000000005");
    assert_eq!(events[0].kind, EventKind::Captured);
    assert_eq!(events[0].amount_minor, Some(1250));
    assert_eq!(events[0].id, "CAPTURE-CAP0000000000001-true");
    // Each names the request it answers by the reference the request was made with.
    assert_eq!(events[0].request_key.as_deref(), Some("charge_1_capture"));
    assert_eq!(events[1].reference, "REF0000000000001");
    assert_eq!(events[1].kind, EventKind::Refunded);
    assert_eq!(events[1].request_key.as_deref(), Some("refund_1"));
    let failed = notification(HMAC_HEX, &[capture_item("false")]);
    assert!(matches!(
        verify(&settings(), &[], &failed).unwrap()[0].kind,
        EventKind::CaptureFailed(_)
    ));
}

#[test]
fn a_hold_s_authorisation_names_the_hold_s_key() {
    let item = json!({
        "pspReference": "PSP0000000000007", "originalReference": "",
        "merchantAccountCode": "CourierECOM", "merchantReference": "job_1_hold",
        "amount": {"value": 1250, "currency": "EUR"}, "eventCode": "AUTHORISATION",
        "success": "true", "reason": "", "paymentMethod": "visa", "additionalData": {},
    });
    let events = verify(&settings(), &[], &notification(HMAC_HEX, &[item])).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::Held);
    assert_eq!(events[0].reference, "PSP0000000000007");
    assert_eq!(events[0].request_key.as_deref(), Some("job_1_hold"));
}

#[test]
fn a_card_stored_by_the_card_form_is_an_event_for_the_shopper() {
    let item = json!({
        "pspReference": "AUT0000000000001", "originalReference": "",
        "merchantAccountCode": "CourierECOM", "merchantReference": "card-form-courier-m1",
        "amount": {"value": 0, "currency": "EUR"}, "eventCode": "AUTHORISATION",
        "success": "true", "reason": "", "paymentMethod": "visa",
        "additionalData": {
            "recurring.recurringDetailReference": "M5N7TQ4TG5PFWR50",
            "recurring.shopperReference": "courier-m1",
            "cardSummary": "1111", "expiryDate": "3/2030",
        },
    });
    let events = verify(&settings(), &[], &notification(HMAC_HEX, &[item])).unwrap();
    assert_eq!(events.len(), 1, "a zero-amount check holds nothing");
    assert_eq!(events[0].reference, "courier-m1");
    assert_eq!(
        events[0].request_key, None,
        "a stored card answers no request"
    );
    assert_eq!(
        events[0].kind,
        EventKind::CardStored(Attached {
            reference: "M5N7TQ4TG5PFWR50".into(),
            brand: "visa".into(),
            last_four: "1111".into(),
            expiry_month: 3,
            expiry_year: 2030,
        })
    );
}

#[test]
fn a_notification_that_does_not_verify_is_refused_whole() {
    let forged = notification(
        "0000000000000000000000000000000000000000000000000000000000000000",
        &[capture_item("true")],
    );
    assert!(verify(&settings(), &[], &forged).is_err());
    // A signed item, then altered: the amount is part of the signature.
    let mut body: Value =
        serde_json::from_slice(&notification(HMAC_HEX, &[capture_item("true")])).unwrap();
    body["notificationItems"][0]["NotificationRequestItem"]["amount"]["value"] = json!(1);
    assert!(verify(&settings(), &[], body.to_string().as_bytes()).is_err());
    assert!(verify(&settings(), &[], b"not json").is_err());
    let mut other = capture_item("true");
    other["merchantAccountCode"] = json!("SomeoneElse");
    assert!(verify(&settings(), &[], &notification(HMAC_HEX, &[other])).is_err());
}

fn settings_with_credentials(
    user: Option<&str>,
    password: Option<&str>,
) -> Result<Settings, String> {
    Settings::read(|name| match name {
        "api_key" => Some("AQE_test_key".into()),
        "merchant_account" => Some("CourierECOM".into()),
        "hmac_key" => Some(HMAC_HEX.into()),
        "notification_username" => user.map(Into::into),
        "notification_password" => password.map(Into::into),
        _ => None,
    })
}

#[test]
fn with_basic_credentials_configured_a_signed_notification_must_also_carry_them() {
    let settings = settings_with_credentials(Some("courier-webhook"), Some("s3cret")).unwrap();
    let body = notification(HMAC_HEX, &[capture_item("true")]);
    let header = |value: &str| alloc::vec![(String::from("Authorization"), String::from(value))];
    // base64("courier-webhook:s3cret")
    let right = "Basic Y291cmllci13ZWJob29rOnMzY3JldA==";
    assert_eq!(verify(&settings, &header(right), &body).unwrap().len(), 1);
    // Header names are case-insensitive.
    let lower = alloc::vec![(String::from("authorization"), String::from(right))];
    assert_eq!(verify(&settings, &lower, &body).unwrap().len(), 1);
    // Signed, but without the credentials, or with the wrong ones: refused.
    assert!(verify(&settings, &[], &body).is_err());
    // base64("courier-webhook:s3creT")
    assert!(
        verify(
            &settings,
            &header("Basic Y291cmllci13ZWJob29rOnMzY3JlVA=="),
            &body
        )
        .is_err()
    );
    assert!(verify(&settings, &header("Bearer s3cret"), &body).is_err());
    // The right credentials never excuse a bad signature.
    let forged = notification(
        "0000000000000000000000000000000000000000000000000000000000000000",
        &[capture_item("true")],
    );
    assert!(verify(&settings, &header(right), &forged).is_err());
    // Without credentials configured, the header is not asked for.
    assert_eq!(
        verify(&settings_with_credentials(None, None).unwrap(), &[], &body)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn basic_credentials_are_configured_whole() {
    let only_user = settings_with_credentials(Some("courier-webhook"), None).unwrap_err();
    assert!(only_user.contains("go together"), "{only_user}");
    let only_password = settings_with_credentials(None, Some("s3cret")).unwrap_err();
    assert!(only_password.contains("go together"), "{only_password}");
    let colon = settings_with_credentials(Some("courier:webhook"), Some("s3cret")).unwrap_err();
    assert!(colon.contains("`:`"), "{colon}");
    // Empty values count as not set.
    assert!(
        settings_with_credentials(Some(""), Some(""))
            .unwrap()
            .notification_credentials
            .is_none()
    );
}

#[test]
fn the_signature_is_adyen_s_by_its_published_test_vector() {
    // Adyen's libraries' test vector: this key, these fields, this signature.
    let key: Vec<u8> = (0..64)
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(
                &"DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"[i..i + 2],
                16,
            )
            .unwrap()
        })
        .collect();
    let item = json!({
        "pspReference": "pspReference", "originalReference": "originalReference",
        "merchantAccountCode": "merchantAccount", "merchantReference": "reference",
        "amount": {"value": 1000, "currency": "EUR"}, "eventCode": "EVENT", "success": "true",
        "additionalData": {"hmacSignature": "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="},
    });
    assert!(crate::notifications::verifies(&key, &item));
    let mut other = item.clone();
    other["success"] = json!("false");
    assert!(!crate::notifications::verifies(&key, &other));
}
