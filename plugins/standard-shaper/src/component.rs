//! The WIT boundary. `guest-rt` supplies what std would.

use alloc::string::String;

use guest_rt as _;

wit_bindgen::generate!({
    path: "../../wit/webhooks",
    world: "payload-shaper",
    // Gates the generated `std::error::Error` impls behind a `std` feature
    // this crate does not have: it is no_std.
    std_feature,
});

use courier::webhooks::types as wit;
use exports::courier::webhooks::shaper::Guest;

struct Component;

export!(Component);

impl Guest for Component {
    fn shape(e: wit::Event) -> Result<wit::Payload, String> {
        let event = crate::Event {
            name: e.name,
            occurred_at: e.occurred_at,
            environment: match e.environment {
                wit::Environment::Test => crate::Environment::Test,
                wit::Environment::Live => crate::Environment::Live,
            },
            merchant: e.merchant,
            job: e.job.map(|j| crate::Job {
                id: j.id,
                reference: j.reference,
                market: j.market,
                currency: j.currency,
                price_amount_minor: j.price_amount_minor,
                tax_amount_minor: j.tax_amount_minor,
                scheduled_for: j.scheduled_for,
            }),
            courier: e.courier,
            proof: e.proof.map(|p| crate::Proof {
                outcome: p.outcome,
                recipient_name: p.recipient_name,
                has_photo: p.has_photo,
                has_signature: p.has_signature,
            }),
            reason: e.reason,
            from: e.from,
            to: e.to,
            assigned_courier: e.assigned_courier,
            payment_method_id: e.payment_method_id,
            brand: e.brand,
            last_four: e.last_four,
        };
        Ok(wit::Payload {
            content_type: "application/json".into(),
            body: crate::shape(&event)?,
        })
    }
}
