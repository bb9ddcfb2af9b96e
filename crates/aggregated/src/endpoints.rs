//! This replica's entry in the Service behind the APIServices: one EndpointSlice per replica
//! (`karmada-system`, labelled `kubernetes.io/service-name=karmada-aggregated-apiserver`),
//! which the host's aggregator resolves to spread requests over every replica and fail over
//! between them. In Kubernetes the EndpointSlice controller keeps these; a Flotilla running
//! outside Kubernetes has none, so each replica writes its own when it starts and deletes it
//! when it stops cleanly. A killed replica's slice stays behind: the aggregator's checks and
//! failed connections mark it down, and a replica restarted at the same address takes it back.

use flotilla_names::karmada;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

const FIELD_MANAGER: &str = "flotilla-aggregated-apiserver";

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("the advertised URL {0:?} has no host or port")]
    Url(String),
    #[error("creating the namespace {namespace} on the host")]
    Namespace {
        namespace: String,
        source: kube::Error,
    },
    #[error("writing the EndpointSlice {name} on the host")]
    Write { name: String, source: kube::Error },
    #[error("deleting the EndpointSlice {name} on the host")]
    Delete { name: String, source: kube::Error },
}

/// Address and port of `url` (`https://127.0.0.1:7443`).
fn address(url: &str) -> Result<(String, u16), EndpointError> {
    let uri: http::Uri = url.parse().map_err(|_| EndpointError::Url(url.into()))?;
    let host = uri
        .host()
        .ok_or_else(|| EndpointError::Url(url.into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri
        .port_u16()
        .or_else(|| (uri.scheme_str() == Some("https")).then_some(443))
        .ok_or_else(|| EndpointError::Url(url.into()))?;
    Ok((host, port))
}

/// The slice's name for one address: the Service's name, the address and the port.
pub fn slice_name(url: &str) -> Result<String, EndpointError> {
    let (host, port) = address(url)?;
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    Ok(format!(
        "{}-{host}-{port}",
        karmada::AGGREGATED_APISERVER_SERVICE
    ))
}

/// Writes (server-side apply) this replica's EndpointSlice, reachable at `url`.
pub async fn register_endpoint(host: &kube::Client, url: &str) -> Result<(), EndpointError> {
    let (address, port) = address(url)?;
    let namespace = karmada::NAMESPACE_KARMADA_SYSTEM;
    let namespaces: Api<Namespace> = Api::all(host.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(source) => {
            return Err(EndpointError::Namespace {
                namespace: namespace.into(),
                source,
            });
        }
    }
    let name = slice_name(url)?;
    let address_type = if address.contains(':') {
        "IPv6"
    } else {
        "IPv4"
    };
    let body = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                flotilla_apiserver::aggregator::SERVICE_NAME_LABEL: karmada::AGGREGATED_APISERVER_SERVICE,
                "endpointslice.kubernetes.io/managed-by": FIELD_MANAGER,
            },
        },
        "addressType": address_type,
        "endpoints": [{"addresses": [address], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    });
    let slices: Api<EndpointSlice> = Api::namespaced(host.clone(), namespace);
    slices
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(body),
        )
        .await
        .map_err(|source| EndpointError::Write {
            name: name.clone(),
            source,
        })?;
    Ok(())
}

/// Deletes this replica's EndpointSlice, so the host stops sending it requests at once.
pub async fn deregister_endpoint(host: &kube::Client, url: &str) -> Result<(), EndpointError> {
    let name = slice_name(url)?;
    let slices: Api<EndpointSlice> =
        Api::namespaced(host.clone(), karmada::NAMESPACE_KARMADA_SYSTEM);
    match slices.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(EndpointError::Delete { name, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_slice_name_per_address() {
        assert_eq!(
            slice_name("https://127.0.0.1:7443").ok().as_deref(),
            Some("karmada-aggregated-apiserver-127-0-0-1-7443")
        );
        assert_eq!(
            slice_name("https://[::1]:8443/").ok().as_deref(),
            Some("karmada-aggregated-apiserver---1-8443")
        );
        assert!(slice_name("not a url").is_err());
    }
}
