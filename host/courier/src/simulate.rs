//! `courier dispatch simulate --mdrp INSTANCE_DIR --out SOLUTION_DIR`: an MDRP instance
//! replayed through the dispatch policy on a virtual clock
//! ([`courier_domain::dispatch::mdrp`]), its solution written as the published evaluator
//! reads it, and a one-line JSON summary printed last.

use std::path::Path;

use courier_domain::dispatch::mdrp::{Instance, Policy, Summary, simulate};

/// The dispatcher a replay runs, as `--policy` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyName {
    Planner,
    Nearest,
}

/// Why the simulation did not run: bad input names its file and line (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("{dir}/{source}")]
    Instance {
        dir: String,
        source: courier_domain::dispatch::mdrp::InstanceError,
    },
    #[error("writing {path}: {reason}")]
    Write { path: String, reason: String },
}

/// Reads the instance in `instance_dir`, replays it under `policy`, writes the solution's three files into
/// `out` (made if missing) and answers its summary.
pub fn run(instance_dir: &Path, out: &Path, policy: PolicyName) -> Result<Summary, SimulateError> {
    let instance = Instance::parse(|file| {
        std::fs::read_to_string(instance_dir.join(file)).map_err(|e| e.to_string())
    })
    .map_err(|source| SimulateError::Instance {
        dir: instance_dir.display().to_string(),
        source,
    })?;
    let policy = match policy {
        PolicyName::Planner => Policy::PLANNER,
        PolicyName::Nearest => Policy::Nearest,
    };
    let solution = simulate(&instance, &policy);
    let write = |name: &str, text: String| {
        let path = out.join(name);
        std::fs::create_dir_all(out)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| SimulateError::Write {
                path: path.display().to_string(),
                reason: e.to_string(),
            })
    };
    write(
        "solution_info_assignments.txt",
        solution.assignments_file(&instance),
    )?;
    write("solution_info_orders.txt", solution.orders_file(&instance))?;
    write(
        "solution_info_couriers.txt",
        solution.couriers_file(&instance),
    )?;
    Ok(solution.summary(&instance))
}
