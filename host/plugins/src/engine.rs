//! The process-wide wasmtime engine: configuration, the epoch ticker,
//! compilation with an on-disk cache of precompiled artifacts, and the
//! per-call store every plugin call runs in.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Trap,
    UpdateDeadline,
};

use crate::PluginError;
use crate::calls::{CallRecord, CallStart, RecentCalls};
use crate::limits::{Limits, MemoryCap};

/// How the engine is set up. One engine serves the whole process.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Where precompiled artifacts are kept, by sha256 of the component.
    /// `None` compiles in memory every time a component is loaded.
    pub cache_dir: Option<PathBuf>,
    pub limits: Limits,
    /// Instances that may exist at once (calls in flight, all plugins
    /// together). Each reserves address space, not memory.
    pub max_instances: u32,
    /// Granularity of deadlines.
    pub epoch_tick: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            cache_dir: None,
            limits: Limits::default(),
            max_instances: 1000,
            // Deadlines are kept to within a tick: 10% of a price book's 50 ms. A finer tick
            // wakes the ticker thread more often for nothing (at 1 ms, 2-3% of a live booking's
            // CPU, BENCHMARKS.md "Live bookings: the plugin engine's upkeep").
            epoch_tick: Duration::from_millis(5),
        }
    }
}

/// The plugin engine. Cheap to clone; clones share one wasmtime engine.
#[derive(Clone)]
pub struct PluginEngine {
    pub(crate) runtime: Arc<Runtime>,
}

impl std::fmt::Debug for PluginEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEngine")
            .field("cache_dir", &self.runtime.cache_dir)
            .field("limits", &self.runtime.limits)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) limits: Limits,
    cache_dir: Option<PathBuf>,
    tick: Duration,
    pub(crate) recent: RecentCalls,
}

/// How often an asynchronous call that computes rather than waits gives its thread back to
/// other tasks.
const YIELD_EVERY: Duration = Duration::from_millis(10);

/// How long past its deadline an asynchronous call may run: a request ends by the deadline at
/// the latest (see `outbound`), and the adapter then needs a moment to answer with it.
const ANSWER_GRACE: Duration = Duration::from_millis(10);

/// What every call's store holds.
pub(crate) struct CallState {
    memory: MemoryCap,
    /// Only for payment adapters: what their imports are served from.
    pub(crate) adapter: Option<Arc<crate::outbound::AdapterHost>>,
    /// When the call must be over: outbound requests get only what is left.
    pub(crate) deadline: std::time::Instant,
    /// What a payment adapter logged during the call (`log` import).
    pub(crate) log: crate::outbound::CallLog,
}

impl CallState {
    /// The most linear memory the call's instance had.
    pub(crate) fn memory_peak(&self) -> usize {
        self.memory.peak
    }
}

/// The fuel each call's store is given: more than any call could burn before its deadline, so
/// that fuel only measures (a call is stopped by its deadline, never by running out).
const FUEL_GIVEN: u64 = u64::MAX / 2;

/// The fuel a call's store has burnt so far.
pub(crate) fn fuel_used(store: &Store<CallState>) -> u64 {
    FUEL_GIVEN.saturating_sub(store.get_fuel().unwrap_or(FUEL_GIVEN))
}

impl PluginEngine {
    pub fn new(config: EngineConfig) -> Result<Self, PluginError> {
        let n = config.max_instances;
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(n)
            // A Rust component is a few core instances (the program and the
            // adapter shims wit-component adds) with one memory.
            .total_core_instances(n.saturating_mul(4))
            .total_tables(n.saturating_mul(4))
            .total_memories(n)
            // Payment adapters' calls run on fibers of their own (asynchronous calls).
            .total_stacks(n)
            .max_memory_size(config.limits.memory_bytes)
            // Resetting a slot by zeroing the pages a call used is cheaper
            // than returning them to the kernel and taking a page fault for
            // each one on the next call. The default components keep all
            // they touch in the first 256 KiB (64 KiB stack, data, a small
            // heap); see BENCHMARKS.md "Plugin engine".
            .linear_memory_keep_resident(256 << 10)
            .table_keep_resident(64 << 10)
            // Where the kernel can say which of those pages a call wrote (Linux 6.7's
            // PAGEMAP_SCAN), only those are reset: most calls write a few pages of the 256 KiB.
            .pagemap_scan(wasmtime::Enabled::Auto);
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            // Counted, never limited: each call's record says how much guest work it did
            // (deadlines stay the limit, in time); see `FUEL_GIVEN`.
            .consume_fuel(true)
            .memory_init_cow(true)
            // Traps are reported by kind; collecting a backtrace for every
            // hostile call would cost time and say nothing a caller can use.
            .wasm_backtrace_max_frames(None)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm).map_err(|e| PluginError::Engine(format!("{e:#}")))?;
        if let Some(dir) = &config.cache_dir {
            std::fs::create_dir_all(dir).map_err(|source| PluginError::Cache {
                path: dir.clone(),
                source,
            })?;
        }
        let runtime = Arc::new(Runtime {
            engine,
            limits: config.limits,
            cache_dir: config.cache_dir,
            tick: config.epoch_tick,
            recent: RecentCalls::default(),
        });
        spawn_ticker(Arc::downgrade(&runtime), config.epoch_tick)?;
        Ok(PluginEngine { runtime })
    }

    pub fn limits(&self) -> &Limits {
        &self.runtime.limits
    }

    /// The calls this process made lately to the component with `sha256`, newest first.
    pub fn recent_calls(&self, sha256: &str) -> Vec<CallRecord> {
        self.runtime.recent.of(sha256)
    }
}

