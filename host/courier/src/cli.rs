//! The `courier` command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use crate::app::{self, Services};
use courier_core::config::Config;
use courier_core::merchants;
use courier_domain::numeric::Numeric;

#[derive(Debug, Parser)]
#[command(name = "courier", version, about = "Courier delivery service")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP service.
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Manage merchants.
    Merchant {
        #[command(subcommand)]
        command: MerchantCommand,
    },
    /// Help the people of merchants' teams.
    Person {
        #[command(subcommand)]
        command: PersonCommand,
    },
    /// Manage the operators who sign in to the operator console.
    Operator {
        #[command(subcommand)]
        command: OperatorCommand,
    },
    /// Manage the price books of markets.
    PriceBook {
        #[command(subcommand)]
        command: PriceBookCommand,
    },
    /// Manage couriers.
    Courier {
        #[command(subcommand)]
        command: CourierCommand,
    },
    /// Examine plugin components.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Prepare markets' road networks ahead of serving.
    Market {
        #[command(subcommand)]
        command: MarketCommand,
    },
    /// Check payments against the provider.
    Payments {
        #[command(subcommand)]
        command: PaymentsCommand,
    },
    /// Work on a payment adapter: run one of its operations alone, record it as a cassette,
    /// certify the adapter against cassettes.
    Adapter {
        #[command(subcommand)]
        command: AdapterCommand,
    },
    /// Measure dispatch.
    Dispatch {
        #[command(subcommand)]
        command: DispatchCommand,
    },
}

#[derive(Debug, Subcommand)]
enum DispatchCommand {
    /// Replay a Meal Delivery Routing Problem instance (the public Grubhub benchmark) through
    /// the dispatch policy on a virtual clock; write the published evaluator's three files
    /// into the solution directory and print, last, one line of JSON with the summary. Bad
    /// input names its file and line and exits 2.
    Simulate {
        /// The instance's folder (orders.txt, restaurants.txt, couriers.txt,
        /// instance_parameters.txt).
        #[arg(long, value_name = "INSTANCE_DIR")]
        mdrp: PathBuf,
        /// Where the solution's files go (made if missing).
        #[arg(long, value_name = "SOLUTION_DIR")]
        out: PathBuf,
        /// `planner` (the dispatcher: bundles, assignment over every order and courier at
        /// once, a rolling horizon) or `nearest` (the first dispatcher: the nearest free
        /// courier, one order each, sent at once).
        #[arg(long, value_enum, default_value_t = crate::simulate::PolicyName::Planner)]
        policy: crate::simulate::PolicyName,
    },
}

#[derive(Debug, Subcommand)]
enum AdapterCommand {
    /// Write a payment adapter crate as DIR/NAME from the template: the example provider's
    /// adapter, its unit tests and cassettes, the contract, the adapter kit and the no_std
    /// runtime. It builds and certifies as it stands; rewrite it for your provider.
    New {
        name: String,
        /// The directory the crate's own directory, NAME, is made in (default: the current
        /// one): the crate is DIR/NAME.
        #[arg(long, value_name = "DIR", default_value = ".")]
        path: PathBuf,
    },
    /// Build the adapter crate in DIR (default: the current one) into its component; prints
    /// the .wasm's path, size, sha256 and world. Cargo's progress goes to stderr.
    Build {
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Run one operation of the adapter in FILE, with no database, as the service would run it
    /// live; prints the answer, every HTTP exchange (secrets masked), the time and the limits.
    /// Exit 1 when the adapter failed (a trap, a deadline, an oversized answer), 2 when the
    /// command's input is wrong.
    Run {
        file: PathBuf,
        /// describe, setup-card-form, attach-card, hold, capture, void, refund, retrieve or
        /// list-payments.
        operation: String,
        /// The adapter's configuration: a JSON object of strings, as
        /// COURIER_LIVE_PAYMENT_CONFIG.
        #[arg(long)]
        config: Option<PathBuf>,
        /// The operation's arguments as a JSON object, e.g. for hold
        /// {"amount_minor": 1290, "currency": "EUR", "card_ref": "pm_…", "customer_id": "cus_…",
        /// "idempotency_key": "job_…_hold"}.
        #[arg(long)]
        args: Option<String>,
    },
    /// Run one operation as `run` does, against the provider's sandbox, and keep it as a
    /// cassette in DIR for `certify` (secrets masked). Prints the cassette's path and the run.
    Record {
        file: PathBuf,
        operation: String,
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long)]
        args: Option<String>,
        /// The directory the cassette is written to (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// The payments contract's conformance suite: replays the cassettes in DIR and faults made
    /// from them through the adapter in FILE. One line per scenario, then
    /// `{"scenarios": N, "passed": P, "failed": F}`; exit 1 when any failed, 2 when the
    /// cassettes or the configuration cannot be read.
    Certify {
        file: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
        /// The directory of cassettes (`*.json`).
        #[arg(long)]
        cassettes: PathBuf,
        /// Each call's deadline, in milliseconds: the scenario where the provider hangs lasts
        /// this long.
        #[arg(long, default_value_t = 2000)]
        deadline_ms: u64,
    },
}

