use super::*;

fn job() -> Job {
    Job {
        id: "6f1c2d1e-8a52-4a55-9c37-0d4ad3f1e0aa".into(),
        reference: "CR-7K2M9".into(),
        market: "london".into(),
        currency: "GBP".into(),
        price_amount_minor: 1_499,
        tax_amount_minor: 250,
        scheduled_for: None,
    }
}

fn event(name: &str) -> Event {
    Event {
        name: name.into(),
        occurred_at: "2026-11-21T10:45:36Z".into(),
        environment: Environment::Test,
        merchant: "merchant_1".into(),
        job: Some(job()),
        courier: None,
        proof: None,
        reason: None,
        from: None,
        to: None,
        assigned_courier: None,
        payment_method_id: None,
        brand: None,
        last_four: None,
    }
}

fn text(e: &Event) -> String {
    String::from_utf8(shape(e).unwrap()).unwrap()
}

/// The keys of `data`, in order.
fn data_keys(e: &Event) -> Vec<String> {
    let body = text(e);
    let start = body.find("\"data\":{").unwrap() + 8;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let data = v["data"].as_object().unwrap();
    let mut keys: Vec<(usize, String)> = data
        .keys()
        .map(|k| (body[start..].find(&format!("\"{k}\":")).unwrap(), k.clone()))
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

#[test]
fn booked_envelope_is_exact() {
    assert_eq!(
        text(&event("job.booked")),
        concat!(
            r#"{"type":"job.booked","occurred_at":"2026-11-21T10:45:36Z","environment":"test","#,
            r#""data":{"occurredAt":"2026-11-21T10:45:36Z","environment":0,"#,
            r#""jobId":"6f1c2d1e-8a52-4a55-9c37-0d4ad3f1e0aa","reference":"CR-7K2M9","#,
            r#""merchant":"merchant_1","market":"london","currency":"GBP","#,
            r#""priceAmountMinor":1499,"taxAmountMinor":250,"scheduledFor":null}}"#
        )
    );
}

#[test]
fn live_environment_is_code_one() {
    let mut e = event("job.failed");
    e.environment = Environment::Live;
    let v: serde_json::Value = serde_json::from_slice(&shape(&e).unwrap()).unwrap();
    assert_eq!(v["environment"], "live");
    assert_eq!(v["data"]["environment"], 1);
}

#[test]
fn each_event_carries_exactly_the_spec_fields() {
    const COMMON: [&str; 5] = [
        "occurredAt",
        "environment",
        "jobId",
        "reference",
        "merchant",
    ];
    let money = ["currency", "priceAmountMinor", "taxAmountMinor"];
    let mut cases: Vec<(Event, Vec<&str>)> = Vec::new();
    let mut e = event("job.courier_assigned");
    e.courier = Some("courier_9".into());
    cases.push((e.clone(), vec!["courier"]));
    e.name = "job.picked_up".into();
    cases.push((e, vec!["courier"]));
    let mut e = event("job.delivered");
    e.courier = Some("courier_9".into());
    e.proof = Some(Proof {
        outcome: "handed_to_recipient".into(),
        recipient_name: Some("Ana".into()),
        has_photo: true,
        has_signature: false,
    });
    cases.push((e, [&["market", "courier"][..], &money, &["proof"]].concat()));
    let mut e = event("job.returned");
    e.reason = Some("recipient_absent".into());
    cases.push((
        e,
        [&["market", "courier"][..], &money, &["reason"]].concat(),
    ));
    cases.push((event("job.cancelled"), vec!["reason"]));
    let mut e = event("job.cancelled");
    e.assigned_courier = Some("courier_9".into());
    cases.push((e, vec!["reason", "assignedCourier"]));
    cases.push((event("job.failed"), vec!["reason"]));
    let mut e = event("job.status_changed");
    e.from = Some("searching".into());
    e.to = Some("in_transit".into());
    cases.push((e, vec!["from", "to", "reason"]));
    for (e, extra) in cases {
        let expected: Vec<&str> = COMMON.iter().copied().chain(extra).collect();
        assert_eq!(data_keys(&e), expected, "{}", e.name);
    }
}

#[test]
fn delivered_proof_is_camel_case() {
    let mut e = event("job.delivered");
    e.proof = Some(Proof {
        outcome: "handed_to_recipient".into(),
        recipient_name: None,
        has_photo: false,
        has_signature: true,
    });
    assert!(text(&e).contains(
        r#""proof":{"outcome":"handed_to_recipient","recipientName":null,"hasPhoto":false,"hasSignature":true}"#
    ));
}

#[test]
fn dead_card_has_no_job_id() {
    let mut e = event("payment_method.dead");
    e.job = None;
    e.payment_method_id = Some("pm_1".into());
    e.brand = Some("visa".into());
    e.last_four = Some("0069".into());
    e.reason = Some("expired".into());
    assert_eq!(
        data_keys(&e),
        [
            "occurredAt",
            "environment",
            "reference",
            "merchant",
            "paymentMethodId",
            "brand",
            "lastFour",
            "reason"
        ]
    );
}

#[test]
fn missing_or_unknown_things_are_errors() {
    assert!(
        shape(&event("job.exploded"))
            .unwrap_err()
            .contains("unknown event")
    );
    let mut e = event("job.booked");
    e.job = None;
    assert!(shape(&e).is_err());
    assert!(shape(&event("job.courier_assigned")).is_err());
    assert!(shape(&event("job.status_changed")).is_err());
    let mut e = event("payment_method.dead");
    e.job = None;
    assert!(shape(&e).is_err());
}

#[test]
fn same_event_same_bytes() {
    let e = event("job.booked");
    assert_eq!(shape(&e).unwrap(), shape(&e).unwrap());
}
