//! `courier adapter run`: one call of a payment adapter, with no database and no service, for
//! the partner writing it. The adapter is loaded as the service loads its live adapter (the
//! same allow-list from `describe`, public-address rule, limits and test switches), and what
//! it did is printed: the answer, every HTTP exchange (the configuration's secrets and every
//! `Authorization` credential masked), the time taken and the limits it ran under.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use thiserror::Error;

use courier_core::config::Config;
use courier_core::payments::{GatewayError, TestNetwork, live_adapter_config};
use courier_plugins::{CallRecord, Exchange, GuestLine, PaymentAdapter, PluginError};

/// The operations of the payments contract, as the command names them.
pub const OPERATIONS: [&str; 10] = [
    "describe",
    "setup-card-form",
    "attach-card",
    "hold",
    "capture",
    "void",
    "refund",
    "retrieve",
    "list-payments",
    "verify-event",
];

/// Why an adapter could not be run: the command's usage (exit 2) or the adapter (exit 1).
#[derive(Debug, Error)]
pub enum RunError {
    #[error("unknown operation {0:?}; one of {ops}", ops = OPERATIONS.join(", "))]
    UnknownOperation(String),
    #[error("the arguments of {operation} must be a JSON object {shape}: {reason}")]
    Arguments {
        operation: &'static str,
        shape: &'static str,
        reason: String,
    },
    #[error("reading {path}: {reason}")]
    Read { path: String, reason: String },
    #[error(transparent)]
    Configuration(#[from] GatewayError),
    #[error("the plugin engine: {0}")]
    Engine(#[source] PluginError),
    #[error("the adapter failed: {0}")]
    Adapter(#[source] PluginError),
}

impl RunError {
    /// 2 for what the command was given, 1 for what the adapter did.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Adapter(_) => 1,
            _ => 2,
        }
    }
}

/// The arguments of `attach-card`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachArgs {
    customer_id: String,
    card_ref: String,
}

/// The arguments of `verify-event`: the notification as it arrived.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EventArgs {
    headers: Vec<(String, String)>,
    body: String,
}

/// The arguments of `retrieve`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RetrieveArgs {
    reference: String,
}

/// The arguments of `list-payments`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    since: i64,
    after: Option<String>,
}

/// One operation of an adapter, done: what `run` prints and `record` keeps.
pub(crate) struct Performed {
    pub adapter: PaymentAdapter,
    pub operation: &'static str,
    pub args: Value,
    pub answer: Value,
    /// Whole, with the secrets masked.
    pub exchanges: Vec<Exchange>,
    /// What the adapter logged, `describe` included.
    pub logged: Vec<GuestLine>,
    pub millis: u64,
    /// The operation's own call as the engine recorded it: time, memory, fuel.
    pub call: Option<CallRecord>,
}

/// Runs `operation` of the adapter in `file` with the configuration at `adapter_config` and
/// `args` (a JSON object), and returns what to print.
pub async fn run(
    config: &Config,
    file: &Path,
    operation: &str,
    adapter_config: Option<&Path>,
    args: Option<&str>,
) -> Result<Value, RunError> {
    Ok(perform(config, file, operation, adapter_config, args)
        .await?
        .report())
}

/// Loads the adapter as the service would (watched) and performs one operation.
pub(crate) async fn perform(
    config: &Config,
    file: &Path,
    operation: &str,
    adapter_config: Option<&Path>,
    args: Option<&str>,
) -> Result<Performed, RunError> {
    let operation = operation_named(operation)?;
    let args: Value = match args {
        None => json!({}),
        Some(text) => serde_json::from_str(text).map_err(|e| RunError::Arguments {
            operation,
            shape: shape_of(operation),
            reason: e.to_string(),
        })?,
    };
    let bytes = read_component(file)?;
    let network = TestNetwork {
        allow_private: config.payments.allow_private,
        extra_ca: config.payments.extra_ca.clone(),
    };
    let adapter_config = live_adapter_config(adapter_config, &network)?;
    let engine = crate::app::plugin_engine(config).map_err(RunError::Engine)?;
    let started = Instant::now();
    let adapter = PaymentAdapter::load_watched(&engine, &bytes, adapter_config)
        .await
        .map_err(RunError::Adapter)?;
    let answer = call(&adapter, operation, args.clone()).await?;
    let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let exchanges = adapter.take_exchanges();
    let logged = adapter.take_logged();
    let call = engine.recent_calls(adapter.sha256()).into_iter().next();
    Ok(Performed {
        adapter,
        operation,
        args,
        answer,
        exchanges,
        logged,
        millis,
        call,
    })
}

