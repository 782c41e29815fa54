//! The `courier` command line.

use clap::{Parser, Subcommand};

use crate::app::{self, Services};
use crate::config::Config;
use crate::merchants;

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
}

#[derive(Debug, Subcommand)]
enum MerchantCommand {
    /// Create a merchant with one test and one live credential; prints them as JSON.
    Create {
        #[arg(long)]
        name: String,
    },
}

impl Cli {
    pub async fn run(self) -> anyhow::Result<()> {
        let config = Config::from_env()?;
        match self.command {
            Command::Serve => app::serve(config).await?,
            Command::Migrate => {
                let services = Services::open(&config).await?;
                services.db.close().await;
                eprintln!("migrations applied");
            }
            Command::Merchant {
                command: MerchantCommand::Create { name },
            } => {
                let services = Services::open(&config).await?;
                let created =
                    merchants::create(&services.db.pool, &services.authenticator, &name).await;
                services.db.close().await;
                println!("{}", serde_json::to_string(&created?)?);
            }
        }
        Ok(())
    }
}
