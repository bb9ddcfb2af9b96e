//! Checks on what a join would write, made before anything is written: the cluster name (it
//! names the Cluster, its Secret and its `karmada-es-<name>` execution namespace), label keys
//! and values, and the member's API endpoint.

use crate::MembershipError;

/// The longest cluster name accepted. Karmada caps it at 48 so that `karmada-es-<name>` and
/// names derived from it stay within Kubernetes' 63-character label limit.
pub const MAX_CLUSTER_NAME_LEN: usize = 48;

fn invalid_name(name: &str, reason: impl Into<String>) -> MembershipError {
    MembershipError::InvalidName {
        name: name.to_string(),
        reason: reason.into(),
    }
}

/// A cluster name is a DNS-1123 label of at most [`MAX_CLUSTER_NAME_LEN`] characters:
/// lowercase letters, digits and '-', starting and ending with a letter or digit.
pub fn validate_cluster_name(name: &str) -> Result<(), MembershipError> {
    if name.is_empty() {
        return Err(invalid_name(name, "it is empty"));
    }
    if name.len() > MAX_CLUSTER_NAME_LEN {
        return Err(invalid_name(
            name,
            format!(
                "it is {} characters long (at most {MAX_CLUSTER_NAME_LEN})",
                name.len()
            ),
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(invalid_name(
            name,
            format!("{bad:?} is not allowed (only lowercase letters, digits and '-')"),
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(invalid_name(
            name,
            "it must start and end with a letter or digit",
        ));
    }
    Ok(())
}

/// A label name part or value: alphanumerics with '-', '_' or '.' inside, at most 63.
fn label_word(s: &str) -> Result<(), String> {
    if s.len() > 63 {
        return Err(format!("{s:?} is longer than 63 characters"));
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "{s:?} may only hold letters, digits, '-', '_' and '.'"
        ));
    }
    let edge_ok = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    if !edge_ok(s.chars().next()) || !edge_ok(s.chars().last()) {
        return Err(format!("{s:?} must start and end with a letter or digit"));
    }
    Ok(())
}

/// A label `key=value` as the API server would accept it: key `[prefix/]name` with a DNS
/// subdomain prefix, a non-empty name, and a possibly empty value.
pub fn validate_label(key: &str, value: &str) -> Result<(), MembershipError> {
    let invalid = |reason: String| MembershipError::InvalidLabel {
        key: key.to_string(),
        reason,
    };
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let subdomain_ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !subdomain_ok {
            return Err(invalid(format!(
                "the prefix {prefix:?} is not a DNS subdomain"
            )));
        }
    }
    if name.is_empty() {
        return Err(invalid("the name part is empty".into()));
    }
    label_word(name).map_err(&invalid)?;
    label_word(value).map_err(|r| invalid(format!("value {r}")))
}

/// Whether `endpoint` is a plain `http://` URL, over which credentials would travel in
/// clear. Nothing in Flotilla sends a member's credentials there: joining refuses it,
/// the aggregated server's validation refuses a Cluster naming credentials with it, and
/// every member client refuses to read credentials for it ([`MemberTarget::credentials`]).
pub fn is_plain_http(endpoint: &str) -> bool {
    endpoint
        .get(.."http://".len())
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// The member's API endpoint must be an absolute `https://` URL with a host part: joining
/// stores credentials, and credentials are sent only over TLS ([`is_plain_http`]).
pub fn validate_endpoint(cluster: &str, endpoint: &str) -> Result<(), MembershipError> {
    let invalid = |reason: &str| MembershipError::InvalidEndpoint {
        cluster: cluster.to_string(),
        endpoint: endpoint.to_string(),
        reason: reason.to_string(),
    };
    if is_plain_http(endpoint) {
        return Err(invalid(
            "it is plain HTTP, and a member's credentials are sent only over TLS: use https://",
        ));
    }
    let Some(rest) = endpoint.strip_prefix("https://") else {
        return Err(invalid("it must start with https://"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.starts_with(':') {
        return Err(invalid("it has no host"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_short_dns_labels() {
        for good in ["member1", "a", "eu-west-1", &"x".repeat(48)] {
            assert!(validate_cluster_name(good).is_ok(), "{good} rejected");
        }
        for bad in [
            "",
            "Member1",
            "my_cluster",
            "-a",
            "a-",
            "a.b",
            "a b",
            &"x".repeat(49),
        ] {
            let err = validate_cluster_name(bad).unwrap_err();
            assert!(
                err.to_string().contains("invalid cluster name"),
                "{bad}: {err}"
            );
        }
        let err = validate_cluster_name("My_Cluster").unwrap_err().to_string();
        assert!(err.contains("'M'"), "{err}");
    }

    #[test]
    fn labels_follow_the_api_rules() {
        for (k, v) in [
            ("env", "prod"),
            ("example.com/tier", "a.b-c_d"),
            ("empty", ""),
            ("cluster.example.io/name", "m1"),
        ] {
            assert!(validate_label(k, v).is_ok(), "{k}={v} rejected");
        }
        for (k, v) in [
            ("", "x"),
            ("a/", "x"),
            ("/a", "x"),
            ("Bad_Prefix/a", "x"),
            ("a b", "x"),
            ("env", "-x"),
            ("env", "has space"),
            (&"k".repeat(64), "x"),
        ] {
            assert!(validate_label(k, v).is_err(), "{k}={v} accepted");
        }
    }

    #[test]
    fn endpoints_must_be_https_with_a_host() {
        assert!(validate_endpoint("m", "https://127.0.0.1:6443").is_ok());
        assert!(validate_endpoint("m", "https://api.example.com/prefix").is_ok());
        let err = validate_endpoint("m", "http://127.0.0.1:8001")
            .unwrap_err()
            .to_string();
        assert!(err.contains("only over TLS"), "{err}");
        for bad in ["ftp://1.2.3.4", "https://", "https://:443", "1.2.3.4:443"] {
            let err = validate_endpoint("m", bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }
}
