//! A private PostgreSQL cluster run from the machine's server binaries.
//!
//! Layout under the root folder: `data/` (the cluster), `password` (the superuser's password),
//! `server.log`, and two lock files. Several processes may share one cluster:
//! - `control.lock` (exclusive, held only while starting or stopping) serialises start/stop;
//! - `users.lock` (shared, held for as long as a process uses the cluster) tells the last
//!   user to leave that it may stop the server.
//!
//! A process that finds the server already running reuses it. The server keeps running after a
//! crash of its users and is reused by the next process.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use nix::fcntl::{Flock, FlockArg};
use nix::unistd::{Gid, Uid, User};
use rand::distr::{Alphanumeric, SampleString};
use thiserror::Error;

const SUPERUSER: &str = "courier";

#[derive(Debug, Error)]
pub enum EmbeddedError {
    #[error(
        "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under \
         /usr/lib/postgresql/*/bin: install PostgreSQL (for example `apt-get install postgresql`) \
         or set DATABASE_URL to use an existing server"
    )]
    NoServerBinaries,
    #[error(
        "running as root, the cluster must run as an unprivileged user, but the `postgres` user \
         does not exist: install the postgresql package or set DATABASE_URL"
    )]
    NoUnprivilegedUser,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} failed ({status}): {output}")]
    Command {
        program: String,
        status: String,
        output: String,
    },
    #[error("the running cluster in {0} did not report its port")]
    UnknownPort(PathBuf),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EmbeddedError {
    let what = what.into();
    move |source| EmbeddedError::Io { what, source }
}

/// A handle on a running private cluster. `stop` (or drop) releases this process's use of it.
pub struct EmbeddedPostgres {
    root: PathBuf,
    bin_dir: PathBuf,
    run_as: Option<(Uid, Gid)>,
    port: u16,
    password: String,
    users_lock: Mutex<Option<Flock<File>>>,
}

