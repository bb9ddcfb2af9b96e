//! List and watch filtering: label selectors, field selectors (`metadata.name`,
//! `metadata.namespace` for every kind, plus the kind-specific fields kube-apiserver supports
//! for pods, events, secrets, nodes, namespaces and CertificateSigningRequests).

use flotilla_apimachinery::ApiError;
use flotilla_apimachinery::ResourceDef;
use flotilla_apimachinery::selector::{FieldSelector, LabelSelector};
use flotilla_storage::StoredObject;
use serde_json::Value;

use crate::request::ListOptions;

/// The selection a list or watch asks for.
#[derive(Debug, Default)]
pub struct Selection {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

fn extra_fields(def: &ResourceDef) -> &'static [&'static str] {
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "events") | ("events.k8s.io", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "secrets") => &["type"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "namespaces") => &["status.phase"],
        ("", "replicationcontrollers") | ("apps", "replicasets") => &["status.replicas"],
        ("batch", "jobs") => &["status.successful"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["spec.signerName"],
        _ => &[],
    }
}

impl Selection {
    pub fn from_options(def: &ResourceDef, options: &ListOptions) -> Result<Self, ApiError> {
        // The parser's message is kube's whole answer (it says `unable to parse requirement`
        // itself where kube does).
        let labels = match options.label_selector.as_deref() {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match options.field_selector.as_deref() {
            Some(s) => {
                let f =
                    FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
                for field in f.requirements().iter().map(|r| r.field.as_str()) {
                    if field != "metadata.name"
                        && field != "metadata.namespace"
                        && !extra_fields(def).contains(&field)
                    {
                        return Err(ApiError::bad_request(format!(
                            "field label not supported: {field}"
                        )));
                    }
                }
                Some(f)
            }
            None => None,
        };
        Ok(Self { labels, fields })
    }

    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// Whether a stored object is selected. Labels are matched on the stored object's
    /// pre-extracted labels; the object is parsed only when there is a field selector.
    pub fn matches_object(&self, obj: &StoredObject) -> bool {
        if let Some(l) = &self.labels {
            if !l.matches_lookup(|key| obj.labels().get(key)) {
                return false;
            }
        }
        self.fields.is_none() || self.matches_fields(&obj.value())
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels {
            let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
            if !l.matches(labels) {
                return false;
            }
        }
        self.matches_fields(obj)
    }

    fn matches_fields(&self, obj: &Value) -> bool {
        if let Some(f) = &self.fields {
            let get = |path: &str| -> Option<String> {
                let mut cur = obj;
                for seg in path.split('.') {
                    cur = cur.get(seg)?;
                }
                match cur {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => None,
                    other => Some(other.to_string()),
                }
            };
            if !f.matches(get) {
                return false;
            }
        }
        true
    }
}
