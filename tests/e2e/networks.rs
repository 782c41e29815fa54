//! Prepared road networks: `courier market prepare`, then `serve` processes that map the
//! prepared files instead of building them, sharing their pages.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::process::{
    BINARY, free_port, service_settings, spawn_service, wait_until_ready,
};
use crate::support::{
    Authed, Credential, MerchantCredentials, create_merchant_in, eventually, fresh_database_url,
    scratch_path, shared_osm_markets, status_and_json,
};

/// Resident memory of a process's mappings of prepared network files, from
/// `/proc/<pid>/smaps`: (resident, shared with other processes) in kB.
fn network_pages(pid: u32) -> (u64, u64) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let (mut resident, mut shared) = (0, 0);
    let mut in_network = false;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if first.contains('-') && !first.ends_with(':') {
            in_network = line.ends_with(".network");
            continue;
        }
        if !in_network {
            continue;
        }
        let kb: u64 = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        match first {
            "Rss:" => resident += kb,
            "Shared_Clean:" | "Shared_Dirty:" => shared += kb,
            _ => {}
        }
    }
    (resident, shared)
}

/// Private anonymous memory of a process (`RssAnon` in `/proc/<pid>/status`), in kB.
fn anonymous_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

struct Server {
    child: Child,
    base_url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start(database_url: &str, data_dir: &std::path::Path, markets: &str) -> Server {
    let address = format!("127.0.0.1:{}", free_port());
    let mut env = service_settings(database_url, &address, data_dir);
    env.push(("COURIER_MARKETS_FILE".into(), markets.into()));
    let server = Server {
        child: spawn_service(&env),
        base_url: format!("http://{address}"),
    };
    wait_until_ready(&reqwest::Client::new(), &server.base_url).await;
    server
}

/// A car route across Vaduz, once the networks are in.
async fn route(server: &Server, credential: &Credential) -> Value {
    let client = reqwest::Client::new();
    let url = format!(
        "{}/v1/routes?fromLatitude=47.1410&fromLongitude=9.5209&toLatitude=47.1650\
         &toLongitude=9.5097&vehicle=car",
        server.base_url
    );
    eventually(
        "the prepared networks to be mapped",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            let response = client.get(&url).auth(credential).send().await.ok()?;
            let (status, body) = status_and_json(response).await;
            (status == 200).then_some(body)
        },
    )
    .await
}

#[tokio::test]
async fn prepared_markets_are_mapped_and_shared_by_two_processes() {
    let Some(markets) = shared_osm_markets() else {
        return;
    };
    let data_dir = scratch_path("networks");
    let output = Command::new(BINARY)
        .args(["market", "prepare", "--markets", &markets])
        .env("COURIER_DATA_DIR", &data_dir)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // A line per step, with its rate, and a summary per market.
    assert!(
        stderr.contains("liechtenstein: contracted the motorcycle hierarchy in"),
        "{stderr}"
    );
    assert!(stderr.contains("places/s"), "{stderr}");
    assert!(stderr.contains("baltimore: done in"), "{stderr}");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    let prepared = summary.as_array().unwrap();
    assert_eq!(prepared.len(), 4);
    for market in prepared {
        let file = market["file"].as_str().unwrap();
        let bytes = std::fs::metadata(file).unwrap().len();
        assert_eq!(market["bytes"].as_u64(), Some(bytes), "{market}");
    }
    // Andorra offers no bicycles, so none was prepared.
    let andorra = prepared.iter().find(|m| m["market"] == "andorra").unwrap();
    let vehicles: Vec<&str> = andorra["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle"].as_str().unwrap())
        .collect();
    assert_eq!(vehicles, ["motorcycle", "car", "van"]);
    let modified = |name: &str| {
        std::fs::metadata(data_dir.join("networks").join(name))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = modified("liechtenstein.network");

    let database_url = fresh_database_url().await;
    let first = start(&database_url, &data_dir, &markets).await;
    let second = start(&database_url, &data_dir, &markets).await;
    let merchant = create_merchant_in(&database_url, "Maps Ltd").await;
    let credential = merchant.test();
    let (a, b) = (
        route(&first, &credential).await,
        route(&second, &credential).await,
    );
    assert_eq!(a, b);
    assert!(a["distance_metres"].as_u64().unwrap() > 2_000, "{a}");
    // Neither process rebuilt the files.
    assert_eq!(modified("liechtenstein.network"), before);

    // Both map the same files: their pages are in the page cache once, shared.
    let file_kb: u64 = prepared
        .iter()
        .map(|m| m["bytes"].as_u64().unwrap() / 1024)
        .sum();
    let (first_pid, second_pid) = (first.child.id(), second.child.id());
    let (first_resident, first_shared) = network_pages(first_pid);
    let (second_resident, second_shared) = network_pages(second_pid);
    eprintln!(
        "prepared files {file_kb} kB; first process: {first_resident} kB resident from them \
         ({first_shared} kB shared), {} kB anonymous; second: {second_resident} kB ({second_shared} \
         kB shared), {} kB anonymous",
        anonymous_kb(first_pid),
        anonymous_kb(second_pid)
    );
    // Loading reads every page (each section's checksum; a flipped byte anywhere is caught,
    // `storage::tests::damage_and_truncation_are_detected`), but a host that reclaims cold
    // pages on its own (DAMON's `pageout`, as CI's machines do) may drop some of the file's
    // pages again before they are counted here: most of them must still be there.
    assert!(
        second_resident * 2 >= file_kb,
        "{second_resident} of {file_kb} kB resident: the file was not read on load"
    );
    assert!(
        second_shared * 10 >= second_resident * 9,
        "{second_shared} of {second_resident} kB shared"
    );
}