impl Performed {
    /// What `courier adapter run` prints: bodies cut to excerpts.
    pub fn report(self) -> Value {
        let limits = self.adapter.limits();
        let info = self.adapter.info();
        json!({
            "adapter": {
                "name": info.name,
                "version": info.version,
                "allowed_hosts": info.allowed_hosts,
                "reference_pattern": info.reference_pattern,
                "contract": info.contract,
                "sha256": self.adapter.sha256(),
            },
            "operation": self.operation,
            "answer": self.answer,
            "exchanges": self.exchanges.into_iter().map(Exchange::excerpted).collect::<Vec<_>>(),
            "logged": self.logged,
            "millis": self.millis,
            "used": self.call.map(|call| json!({
                "millis": u64::try_from(call.took.as_millis()).unwrap_or(u64::MAX),
                "memory_bytes": call.memory_bytes,
                "fuel": call.fuel,
            })),
            "limits": {
                "deadline_ms": u64::try_from(limits.adapter_deadline.as_millis()).unwrap_or(u64::MAX),
                "memory_bytes": limits.memory_bytes,
                "http_exchange_excerpt_bytes": courier_plugins::EXCERPT_BYTES,
            },
        })
    }
}

/// The operation as the contract's list spells it.
pub(crate) fn operation_named(operation: &str) -> Result<&'static str, RunError> {
    OPERATIONS
        .iter()
        .copied()
        .find(|known| *known == operation)
        .ok_or_else(|| RunError::UnknownOperation(operation.to_owned()))
}

pub(crate) fn read_component(file: &Path) -> Result<Vec<u8>, RunError> {
    std::fs::read(file).map_err(|e| RunError::Read {
        path: file.display().to_string(),
        reason: e.to_string(),
    })
}

/// What each operation's arguments look like, for the refusal of ones that do not parse.
fn shape_of(operation: &str) -> &'static str {
    match operation {
        "setup-card-form" => {
            r#"{"merchant", "customer_id", "currency", "country", "locale", "return_url", "contact_email"}"#
        }
        "attach-card" => r#"{"customer_id", "card_ref"}"#,
        "hold" => r#"{"amount_minor", "currency", "card_ref", "customer_id", "idempotency_key"}"#,
        "capture" => r#"{"authorisation", "amount_minor", "currency", "idempotency_key"}"#,
        "void" => r#"{"authorisation", "idempotency_key"}"#,
        "refund" => r#"{"payment", "amount_minor", "currency", "idempotency_key"}"#,
        "retrieve" => r#"{"reference"}"#,
        "list-payments" => r#"{"since", "after"}"#,
        "verify-event" => r#"{"headers": [[name, value]…], "body"}"#,
        _ => "{}",
    }
}

fn parse<T: DeserializeOwned>(operation: &'static str, args: Value) -> Result<T, RunError> {
    serde_json::from_value(args).map_err(|e| RunError::Arguments {
        operation,
        shape: shape_of(operation),
        reason: e.to_string(),
    })
}

/// `{"ok": …}` or `{"refused": …}`: a contract result as the command prints it.
fn result<T: Serialize, E: Serialize>(answer: Result<T, E>) -> Value {
    match answer {
        Ok(value) => json!({ "ok": value }),
        Err(refusal) => json!({ "refused": refusal }),
    }
}

pub(crate) async fn call(
    adapter: &PaymentAdapter,
    operation: &'static str,
    args: Value,
) -> Result<Value, RunError> {
    let failed = RunError::Adapter;
    Ok(match operation {
        "describe" => json!(adapter.info()),
        "setup-card-form" => result(
            adapter
                .setup_card_form(&parse(operation, args)?)
                .await
                .map_err(failed)?,
        ),
        "attach-card" => {
            let a: AttachArgs = parse(operation, args)?;
            result(
                adapter
                    .attach_card(&a.customer_id, &a.card_ref)
                    .await
                    .map_err(failed)?,
            )
        }
        "hold" => json!(
            adapter
                .authorise(&parse(operation, args)?)
                .await
                .map_err(failed)?
        ),
        "capture" => json!(
            adapter
                .capture(&parse(operation, args)?)
                .await
                .map_err(failed)?
        ),
        "void" => json!(
            adapter
                .void(&parse(operation, args)?)
                .await
                .map_err(failed)?
        ),
        "refund" => json!(
            adapter
                .refund(&parse(operation, args)?)
                .await
                .map_err(failed)?
        ),
        "retrieve" => {
            let a: RetrieveArgs = parse(operation, args)?;
            result(adapter.retrieve(&a.reference).await.map_err(failed)?)
        }
        "list-payments" => {
            let a: ListArgs = parse(operation, args)?;
            result(
                adapter
                    .list_payments(a.since, a.after.as_deref())
                    .await
                    .map_err(failed)?,
            )
        }
        "verify-event" => {
            let a: EventArgs = parse(operation, args)?;
            result(
                adapter
                    .verify_event(&a.headers, a.body.as_bytes())
                    .await
                    .map_err(failed)?,
            )
        }
        other => return Err(RunError::UnknownOperation(other.to_owned())),
    })
}
