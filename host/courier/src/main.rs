use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    courier_core::infra::telemetry::init_logging();
    match courier::cli::Cli::parse().run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
