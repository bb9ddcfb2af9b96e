//! The audit log: one JSON line per request (time, user, groups, impersonated user, verb,
//! resource, namespace, name, URI, response code, latency), appended to a file.

use std::io::Write;
use std::path::Path;

use parking_lot::Mutex;
use serde_json::Value;

pub struct AuditLog {
    file: Mutex<std::fs::File>,
}

impl AuditLog {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    pub fn record(&self, entry: &Value) {
        let mut line = entry.to_string();
        line.push('\n');
        if let Err(e) = self.file.lock().write_all(line.as_bytes()) {
            tracing::warn!(error = %e, "writing the audit log");
        }
    }
}
