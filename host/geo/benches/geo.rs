//! Routing and places benchmarks: `cargo bench -p courier-geo`.
//!
//! Prints Markdown tables: load time and memory per extract, route query latency with the
//! hierarchy and with plain Dijkstra, places search and reverse latency, and how preparation,
//! memory and queries grow on generated grid cities. Real extracts are read from
//! `COURIER_OSM_DIR` or `../shared/data/osm` beside the repository and skipped when absent.
//! `GEO_BENCH_GRID_SIDES` (comma-separated street counts per side, default `100,317,1000`)
//! chooses the grid cities. `GEO_BENCH_PREPARED_SIDES` (default `317,1000`) chooses the
//! generated cities whose prepared files are measured beside the shared extracts:
//! preparation, file size, and two separate processes each mapping the file and answering a
//! first route, with their resident memory. `GEO_BENCH_SECTIONS` (comma-separated among
//! `extracts`, `queries`, `places`, `growth`, `prepared`; default all) runs a subset.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use courier_geo::{
    ExtractSource, LatLon, LoadOptions, Origin, RoadNetwork, RouteError, Vehicle, no_progress,
};

/// Counts live heap bytes and their peak, to report what a network really holds.
struct CountingAllocator;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);

fn record_growth(bytes: usize) {
    let live = LIVE_BYTES.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to the system allocator; only counters are added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            record_growth(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(pointer, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            record_growth(new_size);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn mebibytes(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn kibibytes(bytes: usize) -> String {
    format!("{:.0} KiB", bytes as f64 / 1024.0)
}

fn millis(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn osm_dir() -> PathBuf {
    std::env::var_os("COURIER_OSM_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/osm"),
        PathBuf::from,
    )
}

/// A loaded network with what loading it cost.
struct Loaded {
    network: RoadNetwork,
    wall: Duration,
    retained_bytes: usize,
    peak_bytes: usize,
}

fn load(load: impl FnOnce() -> RoadNetwork) -> Loaded {
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    PEAK_BYTES.store(before, Ordering::Relaxed);
    let started = Instant::now();
    let network = load();
    let wall = started.elapsed();
    Loaded {
        network,
        wall,
        retained_bytes: LIVE_BYTES.load(Ordering::Relaxed) - before,
        peak_bytes: PEAK_BYTES.load(Ordering::Relaxed) - before,
    }
}

struct Xorshift(u64);

impl Xorshift {
    fn next_unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `count` random endpoint pairs inside the network's bounding box that snap to a road.
fn routable_pairs(network: &RoadNetwork, vehicle: Vehicle, count: usize) -> Vec<(LatLon, LatLon)> {
    let vertices = network.network_area().vertices();
    let (mut south, mut north, mut west, mut east) = (90.0f64, -90.0f64, 180.0f64, -180.0f64);
    for v in vertices {
        (south, north) = (south.min(v.lat), north.max(v.lat));
        (west, east) = (west.min(v.lon), east.max(v.lon));
    }
    let mut random = Xorshift(0x2545_f491_4f6c_dd1d);
    let mut point = || {
        LatLon::new(
            south + (north - south) * random.next_unit(),
            west + (east - west) * random.next_unit(),
        )
    };
    let mut pairs = Vec::with_capacity(count);
    while pairs.len() < count {
        let (from, to) = (point(), point());
        if !matches!(
            network.route(vehicle, from, to),
            Err(RouteError::TooFarFromRoad { .. })
        ) {
            pairs.push((from, to));
        }
    }
    pairs
}

/// Sorted per-call latencies of `f` over `inputs`.
fn latencies<T>(inputs: &[T], mut f: impl FnMut(&T)) -> Vec<Duration> {
    let mut times: Vec<Duration> = inputs
        .iter()
        .map(|input| {
            let started = Instant::now();
            f(input);
            started.elapsed()
        })
        .collect();
    times.sort();
    times
}

fn real_extracts() -> Vec<(String, Loaded)> {
    let dir = osm_dir();
    let mut loaded = Vec::new();
    println!("## Loading (all five vehicles prepared)\n");
    println!(
        "| extract | junctions | car arcs | load total | parse | road graph | hierarchies + snapping + places (parallel) | of which places | heap retained | heap peak |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for name in [
        "liechtenstein",
        "baltimore",
        "monaco",
        "andorra",
        "demo city",
    ] {
        let result = if name == "demo city" {
            let bytes = courier_geo::demo_city_pbf();
            load(|| RoadNetwork::from_pbf_bytes(&bytes).expect("demo city loads"))
        } else {
            let path = dir.join(format!("{name}.osm.pbf"));
            if !path.exists() {
                println!("| {name} | skipped: {} not found |", path.display());
                continue;
            }
            load(|| RoadNetwork::from_pbf_file(&path).expect("extract loads"))
        };
        let stats = result.network.stats();
        let car = stats.profiles.iter().find(|p| p.vehicle == Vehicle::Car);
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            stats.junctions,
            car.map_or(0, |p| p.arcs),
            millis(result.wall),
            millis(stats.parse_time),
            millis(stats.build_time),
            millis(stats.prepare_time),
            millis(stats.places_time),
            mebibytes(result.retained_bytes),
            mebibytes(result.peak_bytes),
        );
        loaded.push((name.to_owned(), result));
    }
    println!();
    loaded
}

fn route_queries(name: &str, network: &RoadNetwork) {
    println!("## Route queries on {name} (random routable pairs, shape built)\n");
    println!(
        "| vehicle | queries | CH p50 | CH p99 | Dijkstra p50 | Dijkstra p99 | speed-up (p50) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for vehicle in [Vehicle::Car, Vehicle::Bicycle] {
        let pairs = routable_pairs(network, vehicle, 2_000);
        // Warm the calculator pool and caches.
        for (from, to) in pairs.iter().take(50) {
            black_box(network.route(vehicle, *from, *to).ok());
        }
        let hierarchy = latencies(&pairs, |(from, to)| {
            black_box(network.route(vehicle, *from, *to).ok());
        });
        let reference_pairs = &pairs[..300];
        let dijkstra = latencies(reference_pairs, |(from, to)| {
            black_box(network.route_reference(vehicle, *from, *to).ok());
        });
        let (ch50, dj50) = (percentile(&hierarchy, 0.5), percentile(&dijkstra, 0.5));
        println!(
            "| {vehicle} | {} | {} | {} | {} | {} | {:.0}× |",
            pairs.len(),
            micros(ch50),
            micros(percentile(&hierarchy, 0.99)),
            micros(dj50),
            micros(percentile(&dijkstra, 0.99)),
            dj50.as_secs_f64() / ch50.as_secs_f64(),
        );
    }
    println!();
}

fn places_queries(loaded: &[(String, Loaded)]) {
    let queries: &[(&str, &[&str])] = &[
        (
            "liechtenstein",
            &[
                "Städtle 43 Vaduz",
                "Landstrasse",
                "landstr 97 schaan",
                "Aeulestrasse",
                "vaduz",
                "9490",
                "Kunstmuseum",
                "Zollstrasse 16",
                "Schellenbreg",
                "triesenberg",
            ],
        ),
        (
            "baltimore",
            &[
                "2019 East Pratt Street",
                "2019 East Prat Stret",
                "21231",
                "fells point",
                "johns hopkins hospital",
                "east fairmount ave",
                "2120 E Fairmount",
                "Albemarle Street",
                "pratt",
                "canton",
            ],
        ),
    ];
    println!("## Places\n");
    println!(
        "| extract | entries | search p50 | search p99 | slowest query (its p50) | reverse p50 | reverse p99 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, texts) in queries {
        let Some((_, loaded)) = loaded.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let places = loaded.network.places();
        let repeated: Vec<&str> = texts.iter().copied().cycle().take(1_000).collect();
        let search = latencies(&repeated, |q| {
            black_box(places.search(q, None, 10));
        });
        let (slowest, slowest_p50) = texts
            .iter()
            .map(|q| {
                let runs = latencies(&[*q; 50], |q| {
                    black_box(places.search(q, None, 10));
                });
                (*q, percentile(&runs, 0.5))
            })
            .max_by_key(|(_, p50)| *p50)
            .expect("queries are listed");
        let points: Vec<LatLon> = routable_pairs(&loaded.network, Vehicle::Car, 1_000)
            .into_iter()
            .map(|(from, _)| from)
            .collect();
        let reverse = latencies(&points, |p| {
            black_box(places.reverse(*p));
        });
        println!(
            "| {name} | {} | {} | {} | \"{slowest}\" ({}) | {} | {} |",
            places.len(),
            micros(percentile(&search, 0.5)),
            micros(percentile(&search, 0.99)),
            micros(slowest_p50),
            micros(percentile(&reverse, 0.5)),
            micros(percentile(&reverse, 0.99)),
        );
    }
    println!();
}

fn grid_growth() {
    let sides: Vec<usize> = std::env::var("GEO_BENCH_GRID_SIDES")
        .unwrap_or_else(|_| "100,317,1000".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    println!("## Growth on generated grid cities (car only)\n");
    println!(
        "| streets per side | junctions | car arcs | PBF size | generate | parse | CH preparation | load total | heap retained | heap peak | CH arcs | query p50 | query p99 | Dijkstra p50 (20 queries) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for side in sides {
        let started = Instant::now();
        let bytes = courier_geo::grid_city_pbf(side);
        let generate = started.elapsed();
        let pbf_size = bytes.len();
        let options = LoadOptions {
            vehicles: vec![Vehicle::Car],
        };
        let loaded =
            load(|| RoadNetwork::from_pbf_bytes_with(&bytes, &options).expect("grid city loads"));
        drop(bytes);
        let stats = loaded.network.stats();
        let car = &stats.profiles[0];
        let pairs = routable_pairs(&loaded.network, Vehicle::Car, 1_000);
        let queries = latencies(&pairs, |(from, to)| {
            black_box(loaded.network.route(Vehicle::Car, *from, *to).ok());
        });
        let reference = latencies(&pairs[..20], |(from, to)| {
            black_box(
                loaded
                    .network
                    .route_reference(Vehicle::Car, *from, *to)
                    .ok(),
            );
        });
        println!(
            "| {side} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            stats.junctions,
            car.arcs,
            kibibytes(pbf_size),
            millis(generate),
            millis(stats.parse_time),
            millis(stats.prepare_time),
            millis(loaded.wall),
            mebibytes(loaded.retained_bytes),
            mebibytes(loaded.peak_bytes),
            car.hierarchy_arcs,
            micros(percentile(&queries, 0.5)),
            micros(percentile(&queries, 0.99)),
            micros(percentile(&reference, 0.5)),
        );
    }
    println!();
}

/// Memory figures of this process from `/proc/self/status`, in KiB: (VmRSS, RssAnon, RssFile).
fn resident_kib() -> (u64, u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("RssAnon:"), field("RssFile:"))
}

/// The child side of [`prepared_networks`]: maps the prepared file, answers one route, prints
/// its figures on one line, then holds the mapping until its stdin closes.
fn serve_prepared_child(pbf: &str, prepared: &str, vehicles: &str) {
    let vehicles: Vec<Vehicle> = vehicles.split(',').map(|v| v.parse().unwrap()).collect();
    let options = LoadOptions {
        vehicles: vehicles.clone(),
    };
    let started = Instant::now();
    let (network, report) = RoadNetwork::load_or_prepare(
        ExtractSource::File(Path::new(pbf)),
        &options,
        Path::new(prepared),
    )
    .expect("the prepared network loads");
    let loaded = started.elapsed();
    assert_eq!(
        report.origin,
        Origin::Loaded,
        "the file was prepared beforehand"
    );
    let vehicle = vehicles[0];
    let (from, to) = routable_pairs(&network, vehicle, 1)[0];
    let routing = Instant::now();
    black_box(network.route(vehicle, from, to).ok());
    let first_route = routing.elapsed();
    let total = started.elapsed();
    let (rss, anon, file) = resident_kib();
    println!(
        "{} {} {} {} {} {} {} {}",
        report.hash_time.as_micros(),
        loaded.as_micros(),
        first_route.as_micros(),
        total.as_micros(),
        rss,
        anon,
        file,
        LIVE_BYTES.load(Ordering::Relaxed),
    );
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

struct ChildFigures {
    child: Child,
    hash: Duration,
    load: Duration,
    first_route: Duration,
    total: Duration,
    rss_kib: u64,
    anon_kib: u64,
    file_kib: u64,
    heap_bytes: usize,
}

fn start_child(pbf: &Path, prepared: &Path, vehicles: &str) -> ChildFigures {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("GEO_BENCH_CHILD_PBF", pbf)
        .env("GEO_BENCH_CHILD_PREPARED", prepared)
        .env("GEO_BENCH_CHILD_VEHICLES", vehicles)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let numbers: Vec<u64> = line
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let micros = |n: u64| Duration::from_micros(n);
    ChildFigures {
        child,
        hash: micros(numbers[0]),
        load: micros(numbers[1]),
        first_route: micros(numbers[2]),
        total: micros(numbers[3]),
        rss_kib: numbers[4],
        anon_kib: numbers[5],
        file_kib: numbers[6],
        heap_bytes: numbers[7] as usize,
    }
}

fn mib_of_kib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Prepares each network into a file, then starts two processes that each map it and answer a
/// first route, both alive at once, and reports what each cost.
fn prepared_networks() {
    let sides: Vec<usize> = std::env::var("GEO_BENCH_PREPARED_SIDES")
        .unwrap_or_else(|_| "317,1000".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let scratch = std::env::temp_dir().join(format!("geo-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut networks: Vec<(String, PathBuf, Vec<Vehicle>)> = Vec::new();
    for name in ["liechtenstein", "baltimore", "monaco", "andorra"] {
        let path = osm_dir().join(format!("{name}.osm.pbf"));
        if path.exists() {
            networks.push((name.to_owned(), path, Vehicle::ALL.to_vec()));
        }
    }
    for side in sides {
        let path = scratch.join(format!("grid-{side}.osm.pbf"));
        std::fs::write(&path, courier_geo::grid_city_pbf(side)).unwrap();
        networks.push((format!("grid {side}×{side}"), path, vec![Vehicle::Car]));
    }
    println!(
        "## Prepared networks: prepare once, map in every process
"
    );
    println!(
        "Each row: `prepare` (parse, contract, index, write) in this process; then two separate processes each hash the extract, map and check the file, and answer one route, both alive at once. RSS = VmRSS; anon = RssAnon (private); file = RssFile (the mapped file's pages, shared through the page cache); heap = bytes the process allocated and still holds.\n"
    );
    println!(
        "| network | vehicles | junctions | prepare | file | hash | map + check | first route | load + first route | 1st RSS | 1st anon | 1st file | 1st heap | 2nd RSS | 2nd anon | 2nd file | 2nd heap |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, pbf, vehicles) in networks {
        let prepared = scratch.join("market.network");
        let options = LoadOptions {
            vehicles: vehicles.clone(),
        };
        let started = Instant::now();
        let (network, report) =
            RoadNetwork::prepare(ExtractSource::File(&pbf), &options, &prepared, &no_progress)
                .expect("the network prepares");
        let prepare = started.elapsed();
        let junctions = network.stats().junctions;
        drop(network);
        let names: Vec<&str> = vehicles.iter().map(|v| v.as_str()).collect();
        let list = names.join(",");
        let mut first = start_child(&pbf, &prepared, &list);
        let mut second = start_child(&pbf, &prepared, &list);
        println!(
            "| {name} | {} | {junctions} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            names.len(),
            millis(prepare),
            mebibytes(report.file_bytes as usize),
            millis(second.hash),
            millis(second.load - second.hash),
            micros(second.first_route),
            millis(second.total),
            mib_of_kib(first.rss_kib),
            mib_of_kib(first.anon_kib),
            mib_of_kib(first.file_kib),
            mebibytes(first.heap_bytes),
            mib_of_kib(second.rss_kib),
            mib_of_kib(second.anon_kib),
            mib_of_kib(second.file_kib),
            mebibytes(second.heap_bytes),
        );
        for child in [&mut first.child, &mut second.child] {
            drop(child.stdin.take());
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(&prepared);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!();
}

fn main() {
    if let (Ok(pbf), Ok(prepared), Ok(vehicles)) = (
        std::env::var("GEO_BENCH_CHILD_PBF"),
        std::env::var("GEO_BENCH_CHILD_PREPARED"),
        std::env::var("GEO_BENCH_CHILD_VEHICLES"),
    ) {
        serve_prepared_child(&pbf, &prepared, &vehicles);
        return;
    }
    let sections = std::env::var("GEO_BENCH_SECTIONS")
        .unwrap_or_else(|_| "extracts,queries,places,growth,prepared".to_owned());
    let wanted = |name: &str| sections.split(',').any(|s| s.trim() == name);
    // `cargo bench` passes `--bench`; a name filter is not supported.
    if wanted("extracts") || wanted("queries") || wanted("places") {
        let loaded = real_extracts();
        if wanted("queries") {
            for (name, result) in &loaded {
                if name == "liechtenstein" || name == "baltimore" {
                    route_queries(name, &result.network);
                }
            }
        }
        if wanted("places") {
            places_queries(&loaded);
        }
    }
    if wanted("growth") {
        grid_growth();
    }
    if wanted("prepared") {
        prepared_networks();
    }
}
