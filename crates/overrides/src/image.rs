//! The imageOverrider's change of one image: reading the reference, changing a component,
//! writing it back. Which images are changed is decided in `workload` and `lib`.
//!
//! An image is read as `[registry/]repository[:tag][@digest]` with the grammar of the
//! distribution reference library (lowercase path components, tags of at most 128 word
//! characters, `.`, `-`; sha256/sha384/sha512 digests), without normalisation: `nginx` stays
//! `nginx`, nothing adds `docker.io/library/`. The registry is the first `/`-separated
//! component when it contains `.` or `:` or is `localhost`; otherwise there is none. A
//! reference with both a tag and a digest is read as its tag alone, so any change drops the
//! digest (Karmada does the same; a digest would otherwise pin the image the tag names).
//!
//! * Registry: `add` appends `value` to the registry (`reg.io` + `.cn`, or a registry for an
//!   image without one), `replace` sets it, `remove` drops it.
//! * Repository: `add` appends `value`, `replace` sets it, `remove` clears it (which leaves an
//!   unusable reference, as in Karmada).
//! * Tag: `add` appends `value` to the tag (or digest), `replace` sets the tag, or the digest
//!   when `value` is one, `remove` drops the tag, else the digest.
//!
//! A Tag result that is neither a tag nor a digest leaves the image unchanged (Karmada's
//! `SetTagOrDigest`). A missing `value` is the empty string.

use std::fmt;

use flotilla_karmada_api::overrides::{ImageComponent, ImageOverrider, OverriderOperator};

use crate::error::OverrideFailure;

/// Longest repository name (registry included) the reference grammar allows.
const NAME_MAX_LEN: usize = 255;
/// Longest tag.
const TAG_MAX_LEN: usize = 128;

/// An image reference split into the parts an imageOverrider changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ImageRef {
    registry: String,
    repository: String,
    tag: String,
    digest: String,
}

impl ImageRef {
    /// Parses `image`, or says why it is not a reference.
    pub(crate) fn parse(image: &str) -> Result<ImageRef, &'static str> {
        if image.is_empty() {
            return Err("repository name must have at least one component");
        }
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (image, None),
        };
        if let Some(digest) = digest {
            check_digest(digest)?;
        }
        // A `:` after the last `/` starts the tag; one before it belongs to a registry port.
        let (name, tag) = match rest.rfind(':') {
            Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(&rest[i + 1..])),
            _ => (rest, None),
        };
        if let Some(tag) = tag {
            if !is_tag(tag) {
                return Err("invalid reference format");
            }
        }
        check_name(name)?;
        let (registry, repository) = split_registry(name);
        Ok(ImageRef {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag: tag.unwrap_or_default().to_string(),
            digest: match tag {
                Some(_) => String::new(),
                None => digest.unwrap_or_default().to_string(),
            },
        })
    }

    fn tag_or_digest(&self) -> &str {
        if self.tag.is_empty() {
            &self.digest
        } else {
            &self.tag
        }
    }

    fn set_tag_or_digest(&mut self, value: &str) {
        if is_tag(value) {
            self.tag = value.to_string();
            self.digest.clear();
        } else if looks_like_digest(value) {
            self.digest = value.to_string();
            self.tag.clear();
        }
    }

    fn remove_tag_or_digest(&mut self) {
        if self.tag.is_empty() {
            self.digest.clear();
        } else {
            self.tag.clear();
        }
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.registry.is_empty() {
            write!(f, "{}/", self.registry)?;
        }
        f.write_str(&self.repository)?;
        if !self.tag.is_empty() {
            write!(f, ":{}", self.tag)
        } else if !self.digest.is_empty() {
            write!(f, "@{}", self.digest)
        } else {
            Ok(())
        }
    }
}

