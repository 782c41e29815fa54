//! A fleet on loopback, set up as an operator would (docs/operations-and-scaling.md,
//! "Deployment"): a PostgreSQL primary with a synchronous standby, a TCP forwarder standing
//! for the database's stable address, three `courier serve` instances, and HAProxy in front of
//! them with its health check on `/readyz`. Dropping the fleet stops all of it and removes its
//! files. The tests that use it are skipped, saying why, where `haproxy` or PostgreSQL's
//! server binaries are missing; CI installs both.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use courier_core::infra::db::find_server_binaries;

use super::eventually;
use super::forwarder::Forwarder;
use super::process::{free_port, spawn_service};

/// How long a stopping instance keeps serving while reporting not ready: longer than HAProxy
/// takes to mark it down (`fall` × `inter` below).
pub const DRAIN_MS: u64 = 1500;
/// The secret key every instance shares.
pub const SECRET_KEY_HEX: &str = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b";

/// Why the fleet cannot run here, if it cannot.
pub fn missing_tools() -> Option<String> {
    let Some(bin) = find_server_binaries() else {
        return Some("PostgreSQL's server binaries (initdb, pg_ctl) are not installed".into());
    };
    if !bin.join("pg_basebackup").exists() {
        return Some(format!("pg_basebackup is not in {}", bin.display()));
    }
    let haproxy = Command::new("haproxy")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !haproxy.is_ok_and(|s| s.success()) {
        return Some("haproxy is not installed".into());
    }
    None
}

/// One PostgreSQL server of the pair.
pub struct PgServer {
    data: PathBuf,
    pub port: u16,
}

/// A primary and its synchronous standby: a commit returns once the standby has the WAL.
pub struct PgPair {
    root: PathBuf,
    bin: PathBuf,
    pub primary: PgServer,
    pub standby: PgServer,
}

