//! Shared harness for the end-to-end tests: locates the `flotilla` binary, runs
//! `flotilla apiserver` as a real child process on a free port, and runs the real kubectl
//! binaries against it with a bounded wait, so a hung command fails a test instead of
//! hanging it.
//!
//! Each test file includes this module with `mod support;` and uses only some of it.

// Each test file uses only part of this; panicking is how a test harness reports failure.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a started server has to print its "ready at" line.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one kubectl command may run before the test gives up on it.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

/// The `flotilla` binary under test: `$FLOTILLA_BIN`, else `<workspace>/target/debug/flotilla`.
/// Panics (never skips) when it is missing, since an e2e run without the binary proves nothing.
pub fn flotilla_bin() -> PathBuf {
    workspace_bin("flotilla", "FLOTILLA_BIN")
}

/// The binary `name` under test: `$env_var`, else `<workspace>/target/debug/<name>`.
fn workspace_bin(name: &str, env_var: &str) -> PathBuf {
    let path = match std::env::var_os(env_var) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../target/debug/{name}")),
    };
    assert!(
        path.is_file(),
        "the {name} binary was not found at {}: run `cargo build --bin {name}` first \
         (or set {env_var} to its path)",
        path.display()
    );
    path
}

/// A running `flotilla apiserver` child process; dropping it kills the process.
pub struct ApiserverProcess {
    pub child: Child,
    /// `https://127.0.0.1:PORT`, as printed on the "ready at" line.
    pub url: String,
    /// The admin kubeconfig the server wrote into its data directory.
    pub kubeconfig: PathBuf,
    /// The server's stderr (its logs), appended to across restarts on the same data dir.
    pub log: PathBuf,
}

impl ApiserverProcess {
    /// The server's log so far, for failure messages.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ApiserverProcess {
    fn drop(&mut self) {
        // The process may already have exited (a crash test may have killed it).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `flotilla apiserver --data-dir D --secure-port 0`, waits for its
/// `Flotilla API server ready at URL` line and returns the process with that URL.
/// The server's stderr goes to `D/apiserver.log` (appended).
pub fn start_apiserver(data_dir: &Path) -> ApiserverProcess {
    start_apiserver_with_args(data_dir, &[])
}

/// Like [`start_apiserver`] with extra `flotilla apiserver` flags, e.g.
/// `["--token-auth-file", F, "--audit-log-path", F]`.
pub fn start_apiserver_with_args(data_dir: &Path, extra_args: &[&str]) -> ApiserverProcess {
    start_apiserver_on_port(data_dir, 0, extra_args)
}

/// Like [`start_apiserver_with_args`] on `port` (0 picks a free one): a restart after a crash
/// serves at the same URL, so clients and kubeconfigs keep working.
pub fn start_apiserver_on_port(
    data_dir: &Path,
    port: u16,
    extra_args: &[&str],
) -> ApiserverProcess {
    std::fs::create_dir_all(data_dir).unwrap();
    let log = data_dir.join("apiserver.log");
    let log_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .unwrap();
    let mut child = Command::new(flotilla_bin())
        .arg("apiserver")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--secure-port", &port.to_string()])
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("spawn flotilla apiserver");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    // Keeps draining stdout after the ready line so the server never blocks on a full pipe.
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.split("ready at ").nth(1) {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    let deadline = Instant::now() + READY_TIMEOUT;
    let url = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(url) => break url,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {}
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "flotilla apiserver exited ({status}) before it was ready; log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "flotilla apiserver printed no 'ready at' line within {READY_TIMEOUT:?}; log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
    };
    let kubeconfig = data_dir.join("kubeconfig");
    assert!(
        kubeconfig.is_file(),
        "server is ready at {url} but wrote no {}",
        kubeconfig.display()
    );
    ApiserverProcess {
        child,
        url,
        kubeconfig,
        log,
    }
}

/// The directory holding the kubectl dispatcher and the versioned `kubectl.1.NN` binaries:
/// the directory of `kubectl` on PATH after following symlinks.
pub fn kubectl_dir() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|p| p.is_file())
        .expect("no kubectl on PATH");
    let real = std::fs::canonicalize(&found).unwrap();
    real.parent().unwrap().to_path_buf()
}