/// The image `overrider` makes of `image`.
pub(crate) fn override_image(
    image: &str,
    overrider: &ImageOverrider,
) -> Result<String, OverrideFailure> {
    let mut r = ImageRef::parse(image).map_err(|reason| OverrideFailure::InvalidImage {
        image: image.to_string(),
        reason,
    })?;
    let value = overrider.value.as_deref().unwrap_or_default();
    match (overrider.component, overrider.operator) {
        (ImageComponent::Registry, OverriderOperator::Add) => r.registry.push_str(value),
        (ImageComponent::Registry, OverriderOperator::Replace) => r.registry = value.to_string(),
        (ImageComponent::Registry, OverriderOperator::Remove) => r.registry.clear(),
        (ImageComponent::Repository, OverriderOperator::Add) => r.repository.push_str(value),
        (ImageComponent::Repository, OverriderOperator::Replace) => {
            r.repository = value.to_string()
        }
        (ImageComponent::Repository, OverriderOperator::Remove) => r.repository.clear(),
        (ImageComponent::Tag, OverriderOperator::Add) => {
            let appended = format!("{}{value}", r.tag_or_digest());
            r.set_tag_or_digest(&appended);
        }
        (ImageComponent::Tag, OverriderOperator::Replace) => r.set_tag_or_digest(value),
        (ImageComponent::Tag, OverriderOperator::Remove) => r.remove_tag_or_digest(),
    }
    Ok(r.to_string())
}

/// The API name of a component.
pub(crate) fn component_name(component: ImageComponent) -> &'static str {
    match component {
        ImageComponent::Registry => "Registry",
        ImageComponent::Repository => "Repository",
        ImageComponent::Tag => "Tag",
    }
}

/// Karmada's registry split: the first component is a registry when it looks like a host.
fn split_registry(name: &str) -> (&str, &str) {
    match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => ("", name),
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.len() > NAME_MAX_LEN {
        return Err("repository name must not be more than 255 characters");
    }
    if is_name(name) {
        Ok(())
    } else if is_name(&name.to_ascii_lowercase()) {
        Err("repository name must be lowercase")
    } else {
        Err("invalid reference format")
    }
}

