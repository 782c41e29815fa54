//! The merchant console, `/console/`: pages for people, rendered here from templates
//! (`templates/console/`), readable without JavaScript. People sign in with their e-mail
//! address and password ([`team`]: invitations, roles, sessions); each page and form checks
//! what the person's role may do. The session is a cookie (`HttpOnly`, `SameSite=Strict`,
//! `Secure` when the service's public URL is https) naming a stored session that ends at
//! sign-out, at expiry, when revoked, or when its person leaves the team. Every form carries the session's CSRF token, and a one-time token that makes
//! it act once ([`once`]). Failed sign-ins spend the
//! client address's failure budget, as the API's do; every page spends the public routes'
//! per-address budget.

pub(crate) mod card_form;
pub(crate) mod cards;
pub(crate) mod catalog;
pub(crate) mod courier_app;
pub(crate) mod keys;
pub(crate) mod once;
pub(crate) mod operator;
pub(crate) mod pages;
pub(crate) mod passkeys;
pub(crate) mod passwords;
mod reauth;
mod respond;
pub(crate) mod sandbox;
pub(crate) mod second_factor;
pub(crate) mod team;
mod webhook_health;
pub(crate) mod webhooks;
