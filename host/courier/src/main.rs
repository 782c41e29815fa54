use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let logs = courier_core::infra::telemetry::init_logging();
    let outcome = courier::cli::Cli::parse().run().await;
    // The queued log lines first, then the outcome.
    drop(logs);
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
