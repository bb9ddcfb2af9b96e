//! Name and key rules the kinds apply. The DNS-1123 and label rules are the shared ones in
//! `flotilla_apimachinery::names`, reached through small wrappers here; the rules only some
//! built-in kinds use (DNS-1035 labels for services, path-segment names for RBAC, config keys
//! for ConfigMaps and Secrets) live here.

use serde_json::{Map, Value};

/// A lowercase RFC 1123 subdomain (most object names).
pub(crate) fn dns1123_subdomain(name: &str) -> Result<(), String> {
    flotilla_apimachinery::names::is_dns1123_subdomain(name)
}

/// A lowercase RFC 1123 label (namespace and container names).
pub(crate) fn dns1123_label(name: &str) -> Result<(), String> {
    flotilla_apimachinery::names::is_dns1123_label(name)
}

/// Label keys and values that break the rules, as `(offending key or value, message)`.
pub(crate) fn labels(labels: &Map<String, Value>) -> Vec<(String, String)> {
    flotilla_apimachinery::names::validate_labels(labels)
}

/// An RFC 1035 label: like an RFC 1123 label but starting with a letter (service names).
pub(crate) fn dns1035_label(name: &str) -> Result<(), String> {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if name.len() > 63 {
        Err("must be no more than 63 characters".into())
    } else if !ok {
        Err("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an \
             alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', \
             regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            .into())
    } else {
        Ok(())
    }
}

/// A name usable as one URL path segment (RBAC objects, which allow `system:...`).
pub(crate) fn path_segment(name: &str) -> Result<(), String> {
    match name {
        "." => Err("may not be '.'".into()),
        ".." => Err("may not be '..'".into()),
        _ if name.contains('/') => Err("may not contain '/'".into()),
        _ if name.contains('%') => Err("may not contain '%'".into()),
        _ => Ok(()),
    }
}

/// A ConfigMap or Secret data key.
pub(crate) fn config_key(key: &str) -> Result<(), String> {
    if key.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        return Err("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. \
                    'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            .into());
    }
    match key {
        "." => Err("must not be '.'".into()),
        ".." => Err("must not be '..'".into()),
        _ if key.starts_with("..") => Err("must not start with '..'".into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dns_rules() {
        assert!(dns1123_subdomain("web.example-1").is_ok());
        assert!(dns1123_subdomain("Bad_Name").is_err());
        assert!(dns1123_subdomain("a..b").is_err());
        assert!(dns1123_label("web").is_ok());
        assert!(dns1123_label("web.x").is_err());
        assert!(dns1035_label("web-1").is_ok());
        assert!(dns1035_label("1web").is_err());
        assert!(path_segment("system:controller:x").is_ok());
        assert!(path_segment("a/b").is_err());
    }

    #[test]
    fn config_keys() {
        assert!(config_key("app.properties").is_ok());
        assert!(config_key("KEY_NAME-1").is_ok());
        assert!(config_key("a b").is_err());
        assert!(config_key("..x").is_err());
        assert!(config_key("").is_err());
    }

    #[test]
    fn label_rules() {
        let m =
            json!({"app": "web", "example.com/tier": "front", "bad key": "x", "ok": "bad value!"});
        let bad = labels(m.as_object().unwrap());
        let offenders: Vec<&str> = bad.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(offenders, vec!["bad key", "bad value!"]);
    }
}
