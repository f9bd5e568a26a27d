//! The service as a multi-machine deployment runs it: `bindery web` processes on ports of
//! their own and `bindery worker` processes, all on one database and one blob container (the
//! Procfile's split roles). Each process writes its log to a file of the run's directory, one
//! file per start, so that a failed run can be read afterwards.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common;

/// The two roles of the Procfile's split form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Web,
    Worker,
}

impl Role {
    fn command(self) -> &'static str {
        match self {
            Role::Web => "web",
            Role::Worker => "worker",
        }
    }
}

/// One process slot: `web 1`, `worker 3`. A slot is restarted in place after a kill.
pub struct Process {
    pub role: Role,
    pub index: usize,
    /// The web process's fixed port, so that clients find it again after a restart.
    pub port: Option<u16>,
    child: Option<Child>,
    pub starts: usize,
    /// Set while a fault holds it (stopped with SIGSTOP): the random killer leaves it alone.
    pub held: bool,
}

impl Process {
    pub fn name(&self) -> String {
        format!("{} {}", self.role.command(), self.index)
    }

    pub fn pid(&self) -> Option<i32> {
        self.child
            .as_ref()
            .map(|c| i32::try_from(c.id()).expect("pid"))
    }

    pub fn signal(&self, signal: Signal) {
        if let Some(pid) = self.pid() {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }

    /// SIGKILL, and reaps it. Returns whether it had exited on its own before.
    pub fn kill(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let exited = child.try_wait().expect("try_wait");
        if exited.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        exited
    }

    /// Whether it exited without being killed (a crash, or an exit the run did not cause).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().expect("try_wait")
    }
}

/// What every process of the deployment is started with.
pub struct Fleet {
    pub processes: Vec<Process>,
    env: Vec<(String, String)>,
    bin: PathBuf,
    dir: PathBuf,
}

impl Fleet {
    pub fn new(bin: &Path, dir: &Path, env: Vec<(String, String)>) -> Self {
        Self {
            processes: Vec::new(),
            env,
            bin: bin.to_path_buf(),
            dir: dir.to_path_buf(),
        }
    }

    /// A command for the binary with the deployment's environment, in a working directory
    /// of its own (as on another machine).
    pub fn command(&self, name: &str) -> Command {
        let home = self.dir.join(name.replace(' ', "-"));
        std::fs::create_dir_all(&home).expect("process directory");
        let mut cmd = Command::new(&self.bin);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATA_DIR", &home)
            .env("HOST", "127.0.0.1")
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            // Chaos kills workers every few seconds, and an unoptimised build typesets the
            // novel in about as long: the print edition's recovery has its own tests
            // (`pipeline`, `print`), and here would only starve the run.
            .env("PRINT_EDITION", "false")
            .current_dir(&home)
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn add(&mut self, role: Role, count: usize) {
        for index in 1..=count {
            let port = (role == Role::Web).then(|| {
                std::net::TcpListener::bind("127.0.0.1:0")
                    .expect("bind")
                    .local_addr()
                    .expect("address")
                    .port()
            });
            self.processes.push(Process {
                role,
                index,
                port,
                child: None,
                starts: 0,
                held: false,
            });
        }
    }

    /// Notes a fault or a start in the run's `faults.log`, by the same clock as the process
    /// logs, to read them against each other.
    pub fn journal(&self, event: &str) {
        use std::io::Write;
        let line = format!("{} {event}\n", chrono::Utc::now().format("%H:%M:%S%.3f"));
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("faults.log"))
        {
            let _ = file.write_all(line.as_bytes());
        }
    }

    /// SIGKILL slot `i`, journaled; returns how it had exited if it already had.
    pub fn kill(&mut self, i: usize) -> Option<std::process::ExitStatus> {
        let event = format!(
            "kill {} (pid {:?})",
            self.processes[i].name(),
            self.processes[i].pid()
        );
        self.journal(&event);
        self.processes[i].kill()
    }

    /// Sends `signal` to slot `i`, journaled.
    pub fn signal(&self, i: usize, signal: Signal) {
        self.journal(&format!(
            "{signal} {} (pid {:?})",
            self.processes[i].name(),
            self.processes[i].pid()
        ));
        self.processes[i].signal(signal);
    }

    /// Starts (or restarts) slot `i`, its output appended to its log file.
    pub fn start(&mut self, i: usize) {
        let name = self.processes[i].name();
        let mut cmd = self.command(&name);
        let slot = &self.processes[i];
        cmd.arg(slot.role.command());
        if let Some(port) = slot.port {
            cmd.env("PORT", port.to_string());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{}.log", name.replace(' ', "-"))))
            .expect("log file");
        cmd.stdout(log.try_clone().expect("log")).stderr(log);
        let child = cmd.spawn().expect("start bindery");
        self.journal(&format!("start {name} (pid {})", child.id()));
        let slot = &mut self.processes[i];
        slot.child = Some(child);
        slot.starts += 1;
    }

    pub fn start_all(&mut self) {
        for i in 0..self.processes.len() {
            self.start(i);
        }
    }

    pub fn web_ports(&self) -> Vec<u16> {
        self.processes.iter().filter_map(|p| p.port).collect()
    }

    /// Slots of a role.
    pub fn of(&self, role: Role) -> Vec<usize> {
        (0..self.processes.len())
            .filter(|&i| self.processes[i].role == role)
            .collect()
    }

    /// Every process that exited although nothing killed it, with how.
    pub fn unexpected_exits(&mut self) -> Vec<String> {
        self.processes
            .iter_mut()
            .filter_map(|p| {
                let status = p.exited()?;
                Some(format!("{} exited: {status}", p.name()))
            })
            .collect()
    }

    pub fn stop_all(&mut self) {
        for p in &mut self.processes {
            p.signal(Signal::SIGCONT);
            p.kill();
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Waits until a web process on `port` answers `/readyz` with 200.
pub fn wait_ready(port: u16, timeout: Duration) -> Duration {
    let started = Instant::now();
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .expect("client");
    common::eventually(
        &format!("the web process on port {port} to be ready"),
        timeout,
        || match client.get(format!("http://127.0.0.1:{port}/readyz")).send() {
            Ok(r) if r.status() == 200 => Ok(()),
            Ok(r) => Err(r.status().to_string()),
            Err(e) => Err(e.to_string()),
        },
    );
    started.elapsed()
}
