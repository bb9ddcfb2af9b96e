//! A headless Chromium driven through chromedriver's WebDriver protocol, for the UI tests:
//! a minimal blocking client (HTTP/1.1 over loopback, one request per connection, JSON
//! bodies) covering what the tests use: open a page, run a script, find an element, type,
//! click, take a screenshot. Chromium and chromedriver are Debian's packages
//! (`e2e/test-all.sh` installs them when missing).
//!
//! Included with `#[path = "support/browser.rs"] mod browser;` next to `mod support;`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::support::{Kubectl, free_port};

/// How long a page may take to reach what a test waits for.
pub const UI_WAIT: Duration = Duration::from_secs(90);

/// The W3C WebDriver key of an element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process with one browser session; dropping it ends both.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    /// Where [`Browser::screenshot`] writes.
    pub screenshots: PathBuf,
}

/// `$CARGO_TARGET_DIR/ui-screenshots/<test>` (or `<workspace>/target/...`).
pub fn screenshot_dir(test: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("ui-screenshots").join(test);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a headless Chromium session that
    /// accepts the host's self-issued serving certificate.
    pub fn start(test: &str) -> Self {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver is not installed: apt-get install chromium chromium-driver (e2e/test-all.sh does)");
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
            screenshots: screenshot_dir(test),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while b.request("GET", "/status", None).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not answer");
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "acceptInsecureCerts": true,
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1400,1000", "--no-first-run", "--disable-extensions",
                         "--enable-precise-memory-info"],
            },
        }}});
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"].as_str().unwrap().to_string();
        b
    }

    /// One WebDriver request; the answer's JSON, or why there is none.
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        );
        stream
            .write_all(req.as_bytes())
            .map_err(|e| e.to_string())?;
        // Read the header, then exactly the body it announces (chromedriver may keep the
        // connection open whatever the request asked).
        let mut raw = Vec::new();
        let mut chunk = [0u8; 64 * 1024];
        let end = loop {
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            let n = stream.read(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("connection closed before the header ended".into());
            }
            raw.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let mut rest = raw[end + 4..].to_vec();
        let length = head.lines().find_map(|l| {
            l.strip_prefix("content-length:")
                .and_then(|v| v.trim().parse::<usize>().ok())
        });
        let chunked = head.contains("transfer-encoding: chunked");
        loop {
            let complete = match length {
                Some(len) => rest.len() >= len,
                None if chunked => rest.windows(5).any(|w| w == b"0\r\n\r\n"),
                None => false,
            };
            if complete {
                break;
            }
            let n = stream.read(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        let body = if chunked { dechunk(&rest) } else { rest };
        let body = String::from_utf8_lossy(&body);
        serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))
    }

    /// A WebDriver command; panics on a WebDriver error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = self
            .request(method, path, body)
            .unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}"));
        if let Some(err) = v["value"]["error"].as_str() {
            panic!(
                "webdriver {method} {path}: {err}: {}",
                v["value"]["message"]
            );
        }
        v["value"].clone()
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Navigates to `url` (a full load).
    pub fn goto(&self, url: &str) {
        self.call(
            "POST",
            &self.session_path("/url"),
            Some(json!({"url": url})),
        );
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns what it returns.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            &self.session_path("/execute/sync"),
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Runs `script` asynchronously: it gets `arguments` = `args` plus a callback last, and
    /// its answer is what it passes the callback (WebDriver's script timeout: [`UI_WAIT`]).
    pub fn js_async(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            &self.session_path("/timeouts"),
            Some(json!({"script": UI_WAIT.as_millis() as u64})),
        );
        self.call(
            "POST",
            &self.session_path("/execute/async"),
            Some(json!({"script": script, "args": args})),
        )
    }

    /// The chromedriver process (the browser's processes are its descendants).
    pub fn driver_pid(&self) -> u32 {
        self.driver.id()
    }

    /// Polls `script` until it returns something other than null/false/"" and returns it;
    /// panics with the page's text and a screenshot after [`UI_WAIT`].
    pub fn wait_for(&self, what: &str, script: &str, args: Value) -> Value {
        let deadline = Instant::now() + UI_WAIT;
        loop {
            let v = self.js(script, args.clone());
            let done = !(v.is_null() || v == json!(false) || v == json!(""));
            if done {
                return v;
            }
            if Instant::now() > deadline {
                let shot = self.screenshot(&format!("timeout-{}", what.replace([' ', '/'], "-")));
                let page = self.js("return document.body.innerText", json!([]));
                panic!(
                    "{what}: not true after {UI_WAIT:?} (last {v}); screenshot {}; page:\n{}",
                    shot.display(),
                    page.as_str().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until the page's visible text contains `text`.
    pub fn wait_text(&self, text: &str) {
        self.wait_for(
            &format!("page shows {text:?}"),
            "return document.body.innerText.includes(arguments[0])",
            json!([text]),
        );
    }

    /// The element reference of the first match of `css`.
    pub fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            &self.session_path("/element"),
            Some(json!({"using": "css selector", "value": css})),
        );
        v[ELEMENT_KEY]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// Types `text` into the element matching `css` (real key events).
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call(
            "POST",
            &self.session_path(&format!("/element/{id}/value")),
            Some(json!({"text": text})),
        );
    }

    /// Presses and releases `key` (a WebDriver key: `"\u{E004}"` is Tab, `"\u{E007}"` Enter) in
    /// the focused element, as a keyboard would.
    pub fn press(&self, key: &str) {
        self.call(
            "POST",
            &self.session_path("/actions"),
            Some(
                json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
                {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]}),
            ),
        );
    }

    /// Clicks the element matching `css`. A live page may redraw it between finding and
    /// clicking (a watch event): then it is found again.
    pub fn click(&self, css: &str) {
        for _ in 0..5 {
            let id = self.find(css);
            let path = self.session_path(&format!("/element/{id}/click"));
            let v = self
                .request("POST", &path, Some(json!({})))
                .unwrap_or_else(|e| panic!("webdriver click {css}: {e}"));
            match v["value"]["error"].as_str() {
                None => return,
                Some("stale element reference") => continue,
                Some(err) => panic!("webdriver click {css}: {err}: {}", v["value"]["message"]),
            }
        }
        panic!("{css} kept being redrawn while clicked");
    }

    /// Signs in on the login page with `token` and waits for the signed-in header.
    pub fn sign_in(&self, base: &str, token: &str, user: &str) {
        self.goto(&format!("{base}/ui/login"));
        self.wait_for(
            "the token field",
            "return !!document.getElementById('token')",
            json!([]),
        );
        self.type_into("#token", token);
        self.click("#sign-in");
        self.wait_for(
            "signed in",
            "const w = document.getElementById('who-name'); return w && w.textContent",
            json!([]),
        );
        let who = self.js(
            "return document.getElementById('who-name').textContent",
            json!([]),
        );
        assert_eq!(who, json!(user));
    }

    /// Writes a PNG of the viewport to `<screenshots>/<name>.png` and returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let v = self.call("GET", &self.session_path("/screenshot"), None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        let path = self.screenshots.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}

/// A service account `name` in `ns` bound to `clusterrole` (cluster-wide when `ns_only` is
/// false, else only in `ns`), and a token for it.
pub fn service_account_token(
    k: &Kubectl,
    ns: &str,
    name: &str,
    clusterrole: &str,
    ns_only: bool,
) -> String {
    k.ok(&["create", "serviceaccount", name, "-n", ns]);
    let sa = format!("{ns}:{name}");
    if ns_only {
        k.ok(&[
            "create",
            "rolebinding",
            name,
            "-n",
            ns,
            "--clusterrole",
            clusterrole,
            "--serviceaccount",
            &sa,
        ]);
    } else {
        k.ok(&[
            "create",
            "clusterrolebinding",
            name,
            "--clusterrole",
            clusterrole,
            "--serviceaccount",
            &sa,
        ]);
    }
    k.ok(&["create", "token", name, "-n", ns])
        .trim()
        .to_string()
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&rest[..eol]);
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        let tail = &rest[eol + 2..];
        if n == 0 || tail.len() < n {
            break;
        }
        out.extend_from_slice(&tail[..n]);
        rest = tail[n..].strip_prefix(b"\r\n").unwrap_or(&tail[n..]);
    }
    out
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.request("DELETE", &self.session_path(""), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