/// A kubectl binary by file name in [`kubectl_dir`] (`kubectl`, `kubectl.1.27`, ...).
pub fn kubectl_binary(name: &str) -> PathBuf {
    let path = kubectl_dir().join(name);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// What a finished command printed.
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// A kubectl binary bound to one kubeconfig and its own fresh discovery cache.
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
    pub cache_dir: PathBuf,
}

impl Kubectl {
    pub fn new(bin: PathBuf, kubeconfig: &Path, cache_dir: &Path) -> Self {
        Self {
            bin,
            kubeconfig: kubeconfig.to_path_buf(),
            cache_dir: cache_dir.to_path_buf(),
        }
    }

    /// The command with the kubeconfig and cache dir set, by flag and by environment
    /// (the dispatcher looks at the server before it hands over to a versioned binary).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `args` to completion (bounded by [`COMMAND_TIMEOUT`]) whatever its exit status.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// Like [`Kubectl::run`] with extra environment variables.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        run_bounded(&mut cmd, COMMAND_TIMEOUT, &self.describe(args))
    }

    /// Runs `args`, panics with both outputs unless it exits 0, and returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, &[])
    }

    /// Like [`Kubectl::ok`] with extra environment variables.
    pub fn ok_with(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.run_with(args, env);
        assert!(
            out.status.success(),
            "{} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
            self.describe(args),
            out.status,
            out.stdout,
            out.stderr
        );
        out.stdout
    }

    /// Runs `args`, panics with both outputs if it exits 0, and returns the output.
    pub fn fails(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "{} succeeded but should have failed\n--- stdout\n{}\n--- stderr\n{}",
            self.describe(args),
            out.stdout,
            out.stderr
        );
        out
    }

    /// `get -o json` of one object, parsed.
    pub fn get_json(&self, args: &[&str]) -> serde_json::Value {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let text = self.ok(&full);
        serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "kubectl {} printed invalid JSON ({e}):\n{text}",
                full.join(" ")
            )
        })
    }

    /// `get ARGS -o json`: `Ok(None)` on NotFound, `Err` on any other failure.
    pub fn try_get(&self, args: &[&str]) -> Result<Option<serde_json::Value>, String> {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let out = self.run(&full);
        if out.status.success() {
            return serde_json::from_str(&out.stdout)
                .map(Some)
                .map_err(|e| format!("invalid JSON ({e}): {}", out.stdout));
        }
        if out.stderr.contains("NotFound") || out.stderr.contains("not found") {
            return Ok(None);
        }
        Err(format!("{}: {}", self.describe(&full), out.stderr))
    }

    /// Writes `yaml` to `dir/NAME.yaml` and runs `apply -f` on it, whatever the outcome.
    pub fn apply_file(&self, dir: &Path, name: &str, yaml: &str) -> Output {
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, yaml).unwrap();
        self.run(&["apply", "-f", file.to_str().unwrap()])
    }

    pub fn describe(&self, args: &[&str]) -> String {
        let name = self
            .bin
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("`{name} {}`", args.join(" "))
    }
}

/// Spawns a reader thread collecting everything from `r`.
fn collect<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `cmd` with piped output, killing it and panicking (with what it printed) if it is
/// still running after `timeout`.
pub fn run_bounded(cmd: &mut Command, timeout: Duration, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let out = collect(child.stdout.take().unwrap());
    let err = collect(child.stderr.take().unwrap());
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} still running after {timeout:?}; killed\n--- stdout\n{}\n--- stderr\n{}",
                out.join().unwrap_or_default(),
                err.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// A long-running command (e.g. `kubectl get -w`) whose stdout lines arrive on a channel;
