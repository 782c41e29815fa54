//! `courier adapter certify`: the payments contract's conformance suite. The adapter is loaded
//! as the service loads it, with its provider played back from cassettes
//! ([`crate::adapter::cassette`]) in-process: every recorded operation is replayed, and each
//! approved money move is replayed again with a fault made from its recording (5xx, 429, a
//! hang past the deadline, the connection dropped after the provider acted, a cut or oversize
//! body, another amount or currency, the key still in use). Every scenario also checks that
//! money moves carry the host's idempotency key, that no request and no line the adapter logged
//! holds a card number (nor its answer: a refusal's text, say), naming the header or field, and
//! that the adapter asked the provider only what the cassette knows.

mod player;
mod scenarios;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use thiserror::Error;

use courier_core::config::Config;
use courier_core::payments::{GatewayError, TestNetwork, live_adapter_config};
use courier_plugins::{PaymentAdapter, PluginError};

use super::cassette::{CassetteError, load_dir};
use super::run::read_component;
use player::Player;

/// Why the suite could not run (exit 2), or the adapter did not load (exit 1).
#[derive(Debug, Error)]
pub enum CertifyError {
    #[error(transparent)]
    Cassettes(#[from] CassetteError),
    #[error(transparent)]
    Component(#[from] super::run::RunError),
    #[error(transparent)]
    Configuration(#[from] GatewayError),
    #[error("the plugin engine: {0}")]
    Engine(#[source] PluginError),
    #[error("the adapter did not load: {0}")]
    Adapter(#[source] PluginError),
}

impl CertifyError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CertifyError::Adapter(_) => 1,
            _ => 2,
        }
    }
}

/// One scenario's result: `failure` says what was wrong.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub scenario: String,
    pub failure: Option<String>,
}

impl Verdict {
    /// The line the command prints for it.
    pub fn line(&self) -> String {
        match &self.failure {
            None => format!("ok    {}", self.scenario),
            Some(why) => format!("FAIL  {}: {why}", self.scenario),
        }
    }
}

/// The last line: `{"scenarios": N, "passed": P, "failed": F}`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub scenarios: usize,
    pub passed: usize,
    pub failed: usize,
}

/// Runs the suite over the cassettes in `cassettes`, each call of the adapter under
/// `deadline`; `each` sees every verdict as it is reached.
pub async fn certify(
    config: &Config,
    file: &Path,
    adapter_config: Option<&Path>,
    cassettes: &Path,
    deadline: Duration,
    each: &mut dyn FnMut(&Verdict),
) -> Result<Summary, CertifyError> {
    let cassettes = load_dir(cassettes)?;
    let bytes = read_component(file)?;
    let mut values = live_adapter_config(adapter_config, &TestNetwork::default())?;
    // Only a value with a dozen digits could be mistaken for a card number.
    let configured: Vec<String> = values
        .values
        .values()
        .filter(|v| v.bytes().filter(u8::is_ascii_digit).count() >= 12)
        .cloned()
        .collect();
    let player = Arc::new(Player::new(values.max_response_bytes));
    values.network.stand_in = Some(player.clone());
    let mut config = config.clone();
    config.payments.calls.deadline = deadline;
    let engine = crate::app::plugin_engine(&config).map_err(CertifyError::Engine)?;
    // Watched, for the lines it logs (checked for card numbers like its requests).
    let adapter = PaymentAdapter::load_watched(&engine, &bytes, values)
        .await
        .map_err(CertifyError::Adapter)?;
    let suite = scenarios::Suite {
        adapter: &adapter,
        player: &player,
        bytes: &bytes,
        cassettes: &cassettes,
        configured: &configured,
    };
    let mut summary = Summary {
        scenarios: 0,
        passed: 0,
        failed: 0,
    };
    for scenario in suite.scenarios() {
        let verdict = Verdict {
            failure: suite.run(&scenario).await.err(),
            scenario: scenario.name,
        };
        summary.scenarios += 1;
        match verdict.failure {
            None => summary.passed += 1,
            Some(_) => summary.failed += 1,
        }
        each(&verdict);
    }
    Ok(summary)
}
