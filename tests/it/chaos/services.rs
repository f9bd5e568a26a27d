//! The chaos run's own PostgreSQL (TLS only, verified) and Azurite, which it stops and starts
//! as a host's outages do. They are the run's alone: the suite's shared servers keep running
//! for the tests beside it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{self, need};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

/// Runs a command to success, or fails the run with its output.
fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A PostgreSQL cluster in a temp directory that accepts only TLS with a password, its
/// certificate issued by a CA made here for `localhost`.
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    password: String,
    ca: PathBuf,
    _work: tempfile::TempDir,
}

impl Postgres {
    /// The newest Debian PostgreSQL installed.
    fn bin() -> Option<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("bin"))
            .filter(|bin| bin.join("initdb").exists())
            .collect();
        found.sort_by_key(|p| {
            p.parent()
                .and_then(|v| v.file_name())
                .and_then(|v| v.to_str())
                .and_then(|v| v.parse::<u32>().ok())
        });
        found.pop()
    }

    /// As root, the server must run as the `postgres` user.
    fn as_server(&self, program: &str) -> Command {
        as_server(&self.bin.join(program))
    }

    pub fn start() -> Option<Self> {
        if !need::postgres_programs() {
            return None;
        }
        let bin = Self::bin().expect("need::postgres_programs found one");
        let work = tempfile::Builder::new()
            .prefix("bindery-chaos-pg")
            .tempdir()
            .expect("tempdir");
        let dir = work.path().to_path_buf();
        let certs = dir.join("certs");
        std::fs::create_dir_all(&certs).expect("certs dir");
        make_certificates(&certs);
        let password = uuid::Uuid::new_v4().simple().to_string();
        std::fs::write(dir.join("pwfile"), format!("{password}\n")).expect("pwfile");
        let data = dir.join("data");
        chown_to_server(&dir);
        let pg = Self {
            bin,
            data: data.clone(),
            port: free_port(),
            password,
            ca: certs.join("ca.crt"),
            _work: work,
        };
        run(
            pg.as_server("initdb")
                .arg("-D")
                .arg(&data)
                .args(["-U", "bindery", "-E", "UTF8", "--no-instructions"])
                .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
                .arg(format!("--pwfile={}", dir.join("pwfile").display())),
            "initdb",
        );
        for name in ["server.crt", "server.key"] {
            std::fs::copy(certs.join(name), data.join(name)).expect("install certificate");
        }
        // No `host` line: a connection without TLS finds no entry and is refused.
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\nhostssl all all ::1/128 scram-sha-256\n",
        )
        .expect("pg_hba.conf");
        chown_to_server(&dir);
        set_mode(&data.join("server.key"), 0o600);
        pg.start_server();
        Some(pg)
    }

    fn start_server(&self) {
        run(
            self.as_server("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .arg("-l")
                .arg(self.data.join("server.log"))
                .args(["-w", "-t", "60", "start", "-o"])
                .arg(format!(
                    "-c listen_addresses=127.0.0.1 -p {} -k {} -c ssl=on -c max_connections=300",
                    self.port,
                    self.data.display()
                ))
                .stdout(Stdio::null()),
            "pg_ctl start",
        );
    }

    fn stop_server(&self) {
        run(
            self.as_server("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .args(["-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null()),
            "pg_ctl stop -m immediate",
        );
    }

    /// `pg_ctl restart -m immediate`, held down for `down`: every connection is cut at once,
    /// as in a crash or a managed service's failover. Returns when the server accepts
    /// connections again.
    pub fn restart_immediate(&self, down: Duration) {
        self.stop_server();
        // Time passes, not a wait for a condition: the outage's length.
        std::thread::sleep(down);
        self.start_server();
    }

    /// `DATABASE_URL` for the service, verifying the server's certificate and host name.
    pub fn url(&self) -> String {
        format!(
            "postgres://bindery:{}@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
            self.password,
            self.port,
            self.ca.display()
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.data.join("postmaster.pid").exists() {
            let _ = self
                .as_server("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .args(["-m", "immediate", "stop"])
                .output();
        }
    }
}

fn is_root() -> bool {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("proc")) == 0
}

fn as_server(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn chown_to_server(dir: &Path) {
    if is_root() {
        run(
            Command::new("chown").args(["-R", "postgres:"]).arg(dir),
            "chown",
        );
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A CA, and a certificate for `localhost` it issued, with the openssl command line.
fn make_certificates(dir: &Path) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
    run(
        Command::new("openssl")
            .current_dir(dir)
            .args(["req", "-x509", "-new", "-nodes"])
            .args(ec)
            .args(["-keyout", "ca.key", "-out", "ca.crt", "-days", "2"])
            .args(["-subj", "/CN=Bindery chaos CA"])
            .args(["-addext", "basicConstraints=critical,CA:TRUE"])
            .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]),
        "openssl: the CA",
    );
    run(
        Command::new("openssl")
            .current_dir(dir)
            .args(["req", "-new", "-nodes"])
            .args(ec)
            .args(["-keyout", "server.key", "-out", "server.csr"])
            .args(["-subj", "/CN=localhost"]),
        "openssl: the server's request",
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("server.ext");
    run(
        Command::new("openssl")
            .current_dir(dir)
            .args(["x509", "-req", "-in", "server.csr", "-CA", "ca.crt"])
            .args(["-CAkey", "ca.key", "-CAcreateserial", "-days", "2"])
            .args(["-extfile", "server.ext", "-out", "server.crt"]),
        "openssl: the server's certificate",
    );
    set_mode(&dir.join("ca.crt"), 0o644);
}

/// Azurite's blob service on a fixed loopback port, with its state in a directory of its own,
/// so that it can be stopped and started again with what it stored.
pub struct Azurite {
    port: u16,
    work: tempfile::TempDir,
    child: Option<Child>,
}

impl Azurite {
    fn program() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/azurite/node_modules/.bin/azurite-blob")
    }

    pub fn start() -> Option<Self> {
        if !need::azurite_program() {
            return None;
        }
        let mut azurite = Self {
            port: free_port(),
            work: tempfile::Builder::new()
                .prefix("bindery-chaos-azurite")
                .tempdir()
                .expect("tempdir"),
            child: None,
        };
        azurite.resume();
        Some(azurite)
    }

    /// Starts it (again), and waits until it answers.
    pub fn resume(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.work.path().join("azurite.log"))
            .expect("azurite log");
        let child = Command::new(Self::program())
            .current_dir(self.work.path())
            .args(["--blobHost", "127.0.0.1", "--blobPort"])
            .arg(self.port.to_string())
            .arg("--location")
            .arg(self.work.path())
            .args(["--silent", "--skipApiVersionCheck", "--disableTelemetry"])
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start azurite");
        self.child = Some(child);
        common::eventually("Azurite answers", Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())
        });
    }

    /// Stops it as its host would (SIGTERM: it saves its state and exits).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let stopped =
                common::within(Duration::from_secs(10), Duration::from_millis(20), || {
                    child.try_wait().expect("try_wait").is_some()
                });
            if stopped.is_err() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/devstoreaccount1", self.port)
    }

    /// A container created as an operator would before deploying.
    pub fn create_container(&self, name: &str) {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/azurite/create-container.py"
        );
        run(
            Command::new("python3").args([script, &self.endpoint(), name]),
            "create the container",
        );
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
