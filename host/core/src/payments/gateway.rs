//! The payment adapter of each environment: test always runs the sandbox component; live runs
//! the component the operator configured, or nothing (live card operations are then refused
//! with `payment.live_unavailable`). Live never runs the sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use courier_plugins::{
    AttachRefusal, AttachedCard, CaptureRequest, CardForm, CardFormRequest, EventRefusal,
    HoldRequest, LookupFailure, Outcome, PaymentAdapter, PaymentPage, PaymentState, PluginEngine,
    PluginError, ProviderEvent, RefundRequest, VoidRequest,
};
use thiserror::Error;

use courier_domain::Environment;

/// The provider operations the service needs, asynchronous (adapters wait on HTTP). A trait
/// so that tests can stand a provider with a failure of their choosing in front of the
/// sandbox.
#[async_trait::async_trait]
pub trait Gateway: Send + Sync + 'static {
    async fn setup_card_form(
        &self,
        request: &CardFormRequest,
    ) -> Result<Result<CardForm, String>, PluginError>;
    async fn attach_card(
        &self,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Result<AttachedCard, AttachRefusal>, PluginError>;
    async fn authorise(&self, request: &HoldRequest) -> Result<Outcome, PluginError>;
    async fn capture(&self, request: &CaptureRequest) -> Result<Outcome, PluginError>;
    async fn void(&self, request: &VoidRequest) -> Result<Outcome, PluginError>;
    async fn refund(&self, request: &RefundRequest) -> Result<Outcome, PluginError>;
    /// A payment read back by the reference its hold was approved with.
    async fn retrieve(
        &self,
        reference: &str,
    ) -> Result<Result<PaymentState, LookupFailure>, PluginError>;
    /// The provider's payments made since `since` (Unix seconds), a page at a time.
    async fn list_payments(
        &self,
        since: i64,
        after: Option<&str>,
    ) -> Result<Result<PaymentPage, String>, PluginError>;
    /// Verifies a notification the provider sent and reads its events.
    async fn verify_event(
        &self,
        _headers: &[(String, String)],
        _body: &[u8],
    ) -> Result<Result<Vec<ProviderEvent>, EventRefusal>, PluginError> {
        Ok(Err(EventRefusal::Unsupported))
    }
    /// Whether calls go over the network (then they run with no transaction open, on the
    /// bounded pool). False for an in-process computation such as the sandbox.
    fn uses_network(&self) -> bool {
        false
    }
    /// Whether `reference` is one of the provider's card references by the pattern its adapter
    /// declared: the raw-card-number rule leaves those alone where a card reference is sent.
    fn is_own_reference(&self, _reference: &str) -> bool {
        false
    }
    /// The component behind it, for operators to see; none for a stand-in.
    fn adapter(&self) -> Option<&PaymentAdapter> {
        None
    }
}