/// dropping it kills the process.
pub struct Streaming {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Option<thread::JoinHandle<String>>,
}

impl Streaming {
    pub fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn streaming command");
        let stdout = child.stdout.take().unwrap();
        let stderr = collect(child.stderr.take().unwrap());
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines: rx,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    /// Waits up to `timeout` for a stdout line matching `pred`, returning it; panics with
    /// everything printed so far otherwise.
    pub fn wait_for_line(
        &mut self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    let stderr = self
                        .stderr
                        .take()
                        .map(|h| h.join().unwrap_or_default())
                        .unwrap_or_default();
                    panic!(
                        "no line {what} within {timeout:?} ({e:?})\n--- stdout\n{}\n--- stderr\n{stderr}",
                        self.seen.join("\n")
                    );
                }
            }
        }
    }

    /// Kills the process and returns everything it printed on stdout that was read.
    pub fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes an executable file (used for `EDITOR` scripts).
pub fn write_script(path: &Path, body: &str) {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let mut f = File::create(path).unwrap();
    f.write_all(body.as_bytes()).unwrap();
    drop(f);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Spawns `cmd` (stdout piped, stderr appended to `log`), waits for its first stdout line
/// containing `ready at ` and returns the child with the first word after it (the URL).
/// Stdout keeps being drained afterwards so the process never blocks on a full pipe.
fn spawn_until_ready(mut cmd: Command, log: &Path, what: &str) -> (Child, String) {
    let log_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("ready at ").nth(1) {
                let url = rest.split_whitespace().next().unwrap_or_default();
                let _ = tx.send(url.to_string());
            }
        }
    });
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(url) = rx.recv_timeout(Duration::from_millis(100)) {
            return (child, url);
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{what} exited ({status}) before it was ready; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} printed no 'ready at' line within {READY_TIMEOUT:?}; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
    }
}

/// Starts `flotilla local-up --data-dir D --port 0` plus `extra_args` (`--members 0` unless
/// they say otherwise: the host with the aggregated API server behind it), waits for `Flotilla is ready at URL` and returns
/// it with the host's URL and admin kubeconfig. Logs go to `D.log` beside the data dir.
pub fn start_local_up(data_dir: &Path, extra_args: &[&str]) -> ApiserverProcess {
    std::fs::create_dir_all(data_dir).unwrap();
    let log = data_dir.with_extension("log");
    let mut cmd = Command::new(flotilla_bin());
    cmd.arg("local-up")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--port", "0"])
        .args(extra_args);
    if !extra_args.contains(&"--members") {
        cmd.args(["--members", "0"]);
    }
    let (child, url) = spawn_until_ready(cmd, &log, "flotilla local-up");
    let kubeconfig = data_dir.join("kubeconfig");
    assert!(
        kubeconfig.is_file(),
        "local-up wrote no {}",
        kubeconfig.display()
    );
    ApiserverProcess {
        child,
        url,
        kubeconfig,
        log,
    }
}

/// Starts `flotilla aggregated-apiserver` as its own process against the host whose data
/// directory is `host_data_dir` (its kubeconfig, client CA and front-proxy CA), with storage in
/// `data_dir`, and waits until it has registered its APIService and printed `ready at URL`.
/// The returned `kubeconfig` is the host's (the aggregated server writes none).
pub fn start_aggregated_apiserver(host_data_dir: &Path, data_dir: &Path) -> ApiserverProcess {
    std::fs::create_dir_all(data_dir).unwrap();
    let log = data_dir.join("aggregated.log");
    let kubeconfig = host_data_dir.join("kubeconfig");
    let pki = host_data_dir.join("pki");
    let mut cmd = Command::new(flotilla_bin());
    cmd.arg("aggregated-apiserver")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--secure-port", "0"])
        .arg("--client-ca-file")
        .arg(pki.join("ca.crt"))
        .arg("--requestheader-client-ca-file")
        .arg(pki.join("front-proxy-ca.crt"));
    let (child, url) = spawn_until_ready(cmd, &log, "flotilla aggregated-apiserver");
    ApiserverProcess {
        child,
        url,
        kubeconfig,
        log,
    }
}

