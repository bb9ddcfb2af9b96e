//! Dynamic admission on the host, driven with the real kubectl: webhook configurations
//! applied with `kubectl apply`, webhooks served by this test over TLS with a certificate from
//! its own CA (handed to the host in `caBundle`), reached by URL and through a Service.
//! Checked: a mutating webhook labels every Deployment kubectl creates (and its warning
//! reaches kubectl); a validating one denies a bad name with its message as kube-apiserver
//! words it, also under `--dry-run=server`; DELETE and `scale` are admitted (the latter with
//! an autoscaling/v1 Scale); `namespaceSelector` and `objectSelector`; `failurePolicy`
//! Fail and Ignore against an unreachable webhook; an `IfNeeded` webhook called again after a
//! later one changed the object; and bad configurations rejected with 422.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use base64::Engine;
use common::{Kubectl, write_manifest};
use flotilla_pki::CertificateAuthority;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Every review the webhooks received: (path, request).
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

fn answer(req: &Value, allowed: bool) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": req["uid"], "allowed": allowed},
    })
}

fn patched(req: &Value, patch: Value, warning: &str) -> Value {
    let mut a = answer(req, true);
    a["response"]["patchType"] = json!("JSONPatch");
    a["response"]["patch"] =
        json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    a["response"]["warnings"] = json!([warning]);
    a
}

fn record(seen: &Seen, path: &str, review: &Value) -> Value {
    let req = review["request"].clone();
    seen.lock().unwrap().push((path.to_string(), req.clone()));
    req
}

/// Adds the label `admitted=yes` (the labels map is created when missing).
async fn mutate(State(seen): State<Seen>, Json(review): Json<Value>) -> Json<Value> {
    let req = record(&seen, "/mutate", &review);
    let patch = if req["object"]["metadata"]["labels"].is_object() {
        json!([{"op": "add", "path": "/metadata/labels/admitted", "value": "yes"}])
    } else {
        json!([{"op": "add", "path": "/metadata/labels", "value": {"admitted": "yes"}}])
    };
    Json(patched(&req, patch, "labelled by the test webhook"))
}

/// Denies names starting with `bad-`, scales above 5 and deletes of `protected=true`.
async fn validate(State(seen): State<Seen>, Json(review): Json<Value>) -> Json<Value> {
    let req = record(&seen, "/validate", &review);
    let name = req["name"].as_str().unwrap_or_default();
    let denial = if req["operation"] == "DELETE" {
        (req["oldObject"]["metadata"]["labels"]["protected"] == "true")
            .then_some("protected objects cannot be deleted")
    } else if req["kind"]["kind"] == "Scale" {
        (req["object"]["spec"]["replicas"].as_i64().unwrap_or(0) > 5)
            .then_some("at most 5 replicas")
    } else {
        name.starts_with("bad-")
            .then_some("names starting with bad- are reserved")
    };
    let mut a = answer(&req, denial.is_none());
    if let Some(message) = denial {
        a["response"]["status"] = json!({"code": 403, "message": message});
    }
    Json(a)
}

/// An `IfNeeded` webhook: adds the annotation `seen-labels` with the labels it saw.
async fn observe(State(seen): State<Seen>, Json(review): Json<Value>) -> Json<Value> {
    let req = record(&seen, "/observe", &review);
    let labels = req["object"]["metadata"]["labels"].to_string();
    let patch = if req["object"]["metadata"]["annotations"].is_object() {
        json!([{"op": "add", "path": "/metadata/annotations/seen-labels", "value": labels}])
    } else {
        json!([{"op": "add", "path": "/metadata/annotations", "value": {"seen-labels": labels}}])
    };
    Json(patched(&req, patch, "observed"))
}

struct Webhooks {
    seen: Seen,
    port: u16,
    ca_bundle: String,
}

impl Webhooks {
    async fn start() -> Self {
        let ca = CertificateAuthority::generate("webhook-ca").unwrap();
        let cert = ca
            .issue_server(
                "webhooks",
                &["hooks.ops.svc".to_string()],
                &["127.0.0.1".parse().unwrap()],
            )
            .unwrap();
        let tls = flotilla_pki::server_config(&cert.cert_pem, &cert.key_pem, &[]).unwrap();
        let seen: Seen = Arc::new(Mutex::new(Vec::new()));
        let router = axum::Router::new()
            .route("/mutate", post(mutate))
            .route("/validate", post(validate))
            .route("/observe", post(observe))
            .with_state(seen.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(flotilla_apiserver::serve::serve_tls(
            listener,
            tls,
            router,
            std::future::pending(),
        ));
        Self {
            seen,
            port,
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca.cert_pem()),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    fn calls(&self, path: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, r)| r.clone())
            .collect()
    }

    fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }
}

fn rule(operations: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"operations": operations, "apiGroups": groups, "apiVersions": ["v1"], "resources": resources})
}

fn webhook(name: &str, client: Value, rules: Value, ca: &str) -> Value {
    let mut client = client;
    client["caBundle"] = json!(ca);
    json!({
        "name": name,
        "clientConfig": client,
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

fn configuration(kind: &str, name: &str, hooks: Vec<Value>) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": hooks,
    })
}

fn label(kubectl_json: &str, key: &str) -> Option<String> {
    let v: Value = serde_json::from_str(kubectl_json).unwrap();
    v["metadata"]["labels"][key].as_str().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_mutate_and_validate_kubectl_writes() {
    let t = common::start().await;
    let kubectl = Kubectl::new(&t.host.kubeconfig);
    let hooks = Webhooks::start().await;
    let files = tempfile::tempdir().unwrap();
    let ca = hooks.ca_bundle.clone();

    // Mutating by URL, validating through a Service (ExternalName to loopback; the
    // certificate names hooks.ops.svc, as kube-apiserver checks).
    kubectl.ok(&["create", "namespace", "ops"]).await;
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "hooks", "namespace": "ops"},
        "spec": {"type": "ExternalName", "externalName": "127.0.0.1"},
    });
    kubectl
        .ok(&[
            "apply",
            "-f",
            &write_manifest(files.path(), "svc.json", &service),
        ])
        .await;
    let mutating = configuration(
        "MutatingWebhookConfiguration",
        "labels",
        vec![webhook(
            "labels.example.com",
            json!({"url": hooks.url("/mutate")}),
            json!([
                rule(&["CREATE"], &["apps"], &["deployments"]),
                {"operations": ["CREATE"], "apiGroups": ["policy.karmada.io"], "apiVersions": ["*"], "resources": ["propagationpolicies"]},
            ]),
            &ca,
        )],
    );
    let validating = configuration(
        "ValidatingWebhookConfiguration",
        "names",
        vec![webhook(
            "names.example.com",
            json!({"service": {"namespace": "ops", "name": "hooks", "path": "/validate", "port": hooks.port}}),
            json!([
                rule(&["CREATE", "DELETE"], &["apps"], &["deployments"]),
                rule(&["UPDATE"], &["apps"], &["deployments/scale"]),
            ]),
            &ca,
        )],
    );
    kubectl
        .ok(&[
            "apply",
            "-f",
            &write_manifest(files.path(), "m.json", &mutating),
        ])
        .await;
    kubectl
        .ok(&[
            "apply",
            "-f",
            &write_manifest(files.path(), "v.json", &validating),
        ])
        .await;
    let listed = kubectl.ok(&["get", "mutatingwebhookconfigurations"]).await;
    assert!(
        listed.contains("WEBHOOKS") && listed.contains("labels"),
        "{listed}"
    );

    // A Deployment created with kubectl is labelled, and the webhook's warning is shown.
    let created = kubectl
        .run(&["create", "deployment", "web", "--image=nginx"])
        .await;
    assert!(created.ok, "{}", created.stderr);
    assert!(
        created
            .stderr
            .contains("Warning: labelled by the test webhook"),
        "{}",
        created.stderr
    );
    let got = kubectl
        .ok(&["get", "deployment", "web", "-o", "json"])
        .await;
    assert_eq!(label(&got, "admitted").as_deref(), Some("yes"));
    let reviews = hooks.calls("/mutate");
    assert_eq!(reviews.len(), 1);
    let r = &reviews[0];
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(
        r["kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(r["resource"]["resource"], "deployments");
    assert_eq!(r["namespace"], "default");
    assert_eq!(r["userInfo"]["username"], "admin");
    assert_eq!(r["dryRun"], false);
    // The webhook saw the defaulted object.
    assert_eq!(r["object"]["spec"]["revisionHistoryLimit"], 10);
    let validated = hooks.calls("/validate");
    assert_eq!(validated.len(), 1);
    assert_eq!(
        validated[0]["object"]["metadata"]["labels"]["admitted"], "yes",
        "validating webhooks see the mutated object"
    );

    // A bad name is denied with the webhook's message, as kube-apiserver words it; nothing
    // is stored. Dry run is admitted too (sideEffects None) and denied the same way.
    for extra in [None, Some("--dry-run=server")] {
        let mut args = vec!["create", "deployment", "bad-web", "--image=nginx"];
        args.extend(extra);
        let denied = kubectl.run(&args).await;
        assert!(!denied.ok);
        assert!(
            denied.stderr.contains(
                "admission webhook \"names.example.com\" denied the request: names starting with bad- are reserved"
            ),
            "{}",
            denied.stderr
        );
    }
    assert_eq!(hooks.calls("/validate").last().unwrap()["dryRun"], true);
    assert!(!kubectl.run(&["get", "deployment", "bad-web"]).await.ok);

    // scale goes through admission as an autoscaling/v1 Scale.
    let too_many = kubectl
        .run(&["scale", "deployment", "web", "--replicas=9"])
        .await;
    assert!(!too_many.ok);
    assert!(
        too_many.stderr.contains("at most 5 replicas"),
        "{}",
        too_many.stderr
    );
    let scale_review = hooks.calls("/validate").last().unwrap().clone();
    assert_eq!(scale_review["subResource"], "scale");
    assert_eq!(
        scale_review["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    kubectl
        .ok(&["scale", "deployment", "web", "--replicas=3"])
        .await;

    // DELETE is admitted with the old object.
    kubectl
        .ok(&["label", "deployment", "web", "protected=true"])
        .await;
    let refused = kubectl.run(&["delete", "deployment", "web"]).await;
    assert!(!refused.ok);
    assert!(
        refused
            .stderr
            .contains("protected objects cannot be deleted"),
        "{}",
        refused.stderr
    );
    kubectl
        .ok(&["label", "deployment", "web", "protected-"])
        .await;
    kubectl.ok(&["delete", "deployment", "web"]).await;

    // Custom resources are admitted too.
    let policy = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}], "placement": {}},
    });
    kubectl
        .ok(&[
            "create",
            "-f",
            &write_manifest(files.path(), "pp.json", &policy),
        ])
        .await;
    let got = kubectl
        .ok(&["get", "propagationpolicy", "web", "-o", "json"])
        .await;
    assert_eq!(label(&got, "admitted").as_deref(), Some("yes"));

    // Every call is counted on /metrics.
    let metrics = t
        .client
        .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
        .await
        .unwrap();
    for series in [
        r#"apiserver_admission_webhook_request_total{name="names.example.com",type="validating",operation="CREATE",outcome="rejected"} 2"#,
        r#"apiserver_admission_webhook_request_total{name="names.example.com",type="validating",operation="DELETE",outcome="rejected"} 1"#,
        r#"apiserver_admission_webhook_request_total{name="labels.example.com",type="admit",operation="CREATE",outcome="allowed"}"#,
    ] {
        assert!(
            metrics.contains(series),
            "{series} missing from:\n{metrics}"
        );
    }

    // Removing the configurations stops admission at once.
    kubectl
        .ok(&["delete", "validatingwebhookconfiguration", "names"])
        .await;
    kubectl
        .ok(&["create", "deployment", "bad-ok", "--image=nginx"])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_failure_policies_and_reinvocation() {
    let t = common::start().await;
    let kubectl = Kubectl::new(&t.host.kubeconfig);
    let hooks = Webhooks::start().await;
    let files = tempfile::tempdir().unwrap();
    let ca = hooks.ca_bundle.clone();
    let apply = |name: &str, obj: &Value| write_manifest(files.path(), name, obj);

    kubectl.ok(&["create", "namespace", "prod"]).await;
    kubectl
        .ok(&["label", "namespace", "prod", "env=prod"])
        .await;
    kubectl.ok(&["create", "namespace", "dev"]).await;

    // namespaceSelector and objectSelector: only ConfigMaps labelled check=yes in env=prod
    // namespaces are validated.
    let mut selective = webhook(
        "selective.example.com",
        json!({"url": hooks.url("/validate")}),
        json!([rule(&["CREATE"], &[""], &["configmaps"])]),
        &ca,
    );
    selective["namespaceSelector"] = json!({"matchLabels": {"env": "prod"}});
    selective["objectSelector"] = json!({"matchLabels": {"check": "yes"}});
    kubectl
        .ok(&[
            "apply",
            "-f",
            &apply(
                "sel.json",
                &configuration(
                    "ValidatingWebhookConfiguration",
                    "selective",
                    vec![selective],
                ),
            ),
        ])
        .await;
    for (ns, labelled, called) in [
        ("dev", true, false),
        ("prod", false, false),
        ("prod", true, true),
    ] {
        hooks.clear();
        let name = format!("bad-{ns}-{labelled}");
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}});
        if labelled {
            cm["metadata"]["labels"] = json!({"check": "yes"});
        }
        let r = kubectl
            .run(&["create", "-f", &apply(&format!("{name}.json"), &cm)])
            .await;
        assert_eq!(
            hooks.calls("/validate").len(),
            usize::from(called),
            "{ns} {labelled}"
        );
        assert_eq!(r.ok, !called, "{ns} {labelled}: {}", r.stderr);
    }

    // An unreachable webhook: Fail refuses the write with kube-apiserver's words, Ignore lets
    // it through.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("https://127.0.0.1:{}/", closed.local_addr().unwrap().port());
    drop(closed);
    for (policy, passes) in [("Fail", false), ("Ignore", true)] {
        let mut dead = webhook(
            "dead.example.com",
            json!({"url": dead_url}),
            json!([rule(&["CREATE"], &[""], &["secrets"])]),
            &ca,
        );
        dead["failurePolicy"] = json!(policy);
        dead["timeoutSeconds"] = json!(2);
        kubectl
            .ok(&[
                "apply",
                "-f",
                &apply(
                    "dead.json",
                    &configuration("ValidatingWebhookConfiguration", "dead", vec![dead]),
                ),
            ])
            .await;
        let name = format!("s-{}", policy.to_lowercase());
        let r = kubectl
            .run(&["create", "secret", "generic", &name, "--from-literal=a=b"])
            .await;
        assert_eq!(r.ok, passes, "{policy}: {}", r.stderr);
        if !passes {
            assert!(
                r.stderr
                    .contains("failed calling webhook \"dead.example.com\""),
                "{}",
                r.stderr
            );
        }
    }

    // Reinvocation: "a-observe" (IfNeeded) runs first and records the labels it saw;
    // "b-labels" then adds a label, so "a-observe" is called again and sees it.
    let mut observe = webhook(
        "observe.example.com",
        json!({"url": hooks.url("/observe")}),
        json!([rule(&["CREATE"], &["apps"], &["deployments"])]),
        &ca,
    );
    observe["reinvocationPolicy"] = json!("IfNeeded");
    let label = webhook(
        "labels.example.com",
        json!({"url": hooks.url("/mutate")}),
        json!([rule(&["CREATE"], &["apps"], &["deployments"])]),
        &ca,
    );
    kubectl
        .ok(&[
            "apply",
            "-f",
            &apply(
                "a.json",
                &configuration("MutatingWebhookConfiguration", "a-observe", vec![observe]),
            ),
        ])
        .await;
    kubectl
        .ok(&[
            "apply",
            "-f",
            &apply(
                "b.json",
                &configuration("MutatingWebhookConfiguration", "b-labels", vec![label]),
            ),
        ])
        .await;
    hooks.clear();
    kubectl
        .ok(&["create", "deployment", "re", "--image=nginx", "-n", "dev"])
        .await;
    assert_eq!(
        hooks.calls("/observe").len(),
        2,
        "called again after b-labels"
    );
    assert_eq!(hooks.calls("/mutate").len(), 1);
    let got: Value = serde_json::from_str(
        &kubectl
            .ok(&["get", "deployment", "re", "-n", "dev", "-o", "json"])
            .await,
    )
    .unwrap();
    let seen = got["metadata"]["annotations"]["seen-labels"]
        .as_str()
        .unwrap();
    assert!(seen.contains("admitted"), "{seen}");

    // Bad configurations are rejected and change nothing.
    let mut bad = webhook(
        "short.name",
        json!({"url": "http://127.0.0.1/"}),
        json!([rule(&["CREATE"], &[""], &["pods"])]),
        &ca,
    );
    bad["sideEffects"] = json!("Some");
    let r = kubectl
        .run(&[
            "apply",
            "-f",
            &apply(
                "bad.json",
                &configuration("ValidatingWebhookConfiguration", "bad", vec![bad]),
            ),
        ])
        .await;
    assert!(!r.ok);
    for field in [
        "webhooks[0].name",
        "webhooks[0].clientConfig.url",
        "webhooks[0].sideEffects",
    ] {
        assert!(r.stderr.contains(field), "{field}: {}", r.stderr);
    }
    assert!(
        !kubectl
            .run(&["get", "validatingwebhookconfiguration", "bad"])
            .await
            .ok
    );
}