/// The thread that advances the engines' epochs.
pub const EPOCH_THREAD: &str = "plugin-epoch";

/// Advances the engine's epoch every `tick` until the engine is dropped.
/// Deadlines are counted in epochs, so this thread is what interrupts a
/// plugin that never returns.
fn spawn_ticker(runtime: Weak<Runtime>, tick: Duration) -> Result<(), PluginError> {
    std::thread::Builder::new()
        .name(EPOCH_THREAD.into())
        .spawn(move || {
            while let Some(rt) = runtime.upgrade() {
                rt.engine.increment_epoch();
                drop(rt);
                std::thread::sleep(tick);
            }
        })
        .map(drop)
        .map_err(|e| PluginError::Engine(format!("cannot start the epoch thread: {e}")))
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Runtime {
    /// Keeps a finished call among the component's recent calls.
    pub(crate) fn record<R>(
        &self,
        sha256: &str,
        operation: &'static str,
        start: &CallStart,
        (deadline, memory_bytes, fuel): (Duration, usize, u64),
        result: &Result<R, PluginError>,
        lines: Vec<crate::outbound::GuestLine>,
    ) {
        self.recent.record(
            sha256,
            CallRecord {
                at: start.at(),
                operation,
                took: start.elapsed(),
                deadline,
                memory_bytes,
                memory_limit: self.limits.memory_bytes,
                fuel,
                failure: result.as_ref().err().map(ToString::to_string),
                lines,
            },
        );
    }

    /// Compiles a component, or loads its precompiled artifact.
    pub(crate) fn component(&self, bytes: &[u8]) -> Result<Component, PluginError> {
        let compile = |e: wasmtime::Error| PluginError::Compile(format!("{e:#}"));
        let Some(dir) = &self.cache_dir else {
            return Component::new(&self.engine, bytes).map_err(compile);
        };
        let path = dir.join(format!("{}.cwasm", sha256_hex(bytes)));
        if let Some(component) = self.load_artifact(&path) {
            return Ok(component);
        }
        let artifact = self.engine.precompile_component(bytes).map_err(compile)?;
        write_atomically(&path, &artifact)?;
        self.load_artifact(&path).ok_or_else(|| {
            PluginError::Compile("a freshly precompiled artifact did not load".into())
        })
    }

    /// The artifact at `path`, if there is one this engine can run.
    fn load_artifact(&self, path: &Path) -> Option<Component> {
        // Cheap header check first: it is a wasmtime component artifact.
        if !matches!(
            Engine::detect_precompiled_file(path),
            Ok(Some(wasmtime::Precompiled::Component))
        ) {
            return None;
        }
        // SAFETY: deserializing runs native code from the file without
        // verifying it. The cache directory is the host's own; the only files
        // named `<sha256>.cwasm` in it are ones `component` wrote (atomically,
        // so never half-written) from a component whose bytes hash to that
        // name. Wasmtime itself refuses artifacts made by another wasmtime
        // version or an incompatible engine configuration (that error is
        // answered by recompiling), so a stale file is never run.
        unsafe { Component::deserialize_file(&self.engine, path) }.ok()
    }

    /// A linker with the given host imports, every other import (the WASI
    /// interfaces a toolchain's standard library pulls in) linked to a
    /// trap, pre-instantiated for `component`.
    /// Whether `component` exports the interface named `name` exactly (the linker matches
    /// versions by semver, so a component of an older minor version would also be linked).
    pub(crate) fn exports(&self, component: &Component, name: &str) -> bool {
        component
            .component_type()
            .exports(&self.engine)
            .any(|(export, _)| export == name)
    }

    pub(crate) fn instance_pre(
        &self,
        world: &'static str,
        component: &Component,
        add_imports: impl FnOnce(&mut Linker<CallState>) -> wasmtime::Result<()>,
    ) -> Result<InstancePre<CallState>, PluginError> {
        let incompatible = |e: wasmtime::Error| PluginError::Incompatible {
            world,
            reason: format!("{e:#}"),
        };
        let mut linker = Linker::new(&self.engine);
        add_imports(&mut linker).map_err(incompatible)?;
        linker
            .define_unknown_imports_as_traps(component)
            .map_err(incompatible)?;
        linker.instantiate_pre(component).map_err(incompatible)
    }

    /// A fresh store for one call, with every limit set. Payment adapters
    /// (`adapter` is `Some`) wait on the network: their calls are
    /// asynchronous and their deadline is wall time. For everything else the
    /// calls are synchronous and the deadline is CPU time (see below).
    pub(crate) fn store(
        &self,
        deadline: Duration,
        adapter: Option<Arc<crate::outbound::AdapterHost>>,
    ) -> Store<CallState> {
        let network = adapter.is_some();
        let mut store = Store::new(
            &self.engine,
            CallState {
                memory: MemoryCap::new(self.limits.memory_bytes),
                adapter,
                deadline: std::time::Instant::now() + deadline,
                log: crate::outbound::CallLog::default(),
            },
        );
        store.limiter(|s| &mut s.memory);
        // +1: the next tick may come at any moment, so a deadline of n ticks
        // guarantees at least n-1 full ones.
        let ticks = deadline.as_nanos().div_ceil(self.tick.as_nanos().max(1)) + 1;
        let ticks = u64::try_from(ticks).unwrap_or(u64::MAX);
        store.set_epoch_deadline(ticks);
        if network {
            // A call that computes rather than waits yields its thread to
            // other tasks now and then, and is stopped at its deadline (with
            // a moment's grace to answer after a request that used it all).
            let every = YIELD_EVERY.as_nanos().div_ceil(self.tick.as_nanos().max(1));
            let every = u64::try_from(every).unwrap_or(u64::MAX).max(1);
            let ends = std::time::Instant::now() + deadline + ANSWER_GRACE;
            store.set_epoch_deadline(every.min(ticks));
            // A call resumed late on a busy machine (its request timed out at the deadline,
            // and its task waited for a thread) meets its stale epoch deadline at once. Past
            // the end it runs on without yielding, so this thread's CPU clock measures it: it
            // is stopped once it has burnt `ANSWER_GRACE` of CPU since the end (a thread
            // descheduled for a while does not count against it), or at twice its deadline
            // of wall time whatever it did.
            let hard_end = ends + deadline;
            let mut cpu_at_end: Option<Duration> = None;
            store.epoch_deadline_callback(move |_| {
                let now = std::time::Instant::now();
                if now < ends {
                    return Ok(UpdateDeadline::Yield(every));
                }
                let cpu = thread_cpu_time();
                match cpu_at_end {
                    _ if now >= hard_end => Ok(UpdateDeadline::Interrupt),
                    Some(since) if cpu.saturating_sub(since) >= ANSWER_GRACE => {
                        Ok(UpdateDeadline::Interrupt)
                    }
                    Some(_) => Ok(UpdateDeadline::Continue(every)),
                    None => {
                        cpu_at_end = Some(cpu);
                        Ok(UpdateDeadline::Continue(every))
                    }
                }
            });
        } else {
            // Epochs measure wall time, and on a busy machine a thread can
            // be descheduled for longer than a whole deadline: a good call
            // would then fail. So when the wall-clock deadline passes, look
            // at the CPU time this thread has used since, and interrupt only
            // once the call has burnt a full deadline of CPU after it. A
            // runaway call is stopped after about twice the deadline when
            // the machine is idle; a starved good call is not stopped. The
            // clock is read only for calls that reach the deadline.
            let mut mark: Option<Duration> = None;
            store.epoch_deadline_callback(move |_| {
                let now = thread_cpu_time();
                match mark {
                    Some(since) if now.saturating_sub(since) >= deadline => {
                        Ok(UpdateDeadline::Interrupt)
                    }
                    Some(_) => Ok(UpdateDeadline::Continue(ticks)),
                    None => {
                        mark = Some(now);
                        Ok(UpdateDeadline::Continue(ticks))
                    }
                }
            });
        }
        store.set_hostcall_fuel(self.limits.output_budget());
        store
            .set_fuel(FUEL_GIVEN)
            .expect("fuel is enabled in the engine's configuration");
        store
    }

    /// Turns a failed instantiation or call into the error a caller can act
    /// on.
    pub(crate) fn classify(
        &self,
        store: &Store<CallState>,
        deadline: Duration,
        err: wasmtime::Error,
    ) -> PluginError {
        if matches!(err.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            return PluginError::Timeout(deadline);
        }
        if store.data().memory.hit {
            return PluginError::MemoryExceeded(self.limits.memory_bytes);
        }
        if err
            .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
            .is_some()
        {
            return PluginError::Busy;
        }
        let mut text = format!("{err:#}");
        // Wasmtime's "hostcall fuel" error type is private; its message is
        // the only handle on it (the `alias` hostile test pins this down).
        if text.contains("too much data is being copied") {
            return PluginError::OutputTooLarge(text);
        }
        if text.len() > 1024 {
            let mut end = 1024;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        PluginError::Trapped(text)
    }
}

/// CPU time used by the calling thread.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a
    // constant every supported (Unix) platform defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        // No per-thread clock: report "a lot", so deadlines fall back to
        // wall time rather than never firing.
        return Duration::MAX;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), PluginError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!(
        "{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let io = |source| PluginError::Cache {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}