/// A loopback port free when asked (the caller binds it soon after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Calls `check` every 200 ms until it returns `Ok`, panicking with its last error after
/// `timeout`.
pub fn eventually<T>(
    timeout: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(v) => return v,
            Err(e) if Instant::now() > deadline => {
                panic!("{what}: still failing after {timeout:?}: {e}")
            }
            Err(_) => thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// A kubeconfig at `path` for a bearer-token user of the server at `url` whose CA is the file
/// `ca_file`.
pub fn write_token_kubeconfig(path: &Path, url: &str, ca_file: &Path, token: &str) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
        ca_file.display()
    );
    std::fs::write(path, text).unwrap();
}

/// An HTTP answer from [`curl`]: status code and body.
pub struct HttpAnswer {
    pub code: u16,
    pub body: String,
}

/// One request with curl, the path sent exactly as given (`--path-as-is`, no dot-segment
/// removal), trusting `ca` and presenting the client certificate `cert`/`key`.
pub fn curl(
    method: &str,
    url: &str,
    ca: &Path,
    cert: &Path,
    key: &Path,
    body: Option<&str>,
) -> HttpAnswer {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--path-as-is", "-X", method, "-w", "\n%{http_code}"])
        .arg("--cacert")
        .arg(ca)
        .arg("--cert")
        .arg(cert)
        .arg("--key")
        .arg(key);
    if let Some(b) = body {
        cmd.args(["-H", "Content-Type: application/json", "--data-binary", b]);
    }
    cmd.arg(url).stdin(Stdio::null());
    let out = run_bounded(&mut cmd, COMMAND_TIMEOUT, &format!("curl {method} {url}"));
    assert!(
        out.status.success(),
        "curl {method} {url} failed: {}",
        out.stderr
    );
    let (body, code) = out.stdout.rsplit_once('\n').unwrap_or(("", &out.stdout));
    HttpAnswer {
        code: code
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("curl printed no status: {}", out.stdout)),
        body: body.to_string(),
    }
}

/// The `flotillactl` binary under test: `$FLOTILLACTL_BIN`, else
/// `<workspace>/target/debug/flotillactl`. Panics (never skips) when it is missing.
pub fn flotillactl_bin() -> PathBuf {
    workspace_bin("flotillactl", "FLOTILLACTL_BIN")
}

/// Starts `flotilla member-sim --name NAME --data-dir D --nodes N`, waits for its
/// `Flotilla member-sim NAME ready at URL` line and returns it; `kubeconfig` is `D/kubeconfig`
/// (context `NAME` with the admin client certificate, the current one, and `NAME-flotilla`
/// with the bearer token). Logs go to `D.log` beside the data dir.
pub fn start_member_sim(name: &str, data_dir: &Path, nodes: u32) -> ApiserverProcess {
    start_member_sim_with(name, data_dir, &["--nodes", &nodes.to_string()])
}

/// Like [`start_member_sim`] with any `flotilla member-sim` flags after `--name` and
/// `--data-dir` (capacities, `--secure-port` to restart on the same port, ...).
pub fn start_member_sim_with(name: &str, data_dir: &Path, args: &[&str]) -> ApiserverProcess {
    std::fs::create_dir_all(data_dir).unwrap();
    let log = data_dir.with_extension("log");
    let mut cmd = Command::new(flotilla_bin());
    cmd.arg("member-sim")
        .args(["--name", name])
        .arg("--data-dir")
        .arg(data_dir)
        .args(args);
    let (child, url) = spawn_until_ready(cmd, &log, &format!("flotilla member-sim {name}"));
    let kubeconfig = data_dir.join("kubeconfig");
    assert!(
        kubeconfig.is_file(),
        "member-sim wrote no {}",
        kubeconfig.display()
    );
    ApiserverProcess {
        child,
        url,
        kubeconfig,
        log,
    }
}

