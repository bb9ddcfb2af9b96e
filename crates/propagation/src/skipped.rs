//! Which namespaces propagation leaves alone, as Karmada's controllers do: Karmada's
//! reserved namespaces always (`karmada-system`, `karmada-cluster`, every `karmada-es-*`),
//! and those matching one of the `--skipped-propagating-namespaces` patterns (regular
//! expressions matched against the whole name; default `kube-.*`). The detector keeps no
//! template from them, and the namespace sync creates none of them in members (nor
//! `default`, which every cluster has). A user's `karmada-demo` namespace propagates.

use flotilla_names::karmada;
use regex::Regex;

/// The namespaces that hold no templates and are not created in members.
#[derive(Clone, Debug)]
pub struct SkippedNamespaces {
    patterns: Vec<Regex>,
}

impl SkippedNamespaces {
    /// Karmada's default pattern: the system's own `kube-*` namespaces.
    pub const DEFAULT_PATTERN: &str = "kube-.*";

    /// Namespaces matching any of `patterns` as a whole (an empty list skips only Karmada's
    /// reserved namespaces).
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, regex::Error> {
        let patterns = patterns
            .iter()
            .map(|p| Regex::new(&format!("^(?:{})$", p.as_ref())))
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// Whether `namespace` is left alone.
    pub fn skipped(&self, namespace: &str) -> bool {
        karmada::is_reserved_namespace(namespace)
            || self.patterns.iter().any(|p| p.is_match(namespace))
    }
}

impl Default for SkippedNamespaces {
    fn default() -> Self {
        #[allow(clippy::expect_used)]
        let kube = Regex::new(&format!("^(?:{})$", Self::DEFAULT_PATTERN))
            .expect("the default pattern is a valid regular expression");
        Self {
            patterns: vec![kube],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karmadas_reserved_namespaces_and_the_patterns() {
        let skipped = SkippedNamespaces::default();
        let execution = karmada::execution_namespace("member1");
        for ns in [
            karmada::NAMESPACE_KARMADA_SYSTEM,
            karmada::NAMESPACE_KARMADA_CLUSTER,
            execution.as_str(),
            "kube-system",
            "kube-public",
        ] {
            assert!(skipped.skipped(ns), "{ns}");
        }
        for ns in [
            "default",
            "karmada-demo",
            "karmada",
            "web",
            "my-kube-system",
        ] {
            assert!(!skipped.skipped(ns), "{ns}");
        }
        // Patterns match whole names.
        let custom = SkippedNamespaces::new(&["team-.*", "scratch"]).unwrap();
        assert!(custom.skipped("team-a") && custom.skipped("scratch"));
        assert!(!custom.skipped("scratch-2") && !custom.skipped("kube-system"));
        assert!(custom.skipped(&karmada::execution_namespace("m1")));
        assert!(SkippedNamespaces::new(&["("]).is_err());
    }
}