#[derive(Debug, Subcommand)]
enum PaymentsCommand {
    /// Compare each charge with its payment at the provider (read through the environment's
    /// adapter) and every payment the provider holds with our charges: one line per mismatch,
    /// then `{"checked": N, "mismatches": M}`. Exits 1 when M > 0, 2 when the provider
    /// could not be read.
    Reconcile {
        /// Charges raised at or after this time (RFC 3339); default 24 hours ago.
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// `live` or `test`.
        #[arg(long, default_value = "live")]
        environment: String,
    },
}

#[derive(Debug, Subcommand)]
enum MarketCommand {
    /// Build each market's road network (every offered vehicle's hierarchy, the snapping and
    /// places indexes) and write it under `$COURIER_DATA_DIR/networks`, where `serve` maps it
    /// instead of building it again. Progress goes to stderr, a summary to stdout.
    Prepare {
        /// The markets file; default `COURIER_MARKETS_FILE`, else the demo market.
        #[arg(long)]
        markets: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum PriceBookCommand {
    /// Validate a price book (component and settings) and keep it as the market's next upload.
    Upload {
        #[arg(long)]
        market: String,
        /// The component, a `.wasm` file.
        #[arg(long)]
        file: PathBuf,
        /// The settings document, a JSON file.
        #[arg(long)]
        settings: PathBuf,
        /// Who is uploading, for the records.
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// List a market's uploads and which is active.
    List {
        #[arg(long)]
        market: String,
    },
    /// Re-price the market's recent quotes under an upload: how many change, by how much.
    Compare {
        #[arg(long)]
        market: String,
        #[arg(long)]
        version: i32,
    },
    /// Make an upload the market's active price book (a rollback is activating an older one).
    Activate {
        #[arg(long)]
        market: String,
        #[arg(long)]
        version: i32,
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
}

#[derive(Debug, Subcommand)]
enum CourierCommand {
    /// Create a courier; prints it as JSON with its courier API credential (shown only once).
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        phone: String,
        /// bicycle, electric_bicycle, motorcycle, car or van.
        #[arg(long)]
        vehicle: String,
        #[arg(long)]
        market: String,
        /// Who is acting, for the audit trail.
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// Suspend a courier: refused by the courier API, offered nothing.
    Suspend {
        #[arg(long)]
        id: uuid::Uuid,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// Reinstate a suspended courier.
    Reinstate {
        #[arg(long)]
        id: uuid::Uuid,
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// List couriers, newest first.
    List {
        #[arg(long)]
        market: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// The world and version a component implements, its imports (capabilities) and size.
    Inspect { file: PathBuf },
}

#[derive(Debug, Subcommand)]
enum MerchantCommand {
    /// Create a merchant with one test and one live credential; prints them as JSON.
    Create {
        #[arg(long)]
        name: String,
        /// Who is acting, for the audit trail.
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// Show, or change, a merchant's account settings; prints them as JSON.
    Settings {
        #[arg(long)]
        merchant: uuid::Uuid,
        /// Whether bookings that do not say text the customer the tracking link.
        #[arg(long)]
        notify_customer: Option<bool>,
        #[arg(long)]
        proof_photo_required: Option<bool>,
        #[arg(long)]
        proof_signature_required: Option<bool>,
        /// The SMS sender customers see: 3 to 11 letters and digits; "" for the default.
        #[arg(long)]
        sms_sender_name: Option<String>,
        /// Quotes per minute per key; "" for the service's default.
        #[arg(long)]
        rate_limit_quotes_per_minute: Option<String>,
        /// Bookings per minute per key; "" for the service's default.
        #[arg(long)]
        rate_limit_bookings_per_minute: Option<String>,
        /// Other requests per minute per key; "" for the service's default.
        #[arg(long)]
        rate_limit_reads_per_minute: Option<String>,
        /// The merchant's billing contact, given to the card provider; "" for none.
        #[arg(long)]
        contact_email: Option<String>,
        /// Minutes until a parcel is ready, for bookings that do not send `pickup_ready_at`
        /// (0 to 240); "" for none.
        #[arg(long)]
        preparation_minutes: Option<String>,
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// List the merchants, newest first.
    List,
    /// Show a merchant with its settings and keys (never their secrets).
    Show { merchant: String },
    /// Invite someone to a merchant's team (its first owner, say); prints JSON with the
    /// `invitation_url` they open to set a name and password. The link works once.
    Invite {
        #[arg(long)]
        merchant: String,
        #[arg(long)]
        email: String,
        /// `owner`, `admin`, `developer`, `support` or `viewer`.
        #[arg(long)]
        role: String,
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// Manage a merchant's API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
}

#[derive(Debug, Subcommand)]
enum PersonCommand {
    /// Make a password-reset link for the account of an address (mailed to it when mail is
    /// configured); prints JSON with the `password_reset_url`, which works once.
    PasswordReset {
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Subcommand)]
enum OperatorCommand {
    /// Invite someone to be an operator; prints JSON with the `invitation_url` they open to
    /// set a name and password (mailed to them when mail is configured). The link works once;
    /// their first sign-in sets up a second factor.
    Invite {
        #[arg(long)]
        email: String,
        /// `admin`, `operations`, `finance` or `viewer`.
        #[arg(long)]
        role: String,
        /// Who the audit trail names as inviting.
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Issue a new key; prints it with its secret, which is never shown again.
    Create {
        #[arg(long)]
        merchant: String,
        /// `test` or `live`.
        #[arg(long)]
        env: String,
        #[arg(long)]
        label: String,
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
    /// Revoke a key: refused at once by every running instance.
    Revoke {
        key: String,
        #[arg(long, env = "USER", default_value = "cli")]
        operator: String,
    },
}

impl Cli {
    pub async fn run(self) -> anyhow::Result<()> {
        // Needs no configuration: a computation over files.
        if let Command::Dispatch {
            command: DispatchCommand::Simulate { mdrp, out, policy },
        } = &self.command
        {
            match crate::simulate::run(mdrp, out, *policy) {
                Ok(summary) => {
                    println!("{}", serde_json::to_string(&summary)?);
                    return Ok(());
                }
                Err(error) => {
                    eprintln!("courier: {error}");
                    std::process::exit(2);
                }
            }
        }
        let config = Config::from_env()?;
        match self.command {
            Command::Serve => app::serve(config).await?,
            Command::Migrate => {
                let services = Services::open(&config).await?;
                services.db.close().await;
                eprintln!("migrations applied");
            }
            Command::PriceBook { command } => {
                let services = Services::open(&config).await?;
                let result = price_book(&services, command).await;
                services.db.close().await;
                println!("{}", serde_json::to_string_pretty(&result?)?);
            }
            Command::Courier { command } => {
                let services = Services::open(&config).await?;
                let result = courier(&services, command).await;
                services.db.close().await;
                println!("{}", serde_json::to_string_pretty(&result?)?);
            }
            Command::Payments {
                command: PaymentsCommand::Reconcile { since, environment },
            } => {
                // Exit 1 means mismatches; a check that could not run, or could not read
                // every charge's payment, exits 2, this included.
                let Ok(environment) = environment.parse::<courier_domain::Environment>() else {
                    eprintln!("courier: --environment must be live or test");
                    std::process::exit(2);
                };
                let since = since.unwrap_or_else(|| chrono::Utc::now() - chrono::Duration::days(1));
                let services = Services::open(&config).await?;
                let result = services
                    .payments
                    .reconcile_and_record(environment, since)
                    .await;
                services.db.close().await;
                match result {
                    Ok((check, _)) => {
                        for mismatch in &check.mismatches {
                            println!("{}", mismatch.line());
                        }
                        println!("{}", check.summary());
                        if let Some(reason) = &check.unlisted {
                            eprintln!(
                                "courier: the provider's payments could not be listed ({reason}): \
                                 payments of no charge of ours were not looked for"
                            );
                        }
                        if let Some(reason) = &check.unread_reason {
                            eprintln!(
                                "courier: {} charges could not be read back: {reason}",
                                check.unread
                            );
                        }
                        if !check.mismatches.is_empty() {
                            std::process::exit(1);
                        }
                        if check.unread > 0 {
                            std::process::exit(2);
                        }
                    }
                    Err(error) => {
                        eprintln!("courier: payments could not be reconciled: {error}");
                        std::process::exit(2);
                    }
                }
            }
            Command::Market {
                command: MarketCommand::Prepare { markets },
            } => {
                let file = markets.or(config.markets_file.clone());
                let summary = prepare_markets(file.as_deref(), &config.data_dir.join("networks"))?;
                println!("{}", serde_json::to_string_pretty(&summary)?);
            }
            Command::Adapter { command } => adapter(&config, command).await?,
            // Answered above, before the configuration is read.
            Command::Dispatch { .. } => {}
            Command::Plugin {
                command: PluginCommand::Inspect { file },
            } => {
                let bytes = std::fs::read(&file)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
                println!("{}", serde_json::to_string_pretty(&inspect(&bytes)?)?);
            }
            Command::Person {
                command: PersonCommand::PasswordReset { email },
            } => {
                let services = Services::open(&config).await?;
                let issued = services
                    .teams
                    .request_password_reset(&email, courier_core::team::ResetAsker::Operator)
                    .await;
                services.db.close().await;
                let issued = issued?
                    .ok_or_else(|| anyhow::anyhow!("no account has the address {email:?}"))?;
                println!("{}", serde_json::to_string_pretty(&issued)?);
            }
            Command::Operator {
                command:
                    OperatorCommand::Invite {
                        email,
                        role,
                        operator,
                    },
            } => {
                let services = Services::open(&config).await?;
                let issued = services
                    .operator_accounts
                    .invite(&email, &role, &operator)
                    .await;
                services.db.close().await;
                println!("{}", serde_json::to_string_pretty(&issued?)?);
            }
            Command::Merchant { command } => {
                // The new merchant's credentials print on one line, as scripts expect.
                let one_line = matches!(command, MerchantCommand::Create { .. });
                let services = Services::open(&config).await?;
                let result = merchant(&services, command).await;
                services.db.close().await;
                let result = result?;
                if one_line {
                    println!("{}", serde_json::to_string(&result)?);
                } else {
                    println!("{}", serde_json::to_string_pretty(&result)?);
                }
            }
        }
        Ok(())
    }
}

/// `courier adapter …`: prints the report, or exits with the command's code.
async fn adapter(config: &Config, command: AdapterCommand) -> anyhow::Result<()> {
    use crate::adapter::{certify, compile, new, record, run};
    let fail = |error: &dyn std::fmt::Display, code: i32| -> ! {
        eprintln!("courier: {error}");
        std::process::exit(code)
    };
    match command {
        AdapterCommand::New { name, path } => match new::create(&name, &path) {
            Ok((dir, files)) => {
                eprintln!(
                    "courier: wrote {dir}; next: courier adapter build {dir}",
                    dir = dir.display()
                );
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({"created": dir, "files": files}))?
                );
            }
            Err(error) => fail(&error, 2),
        },
        AdapterCommand::Build { dir } => match compile::build(&dir) {
            Ok(built) => println!("{}", serde_json::to_string_pretty(&built)?),
            Err(error) => fail(&error, error.exit_code()),
        },
        AdapterCommand::Run {
            file,
            operation,
            config: adapter_config,
            args,
        } => match run::run(
            config,
            &file,
            &operation,
            adapter_config.as_deref(),
            args.as_deref(),
        )
        .await
        {
            Ok(report) => println!("{}", serde_json::to_string_pretty(&report)?),
            Err(error) => fail(&error, error.exit_code()),
        },
        AdapterCommand::Record {
            file,
            operation,
            config: adapter_config,
            args,
            out,
        } => match record::record(
            config,
            &file,
            &operation,
            adapter_config.as_deref(),
            args.as_deref(),
            &out,
        )
        .await
        {
            Ok((path, report)) => {
                eprintln!("courier: recorded {}", path.display());
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({"cassette": path, "run": report}))?
                );
            }
            Err(error) => fail(&error, error.exit_code()),
        },
        AdapterCommand::Certify {
            file,
            config: adapter_config,
            cassettes,
            deadline_ms,
        } => {
            let mut print = |verdict: &certify::Verdict| println!("{}", verdict.line());
            match certify::certify(
                config,
                &file,
                adapter_config.as_deref(),
                &cassettes,
                std::time::Duration::from_millis(deadline_ms),
                &mut print,
            )
            .await
            {
                Ok(summary) => {
                    println!("{}", serde_json::to_string(&summary)?);
                    if summary.failed > 0 {
                        std::process::exit(1);
                    }
                }
                Err(error) => fail(&error, error.exit_code()),
            }
        }
    }
    Ok(())
}

/// Prepares every market of `file` into `dir`, one after another, with a line per step.
fn prepare_markets(file: Option<&std::path::Path>, dir: &std::path::Path) -> anyhow::Result<Value> {
    let markets = courier_core::markets::Markets::from_file(file)?;
    let mut summary = Vec::new();
    for market in markets.all() {
        let id = market.id().to_owned();
        eprintln!("{id}: preparing {}", market.prepared_path(dir).display());
        let progress = |step: courier_core::markets::PrepareStep| {
            let rate = step.count as f64 / step.seconds.max(1e-6);
            eprintln!(
                "{id}: {} in {:.2} s ({} {}, {:.0} {}/s)",
                step.what, step.seconds, step.count, step.unit, rate, step.unit
            );
        };
        let (network, report) = market
            .prepare(dir, &progress)
            .map_err(|e| anyhow::anyhow!("market {id}: {e}"))?;
        let stats = network.stats();
        let seconds = (report.hash_time + report.load_time + report.write_time).as_secs_f64();
        eprintln!(
            "{id}: done in {seconds:.2} s: {} junctions, {} places, {:.1} MiB on disk",
            stats.junctions,
            stats.places,
            report.file_bytes as f64 / (1024.0 * 1024.0)
        );
        summary.push(json!({
            "market": id,
            "file": market.prepared_path(dir),
            "bytes": report.file_bytes,
            "seconds": seconds,
            "junctions": stats.junctions,
            "road_edges": stats.road_edges,
            "places": stats.places,
            "vehicles": stats.profiles.iter().map(|p| json!({
                "vehicle": p.vehicle,
                "hierarchy_arcs": p.hierarchy_arcs,
                "barriers": p.barriers,
                "restricted_junctions": p.restricted_junctions,
                "seconds": p.prepare_time.as_secs_f64(),
            })).collect::<Vec<_>>(),
        }));
    }
    Ok(Value::Array(summary))
}

async fn merchant(services: &Services, command: MerchantCommand) -> anyhow::Result<Value> {
    let merchants_service = &services.merchants;
    Ok(match command {
        MerchantCommand::Create { name, operator } => {
            serde_json::to_value(merchants_service.create_as(&name, &operator).await?)?
        }
        MerchantCommand::Settings {
            merchant,
            notify_customer,
            proof_photo_required,
            proof_signature_required,
            sms_sender_name,
            rate_limit_quotes_per_minute,
            rate_limit_bookings_per_minute,
            rate_limit_reads_per_minute,
            contact_email,
            preparation_minutes,
            operator,
        } => {
            let change = merchants::SettingsChange {
                notify_customer,
                proof_photo_required,
                proof_signature_required,
                sms_sender_name: sms_sender_name.map(|name| Some(name).filter(|n| !n.is_empty())),
                rate_limit_quotes_per_minute: per_minute(rate_limit_quotes_per_minute)?,
                rate_limit_bookings_per_minute: per_minute(rate_limit_bookings_per_minute)?,
                rate_limit_reads_per_minute: per_minute(rate_limit_reads_per_minute)?,
                contact_email: contact_email.map(|email| Some(email).filter(|e| !e.is_empty())),
                preparation_minutes: whole_or_none(preparation_minutes, "minutes")?,
            };
            serde_json::to_value(
                merchants_service
                    .change_settings(merchant, &change, &operator)
                    .await?,
            )?
        }
        MerchantCommand::List => serde_json::to_value(merchants_service.list().await?)?,
        MerchantCommand::Show { merchant } => serde_json::to_value(
            merchants_service
                .show(merchants::parse_id(&merchant)?)
                .await?,
        )?,
        MerchantCommand::Invite {
            merchant,
            email,
            role,
            operator,
        } => serde_json::to_value(
            services
                .teams
                .invite(merchants::parse_id(&merchant)?, &email, &role, &operator)
                .await?,
        )?,
        MerchantCommand::Key {
            command:
                KeyCommand::Create {
                    merchant,
                    env,
                    label,
                    operator,
                },
        } => serde_json::to_value(
            merchants_service
                .create_key(merchants::parse_id(&merchant)?, &env, &label, &operator)
                .await?,
        )?,
        MerchantCommand::Key {
            command: KeyCommand::Revoke { key, operator },
        } => serde_json::to_value(merchants_service.revoke_key(&key, &operator).await?)?,
    })
}

/// A per-minute budget as typed: a whole number, or "" for the service's default.
fn per_minute(raw: Option<String>) -> anyhow::Result<Option<Option<Numeric<i64>>>> {
    whole_or_none(raw, "requests per minute")
}

/// An optional setting's flag: absent leaves it, "" clears it, else a whole number of `unit`.
fn whole_or_none(raw: Option<String>, unit: &str) -> anyhow::Result<Option<Option<Numeric<i64>>>> {
    raw.map(|raw| {
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(None);
        }
        raw.parse()
            .map(|n| Some(Numeric(n)))
            .map_err(|_| anyhow::anyhow!("{raw:?} is not a whole number of {unit}"))
    })
    .transpose()
}

async fn price_book(services: &Services, command: PriceBookCommand) -> anyhow::Result<Value> {
    let books = &services.price_books;
    Ok(match command {
        PriceBookCommand::Upload {
            market,
            file,
            settings,
            operator,
        } => {
            let component = std::fs::read(&file)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
            let settings_text = std::fs::read_to_string(&settings)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", settings.display()))?;
            let settings: Value = serde_json::from_str(&settings_text)
                .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", settings.display()))?;
            serde_json::to_value(
                books
                    .upload(&market, component, settings, &operator)
                    .await?,
            )?
        }
        PriceBookCommand::List { market } => serde_json::to_value(books.list(&market).await?)?,
        PriceBookCommand::Compare { market, version } => {
            serde_json::to_value(books.compare(&market, version).await?)?
        }
        PriceBookCommand::Activate {
            market,
            version,
            operator,
        } => serde_json::to_value(books.activate(&market, version, &operator).await?)?,
    })
}

async fn courier(services: &Services, command: CourierCommand) -> anyhow::Result<Value> {
    let couriers = &services.couriers;
    Ok(match command {
        CourierCommand::Create {
            name,
            phone,
            vehicle,
            market,
            operator,
        } => {
            let request = courier_core::couriers::NewCourier {
                name: Some(name),
                phone: Some(phone),
                vehicle: Some(vehicle),
                market: Some(market),
            };
            serde_json::to_value(couriers.create(&operator, &request).await?)?
        }
        CourierCommand::Suspend {
            id,
            reason,
            operator,
        } => serde_json::to_value(couriers.suspend(&operator, id, reason.as_deref()).await?)?,
        CourierCommand::Reinstate { id, operator } => {
            serde_json::to_value(couriers.reinstate(&operator, id).await?)?
        }
        CourierCommand::List { market } => {
            serde_json::to_value(couriers.list(market.as_deref()).await?)?
        }
    })
}

/// What `courier plugin inspect` prints.
fn inspect(bytes: &[u8]) -> anyhow::Result<Value> {
    let info = courier_plugins::inspect(bytes)?;
    Ok(json!({
        "size_bytes": info.size,
        "sha256": info.sha256,
        "worlds": info.worlds.iter().map(|w| w.name()).collect::<Vec<_>>(),
        "imports": info.imports.iter().map(|i| json!({
            "name": i.name,
            "granted": i.granted,
        })).collect::<Vec<_>>(),
        "exports": info.exports,
    }))
}