/// Rows of a kubectl table, cut at the header's column starts (cells may be empty).
pub fn table(text: &str) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no table in {text:?}"));
    let mut starts = Vec::new();
    let mut names = Vec::new();
    let mut prev_space = true;
    for (i, c) in header.char_indices() {
        if c != ' ' && prev_space {
            starts.push(i);
        }
        prev_space = c == ' ';
    }
    for (n, &s) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(header.len());
        names.push(header[s..end].trim().to_string());
    }
    let rows = lines
        .map(|line| {
            names
                .iter()
                .enumerate()
                .map(|(n, name)| {
                    let s = starts[n].min(line.len());
                    let e = if n + 1 < starts.len() {
                        starts[n + 1].min(line.len())
                    } else {
                        line.len()
                    };
                    (name.clone(), line[s..e].trim().to_string())
                })
                .collect()
        })
        .collect();
    (names, rows)
}

/// A Deployment manifest: `replicas` pods of `image`, each requesting `cpu`.
pub fn deployment_yaml(ns: &str, name: &str, replicas: i64, cpu: &str, image: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: {name}}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: {name}
        image: {image}
        resources:
          requests: {{cpu: "{cpu}"}}
"#
    )
}

/// A member's credentials on the host: `karmada-cluster/<name>` with `token` and the
/// `caBundle` from `ca_file`.
pub fn create_member_secret(k: &Kubectl, name: &str, token: &str, ca_file: &Path) {
    let _ = k.run(&["create", "namespace", "karmada-cluster"]);
    k.ok(&[
        "-n",
        "karmada-cluster",
        "create",
        "secret",
        "generic",
        name,
        &format!("--from-literal=token={token}"),
        &format!("--from-file=caBundle={}", ca_file.display()),
    ]);
}

/// A Push-mode Cluster `name` at `endpoint` with credentials in `karmada-cluster/<secret>`.
pub fn push_cluster_yaml(name: &str, endpoint: &str, secret: &str) -> String {
    format!(
        "apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: {name}
spec:
  syncMode: Push
  apiEndpoint: {endpoint}
  secretRef:
    namespace: karmada-cluster
    name: {secret}
"
    )
}

/// A PropagationPolicy dividing Deployment `name` over member1..3 by free capacity
/// (`dynamicWeight: AvailableReplicas`).
pub fn dynamic_policy_yaml(ns: &str, name: &str) -> String {
    format!(
        r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: {name}
  namespace: {ns}
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: {name}
  placement:
    clusterAffinity:
      clusterNames: [member1, member2, member3]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        dynamicWeight: AvailableReplicas
"#
    )
}

/// local-up / controller-manager flags that make a failed member count as failed within
/// seconds instead of the defaults (30 s), so a failover fits in a test.
pub const FAST_FAILURE: &[&str] = &[
    "--cluster-status-update-frequency",
    "500ms",
    "--cluster-failure-threshold",
    "2s",
    "--cluster-success-threshold",
    "2s",
    "--cluster-probe-timeout",
    "1s",
];

