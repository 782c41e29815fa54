//! The merchant console, `/console/`: pages for people, rendered here from templates
//! (`templates/console/`), readable without JavaScript. Signed in with an API key and its
//! secret; the session is a cookie (`HttpOnly`, `SameSite=Strict`, `Secure` when the service's
//! public URL is https) naming a stored session that ends at sign-out, at expiry, or when its
//! key is revoked. Every form carries the session's CSRF token, and a one-time token that makes
//! it act once ([`once`]). Failed sign-ins spend the
//! client address's failure budget, as the API's do; every page spends the public routes'
//! per-address budget.

pub(crate) mod card_form;
pub(crate) mod cards;
pub(crate) mod catalog;
pub(crate) mod keys;
pub(crate) mod once;
pub(crate) mod operator;
pub(crate) mod pages;
mod respond;
pub(crate) mod sandbox;
pub(crate) mod webhooks;
