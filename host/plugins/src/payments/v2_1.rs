//! Components built against `courier:payments/payment-adapter@2.1.0`, kept working as they
//! behave today: everything of 2.3.0 but the merchant's contact email, which a 2.1.0
//! adapter is not told, and the request key of its events, which it cannot say.

mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit/payments-2.1",
        world: "payment-adapter",
        imports: { "courier:payments/outbound-http": async },
        exports: { default: async },
    });
}

pub(crate) const WORLD: &str = "courier:payments/payment-adapter@2.1.0";
const VERSION: &str = "2.1.0";

super::since_2_1::since_2_1!(V2_1);

/// The request as 2.1.0 has it: without the contact email.
fn card_form_request(r: &CardFormRequest) -> w::CardFormRequest {
    w::CardFormRequest {
        merchant: r.merchant.clone(),
        customer_id: r.customer_id.clone(),
        currency: r.currency.clone(),
        country: r.country.clone(),
        locale: r.locale.clone(),
        return_url: r.return_url.clone(),
    }
}

/// 2.1.0 events name no request.
fn request_key(_: &w::ProviderEvent) -> Option<String> {
    None
}