/// `[domain/]path-component(/path-component)*`.
fn is_name(name: &str) -> bool {
    let components: Vec<&str> = name.split('/').collect();
    let all_paths = |cs: &[&str]| !cs.is_empty() && cs.iter().all(|c| is_path_component(c));
    all_paths(&components)
        || (components.len() > 1 && is_domain(components[0]) && all_paths(&components[1..]))
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(c: &str) -> bool {
    let bytes = c.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let mut i = 0;
    loop {
        let start = i;
        while i < bytes.len() && alnum(bytes[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == bytes.len() {
            return true;
        }
        let sep_start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &c[sep_start..i];
        let ok = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !ok {
            return false;
        }
    }
}

/// `host[:port]` where host is a dotted DNS name (any case) or a bracketed IPv6 address.
fn is_domain(d: &str) -> bool {
    let (host, port) = if let Some(v6) = d.strip_prefix('[') {
        let Some((addr, after)) = v6.split_once(']') else {
            return false;
        };
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return false;
        }
        match after {
            "" => return true,
            _ => match after.strip_prefix(':') {
                Some(port) => ("", Some(port)),
                None => return false,
            },
        }
    } else {
        match d.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (d, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = d.starts_with('[')
        || host.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        });
    port_ok && host_ok
}

/// `[\w][\w.-]{0,127}`.
fn is_tag(t: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= TAG_MAX_LEN
        && word(b[0])
        && b.iter().all(|&c| word(c) || c == b'.' || c == b'-')
}

/// `algorithm:hex` in the loose form of the reference grammar (32 or more hex digits), which
/// is what decides whether a Tag value is a digest.
fn looks_like_digest(d: &str) -> bool {
    let Some((algorithm, encoded)) = d.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['-', '_', '+', '.']).all(|part| {
        let b = part.as_bytes();
        !b.is_empty() && b[0].is_ascii_alphabetic() && b.iter().all(u8::is_ascii_alphanumeric)
    });
    algorithm_ok && encoded.len() >= 32 && encoded.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A digest of a reference must also be of a known algorithm with its exact length.
fn check_digest(d: &str) -> Result<(), &'static str> {
    if !looks_like_digest(d) {
        return Err("invalid reference format");
    }
    let (algorithm, encoded) = d.split_once(':').unwrap_or_default();
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err("unsupported digest algorithm"),
    };
    if encoded.len() != len {
        return Err("invalid checksum digest length");
    }
    if !encoded
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err("invalid checksum digest format");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ImageComponent::{Registry, Repository, Tag};
    use OverriderOperator::{Add, Remove, Replace};
    use flotilla_karmada_api::overrides::ImagePredicate;

    const SHA: &str = "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c";

    fn parts(image: &str) -> (String, String, String, String) {
        let r = ImageRef::parse(image).unwrap();
        (r.registry, r.repository, r.tag, r.digest)
    }

    #[test]
    fn parses_registry_repository_tag_and_digest() {
        let s = |x: &str| x.to_string();
        let cases = [
            ("nginx", (s(""), s("nginx"), s(""), s(""))),
            ("nginx:1.25", (s(""), s("nginx"), s("1.25"), s(""))),
            (
                "library/nginx:1.25",
                (s(""), s("library/nginx"), s("1.25"), s("")),
            ),
            (
                "docker.io/library/nginx:1.25",
                (s("docker.io"), s("library/nginx"), s("1.25"), s("")),
            ),
            (
                "registry.example.com:5000/team/app:v1",
                (
                    s("registry.example.com:5000"),
                    s("team/app"),
                    s("v1"),
                    s(""),
                ),
            ),
            ("localhost/app", (s("localhost"), s("app"), s(""), s(""))),
            (
                "localhost:5000/app",
                (s("localhost:5000"), s("app"), s(""), s("")),
            ),
            (
                "myhost:5000/app:2",
                (s("myhost:5000"), s("app"), s("2"), s("")),
            ),
            ("[::1]:5000/app", (s("[::1]:5000"), s("app"), s(""), s(""))),
            (
                "Registry.IO/app",
                (s("Registry.IO"), s("app"), s(""), s("")),
            ),
            (
                &format!("quay.io/app@{SHA}") as &str,
                (s("quay.io"), s("app"), s(""), s(SHA)),
            ),
            (
                &format!("app:1.0@{SHA}"),
                (s(""), s("app"), s("1.0"), s("")),
            ),
            (
                "a__b-c---d/e.f_g:T_a.g-1",
                (s(""), s("a__b-c---d/e.f_g"), s("T_a.g-1"), s("")),
            ),
            // A first component with a dot is a registry, whatever follows.
            ("my.team/app", (s("my.team"), s("app"), s(""), s(""))),
        ];
        for (image, want) in cases {
            assert_eq!(parts(image), want, "{image}");
        }
    }

    #[test]
    fn rejects_what_is_not_a_reference() {
        let long_tag = format!("app:{}", "t".repeat(129));
        let long_name = "a".repeat(256);
        let cases: [(&str, &str); 12] = [
            ("", "repository name must have at least one component"),
            ("Nginx:1", "repository name must be lowercase"),
            ("team/App", "repository name must be lowercase"),
            ("app:", "invalid reference format"),
            ("app:-x", "invalid reference format"),
            (&long_tag, "invalid reference format"),
            (
                &long_name,
                "repository name must not be more than 255 characters",
            ),
            ("a..b", "invalid reference format"),
            ("a___b", "invalid reference format"),
            ("/app", "invalid reference format"),
            (
                "app@md5:0123456789abcdef0123456789abcdef",
                "unsupported digest algorithm",
            ),
            (
                "app@sha256:0123456789abcdef0123456789abcdef",
                "invalid checksum digest length",
            ),
        ];
        for (image, reason) in cases {
            assert_eq!(ImageRef::parse(image), Err(reason), "{image:?}");
        }
        let upper_hex = format!("app@{}", SHA.to_uppercase().replace("SHA256", "sha256"));
        assert_eq!(
            ImageRef::parse(&upper_hex),
            Err("invalid checksum digest format")
        );
    }

    #[test]
    fn prints_back_what_it_parsed() {
        for image in [
            "nginx",
            "nginx:1.25",
            "registry.example.com:5000/team/app:v1",
            &format!("quay.io/app@{SHA}"),
        ] {
            assert_eq!(ImageRef::parse(image).unwrap().to_string(), image);
        }
    }

    fn overrider(
        component: ImageComponent,
        operator: OverriderOperator,
        value: &str,
    ) -> ImageOverrider {
        ImageOverrider {
            predicate: None::<ImagePredicate>,
            component,
            operator,
            value: (!value.is_empty()).then(|| value.to_string()),
        }
    }

    #[test]
    fn every_component_and_operator() {
        let digest_value = SHA;
        let digested = format!("nginx@{SHA}");
        let both = format!("nginx:1.0@{SHA}");
        let cases: Vec<(&str, ImageComponent, OverriderOperator, &str, String)> = vec![
            // Registry
            (
                "nginx:1.25",
                Registry,
                Add,
                "registry.eu",
                "registry.eu/nginx:1.25".into(),
            ),
            (
                "reg.io/nginx",
                Registry,
                Add,
                ".cn",
                "reg.io.cn/nginx".into(),
            ),
            (
                "reg.io:5000/team/app:v1",
                Registry,
                Replace,
                "mirror.eu",
                "mirror.eu/team/app:v1".into(),
            ),
            (
                "team/app:v1",
                Registry,
                Replace,
                "mirror.eu:443",
                "mirror.eu:443/team/app:v1".into(),
            ),
            (
                "docker.io/library/nginx:1",
                Registry,
                Remove,
                "",
                "library/nginx:1".into(),
            ),
            ("nginx:1", Registry, Remove, "", "nginx:1".into()),
            // Repository
            (
                "reg.io/team/app:v1",
                Repository,
                Add,
                "-eu",
                "reg.io/team/app-eu:v1".into(),
            ),
            (
                "reg.io/team/app:v1",
                Repository,
                Replace,
                "other/app",
                "reg.io/other/app:v1".into(),
            ),
            (
                "reg.io/team/app:v1",
                Repository,
                Remove,
                "",
                "reg.io/:v1".into(),
            ),
            // Tag
            (
                "nginx:1.25",
                Tag,
                Add,
                "-alpine",
                "nginx:1.25-alpine".into(),
            ),
            ("nginx", Tag, Add, "v2", "nginx:v2".into()),
            ("nginx:1.25", Tag, Replace, "1.27", "nginx:1.27".into()),
            (
                "nginx:1.25",
                Tag,
                Replace,
                digest_value,
                format!("nginx@{SHA}"),
            ),
            (&digested as &str, Tag, Replace, "1.27", "nginx:1.27".into()),
            ("nginx:1.25", Tag, Replace, "not a tag", "nginx:1.25".into()),
            ("nginx:1.25", Tag, Remove, "", "nginx".into()),
            (&digested, Tag, Remove, "", "nginx".into()),
            (&both, Registry, Add, "reg.io", "reg.io/nginx:1.0".into()),
            (
                "localhost:5000/app:1",
                Tag,
                Replace,
                "2",
                "localhost:5000/app:2".into(),
            ),
        ];
        for (image, component, operator, value, want) in cases {
            let got = override_image(image, &overrider(component, operator, value)).unwrap();
            assert_eq!(got, want, "{image} {component:?} {operator:?} {value:?}");
        }
    }

    #[test]
    fn an_unparsable_image_is_an_error() {
        assert_eq!(
            override_image("Nginx", &overrider(Tag, Replace, "1")),
            Err(OverrideFailure::InvalidImage {
                image: "Nginx".into(),
                reason: "repository name must be lowercase"
            })
        );
    }
}
