//! The card-form document: what a page needs to draw Stripe's card form
//! (the Payment Element) for a SetupIntent.
//!
//! `{"client_secret"}` always; with a publishable key configured also
//! `"publishable_key"` and `"browser"`, the service's convention for a page
//! that loads a provider's form: `component` (which form, here
//! `stripe-payment-element`), `script` (the provider's script) and `origins`
//! (every origin the form loads from, frames or calls, for the page's
//! Content-Security-Policy).

use alloc::string::String;
use alloc::vec::Vec;

use adapter_kit::http::origin_of;
use serde_json::{Value, json};

use crate::stripe::{DEFAULT_JS_URL, Settings};

/// The name the service's pages know Stripe's Payment Element by.
pub const COMPONENT: &str = "stripe-payment-element";

/// Where Stripe.js itself loads, frames and calls from, besides its own
/// origin (Stripe's Content-Security-Policy guidance): its subdomains, the
/// API, and the frames of 3-D Secure.
const STRIPE_ORIGINS: [&str; 3] = [
    "https://*.js.stripe.com",
    "https://api.stripe.com",
    "https://hooks.stripe.com",
];

pub fn card_form_document(settings: &Settings, client_secret: &str) -> Value {
    let Some(publishable_key) = &settings.publishable_key else {
        return json!({ "client_secret": client_secret });
    };
    let mut origins: Vec<String> = origin_of(&settings.js_url).into_iter().collect();
    // Stripe.js from elsewhere (a stand-in, a mirror) calls and frames only where it is from.
    if origin_of(&settings.js_url) == origin_of(DEFAULT_JS_URL) {
        origins.extend(STRIPE_ORIGINS.iter().map(|o| String::from(*o)));
    }
    json!({
        "client_secret": client_secret,
        "publishable_key": publishable_key,
        "browser": {
            "component": COMPONENT,
            "script": settings.js_url,
            "origins": origins,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(get: &[(&str, &str)]) -> Result<Settings, String> {
        Settings::read(|name| {
            get.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| String::from(*v))
        })
    }

    #[test]
    fn without_a_publishable_key_the_document_holds_the_client_secret_only() {
        let s = settings(&[("secret_key", "sk_test_1")]).unwrap();
        assert_eq!(
            card_form_document(&s, "seti_1_secret_2"),
            json!({"client_secret": "seti_1_secret_2"})
        );
    }

    #[test]
    fn with_one_it_says_how_a_page_loads_stripes_form() {
        let s = settings(&[
            ("secret_key", "sk_test_1"),
            ("publishable_key", "pk_test_9"),
        ])
        .unwrap();
        assert_eq!(
            card_form_document(&s, "seti_1_secret_2"),
            json!({
                "client_secret": "seti_1_secret_2",
                "publishable_key": "pk_test_9",
                "browser": {
                    "component": "stripe-payment-element",
                    "script": "https://js.stripe.com/v3/",
                    "origins": [
                        "https://js.stripe.com",
                        "https://*.js.stripe.com",
                        "https://api.stripe.com",
                        "https://hooks.stripe.com",
                    ],
                },
            })
        );
        let elsewhere = settings(&[
            ("secret_key", "sk_test_1"),
            ("publishable_key", "pk_test_9"),
            ("js_url", "https://localhost:8443/v3/"),
        ])
        .unwrap();
        let document = card_form_document(&elsewhere, "s");
        assert_eq!(document["browser"]["script"], "https://localhost:8443/v3/");
        assert_eq!(
            document["browser"]["origins"],
            json!(["https://localhost:8443"])
        );
    }

    #[test]
    fn keys_and_script_addresses_that_are_not_are_refused() {
        for bad in [
            ("publishable_key", "sk_live_secret"),
            ("publishable_key", "pk_live with space"),
            ("js_url", "http://js.stripe.com/v3/"),
            ("js_url", "https://js.stripe.com;script-src *"),
            ("js_url", "https:///v3/"),
        ] {
            assert!(
                settings(&[("secret_key", "sk_test_1"), bad]).is_err(),
                "{bad:?}"
            );
        }
    }
}