impl std::fmt::Debug for EmbeddedPostgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedPostgres")
            .field("root", &self.root)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl EmbeddedPostgres {
    /// Starts (or joins) the cluster under `root`, creating it on first use. Blocking.
    pub fn start(root: &Path) -> Result<Self, EmbeddedError> {
        let bin_dir = find_server_binaries().ok_or(EmbeddedError::NoServerBinaries)?;
        let run_as = if Uid::effective().is_root() {
            let user = User::from_name("postgres")
                .ok()
                .flatten()
                .ok_or(EmbeddedError::NoUnprivilegedUser)?;
            Some((user.uid, user.gid))
        } else {
            None
        };
        fs::create_dir_all(root).map_err(io(format!("creating {}", root.display())))?;
        let root = root
            .canonicalize()
            .map_err(io(format!("resolving {}", root.display())))?;
        let mut cluster = Self {
            root,
            bin_dir,
            run_as,
            port: 0,
            password: String::new(),
            users_lock: Mutex::new(None),
        };
        let _control = cluster.lock("control.lock", FlockArg::LockExclusive)?;
        cluster.password = cluster.init_if_needed()?;
        cluster.port = match cluster.running_port()? {
            Some(port) => port,
            None => cluster.start_server()?,
        };
        *cluster.users_lock.lock().expect("lock poisoned") =
            Some(cluster.lock("users.lock", FlockArg::LockShared)?);
        Ok(cluster)
    }

    /// Connection URL for `database` on this cluster.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@127.0.0.1:{}/{database}",
            self.password, self.port
        )
    }

    /// Gives up this process's use of the cluster; the last user stops the server. Idempotent.
    pub fn stop(&self) -> Result<(), EmbeddedError> {
        let Some(shared) = self.users_lock.lock().expect("lock poisoned").take() else {
            return Ok(());
        };
        let _control = self.lock("control.lock", FlockArg::LockExclusive)?;
        drop(shared);
        // Anyone else still holding a shared lock keeps the server up.
        if self
            .lock("users.lock", FlockArg::LockExclusiveNonblock)
            .is_ok()
        {
            self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60"])?;
        }
        Ok(())
    }

    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    fn lock(&self, name: &str, how: FlockArg) -> Result<Flock<File>, EmbeddedError> {
        let path = self.root.join(name);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(format!("opening {}", path.display())))?;
        Flock::lock(file, how).map_err(|(_, errno)| EmbeddedError::Io {
            what: format!("locking {}", path.display()),
            source: errno.into(),
        })
    }

    /// Creates the cluster on first use; returns the superuser's password.
    fn init_if_needed(&self) -> Result<String, EmbeddedError> {
        let password_file = self.root.join("password");
        if self.data_dir().join("PG_VERSION").exists() {
            return fs::read_to_string(&password_file)
                .map(|p| p.trim().to_owned())
                .map_err(io(format!("reading {}", password_file.display())));
        }
        let password = Alphanumeric.sample_string(&mut rand::rng(), 32);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&password_file)
            .map_err(io(format!("writing {}", password_file.display())))?;
        file.write_all(password.as_bytes())
            .map_err(io("writing the password file"))?;
        let data_dir = self.data_dir();
        if data_dir.exists() {
            // A half-made cluster from an interrupted initdb.
            fs::remove_dir_all(&data_dir).map_err(io("removing a half-made cluster"))?;
        }
        self.hand_over(&self.root)?;
        self.hand_over(&password_file)?;
        let data = data_dir.to_string_lossy().into_owned();
        let pwfile = password_file.to_string_lossy().into_owned();
        let output = self.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                SUPERUSER,
                "--pwfile",
                &pwfile,
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        )?;
        check("initdb", &output)?;
        Ok(password)
    }

    /// The port of a server already running on this data directory, if any.
    fn running_port(&self) -> Result<Option<u16>, EmbeddedError> {
        let status = self.run(
            "pg_ctl",
            &["status", "-D", &self.data_dir().to_string_lossy()],
        )?;
        if !status.status.success() {
            return Ok(None);
        }
        // postmaster.pid: line 4 is the port.
        let pid_file = self.data_dir().join("postmaster.pid");
        let text =
            fs::read_to_string(&pid_file).map_err(io(format!("reading {}", pid_file.display())))?;
        text.lines()
            .nth(3)
            .and_then(|l| l.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| EmbeddedError::UnknownPort(self.data_dir()))
    }

    fn start_server(&self) -> Result<u16, EmbeddedError> {
        let port = free_port()?;
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' \
             -c max_connections=300 -c shared_buffers=256MB -c fsync=on"
        );
        let log = self.root.join("server.log").to_string_lossy().into_owned();
        self.pg_ctl(&["start", "-w", "-t", "120", "-l", &log, "-o", &options])?;
        Ok(port)
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), EmbeddedError> {
        let data = self.data_dir().to_string_lossy().into_owned();
        let mut all = vec!["-D", data.as_str()];
        all.extend_from_slice(args);
        let output = self.run("pg_ctl", &all)?;
        check("pg_ctl", &output)
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<Output, EmbeddedError> {
        let mut command = Command::new(self.bin_dir.join(program));
        command.args(args).current_dir(&self.root);
        if let Some((uid, gid)) = self.run_as {
            command.uid(uid.as_raw()).gid(gid.as_raw());
        }
        command.output().map_err(io(format!("running {program}")))
    }

    /// When running as root, the cluster's user must own what the cluster writes.
    fn hand_over(&self, path: &Path) -> Result<(), EmbeddedError> {
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid.as_raw()), Some(gid.as_raw())).map_err(io(
                format!("giving {} to the postgres user", path.display()),
            ))?;
            if path.is_dir() {
                fs::set_permissions(path, fs::Permissions::from_mode(0o700))
                    .map_err(io(format!("restricting {}", path.display())))?;
            }
        }
        Ok(())
    }
}

impl Drop for EmbeddedPostgres {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            tracing::warn!(error = %e, "stopping the embedded PostgreSQL failed");
        }
    }
}

fn check(program: &str, output: &Output) -> Result<(), EmbeddedError> {
    if output.status.success() {
        return Ok(());
    }
    Err(EmbeddedError::Command {
        program: program.into(),
        status: output.status.to_string(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
        .trim()
        .to_owned(),
    })
}

fn free_port() -> Result<u16, EmbeddedError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("finding a free port"))?;
    Ok(listener
        .local_addr()
        .map_err(io("finding a free port"))?
        .port())
}

/// A folder holding `initdb` and `pg_ctl`: from PATH first, then the newest Debian install.
pub fn find_server_binaries() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has_both(&dir) {
                // Follow the link so pg_ctl finds `postgres` beside its real location.
                let real = dir.join("pg_ctl").canonicalize().ok()?;
                return real.parent().map(Path::to_path_buf);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            has_both(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}