/// `spec.clusters` of a ResourceBinding as (name, replicas).
pub fn binding_targets(rb: &serde_json::Value) -> Vec<(String, i64)> {
    rb["spec"]["clusters"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        c["replicas"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A child process that is killed (and reaped) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `flotilla` binary the benches run: `$FLOTILLA_BIN`, else the release build under
/// `$CARGO_TARGET_DIR` (or `<workspace>/target`). Panics when it is missing.
pub fn release_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("FLOTILLA_BIN") {
        return PathBuf::from(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let release = target.join("release/flotilla");
    assert!(
        release.is_file(),
        "build the release binary first: cargo build --release --bin flotilla (looked for {})",
        release.display()
    );
    release
}

/// Spawns `bin args` (stderr to `log`) and returns it with the first `lines` stdout lines
/// that contain ` ready at ` (whole lines; see [`ready_name_url`]). Stdout keeps being drained
/// afterwards. Panics if the process exits first or `timeout` passes.
pub fn spawn_ready_lines(
    bin: &Path,
    args: &[&str],
    log: &Path,
    lines: usize,
    timeout: Duration,
) -> (Proc, Vec<String>) {
    let log_file = File::create(log).unwrap();
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains(" ready at ") {
                let _ = tx.send(line);
            }
        }
    });
    let mut ready = Vec::new();
    let deadline = Instant::now() + timeout;
    while ready.len() < lines {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(r) => ready.push(r),
            Err(_) if Instant::now() > deadline => panic!(
                "{args:?} not ready; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            ),
            Err(_) => {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "{args:?} exited {status}; log:\n{}",
                        std::fs::read_to_string(log).unwrap_or_default()
                    );
                }
            }
        }
    }
    (Proc(child), ready)
}

/// `(NAME, URL)` of a `... NAME ready at URL ...` line.
pub fn ready_name_url(line: &str) -> (String, String) {
    let (before, after) = line.split_once(" ready at ").unwrap_or_default();
    let name = before.split_whitespace().last().unwrap_or_default();
    let url = after.split_whitespace().next().unwrap_or_default();
    (name.to_string(), url.to_string())
}

/// A kube client from `kubeconfig` (its `context`, else the current one).
pub async fn kube_client(kubeconfig: &Path, context: Option<&str>) -> kube::Client {
    kube::Client::try_from(kube_config(kubeconfig, context).await).unwrap()
}

/// The kube client configuration of `kubeconfig` (its `context`, else the current one).
pub async fn kube_config(kubeconfig: &Path, context: Option<&str>) -> kube::Config {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let opts = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .unwrap()
}

/// The `p` quantile (0..=1) of `sorted` (nearest rank); NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// The arguments of `flotilla member-sim --clusters count` (`m1`..`m<count>`, `nodes` nodes
/// each, in memory, files under `data_dir`) as scale benches run it.
pub fn member_sims_args(count: u32, nodes: u32, data_dir: &Path) -> Vec<String> {
    vec![
        "member-sim".into(),
        "--clusters".into(),
        count.to_string(),
        "--name".into(),
        "m".into(),
        "--nodes".into(),
        nodes.to_string(),
        "--in-memory".into(),
        "--data-dir".into(),
        data_dir.display().to_string(),
    ]
}

/// Joins the member-sims of one `flotilla member-sim --clusters K --data-dir members_dir`
/// process (`(name, url)` each) to `host`, `concurrency` at a time, with their bearer-token
/// contexts (`NAME-flotilla`).
pub async fn join_member_sims(
    host: &kube::Client,
    members_dir: &Path,
    urls: &[(String, String)],
    concurrency: usize,
) {
    use futures::StreamExt;
    futures::stream::iter(urls.iter().cloned())
        .map(|(name, url)| {
            let member_kc = members_dir.join(&name).join("kubeconfig");
            async move {
                let kc = flotilla_pki::Kubeconfig::load(&member_kc).unwrap();
                let ctx = kc.context(Some(&format!("{name}-flotilla"))).unwrap();
                let member = flotilla_membership::Member {
                    name: name.clone(),
                    api_endpoint: url,
                    credentials: flotilla_membership::MemberCredentials::from_context(&ctx),
                    labels: Default::default(),
                    region: None,
                    zone: None,
                    provider: None,
                };
                flotilla_membership::join(host, &member).await.unwrap();
            }
        })
        .buffer_unordered(concurrency)
        .collect::<Vec<_>>()
        .await;
}

/// Prints a row of the fault table (`e2e/faults.sh`) and appends it to `$FAULTS_TABLE` when
/// set.
pub fn fault_row(row: &str) {
    println!("FAULT-ROW {row}");
    if let Some(path) = std::env::var_os("FAULTS_TABLE") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{row}");
        }
    }
}
