//! Headless Chromium driven over WebDriver: Debian's `chromium` and `chromium-driver`
//! packages (`.ci/run` installs them). Each browser gets its own chromedriver on a free port,
//! in a process group of its own with the browser it starts, and a fresh profile: all gone
//! when it is dropped, even when a test fails half-way.

use std::cell::RefCell;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use super::eventually;

/// Only what the test needs; no network chatter of the browser's own.
const CHROMIUM_FLAGS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

pub struct Browser {
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

fn program(env: &str, default: &str) -> String {
    std::env::var(env).unwrap_or_else(|_| default.to_owned())
}

impl Browser {
    /// A phone-sized browser: a viewport of `width` × `height` CSS pixels at twice the
    /// pixel density (desktop windows have a minimum width; device metrics do not).
    pub async fn start(width: u32, height: u32) -> Self {
        Self::start_with(width, height, &[]).await
    }

    /// [`Browser::start`] with more of Chromium's flags (such as
    /// `--ignore-certificate-errors`, for a provider's stand-in whose certificate a test
    /// authority issued).
    pub async fn start_with(width: u32, height: u32, flags: &[&str]) -> Self {
        let chromedriver = program("COURIER_TEST_CHROMEDRIVER", "/usr/bin/chromedriver");
        let chromium = program("COURIER_TEST_CHROMIUM", "/usr/bin/chromium");
        assert!(
            Path::new(&chromedriver).exists() && Path::new(&chromium).exists(),
            "the browser test needs {chromium} and {chromedriver}: \
             apt-get install chromium chromium-driver (as .ci/run does)"
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile =
            std::env::temp_dir().join(format!("chromium-profile-{}", uuid::Uuid::new_v4()));
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| (*f).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push(format!("--window-size={width},{height}"));
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": args,
                "mobileEmulation": {
                    "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2.0, "touch": true}
                },
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let url = format!("http://127.0.0.1:{port}");
        // Each different refusal is shown once: the last one says why there is no session.
        let refusal = RefCell::new(String::new());
        let client = eventually(
            "a WebDriver session",
            Duration::from_secs(20),
            Duration::from_millis(100),
            || async {
                match ClientBuilder::new(connector.clone())
                    .capabilities(capabilities.clone())
                    .connect(&url)
                    .await
                {
                    Ok(client) => Some(client),
                    Err(e) => {
                        let e = e.to_string();
                        if *refusal.borrow() != e {
                            eprintln!("no WebDriver session yet: {e}");
                            *refusal.borrow_mut() = e;
                        }
                        None
                    }
                }
            },
        )
        .await;
        Self {
            client,
            driver,
            profile,
        }
    }

    /// The text of the element with `id`.
    pub async fn text(&self, id: &str) -> String {
        self.client
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|e| panic!("#{id}: {e}"))
            .text()
            .await
            .unwrap()
    }

    pub async fn attr(&self, id: &str, name: &str) -> Option<String> {
        self.client
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|e| panic!("#{id}: {e}"))
            .attr(name)
            .await
            .unwrap()
    }

    /// Waits (up to 15 s) until `check` holds, asking every 100 ms.
    pub async fn wait_until<F, Fut>(&self, what: &str, mut check: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        eventually(
            what,
            Duration::from_secs(15),
            Duration::from_millis(100),
            || {
                let holds = check();
                async move { holds.await.then_some(()) }
            },
        )
        .await;
    }

    /// Saves a PNG of the viewport under the test artifacts folder; returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        save_artifact(name, self.client.screenshot().await.unwrap())
    }

    /// Saves a PNG of the element with `id`.
    pub async fn screenshot_of(&self, id: &str, name: &str) -> PathBuf {
        let element = self.client.find(Locator::Id(id)).await.unwrap();
        // Chromium shoots only the part of an element inside the viewport.
        self.client
            .execute(
                "arguments[0].scrollIntoView({block: 'start'})",
                vec![serde_json::to_value(&element).unwrap()],
            )
            .await
            .unwrap();
        save_artifact(name, element.screenshot().await.unwrap())
    }

    /// The serious and critical accessibility violations axe-core finds on the page, as
    /// `rule: what it says (where)` lines. axe-core comes from the npm registry
    /// (`cargo xtask setup test` installs it under `target/test-tools/`).
    pub async fn accessibility_violations(&self) -> Vec<String> {
        self.violations("{resultTypes: ['violations']}").await
    }

    /// [`Browser::accessibility_violations`] of the page itself, not of the frames in it (a
    /// payment provider's own frames are the provider's, and axe-core cannot run inside them).
    pub async fn accessibility_violations_outside_frames(&self) -> Vec<String> {
        self.violations("{resultTypes: ['violations'], iframes: false}")
            .await
    }

    async fn violations(&self, options: &str) -> Vec<String> {
        let axe = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tools/node_modules/axe-core/axe.min.js");
        let source = std::fs::read_to_string(&axe).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; `cargo xtask setup test` installs axe-core there",
                axe.display()
            )
        });
        self.client.execute(&source, vec![]).await.unwrap();
        let found = self
            .client
            .execute_async(
                &format!(
                    "const done = arguments[arguments.length - 1];
                 axe.run(document, {options}).then(results => done(
                   results.violations
                     .filter(v => v.impact === 'serious' || v.impact === 'critical')
                     .map(v => v.id + ': ' + v.help + ' (' +
                          v.nodes.map(n => n.target.join(' ')).join(', ') + ')')));"
                ),
                vec![],
            )
            .await
            .unwrap();
        serde_json::from_value(found).unwrap()
    }

    /// Sends a DevTools command to the page (chromedriver's `goog/cdp/execute`): how a test
    /// sets what a phone has and a desktop browser does not, such as where it is.
    pub async fn devtools(&self, command: &str, params: serde_json::Value) -> serde_json::Value {
        self.client
            .issue_cmd(DevTools {
                command: command.to_owned(),
                params,
            })
            .await
            .unwrap_or_else(|e| panic!("{command}: {e}"))
    }

    /// Ends the WebDriver session (the browser quits); the drop does the rest.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

/// A DevTools command through chromedriver.
#[derive(Debug)]
struct DevTools {
    command: String,
    params: serde_json::Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for DevTools {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({"cmd": self.command, "params": self.params});
        (http::Method::POST, Some(body.to_string()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group: chromedriver and every Chromium process it started.
        if let Ok(group) = i32::try_from(self.driver.id()) {
            // SAFETY: kill(2) with a negative pid signals only that process group, ours.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn save_artifact(name: &str, png: Vec<u8>) -> PathBuf {
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let folder = artifacts_dir();
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(name);
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
    path
}

/// `COURIER_TEST_ARTIFACTS`, else `test-artifacts` in the target folder.
pub fn artifacts_dir() -> PathBuf {
    match std::env::var_os("COURIER_TEST_ARTIFACTS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("the target folder")
            .join("test-artifacts"),
    }
}
