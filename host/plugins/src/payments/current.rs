//! The contract as it is now, `courier:payments/payment-adapter@2.3.0`: its bindings, its
//! imports, and its answers read into the host's types.

mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit/payments",
        world: "payment-adapter",
        imports: { "courier:payments/outbound-http": async },
        exports: { default: async },
    });
}

pub(crate) const WORLD: &str = "courier:payments/payment-adapter@2.3.0";
pub(crate) const VERSION: &str = "2.3.0";

super::since_2_1::since_2_1!(Current);

/// The whole request, the merchant's contact email included.
fn card_form_request(r: &CardFormRequest) -> w::CardFormRequest {
    w::CardFormRequest {
        merchant: r.merchant.clone(),
        customer_id: r.customer_id.clone(),
        currency: r.currency.clone(),
        country: r.country.clone(),
        locale: r.locale.clone(),
        return_url: r.return_url.clone(),
        contact_email: r.contact_email.clone(),
    }
}

/// What the adapter says of the request the event answers.
fn request_key(e: &w::ProviderEvent) -> Option<String> {
    e.request_key.clone()
}
