//! Black-box tests: each starts the real service on a free port against its own database in
//! one private PostgreSQL cluster per test run, and talks to it over HTTP.

mod support;

mod adapters;
mod audit;
mod auth;
mod certify;
mod cli;
mod connections;
mod console;
mod console_browser;
mod console_card_form;
mod dispatch;
mod errors;
mod fleet;
mod fulfilment;
mod instances;
mod jobs;
mod keys;
mod live_adyen;
mod live_payments;
mod lookups;
mod mail;
mod networks;
mod openapi;
mod ops;
mod ops_console;
mod passkeys;
mod payments;
mod price_books;
mod provider_events;
mod quotes;
mod rate_limits;
mod ready_times;
mod resilience;
mod routes;
mod sandbox;
mod second_factor;
mod simulate;
mod team;
mod texts;
mod tracking;
mod tracking_browser;
mod webhooks;
