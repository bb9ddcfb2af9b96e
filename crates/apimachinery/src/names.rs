//! Name rules of the Kubernetes API: DNS-1123 subdomains and labels (object names), qualified
//! names (label and annotation keys) and label values. Each check returns the message
//! kube-apiserver users expect to read after `Invalid value: "...": `.

use serde_json::{Map, Value};

/// Longest DNS-1123 subdomain (most object names).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest DNS-1123 label (namespaces, services).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest name part of a qualified name and longest label value.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
     and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
     regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
     and must start and end with an alphanumeric character (e.g. 'example.com', \
     regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const QUALIFIED_NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', \
     regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

const QUALIFIED_NAME_MSG: &str = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' \
     (e.g. 'example.com/MyName')";

const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
     regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn max_length_msg(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first)
                && is_lower_alnum(last)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Dot-separated DNS-1123 labels.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn join(errors: Vec<String>) -> Result<(), String> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Every problem with `s` as a DNS-1123 subdomain.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errors.push(max_length_msg(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(s) {
        errors.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errors
}

/// Every problem with `s` as a DNS-1123 label.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > DNS1123_LABEL_MAX_LENGTH {
        errors.push(max_length_msg(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(s) {
        errors.push(DNS1123_LABEL_MSG.to_string());
    }
    errors
}

/// Every problem with `s` as a qualified name (`[prefix/]name`, the form of label keys).
pub fn qualified_name_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            errors.push(QUALIFIED_NAME_MSG.to_string());
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errors.push(format!(
            "name part {}",
            max_length_msg(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name_part(name) {
        errors.push(QUALIFIED_NAME_PART_MSG.to_string());
    }
    errors
}

/// Every problem with `s` as a label value (empty is allowed).
pub fn label_value_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > LABEL_VALUE_MAX_LENGTH {
        errors.push(max_length_msg(LABEL_VALUE_MAX_LENGTH));
    }
    if !s.is_empty() && !matches_qualified_name_part(s) {
        errors.push(LABEL_VALUE_MSG.to_string());
    }
    errors
}

/// Checks a DNS-1123 subdomain (at most 253 characters; lowercase alphanumerics, `-` and `.`,
/// starting and ending with an alphanumeric): the rule for most object names.
pub fn is_dns1123_subdomain(s: &str) -> Result<(), String> {
    join(dns1123_subdomain_errors(s))
}

/// Checks a DNS-1123 label (at most 63 characters; lowercase alphanumerics and `-`, starting
/// and ending with an alphanumeric): the rule for namespace and service names.
pub fn is_dns1123_label(s: &str) -> Result<(), String> {
    join(dns1123_label_errors(s))
}

/// Checks a qualified name: an optional DNS-1123 subdomain prefix and `/`, then a name of at
/// most 63 characters from `[-A-Za-z0-9_.]` starting and ending with an alphanumeric.
pub fn is_qualified_name(s: &str) -> Result<(), String> {
    join(qualified_name_errors(s))
}

/// Checks a label value: empty, or at most 63 characters like a qualified name's name part.
pub fn is_label_value(s: &str) -> Result<(), String> {
    join(label_value_errors(s))
}

/// Validates `metadata.labels`. Each problem is `(invalid value, message)` where the invalid
/// value is the offending key (bad key) or the offending label value (bad value), which is
/// what kube-apiserver puts after `metadata.labels: Invalid value:`.
pub fn validate_labels(labels: &Map<String, Value>) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    for (key, value) in labels {
        for e in qualified_name_errors(key) {
            problems.push((key.clone(), e));
        }
        match value {
            Value::String(v) => {
                for e in label_value_errors(v) {
                    problems.push((v.clone(), e));
                }
            }
            other => problems.push((
                other.to_string(),
                format!("label {key:?} must have a string value"),
            )),
        }
    }
    problems
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subdomains() {
        for ok in [
            "a",
            "web",
            "example.com",
            "a-b.c-d",
            "0",
            "123-abc",
            "a.b.c.d",
        ] {
            assert_eq!(is_dns1123_subdomain(ok), Ok(()), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a..b", ".a", "a.", "a_b", "a b", "ü"] {
            let err = is_dns1123_subdomain(bad).unwrap_err();
            assert!(
                err.starts_with("a lowercase RFC 1123 subdomain must consist of"),
                "{bad}: {err}"
            );
        }
        let long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&long),
            Err("must be no more than 253 characters".to_string())
        );
        let long_ok = format!(
            "{}.{}.{}.{}",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        assert_eq!(long_ok.len(), 253);
        assert_eq!(is_dns1123_subdomain(&long_ok), Ok(()));
    }

    #[test]
    fn subdomain_message_names_the_regex() {
        let err = is_dns1123_subdomain("Web").unwrap_err();
        assert!(err.ends_with(
            "(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ));
    }

    #[test]
    fn labels_dns() {
        assert_eq!(is_dns1123_label("kube-system"), Ok(()));
        assert_eq!(is_dns1123_label(&"a".repeat(63)), Ok(()));
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            Err("must be no more than 63 characters".to_string())
        );
        assert!(
            is_dns1123_label("a.b")
                .unwrap_err()
                .starts_with("a lowercase RFC 1123 label")
        );
        assert!(is_dns1123_label("").is_err());
        // Too long and wrong characters: both problems reported.
        let both = is_dns1123_label(&format!("{}_", "a".repeat(64))).unwrap_err();
        assert!(
            both.contains("no more than 63") && both.contains("RFC 1123 label"),
            "{both}"
        );
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "app",
            "App.Name_1",
            "app.kubernetes.io/name",
            "example.com/MyName",
            "a/b",
            "1",
        ] {
            assert_eq!(is_qualified_name(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            is_qualified_name(""),
            Err(format!(
                "name part must be non-empty; {QUALIFIED_NAME_PART_MSG}"
            ))
        );
        assert_eq!(
            is_qualified_name("/a"),
            Err("prefix part must be non-empty".to_string())
        );
        assert!(
            is_qualified_name("Example.com/a")
                .unwrap_err()
                .starts_with("prefix part a lowercase RFC 1123 subdomain")
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            Err(QUALIFIED_NAME_MSG.to_string())
        );
        assert_eq!(
            is_qualified_name("-a"),
            Err(QUALIFIED_NAME_PART_MSG.to_string())
        );
        assert_eq!(
            is_qualified_name("a b"),
            Err(QUALIFIED_NAME_PART_MSG.to_string())
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            Err("name part must be no more than 63 characters".to_string())
        );
        assert_eq!(
            is_qualified_name(&format!("example.com/{}", "a".repeat(63))),
            Ok(())
        );
    }

    #[test]
    fn label_values() {
        for ok in ["", "v1", "my_value", "1.2.3", "A-b"] {
            assert_eq!(is_label_value(ok), Ok(()), "{ok}");
        }
        assert_eq!(is_label_value("a b"), Err(LABEL_VALUE_MSG.to_string()));
        assert_eq!(is_label_value("_a"), Err(LABEL_VALUE_MSG.to_string()));
        assert_eq!(is_label_value("a/b"), Err(LABEL_VALUE_MSG.to_string()));
        assert_eq!(
            is_label_value(&"a".repeat(64)),
            Err("must be no more than 63 characters".to_string())
        );
    }

    #[test]
    fn validate_label_maps() {
        let labels = json!({"app": "web", "Bad Key": "x", "tier": "front end", "n": 3});
        let problems = validate_labels(labels.as_object().unwrap());
        assert_eq!(
            problems,
            vec![
                ("Bad Key".to_string(), QUALIFIED_NAME_PART_MSG.to_string()),
                ("front end".to_string(), LABEL_VALUE_MSG.to_string()),
                (
                    "3".to_string(),
                    "label \"n\" must have a string value".to_string()
                ),
            ]
        );
        assert!(validate_labels(json!({"a": "", "b.io/c": "d"}).as_object().unwrap()).is_empty());
    }
}
