//! `courier dispatch simulate`: an instance of the public meal-delivery benchmark replayed
//! through dispatch, its solution judged feasible by the benchmark's published evaluator
//! (run from `../shared/data/mdrp/MDRP_code`, with the pandas and numpy `cargo xtask test`
//! installs under `target/test-tools/mdrp-venv`), and bad input refused with its file and line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_courier");
const MDRP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/mdrp");

fn simulate(instance: &Path, out: &Path) -> Output {
    simulate_with(instance, out, &[])
}

fn simulate_with(instance: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(BINARY)
        .args(["dispatch", "simulate", "--mdrp"])
        .arg(instance)
        .arg("--out")
        .arg(out)
        .args(extra)
        .env("RUST_LOG", "error")
        .output()
        .unwrap()
}

fn evaluator_python() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/test-tools/mdrp-venv/bin/python"
    ))
}

/// Replays `instance` under `policy` into a scratch folder, has the published evaluator judge
/// it feasible and agree with the summary; answers the summary and the folder.
fn replayed_and_judged(instance: &Path, policy: &str) -> (Value, PathBuf) {
    let out = crate::support::scratch_path(&format!("simulate-{policy}"));
    let run = simulate_with(instance, &out, &["--policy", policy]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["orders"], 269, "{summary}");
    let delivered = summary["delivered"].as_u64().unwrap();

    let judged = out.join("perf");
    let evaluation = Command::new(evaluator_python())
        .arg(Path::new(MDRP).join("MDRP_code/compute_performance_summary.py"))
        .arg(format!("instance_dir={}", instance.display()))
        .arg(format!("input_dir={}", out.display()))
        .arg(format!("output_dir={}", judged.display()))
        .output()
        .expect("the evaluator's Python (cargo xtask test installs it)");
    assert!(
        evaluation.status.success(),
        "{}",
        String::from_utf8_lossy(&evaluation.stderr)
    );
    let feasibility = std::fs::read_to_string(judged.join("feasibility_check.txt")).unwrap();
    assert_eq!(
        feasibility.lines().last(),
        Some("FEASIBLE"),
        "{policy}: {feasibility}"
    );
    let performance = std::fs::read_to_string(judged.join("solution_performance.txt")).unwrap();
    assert!(
        performance.contains(&format!(
            "number of orders delivered: {delivered} out of 269"
        )),
        "{performance}"
    );
    // The evaluator's click-to-door mean is ours.
    let mean = performance
        .lines()
        .find(|l| l.starts_with("mean"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap();
    let ours = summary["click_to_door_mean"].as_f64().unwrap();
    assert!((mean - ours).abs() < 0.01, "{mean} against {ours}");
    (summary, out)
}

/// On an instance where couriers are scarce, both dispatchers' solutions are feasible by the
/// published evaluator, and the planner (the default) delivers more, sooner, with bundles.
#[test]
fn an_instance_replayed_is_feasible_by_the_published_evaluator_and_the_planner_delivers_more() {
    let instance = Path::new(MDRP).join("instances/1o50t100s1p100");
    let (nearest, _) = replayed_and_judged(&instance, "nearest");
    let (planned, out) = replayed_and_judged(&instance, "planner");
    let default = crate::support::scratch_path("simulate-default");
    let run = simulate(&instance, &default);
    assert_eq!(
        std::fs::read(default.join("solution_info_assignments.txt")).unwrap(),
        std::fs::read(out.join("solution_info_assignments.txt")).unwrap(),
        "the planner is the default: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let delivered = |s: &Value| s["delivered"].as_u64().unwrap();
    assert!(
        delivered(&planned) > delivered(&nearest),
        "{planned} against {nearest}"
    );
    assert!(
        planned["click_to_door_mean"].as_f64() < nearest["click_to_door_mean"].as_f64(),
        "{planned} against {nearest}"
    );
    let assignments = std::fs::read_to_string(out.join("solution_info_assignments.txt")).unwrap();
    let bundled = assignments
        .lines()
        .skip(1)
        .filter(|l| l.split_whitespace().count() > 4)
        .count();
    assert!(bundled > 0, "no assignment carries two orders or more");
}

#[test]
fn bad_input_names_its_file_and_line_and_exits_2() {
    let source = Path::new(MDRP).join("instances/1o50t100s1p100");
    let broken = crate::support::scratch_path("simulate-input");
    std::fs::create_dir_all(&broken).unwrap();
    for file in [
        "orders.txt",
        "restaurants.txt",
        "couriers.txt",
        "instance_parameters.txt",
    ] {
        std::fs::copy(source.join(file), broken.join(file)).unwrap();
    }
    let orders = std::fs::read_to_string(broken.join("orders.txt")).unwrap();
    let mut lines: Vec<String> = orders.lines().map(str::to_owned).collect();
    lines[3] = lines[3].replacen("\tr", "\tnowhere", 1);
    std::fs::write(broken.join("orders.txt"), lines.join("\n")).unwrap();
    let out = crate::support::scratch_path("simulate-out");
    let run = simulate(&broken, &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("orders.txt, line 4: restaurant \"nowhere"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written");

    std::fs::remove_file(broken.join("couriers.txt")).unwrap();
    std::fs::write(broken.join("orders.txt"), orders).unwrap();
    let run = simulate(&broken, &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("couriers.txt:"), "{stderr}");
}