impl PgPair {
    fn start(root: &Path) -> Self {
        let bin = find_server_binaries().expect("PostgreSQL's server binaries");
        let pair = Self {
            root: root.to_owned(),
            bin,
            primary: PgServer {
                data: root.join("primary"),
                port: free_port(),
            },
            standby: PgServer {
                data: root.join("standby"),
                port: free_port(),
            },
        };
        pair.run(
            "initdb",
            &[
                "-D",
                &pair.primary.data.to_string_lossy(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        let settings = format!(
            "listen_addresses = '127.0.0.1'\n\
             unix_socket_directories = '{}'\n\
             wal_level = replica\n\
             max_wal_senders = 5\n\
             max_connections = 300\n\
             synchronous_commit = on\n\
             synchronous_standby_names = 'standby'\n\
             fsync = off\n",
            root.display()
        );
        std::fs::write(
            pair.primary.data.join("postgresql.auto.conf"),
            settings.as_bytes(),
        )
        .unwrap();
        pair.pg_ctl(&pair.primary, &["start", "-w", "-t", "60"]);
        let conninfo = format!(
            "host=127.0.0.1 port={} user=postgres application_name=standby",
            pair.primary.port
        );
        pair.run(
            "pg_basebackup",
            &[
                "-d",
                &conninfo,
                "-D",
                &pair.standby.data.to_string_lossy(),
                "-X",
                "stream",
                "-R",
            ],
        );
        pair.pg_ctl(&pair.standby, &["start", "-w", "-t", "60"]);
        pair
    }

    /// Runs a server program as the cluster's owner (`postgres` when this process is root,
    /// as PostgreSQL refuses to run as root).
    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running {program}: {e}"));
        assert!(
            output.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn pg_ctl(&self, server: &PgServer, args: &[&str]) {
        let log = self
            .root
            .join(format!("{}.log", server.port))
            .to_string_lossy()
            .into_owned();
        let options = format!("-p {}", server.port);
        let data = server.data.to_string_lossy().into_owned();
        let mut all = vec![
            "-D",
            data.as_str(),
            "-l",
            log.as_str(),
            "-o",
            options.as_str(),
        ];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all);
    }

    pub fn url(server: &PgServer, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", server.port)
    }

    /// Stops the primary hard, as a crash or a lost machine does: SIGKILL to the postmaster
    /// and every backend.
    pub fn kill_primary(&self) {
        let pid_file = std::fs::read_to_string(self.primary.data.join("postmaster.pid"))
            .expect("the primary is running");
        let pid: i32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
        // The whole process group: the backends die with their postmaster, at once.
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
    }

    /// Promotes the standby, and lifts its synchronous wait (it has no standby of its own), as
    /// an operator or Patroni does.
    pub async fn promote_standby(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.standby.data.to_string_lossy(),
                "promote",
                "-w",
                "-t",
                "60",
            ],
        );
        let url = Self::url(&self.standby, "postgres");
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
            .await
            .unwrap();
        sqlx::query("ALTER SYSTEM SET synchronous_standby_names = ''")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("SELECT pg_reload_conf()")
            .execute(&mut conn)
            .await
            .unwrap();
    }

    fn stop(&self) {
        for server in [&self.standby, &self.primary] {
            if server.data.join("postmaster.pid").exists() {
                let _ = self
                    .command("pg_ctl")
                    .args([
                        "-D",
                        &server.data.to_string_lossy(),
                        "stop",
                        "-m",
                        "immediate",
                    ])
                    .output();
            }
        }
    }
}

/// One `courier serve` process of the fleet, on its own port.
pub struct Instance {
    pub port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Instance {
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn start(&mut self) {
        assert!(self.child.is_none(), "instance on {} is running", self.port);
        self.child = Some(spawn_service(&self.env));
    }

    /// SIGTERM, then waits for the process to exit (after its drain); returns whether it
    /// exited cleanly.
    pub async fn terminate(&mut self) -> bool {
        let mut child = self.child.take().expect("a running instance");
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        tokio::task::spawn_blocking(move || child.wait().unwrap())
            .await
            .unwrap()
            .success()
    }

    /// SIGKILL: the instance dies mid-request.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One fleet at a time: each is six servers and a balancer on two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The fleet: everything above, wired together.
pub struct Fleet {
    root: PathBuf,
    pub db: PgPair,
    /// The database's stable address: the primary's now, the promoted standby's after a
    /// failover.
    pub db_address: Forwarder,
    pub instances: Vec<Instance>,
    balancer: Child,
    balancer_port: u16,
    stats_port: u16,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Fleet {
    /// Starts the fleet; `env` adds settings for every instance.
    pub async fn start(env: &[(String, String)]) -> Self {
        let turn = ONE_AT_A_TIME.lock().await;
        let root = std::env::temp_dir().join(format!("courier-fleet-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let owned = Command::new("chown")
                .args(["postgres:postgres", &root.to_string_lossy()])
                .status()
                .unwrap();
            assert!(owned.success());
        }
        let db = {
            let root = root.clone();
            tokio::task::spawn_blocking(move || PgPair::start(&root))
                .await
                .unwrap()
        };
        let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&PgPair::url(
            &db.primary,
            "postgres",
        ))
        .await
        .unwrap();
        sqlx::query("CREATE DATABASE courier")
            .execute(&mut admin)
            .await
            .unwrap();
        drop(admin);
        let db_address = Forwarder::start(db.primary.port).await;
        let database_url = format!("postgres://postgres@127.0.0.1:{}/courier", db_address.port);

        let mut instances = Vec::new();
        for n in 0..3 {
            let port = free_port();
            let data_dir = root.join(format!("instance-{n}"));
            let mut settings: Vec<(String, String)> = [
                ("DATABASE_URL", database_url.clone()),
                ("COURIER_LISTEN", format!("127.0.0.1:{port}")),
                ("COURIER_DATA_DIR", data_dir.to_string_lossy().into_owned()),
                ("COURIER_SECRET_KEY", SECRET_KEY_HEX.to_owned()),
                ("COURIER_INSTANCES", "3".to_owned()),
                ("COURIER_DRAIN_MS", DRAIN_MS.to_string()),
                ("COURIER_DB_POOL_SIZE", "8".to_owned()),
                // HAProxy, on loopback, forwards the client's address.
                ("COURIER_TRUSTED_PROXIES", "127.0.0.1".to_owned()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            settings.extend(env.iter().cloned());
            instances.push(Instance {
                port,
                env: settings,
                child: None,
            });
        }
        // The first applies the migrations; the others find them applied.
        instances[0].start();
        wait_ready(&instances[0].base_url(), Duration::from_secs(60)).await;
        for instance in &mut instances[1..] {
            instance.start();
        }
        for instance in &instances[1..] {
            wait_ready(&instance.base_url(), Duration::from_secs(60)).await;
        }

        let (balancer_port, stats_port) = (free_port(), free_port());
        let config = root.join("haproxy.cfg");
        std::fs::write(
            &config,
            haproxy_config(balancer_port, stats_port, &instances),
        )
        .unwrap();
        let log = std::fs::File::create(root.join("haproxy.log")).unwrap();
        let balancer = Command::new("haproxy")
            .args(["-db", "-f", &config.to_string_lossy()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let fleet = Self {
            root,
            db,
            db_address,
            instances,
            balancer,
            balancer_port,
            stats_port,
            _turn: turn,
        };
        for n in 0..fleet.instances.len() {
            fleet.wait_in_rotation(n).await;
        }
        fleet
    }

    /// The balancer's address: where clients send requests.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.balancer_port)
    }

    /// The database as the instances reach it.
    pub fn database_url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/courier",
            self.db_address.port
        )
    }

    /// Stops instance `n` (SIGTERM: it drains), starts it again, and waits until the balancer
    /// sends it requests again. Returns whether it had exited cleanly.
    pub async fn restart(&mut self, n: usize) -> bool {
        let clean = self.instances[n].terminate().await;
        self.instances[n].start();
        wait_ready(&self.instances[n].base_url(), Duration::from_secs(60)).await;
        self.wait_in_rotation(n).await;
        clean
    }

    /// Starts instance `n` again after a kill.
    pub async fn start_again(&mut self, n: usize) {
        self.instances[n].start();
        wait_ready(&self.instances[n].base_url(), Duration::from_secs(60)).await;
        self.wait_in_rotation(n).await;
    }

    /// Waits until HAProxy's checks have seen instance `n` ready (`rise` checks).
    async fn wait_in_rotation(&self, n: usize) {
        let stats = format!("http://127.0.0.1:{}/stats;csv", self.stats_port);
        let name = format!("courier{}", n + 1);
        let client = reqwest::Client::new();
        eventually(
            "the balancer to send requests to the instance",
            Duration::from_secs(30),
            Duration::from_millis(50),
            || async {
                let text = client.get(&stats).send().await.ok()?.text().await.ok()?;
                text.lines()
                    .any(|line| {
                        let fields: Vec<&str> = line.split(',').collect();
                        fields.get(1) == Some(&name.as_str()) && fields.get(17) == Some(&"UP")
                    })
                    .then_some(())
            },
        )
        .await;
    }

    /// Kills the primary hard, promotes the standby and points the database's address at
    /// it; returns when the promotion was done.
    pub async fn fail_over(&self) -> Instant {
        self.db.kill_primary();
        // As a failover manager does: notice, then promote.
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.db.promote_standby().await;
        self.db_address.point_at(self.db.standby.port);
        Instant::now()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for instance in &mut self.instances {
            instance.kill();
        }
        let _ = self.balancer.kill();
        let _ = self.balancer.wait();
        self.db.stop();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

async fn wait_ready(base_url: &str, within: Duration) {
    let client = reqwest::Client::new();
    eventually(
        "an instance to become ready",
        within,
        Duration::from_millis(50),
        || async {
            let response = client.get(format!("{base_url}/readyz")).send().await.ok()?;
            (response.status() == 200).then_some(())
        },
    )
    .await;
}

/// The balancer's configuration: the deployment page's (`docs/haproxy.cfg`), with this
/// fleet's ports and a check interval to match its short drain.
fn haproxy_config(port: u16, stats_port: u16, instances: &[Instance]) -> String {
    let mut config = include_str!("../../../docs/haproxy.cfg")
        .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"))
        .replace("127.0.0.1:8404", &format!("127.0.0.1:{stats_port}"))
        .replace("inter 1s", "inter 300ms");
    for (n, instance) in instances.iter().enumerate() {
        config = config.replace(
            &format!("127.0.0.1:{}", 8081 + n),
            &format!("127.0.0.1:{}", instance.port),
        );
    }
    config
}
