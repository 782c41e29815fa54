//! CPU time from `/proc`: the service's threads (its own runtime, threads named
//! [`SERVICE_THREADS`], and the threads the service starts for itself) apart from the load
//! client's in the same process, and every process of
//! the PostgreSQL cluster (backends that exited included, through the postmaster's
//! children's time).

use std::path::Path;
use std::time::Duration;

/// The name of the service runtime's threads (at most 15 characters, as the kernel keeps).
pub const SERVICE_THREADS: &str = "courier-service";

/// The service's other threads: the plugin engine's clock and the log writer.
const SERVICE_HELPERS: [&str; 2] = [
    courier_plugins::EPOCH_THREAD,
    courier_core::infra::telemetry::LOG_WRITER_THREAD,
];

/// CPU used so far.
#[derive(Clone, Copy, Debug)]
pub struct CpuSample {
    pub service: Duration,
    pub postgres: Duration,
}

impl CpuSample {
    /// Reads the service's and the cluster's CPU time; `postmaster_pid` is the cluster's.
    pub fn now(postmaster_pid: u32) -> Self {
        Self {
            service: service_cpu(),
            postgres: cluster_cpu(postmaster_pid),
        }
    }

    /// Microseconds per request of each, between `self` and a later sample.
    pub fn per_request(&self, later: &CpuSample, requests: usize) -> (f64, f64) {
        let per = |a: Duration, b: Duration| {
            b.saturating_sub(a).as_secs_f64() * 1e6 / requests.max(1) as f64
        };
        (
            per(self.service, later.service),
            per(self.postgres, later.postgres),
        )
    }
}

/// The fields of a `/proc/.../stat` line after the command name: field 3 is the first.
fn stat_fields(path: &Path) -> Option<(String, Vec<u64>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text[open + 1..close].to_owned();
    // State (a letter) first, then numbers; the letter reads as 0.
    let fields = text[close + 2..]
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    Some((name, fields))
}

fn ticks(n: u64) -> Duration {
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_secs_f64(n as f64 / per_second as f64)
}

// Indexes into `stat_fields`: field N of proc(5) is at N - 3.
const PPID: usize = 1;
const UTIME: usize = 11;
const STIME: usize = 12;
const CUTIME: usize = 13;
const CSTIME: usize = 14;

/// CPU used so far by another process (its threads together).
pub fn process_cpu(pid: u32) -> Duration {
    stat_fields(Path::new(&format!("/proc/{pid}/stat")))
        .map_or(Duration::ZERO, |(_, f)| ticks(f[UTIME] + f[STIME]))
}

fn service_cpu() -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    tasks
        .flatten()
        .filter_map(|task| stat_fields(&task.path().join("stat")))
        .filter(|(name, _)| {
            name.starts_with(SERVICE_THREADS) || SERVICE_HELPERS.contains(&name.as_str())
        })
        .map(|(_, f)| ticks(f[UTIME] + f[STIME]))
        .sum()
}

/// CPU used so far by every process of the cluster whose postmaster is `postmaster`.
///
/// A backend that the postmaster reaps while the processes are being read would be counted
/// twice (alive, then in the postmaster's time of its children) or not at all (gone, and not
/// yet in that time). Right after `pgbench`, eight backends end with a second of CPU each;
/// missed at the start of a phase, they were counted in it. So the processes are read again
/// until the postmaster reaped nothing meanwhile.
pub fn cluster_cpu(postmaster: u32) -> Duration {
    const ATTEMPTS: usize = 10;
    let mut total = Duration::ZERO;
    for _ in 0..ATTEMPTS {
        let Some(before) = postmaster_times(postmaster) else {
            return Duration::ZERO;
        };
        let children = children_cpu(postmaster);
        let Some(after) = postmaster_times(postmaster) else {
            return Duration::ZERO;
        };
        total = children + after.own + after.reaped;
        if after.reaped == before.reaped {
            break;
        }
    }
    total
}

struct PostmasterTimes {
    own: Duration,
    /// That of the backends it has reaped.
    reaped: Duration,
}

fn postmaster_times(postmaster: u32) -> Option<PostmasterTimes> {
    let (_, f) = stat_fields(Path::new(&format!("/proc/{postmaster}/stat")))?;
    Some(PostmasterTimes {
        own: ticks(f[UTIME] + f[STIME]),
        reaped: ticks(f[CUTIME] + f[CSTIME]),
    })
}

/// CPU used so far by the postmaster's living (or not yet reaped) children.
fn children_cpu(postmaster: u32) -> Duration {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    processes
        .flatten()
        .filter(|process| {
            process
                .file_name()
                .to_str()
                .is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|process| stat_fields(&process.path().join("stat")))
        .filter(|(_, f)| f[PPID] == u64::from(postmaster))
        .map(|(_, f)| ticks(f[UTIME] + f[STIME]))
        .sum()
}
