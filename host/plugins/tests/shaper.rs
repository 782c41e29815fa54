//! The standard shaper through the component boundary.

mod common;

use courier_plugins::defaults::STANDARD_SHAPER;
use courier_plugins::{Environment, EventJob, PayloadShaper, WebhookEvent};

fn shaper() -> PayloadShaper {
    PayloadShaper::load(&common::engine(), STANDARD_SHAPER).unwrap()
}

#[test]
fn booked_event_has_the_spec_envelope() {
    let mut e = WebhookEvent::new(
        "job.booked",
        "2026-11-21T10:45:36Z",
        Environment::Live,
        "merchant_1",
    );
    e.job = Some(EventJob {
        id: "6f1c2d1e-8a52-4a55-9c37-0d4ad3f1e0aa".into(),
        reference: "CR-7K2M9".into(),
        market: "london".into(),
        currency: "GBP".into(),
        price_amount_minor: 2_003,
        tax_amount_minor: 334,
        scheduled_for: Some("2026-11-21T12:00:00Z".into()),
    });
    let p = shaper().shape(&e).unwrap().unwrap();
    assert_eq!(p.content_type, "application/json");
    assert_eq!(
        String::from_utf8(p.body).unwrap(),
        concat!(
            r#"{"type":"job.booked","occurred_at":"2026-11-21T10:45:36Z","environment":"live","#,
            r#""data":{"occurredAt":"2026-11-21T10:45:36Z","environment":1,"#,
            r#""jobId":"6f1c2d1e-8a52-4a55-9c37-0d4ad3f1e0aa","reference":"CR-7K2M9","#,
            r#""merchant":"merchant_1","market":"london","currency":"GBP","#,
            r#""priceAmountMinor":2003,"taxAmountMinor":334,"scheduledFor":"2026-11-21T12:00:00Z"}}"#
        )
    );
}

#[test]
fn unknown_events_are_refused_by_the_shaper() {
    let e = WebhookEvent::new(
        "job.teleported",
        "2026-11-21T10:45:36Z",
        Environment::Test,
        "m",
    );
    let err = shaper().shape(&e).unwrap().unwrap_err();
    assert!(err.contains("job.teleported"), "{err}");
}