#[async_trait::async_trait]
impl Gateway for PaymentAdapter {
    async fn setup_card_form(
        &self,
        request: &CardFormRequest,
    ) -> Result<Result<CardForm, String>, PluginError> {
        PaymentAdapter::setup_card_form(self, request).await
    }
    async fn attach_card(
        &self,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Result<AttachedCard, AttachRefusal>, PluginError> {
        PaymentAdapter::attach_card(self, customer_id, card_ref).await
    }
    fn is_own_reference(&self, reference: &str) -> bool {
        PaymentAdapter::is_own_reference(self, reference)
    }
    async fn authorise(&self, request: &HoldRequest) -> Result<Outcome, PluginError> {
        PaymentAdapter::authorise(self, request).await
    }
    async fn capture(&self, request: &CaptureRequest) -> Result<Outcome, PluginError> {
        PaymentAdapter::capture(self, request).await
    }
    async fn void(&self, request: &VoidRequest) -> Result<Outcome, PluginError> {
        PaymentAdapter::void(self, request).await
    }
    async fn refund(&self, request: &RefundRequest) -> Result<Outcome, PluginError> {
        PaymentAdapter::refund(self, request).await
    }
    async fn retrieve(
        &self,
        reference: &str,
    ) -> Result<Result<PaymentState, LookupFailure>, PluginError> {
        PaymentAdapter::retrieve(self, reference).await
    }
    async fn list_payments(
        &self,
        since: i64,
        after: Option<&str>,
    ) -> Result<Result<PaymentPage, String>, PluginError> {
        PaymentAdapter::list_payments(self, since, after).await
    }
    async fn verify_event(
        &self,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Result<Vec<ProviderEvent>, EventRefusal>, PluginError> {
        PaymentAdapter::verify_event(self, headers, body).await
    }
    fn uses_network(&self) -> bool {
        PaymentAdapter::uses_network(self)
    }
    fn adapter(&self) -> Option<&PaymentAdapter> {
        Some(self)
    }
}

#[derive(Debug, Error)]
pub enum GatewayError {
    #[error("loading the sandbox payment adapter: {0}")]
    Sandbox(#[source] PluginError),
    #[error("reading the live payment adapter {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the live payment adapter's configuration {path} must be a JSON object of strings: {reason}"
    )]
    Config { path: PathBuf, reason: String },
    #[error("loading the live payment adapter: {0}")]
    Live(#[source] PluginError),
    #[error("the live payment adapter is the sandbox adapter; live never takes sandbox cards")]
    LiveIsSandbox,
    #[error(
        "the live payment adapter {adapter:?} declares no provider host to reach, so it cannot \
         take live payments; check its configuration (COURIER_LIVE_PAYMENT_CONFIG)"
    )]
    LiveWithoutNetwork { adapter: String },
    #[error("reading COURIER_PAYMENT_EXTRA_CA {path}: {source}")]
    ExtraCa {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where a live adapter's requests may go beyond public hosts: tests only.
#[derive(Clone, Debug, Default)]
pub struct TestNetwork {
    pub allow_private: bool,
    pub extra_ca: Option<PathBuf>,
}

/// One gateway per environment.
#[derive(Clone)]
pub struct Gateways {
    test: Arc<dyn Gateway>,
    live: Option<Arc<dyn Gateway>>,
}

impl Gateways {
    pub fn new(test: Arc<dyn Gateway>, live: Option<Arc<dyn Gateway>>) -> Self {
        Self { test, live }
    }

    /// The sandbox for test; for live, the component at `live_adapter` (with the string
    /// values of the JSON object at `live_config` as its configuration), if any.
    pub async fn load(
        engine: &PluginEngine,
        live_adapter: Option<&Path>,
        live_config: Option<&Path>,
        test_network: &TestNetwork,
    ) -> Result<Self, GatewayError> {
        let sandbox = PaymentAdapter::load(
            engine,
            courier_plugins::defaults::SANDBOX_PAYMENTS,
            courier_plugins::AdapterConfig::new(BTreeMap::new()),
        )
        .await
        .map_err(GatewayError::Sandbox)?;
        let live = match live_adapter {
            None => None,
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|source| GatewayError::Read {
                    path: path.to_owned(),
                    source,
                })?;
                let config = live_adapter_config(live_config, test_network)?;
                if test_network.allow_private || test_network.extra_ca.is_some() {
                    tracing::warn!(
                        "the live payment adapter may reach private addresses or trusts extra \
                         roots (COURIER_PAYMENT_ALLOW_PRIVATE, COURIER_PAYMENT_EXTRA_CA): for \
                         tests only"
                    );
                }
                let adapter = PaymentAdapter::load(engine, &bytes, config)
                    .await
                    .map_err(GatewayError::Live)?;
                if adapter.sha256() == sandbox.sha256() {
                    return Err(GatewayError::LiveIsSandbox);
                }
                // A live adapter that would make no provider call cannot take live money:
                // refused here rather than answer bookings it cannot charge.
                if !adapter.uses_network() {
                    return Err(GatewayError::LiveWithoutNetwork {
                        adapter: adapter.info().name.clone(),
                    });
                }
                tracing::info!(adapter = %adapter.info().name, version = %adapter.info().version, "live payment adapter loaded");
                Some(Arc::new(adapter) as Arc<dyn Gateway>)
            }
        };
        Ok(Self {
            test: Arc::new(sandbox),
            live,
        })
    }

    pub fn get(&self, environment: Environment) -> Option<Arc<dyn Gateway>> {
        match environment {
            Environment::Test => Some(Arc::clone(&self.test)),
            Environment::Live => self.live.clone(),
        }
    }
}

/// What a live adapter is loaded with: the string values of the JSON object at `live_config`
/// (`COURIER_LIVE_PAYMENT_CONFIG`), with the test network's widenings. Shared by the service
/// and `courier adapter run`, so an adapter runs alone exactly as the service runs it.
pub fn live_adapter_config(
    live_config: Option<&Path>,
    test_network: &TestNetwork,
) -> Result<courier_plugins::AdapterConfig, GatewayError> {
    let values = live_config
        .map(read_config)
        .transpose()?
        .unwrap_or_default();
    let mut config = courier_plugins::AdapterConfig::new(values);
    config.network.allow_private = test_network.allow_private;
    if let Some(path) = &test_network.extra_ca {
        let pem = std::fs::read(path).map_err(|source| GatewayError::ExtraCa {
            path: path.clone(),
            source,
        })?;
        config.network.extra_roots_pem = Some(pem);
    }
    Ok(config)
}

fn read_config(path: &Path) -> Result<BTreeMap<String, String>, GatewayError> {
    let invalid = |reason: String| GatewayError::Config {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| invalid(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))
}
