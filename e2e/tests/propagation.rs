//! Propagation end to end, as a kubectl user sees it, against `flotilla local-up --members 3`
//! (member1: 4 nodes x 8 CPU, member2: 3 x 4 CPU, member3: 2 x 2 CPU):
//!
//! - a Deployment and a PropagationPolicy dividing by `dynamicWeight: AvailableReplicas` over
//!   members whose free capacity is 3:2:1 land 3/2/1 in the members, the host shows 6/6 READY,
//!   the binding SCHEDULED/FULLYAPPLIED and the template the Events of every step; an image
//!   change reaches every member, a scale-up adds replicas without moving any, scale to 0 and
//!   back works, and deleting the template removes it (and the binding) everywhere;
//! - a policy created after its template claims it; StatefulSet, Job, DaemonSet and ConfigMap
//!   propagate with their status aggregated on the host; host namespaces are synced to the
//!   members (with kubectl 1.27 too); a CRD and a ClusterRole propagate through
//!   ClusterPropagationPolicies and a custom resource of the CRD follows;
//! - conflicts with objects the members already have (Abort keeps them, Overwrite takes them
//!   over), a member rejecting a manifest, and invalid policies refused with 422;
//! - kill -9 of local-up in the middle of a rollout converges to the same end state after a
//!   restart on the same data directory.
//!
//! Needs the binary: `cargo build --bin flotilla` (or `FLOTILLA_BIN`); local-up's log is quoted
//! in failure messages.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::{
    ApiserverProcess, Kubectl, deployment_yaml, dynamic_policy_yaml, eventually, kubectl_binary,
    start_local_up,
};

const WAIT: Duration = Duration::from_secs(60);
const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

/// One local-up with kubectl for the host and each member.
struct Env {
    dir: PathBuf,
    data: PathBuf,
    up: ApiserverProcess,
    host: Kubectl,
    members: BTreeMap<&'static str, Kubectl>,
}

impl Env {
    fn start(dir: &Path) -> Env {
        let data = dir.join("flotilla");
        let up = start_local_up(&data, &["--members", "3"]);
        let mut env = Env {
            dir: dir.to_path_buf(),
            data: data.clone(),
            host: Kubectl::new(
                kubectl_binary("kubectl"),
                &up.kubeconfig,
                &dir.join("cache"),
            ),
            members: BTreeMap::new(),
            up,
        };
        env.attach_members("cache");
        env.wait_clusters_ready();
        env
    }

    fn attach_members(&mut self, cache: &str) {
        for m in MEMBERS {
            let kc = self.data.join("members").join(format!("{m}.kubeconfig"));
            self.members.insert(
                m,
                Kubectl::new(
                    kubectl_binary("kubectl"),
                    &kc,
                    &self.dir.join(format!("{cache}-{m}")),
                ),
            );
        }
    }

    fn member(&self, name: &str) -> &Kubectl {
        &self.members[name]
    }

    /// Waits until `kubectl get clusters` shows the three members Ready.
    fn wait_clusters_ready(&self) {
        self.wait("three Ready clusters", || {
            let table = self.host.ok(&["get", "clusters", "--no-headers"]);
            let ready = table
                .lines()
                .filter(|l| {
                    let c: Vec<&str> = l.split_whitespace().collect();
                    c.len() == 5 && MEMBERS.contains(&c[0]) && c[3] == "True"
                })
                .count();
            if ready == 3 { Ok(()) } else { Err(table) }
        });
    }

    /// [`eventually`] with the standard deadline, quoting the tail of local-up's log on failure.
    fn wait<T>(&self, what: &str, check: impl FnMut() -> Result<T, String>) -> T {
        self.wait_for(WAIT, what, check)
    }

    fn wait_for<T>(
        &self,
        deadline: Duration,
        what: &str,
        check: impl FnMut() -> Result<T, String>,
    ) -> T {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            eventually(deadline, what, check)
        }));
        match result {
            Ok(v) => v,
            Err(e) => {
                let log = self.up.log_text();
                let tail: Vec<&str> = log
                    .lines()
                    .filter(|l| {
                        !l.contains("handled verb=\"get\"")
                            && !l.contains("handled verb=\"list\"")
                            && !l.contains("handled verb=\"watch\"")
                    })
                    .collect();
                let tail = tail[tail.len().saturating_sub(60)..].join("\n");
                eprintln!("--- last lines of local-up's log (reads left out):\n{tail}");
                std::panic::resume_unwind(e)
            }
        }
    }

    /// Writes `yaml` to a file and `kubectl apply -f`s it with `k`.
    fn apply(&self, k: &Kubectl, name: &str, yaml: &str) -> String {
        let file = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&file, yaml).unwrap();
        k.ok(&["apply", "-f", file.to_str().unwrap()])
    }

    /// Like [`Env::apply`], returning the output whatever the exit status.
    fn try_apply(&self, k: &Kubectl, name: &str, yaml: &str) -> support::Output {
        k.apply_file(&self.dir, name, yaml)
    }
}

/// `spec.replicas` of Deployment NS/NAME in a member (`None`: not there).
fn member_replicas(m: &Kubectl, ns: &str, name: &str) -> Result<Option<i64>, String> {
    Ok(m.try_get(&["deploy", "-n", ns, name])?
        .map(|d| d["spec"]["replicas"].as_i64().unwrap_or(1)))
}

/// `spec.replicas` of Deployment NS/NAME in each member (`None` where it is absent).
fn replicas_by_member(
    env: &Env,
    ns: &str,
    name: &str,
) -> Result<BTreeMap<String, Option<i64>>, String> {
    let mut out = BTreeMap::new();
    for m in MEMBERS {
        out.insert(m.to_string(), member_replicas(env.member(m), ns, name)?);
    }
    Ok(out)
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// A quantity in milli-units (cpu-style; enough for the integer/`m` forms used here).
fn milli(q: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap(),
        None => q.parse::<i64>().map(|n| n * 1000).unwrap_or(-1),
    }
}

/// The row of `kubectl get ... --no-headers` whose first column is `name`, split in columns.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The Works (all namespaces) whose manifest is `kind` NS/NAME, as (namespace, Work).
fn works_for(host: &Kubectl, kind: &str, ns: &str, name: &str) -> Vec<(String, Value)> {
    let list = host.get_json(&["works", "-A"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w["spec"]["workload"]["manifests"]
                .as_array()
                .is_some_and(|ms| {
                    ms.iter().any(|m| {
                        m["kind"] == kind
                            && m["metadata"]["name"] == name
                            && (ns.is_empty() || m["metadata"]["namespace"] == ns)
                    })
                })
        })
        .map(|w| {
            (
                w["metadata"]["namespace"].as_str().unwrap().to_string(),
                w.clone(),
            )
        })
        .collect()
}

/// The `Applied` condition of the Work in `karmada-es-<cluster>` for `kind` NS/NAME.
fn work_applied(
    host: &Kubectl,
    cluster: &str,
    kind: &str,
    ns: &str,
    name: &str,
) -> Result<Value, String> {
    let es = format!("karmada-es-{cluster}");
    let works = works_for(host, kind, ns, name);
    let (_, work) = works
        .iter()
        .find(|(wns, _)| *wns == es)
        .ok_or_else(|| format!("no Work in {es} for {kind} {ns}/{name}"))?;
    condition(work, "Applied").cloned().ok_or_else(|| {
        format!(
            "Work {} has no Applied condition: {}",
            work["metadata"]["name"], work["status"]
        )
    })
}

/// Waits until the host's `kubectl get deploy` shows READY `want` for NS/NAME.
fn wait_host_ready(env: &Env, ns: &str, name: &str, want: &str) {
    env.wait(&format!("host READY {want} for {ns}/{name}"), || {
        let table = env
            .host
            .ok(&["get", "deploy", "-n", ns, name, "--no-headers"]);
        let r = row(&table, name);
        if r.get(1).map(String::as_str) == Some(want) {
            Ok(())
        } else {
            Err(table)
        }
    });
}

/// Scenarios 1 and 2: division by free capacity 3:2:1, status and events on the host, image
/// change, scale up without moving replicas, scale to 0 and back, deletion.
#[test]
fn deployment_is_divided_by_free_capacity_updated_scaled_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::start(dir.path());
    let k = &env.host;

    // Free capacity 3:2:1 for 1-CPU replicas. By node size alone it is 32:12:4 (member2 and
    // member3 are always 3:1 with these nodes, whatever the request), so the members are
    // filled first with 1-CPU pods created directly in them: member1 20 CPU used -> 12 free,
    // member2 4 used -> 8 free, member3 4 free: 12:8:4. 1-CPU pods on whole-CPU nodes leave no
    // fragments, so node-level and cluster-level estimates agree.
    for (m, used) in [("member1", 20), ("member2", 4)] {
        env.apply(
            env.member(m),
            &format!("filler-{m}"),
            &deployment_yaml("default", "filler", used, "1", "registry.k8s.io/pause:3.9"),
        );
        env.wait(&format!("filler ready in {m}"), || {
            let d = env
                .member(m)
                .get_json(&["deploy", "-n", "default", "filler"]);
            if d["status"]["readyReplicas"] == used {
                Ok(())
            } else {
                Err(d["status"].to_string())
            }
        });
        env.wait(&format!("Cluster {m} reports {used} CPU allocated"), || {
            let c = k.get_json(&["cluster", m]);
            let allocated = &c["status"]["resourceSummary"]["allocated"]["cpu"];
            if allocated.as_str().map(milli) == Some(used * 1000) {
                Ok(())
            } else {
                Err(c["status"]["resourceSummary"].to_string())
            }
        });
    }

    k.ok(&["create", "namespace", "shop"]);
    let manifest = format!(
        "{}---\n{}",
        deployment_yaml("shop", "web", 6, "1", "nginx:1.25"),
        dynamic_policy_yaml("shop", "web")
    );
    env.apply(k, "web", &manifest);

    // Webster over weights 12:8:4 for 6 seats: exactly 3/2/1.
    let want: BTreeMap<String, Option<i64>> = [("member1", 3), ("member2", 2), ("member3", 1)]
        .into_iter()
        .map(|(m, n)| (m.to_string(), Some(n)))
        .collect();
    env.wait("web divided 3/2/1 in the members", || {
        let got = replicas_by_member(&env, "shop", "web")?;
        if got == want {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
    wait_host_ready(&env, "shop", "web", "6/6");
    env.wait("kubectl get rb: SCHEDULED True, FULLYAPPLIED True", || {
        let table = k.ok(&["get", "rb", "-n", "shop", "--no-headers"]);
        let r = row(&table, "web-deployment");
        if r.len() >= 3 && r[1] == "True" && r[2] == "True" {
            Ok(())
        } else {
            Err(table)
        }
    });
    let rb = k.get_json(&["rb", "-n", "shop", "web-deployment"]);
    assert_eq!(rb["spec"]["replicas"], 6, "{rb}");
    assert_eq!(
        rb["spec"]["replicaRequirements"]["resourceRequest"]["cpu"], "1",
        "{rb}"
    );
    env.wait("the Deployment's events in kubectl describe", || {
        let text = k.ok(&["describe", "deploy", "-n", "shop", "web"]);
        let missing: Vec<&str> = [
            "ApplyPolicySucceed",
            "ScheduleBindingSucceed",
            "SyncWorkSucceed",
            "SyncSucceed",
        ]
        .into_iter()
        .filter(|r| !text.contains(r))
        .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("missing {missing:?} in\n{text}"))
        }
    });

    // Image change reaches every member.
    k.ok(&[
        "set",
        "image",
        "deployment/web",
        "-n",
        "shop",
        "web=nginx:1.27",
    ]);
    env.wait("nginx:1.27 in every member", || {
        for m in MEMBERS {
            let d = env.member(m).get_json(&["deploy", "-n", "shop", "web"]);
            let image = &d["spec"]["template"]["spec"]["containers"][0]["image"];
            if image != "nginx:1.27" {
                return Err(format!("{m}: {image}"));
            }
        }
        Ok(())
    });
    wait_host_ready(&env, "shop", "web", "6/6");

    // Scale up: only the increment is divided (3:2:1 again), existing replicas never move.
    let before = replicas_by_member(&env, "shop", "web").unwrap();
    k.ok(&["scale", "deploy", "web", "-n", "shop", "--replicas=12"]);
    let want12: BTreeMap<String, Option<i64>> = [("member1", 6), ("member2", 4), ("member3", 2)]
        .into_iter()
        .map(|(m, n)| (m.to_string(), Some(n)))
        .collect();
    env.wait("web scaled to 12 as 6/4/2", || {
        let got = replicas_by_member(&env, "shop", "web")?;
        for (m, n) in &got {
            assert!(
                n.unwrap_or(0) >= before[m].unwrap_or(0),
                "{m} lost replicas during a scale-up: before {before:?}, now {got:?}"
            );
        }
        if got == want12 {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
    wait_host_ready(&env, "shop", "web", "12/12");

    // Scale to 0 and back to 6.
    k.ok(&["scale", "deploy", "web", "-n", "shop", "--replicas=0"]);
    env.wait("web scaled to 0 in every member", || {
        let got = replicas_by_member(&env, "shop", "web")?;
        if got.values().all(|n| n.unwrap_or(0) == 0) {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
    k.ok(&["scale", "deploy", "web", "-n", "shop", "--replicas=6"]);
    env.wait("web back to 6 across the members", || {
        let got = replicas_by_member(&env, "shop", "web")?;
        let sum: i64 = got.values().map(|n| n.unwrap_or(0)).sum();
        if sum == 6 {
            Ok(got)
        } else {
            Err(format!("{got:?}"))
        }
    });
    wait_host_ready(&env, "shop", "web", "6/6");

    // Deleting the template removes it from every member, and the binding and Works go.
    k.ok(&["delete", "deploy", "web", "-n", "shop"]);
    env.wait("web gone from every member", || {
        let got = replicas_by_member(&env, "shop", "web")?;
        if got.values().all(Option::is_none) {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
    env.wait("web-deployment binding and its Works gone", || {
        let rb = k.try_get(&["rb", "-n", "shop", "web-deployment"])?;
        let works = works_for(k, "Deployment", "shop", "web");
        if rb.is_none() && works.is_empty() {
            Ok(())
        } else {
            Err(format!("binding {rb:?}, {} Works", works.len()))
        }
    });
}

/// Scenarios 3, 5 and 6: a late policy, other workload kinds with aggregated status, namespace
/// sync (with kubectl 1.27 too), a CRD and its custom resources, a ClusterRole.
#[test]
fn workloads_namespaces_crds_and_cluster_scoped_objects_propagate() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::start(dir.path());
    let k = &env.host;

    // --- Namespace sync, driven by kubectl 1.27.
    let k127 = Kubectl::new(
        kubectl_binary("kubectl.1.27"),
        &env.up.kubeconfig,
        &dir.path().join("cache-127"),
    );
    k127.ok(&["create", "namespace", "team-x"]);
    env.wait("team-x in every member", || {
        for m in MEMBERS {
            if env.member(m).try_get(&["namespace", "team-x"])?.is_none() {
                return Err(format!("not in {m}"));
            }
        }
        Ok(())
    });
    k127.ok(&["delete", "namespace", "team-x", "--wait=false"]);
    env.wait("team-x removed from every member", || {
        for m in MEMBERS {
            if let Some(ns) = env.member(m).try_get(&["namespace", "team-x"])? {
                return Err(format!("{m}: {}", ns["status"]));
            }
        }
        Ok(())
    });

    // --- A policy created after its template claims it.
    k.ok(&["create", "namespace", "apps"]);
    env.apply(
        k,
        "late",
        &deployment_yaml("apps", "late", 1, "100m", "nginx:1.25"),
    );
    let workloads = dir.path().join("workloads.yaml");
    std::fs::write(
        &workloads,
        r#"apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: apps}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres:16}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: apps}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: apps}
data: {color: blue}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: apps}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: once, image: busybox, command: [sh, -c, "true"]}]
"#,
    )
    .unwrap();
    k.ok(&["apply", "-f", workloads.to_str().unwrap()]);
    assert!(
        k.try_get(&["rb", "-n", "apps", "late-deployment"])
            .unwrap()
            .is_none(),
        "a binding for a template no policy selects"
    );
    let policies = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: everywhere, namespace: apps}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: late}
  - {apiVersion: apps/v1, kind: StatefulSet}
  - {apiVersion: apps/v1, kind: DaemonSet}
  - {apiVersion: v1, kind: ConfigMap, name: settings}
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: batch, namespace: apps}
spec:
  resourceSelectors:
  - {apiVersion: batch/v1, kind: Job, name: once}
  placement:
    clusterAffinity: {clusterNames: [member2]}
"#;
    env.apply(k, "policies", policies);

    env.wait("late claimed and in every member", || {
        let got = replicas_by_member(&env, "apps", "late")?;
        if got.values().all(|n| *n == Some(1)) {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
    let late = k.get_json(&["deploy", "-n", "apps", "late"]);
    let pp = k.get_json(&["pp", "-n", "apps", "everywhere"]);
    let pp_id = pp["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"].clone();
    assert!(
        pp_id.is_string(),
        "the policy has no permanent-id: {}",
        pp["metadata"]
    );
    assert_eq!(
        late["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"], pp_id,
        "the template is not claimed by the late policy: {}",
        late["metadata"]
    );

    env.wait("settings ConfigMap in every member", || {
        for m in MEMBERS {
            let cm = env.member(m).try_get(&["cm", "-n", "apps", "settings"])?;
            if cm.as_ref().map(|c| &c["data"]["color"]) != Some(&Value::from("blue")) {
                return Err(format!("{m}: {cm:?}"));
            }
        }
        Ok(())
    });
    // StatefulSet: 2 per member, readyReplicas summed on the host.
    env.wait("db readyReplicas 6 on the host", || {
        let s = k.get_json(&["sts", "-n", "apps", "db"]);
        if s["status"]["readyReplicas"] == 6 {
            Ok(())
        } else {
            Err(s["status"].to_string())
        }
    });
    for m in MEMBERS {
        let s = env.member(m).get_json(&["sts", "-n", "apps", "db"]);
        assert_eq!(s["spec"]["replicas"], 2, "{m}: {}", s["spec"]);
    }
    // DaemonSet: one pod per node, 4 + 3 + 2.
    env.wait("agent numberReady 9 on the host", || {
        let d = k.get_json(&["ds", "-n", "apps", "agent"]);
        if d["status"]["numberReady"] == 9 {
            Ok(())
        } else {
            Err(d["status"].to_string())
        }
    });
    // Job: only member2 runs it; the host reports its completions.
    env.wait("once succeeded == completions on the host", || {
        let j = k.get_json(&["job", "-n", "apps", "once"]);
        if j["status"]["succeeded"] == 3 {
            Ok(())
        } else {
            Err(j["status"].to_string())
        }
    });
    for m in ["member1", "member3"] {
        assert!(
            env.member(m)
                .try_get(&["job", "-n", "apps", "once"])
                .unwrap()
                .is_none(),
            "Job once propagated to {m} outside its policy"
        );
    }

    // --- A CRD, a custom resource of it and a ClusterRole.
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: widgets-crd}
spec:
  resourceSelectors:
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: widgets.example.com}
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: reader-role}
spec:
  resourceSelectors:
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: widget-reader}
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-reader}
rules:
- apiGroups: [example.com]
  resources: [widgets]
  verbs: [get, list, watch]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: widgets, namespace: apps}
spec:
  resourceSelectors:
  - {apiVersion: example.com/v1, kind: Widget}
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
"#;
    env.apply(k, "crd", crd);
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: apps}\nspec: {size: 3}\n";
    env.wait("widget-reader in every member", || {
        for m in MEMBERS {
            let role = env.member(m).try_get(&["clusterrole", "widget-reader"])?;
            if role.as_ref().map(|r| &r["rules"][0]["resources"][0])
                != Some(&Value::from("widgets"))
            {
                return Err(format!("{m}: {role:?}"));
            }
        }
        Ok(())
    });
    env.wait(
        "kubectl get crb: widget-reader-clusterrole SCHEDULED and FULLYAPPLIED",
        || {
            let table = k.ok(&["get", "crb", "--no-headers"]);
            let role = row(&table, "widget-reader-clusterrole");
            if role.len() >= 3 && role[1] == "True" && role[2] == "True" {
                Ok(())
            } else {
                Err(table)
            }
        },
    );
    // The CRD: member-sim must serve apiextensions.k8s.io for it to be scheduled anywhere;
    // then the host serves the new kind once the CRD is established.
    env.wait("the Widget applied on the host", || {
        let out = env.try_apply(k, "widget", widget);
        if out.status.success() {
            Ok(())
        } else {
            Err(out.stderr)
        }
    });
    env.wait(
        "kubectl get crb: the CRD's binding SCHEDULED and FULLYAPPLIED",
        || {
            let table = k.ok(&["get", "crb", "--no-headers"]);
            let crd = row(&table, "widgets.example.com-customresourcedefinition");
            if crd.len() >= 3 && crd[1] == "True" && crd[2] == "True" {
                Ok(())
            } else {
                let crb = k.get_json(&["crb", "widgets.example.com-customresourcedefinition"]);
                Err(format!("{table}\n{}", crb["status"]))
            }
        },
    );
    // The scheduler places Widgets only on members whose Cluster status lists the API, and
    // re-places the Duplicated binding when a member starts to list it: the status controller
    // re-reads a member's discovery every --cluster-api-enablements-period (60 s), so this
    // can take that long after the CRD reached the member.
    env.wait_for(
        Duration::from_secs(150),
        "widgets served in every member with w1 in it",
        || {
            for m in MEMBERS {
                let out = env.member(m).run(&["get", "widgets", "-A", "-o", "json"]);
                if !out.status.success() {
                    return Err(format!("{m}: {}", out.stderr));
                }
                let list: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
                let found = list["items"].as_array().into_iter().flatten().any(|w| {
                    w["metadata"]["name"] == "w1"
                        && w["metadata"]["namespace"] == "apps"
                        && w["spec"]["size"] == 3
                });
                if !found {
                    return Err(format!("{m}: {list}"));
                }
            }
            Ok(())
        },
    );
}

/// Scenarios 4 and 7: conflicts with objects members already have, a member rejecting a
/// manifest, invalid policies.
#[test]
fn conflicts_rejections_and_invalid_policies() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::start(dir.path());
    let k = &env.host;
    let m2 = env.member("member2");

    k.ok(&["create", "namespace", "conf"]);
    env.wait("conf in member2", || {
        m2.try_get(&["namespace", "conf"])?
            .map(|_| ())
            .ok_or_else(|| "not yet".to_string())
    });

    // --- Abort (the default): member2's own ConfigMap stays, its Work says why.
    m2.ok(&[
        "create",
        "configmap",
        "mine",
        "-n",
        "conf",
        "--from-literal=owner=member2",
    ]);
    k.ok(&[
        "create",
        "configmap",
        "mine",
        "-n",
        "conf",
        "--from-literal=owner=host",
    ]);
    env.apply(
        k,
        "mine-policy",
        r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: mine, namespace: conf}
spec:
  resourceSelectors:
  - {apiVersion: v1, kind: ConfigMap, name: mine}
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
"#,
    );
    env.wait("mine applied in member1 and member3", || {
        for m in ["member1", "member3"] {
            let cm = env.member(m).try_get(&["cm", "-n", "conf", "mine"])?;
            if cm.as_ref().map(|c| &c["data"]["owner"]) != Some(&Value::from("host")) {
                return Err(format!("{m}: {cm:?}"));
            }
        }
        Ok(())
    });
    let applied = env.wait("member2's Work for mine Applied False", || {
        let c = work_applied(k, "member2", "ConfigMap", "conf", "mine")?;
        if c["status"] == "False" {
            Ok(c)
        } else {
            Err(c.to_string())
        }
    });
    let message = applied["message"].as_str().unwrap_or_default();
    assert!(message.contains("already exists"), "{applied}");
    let cm = m2.get_json(&["cm", "-n", "conf", "mine"]);
    assert_eq!(
        cm["data"]["owner"], "member2",
        "Abort overwrote member2's ConfigMap"
    );
    env.wait("FULLYAPPLIED False for mine", || {
        let table = k.ok(&["get", "rb", "-n", "conf", "--no-headers"]);
        let r = row(&table, "mine-configmap");
        if r.len() >= 3 && r[2] == "False" {
            Ok(())
        } else {
            Err(table)
        }
    });

    // --- Overwrite: the same object is taken over.
    k.ok(&[
        "patch",
        "pp",
        "mine",
        "-n",
        "conf",
        "--type=merge",
        "-p",
        r#"{"spec":{"conflictResolution":"Overwrite"}}"#,
    ]);
    env.wait("member2's mine taken over", || {
        let cm = m2.get_json(&["cm", "-n", "conf", "mine"]);
        let c = work_applied(k, "member2", "ConfigMap", "conf", "mine")?;
        if cm["data"]["owner"] == "host" && c["status"] == "True" {
            Ok(())
        } else {
            Err(format!("data {}, Applied {c}", cm["data"]))
        }
    });

    // --- A member rejecting the manifest. member-sim has no ResourceQuota admission (a quota
    // on count/configmaps would not make it answer 403), so member2 is made to refuse with
    // an immutable ConfigMap of the same name: taking it over (Overwrite) changes its data,
    // which member2 refuses with 422 "field is immutable when `immutable` is set".
    env.apply(
        m2,
        "locked-member2",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: locked, namespace: conf}\nimmutable: true\ndata: {owner: member2}\n",
    );
    env.apply(
        k,
        "locked",
        r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: locked, namespace: conf}
spec:
  conflictResolution: Overwrite
  resourceSelectors:
  - {apiVersion: v1, kind: ConfigMap, name: locked}
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: locked, namespace: conf}
data: {owner: host}
"#,
    );
    let rejected = env.wait("member2's Work for locked Applied False", || {
        let c = work_applied(k, "member2", "ConfigMap", "conf", "locked")?;
        if c["status"] == "False" {
            Ok(c)
        } else {
            Err(c.to_string())
        }
    });
    assert!(
        rejected["message"]
            .as_str()
            .unwrap_or_default()
            .contains("field is immutable"),
        "member2's message is not in the Work: {rejected}"
    );
    for m in ["member1", "member3"] {
        env.wait(&format!("locked applied in {m}"), || {
            let c = work_applied(k, m, "ConfigMap", "conf", "locked")?;
            let cm = env.member(m).try_get(&["cm", "-n", "conf", "locked"])?;
            if c["status"] == "True"
                && cm.as_ref().map(|c| &c["data"]["owner"]) == Some(&Value::from("host"))
            {
                Ok(())
            } else {
                Err(format!("Applied {c}, object {cm:?}"))
            }
        });
    }
    assert_eq!(
        m2.get_json(&["cm", "-n", "conf", "locked"])["data"]["owner"],
        "member2"
    );
    env.wait("SyncFailed for member2 on the template's events", || {
        let text = k.ok(&["describe", "cm", "-n", "conf", "locked"]);
        let ok = text
            .lines()
            .any(|l| l.contains("SyncFailed") && l.contains("member2") && l.contains("immutable"));
        if ok { Ok(()) } else { Err(text) }
    });

    // --- Invalid policies: 422 from kubectl apply, nothing stored.
    let bogus = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: bogus, namespace: default}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment}
  placement:
    replicaScheduling: {replicaSchedulingType: Bogus}
"#;
    let out = env.try_apply(k, "bogus", bogus);
    assert!(
        !out.status.success(),
        "replicaSchedulingType Bogus accepted: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains("is invalid") && out.stderr.contains("replicaSchedulingType"),
        "{}",
        out.stderr
    );
    assert!(
        k.try_get(&["pp", "-n", "default", "bogus"])
            .unwrap()
            .is_none()
    );

    let empty = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: empty, namespace: default}
spec:
  resourceSelectors: []
  placement: {}
"#;
    let out = env.try_apply(k, "empty", empty);
    assert!(
        !out.status.success(),
        "empty resourceSelectors accepted: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains("is invalid") && out.stderr.contains("resourceSelectors"),
        "{}",
        out.stderr
    );
    assert!(
        k.try_get(&["pp", "-n", "default", "empty"])
            .unwrap()
            .is_none()
    );

    // A labelSelector operator that is not In, NotIn, Exists or DoesNotExist is refused (422
    // `Unsupported value: "Foo"`), as Kubernetes' label selector validation does.
    let foo = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: foo, namespace: default}
spec:
  resourceSelectors:
  - apiVersion: v1
    kind: ConfigMap
    labelSelector:
      matchExpressions: [{key: app, operator: Foo, values: [x]}]
"#;
    let out = env.try_apply(k, "foo", foo);
    let stored = k.try_get(&["pp", "-n", "default", "foo"]).unwrap();
    assert!(
        !out.status.success() && stored.is_none(),
        "a labelSelector with operator Foo was accepted and stored: {}{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stderr.contains("is invalid"), "{}", out.stderr);
}

/// Scenario 8: kill -9 of local-up mid-rollout, restart on the same data directory, same end
/// state.
#[test]
fn kill_nine_mid_rollout_converges_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::start(dir.path());
    env.host.ok(&["create", "namespace", "crash"]);
    env.wait("crash namespace in every member", || {
        for m in MEMBERS {
            if env.member(m).try_get(&["namespace", "crash"])?.is_none() {
                return Err(format!("not in {m}"));
            }
        }
        Ok(())
    });
    let manifest = format!(
        "{}---\n{}",
        deployment_yaml("crash", "app", 6, "500m", "nginx:1.25"),
        dynamic_policy_yaml("crash", "app")
    );
    env.apply(&env.host, "app", &manifest);
    // SIGKILL at once: the rollout is at most a few milliseconds old.
    env.up.child.kill().expect("SIGKILL local-up");
    let _ = env.up.child.wait();
    // How far the rollout got before the kill: the members' applies in local-up's log.
    let log = env.up.log_text();
    let applied_before_kill = log
        .lines()
        .filter(|l| {
            l.contains("/namespaces/crash/deployments/app")
                && l.contains("verb=\"patch\"")
                && l.contains("user=\"flotilla\"")
        })
        .count();
    eprintln!("killed local-up after {applied_before_kill} member applies of crash/app");

    // Restart on the same data directory.
    let up = start_local_up(&env.data, &["--members", "3"]);
    env.host = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache2"),
    );
    env.up = up;
    env.attach_members("cache2");
    env.wait_clusters_ready();
    let k = &env.host;

    let rb = env.wait("app-deployment scheduled over 6 replicas", || {
        let rb = k
            .try_get(&["rb", "-n", "crash", "app-deployment"])?
            .ok_or("no binding")?;
        let sum: i64 = rb["spec"]["clusters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["replicas"].as_i64().unwrap_or(0))
            .sum();
        if sum == 6 && condition(&rb, "FullyApplied").is_some_and(|c| c["status"] == "True") {
            Ok(rb)
        } else {
            Err(rb["spec"]["clusters"].to_string() + &rb["status"].to_string())
        }
    });
    let placed: BTreeMap<String, i64> = rb["spec"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["replicas"].as_i64().unwrap(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    env.wait("members hold the binding's replicas", || {
        let got = replicas_by_member(&env, "crash", "app")?;
        for m in MEMBERS {
            let want = placed.get(m).copied();
            let have = got[m];
            if have.unwrap_or(0) != want.unwrap_or(0) {
                return Err(format!("placed {placed:?}, members {got:?}"));
            }
        }
        Ok(())
    });
    wait_host_ready(&env, "crash", "app", "6/6");
    // Exactly one Work per target cluster, none elsewhere.
    let works = works_for(k, "Deployment", "crash", "app");
    let mut per_ns: BTreeMap<String, usize> = BTreeMap::new();
    for (ns, _) in &works {
        *per_ns.entry(ns.clone()).or_default() += 1;
    }
    let want_ns: BTreeMap<String, usize> = rb["spec"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (format!("karmada-es-{}", c["name"].as_str().unwrap()), 1))
        .collect();
    assert_eq!(
        per_ns,
        want_ns,
        "Works per cluster after the restart:\n{}",
        k.ok(&["get", "works", "-A"])
    );
}

/// The members holding `kind` NS/NAME (not being deleted), in order.
fn members_with(env: &Env, kind: &str, ns: &str, name: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for m in MEMBERS {
        if env
            .member(m)
            .try_get(&[kind, "-n", ns, name])?
            .is_some_and(|o| o["metadata"]["deletionTimestamp"].is_null())
        {
            out.push(m.to_string());
        }
    }
    Ok(out)
}

/// A PropagationPolicy for Deployment NS/NAME on `clusters`, Duplicated, with propagateDeps.
fn pinned_policy_yaml(ns: &str, name: &str, clusters: &[&str]) -> String {
    format!(
        r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: {ns}}}
spec:
  propagateDeps: true
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  placement:
    clusterAffinity:
      clusterNames: [{}]
    replicaScheduling: {{replicaSchedulingType: Duplicated}}
"#,
        clusters.join(", ")
    )
}

/// Scenario 9 (issue 13): OverridePolicies and a ClusterOverridePolicy shape each member's
/// copy (`kubectl get deploy -o yaml` in each member shows exactly the expected manifest);
/// deleting a policy restores the plain template; a fieldOverrider on a non-string field fails
/// in its cluster only; `propagateDeps` sends a ConfigMap and a Secret where the Deployment
/// lands, they follow it when it moves, and a ConfigMap another Deployment still needs stays.
#[test]
fn overrides_and_dependencies_with_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::start(dir.path());
    let k = &env.host;
    k.ok(&["label", "cluster", "member1", "region=eu"]);
    k.ok(&["create", "namespace", "shop"]);
    k.ok(&[
        "create",
        "configmap",
        "conf",
        "-n",
        "shop",
        "--from-literal=mode=fast",
    ]);
    k.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "shop",
        "--from-literal=token=t",
    ]);
    env.apply(
        k,
        "web-pp",
        &pinned_policy_yaml("shop", "web", &["member1", "member2"]),
    );
    env.apply(
        k,
        "api-pp",
        &pinned_policy_yaml("shop", "api", &["member1"]),
    );
    let web = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      volumes: [{name: conf, configMap: {name: conf}}]
      containers:
      - name: web
        image: shop/web:1.0
        envFrom: [{secretRef: {name: creds}}]
        volumeMounts: [{name: conf, mountPath: /etc/web}]
"#;
    let api = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop, labels: {app: api}}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      volumes: [{name: conf, configMap: {name: conf}}]
      containers: [{name: api, image: shop/api:1.0}]
"#;
    env.apply(k, "web", web);
    env.apply(k, "api", api);
    let policies = r#"apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: team-label}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
  - overriders:
      labelsOverrider: [{operator: add, value: {team: platform}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: team-label, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
  - overriders:
      labelsOverrider: [{operator: add, value: {team: shop}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: eu-registry, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
  - targetCluster:
      labelSelector: {matchLabels: {region: eu}}
    overriders:
      imageOverrider: [{component: Registry, operator: replace, value: registry.eu.example.com}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: small-member2, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      plaintext:
      - {path: /spec/replicas, operator: replace, value: 1}
      - {path: /spec/template/spec/containers/0/resources, operator: add, value: {limits: {cpu: 500m}}}
"#;
    env.apply(k, "overrides", policies);

    // The manifest each member should hold: the host's template, changed as the policies say.
    let template = k.get_json(&["deploy", "-n", "shop", "web"]);
    let expected = |member: &str, eu: bool| {
        let mut spec = template["spec"].clone();
        if member == "member2" {
            spec["replicas"] = 1.into();
        }
        let c = &mut spec["template"]["spec"]["containers"][0];
        if eu {
            c["image"] = "registry.eu.example.com/shop/web:1.0".into();
        }
        if member == "member2" {
            c["resources"] = serde_json::json!({"limits": {"cpu": "500m"}});
        }
        spec
    };
    let compare = |eu_members: &[&str]| {
        env.wait("each member's copy as its overrides say", || {
            for m in ["member1", "member2"] {
                let got = env
                    .member(m)
                    .try_get(&["deploy", "-n", "shop", "web"])?
                    .ok_or_else(|| format!("web not in {m} yet"))?;
                let want = expected(m, eu_members.contains(&m));
                // The member fills defaults in (strategy, terminationMessagePath, ...): every
                // field the template has must be as expected, and the overridden ones exact.
                let fields = [
                    "/replicas",
                    "/template/spec/containers/0/image",
                    "/template/spec/containers/0/resources",
                    "/template/spec/containers/0/envFrom",
                    "/template/spec/volumes",
                    "/selector",
                    "/template/metadata/labels",
                ];
                for f in fields {
                    let (g, w) = (got["spec"].pointer(f), want.pointer(f));
                    if g != w {
                        return Err(format!("{m} spec{f}: {g:?}, want {w:?}"));
                    }
                }
                // The OverridePolicy wins over the ClusterOverridePolicy on the same label.
                if got["metadata"]["labels"]["team"] != "shop" {
                    return Err(format!("{m} labels {}", got["metadata"]["labels"]));
                }
            }
            Ok(())
        })
    };
    compare(&["member1"]);
    let works = works_for(k, "Deployment", "shop", "web");
    let (_, w1) = works
        .iter()
        .find(|(ns, _)| ns == "karmada-es-member1")
        .unwrap();
    let applied = w1["metadata"]["annotations"]["policy.karmada.io/applied-overrides"]
        .as_str()
        .unwrap_or_default();
    assert!(
        applied.contains("eu-registry") && applied.contains("team-label"),
        "{applied}"
    );
    assert!(
        w1["metadata"]["annotations"]["policy.karmada.io/applied-cluster-overrides"]
            .as_str()
            .is_some_and(|a| a.contains("team-label"))
    );

    // Dependencies: where the Deployments are, nowhere else.
    env.wait("ConfigMap and Secret where their Deployments are", || {
        let cm = members_with(&env, "configmap", "shop", "conf")?;
        let secret = members_with(&env, "secret", "shop", "creds")?;
        if cm == ["member1", "member2"] && secret == ["member1", "member2"] {
            Ok(())
        } else {
            Err(format!("conf in {cm:?}, creds in {secret:?}"))
        }
    });

    // Deleting the registry override restores the plain image in member1.
    k.ok(&["delete", "overridepolicy", "-n", "shop", "eu-registry"]);
    compare(&[]);

    // A fieldOverrider on a field that is not a string fails in member2 only.
    let bad = r#"apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: not-a-document, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      fieldOverrider: [{fieldPath: /spec/replicas, yaml: [{subPath: /a, operator: add, value: 1}]}]
"#;
    env.apply(k, "bad", bad);
    let message = env.wait("member2's failure on the binding", || {
        let rb = k.get_json(&["rb", "-n", "shop", "web-deployment"]);
        let items = rb["status"]["aggregatedStatus"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let m2 = items.iter().find(|i| i["clusterName"] == "member2");
        let m1 = items.iter().find(|i| i["clusterName"] == "member1");
        match (m1, m2) {
            (Some(a), Some(b)) if a["applied"] == true && b["applied"] == false => {
                Ok(b["appliedMessage"].as_str().unwrap_or_default().to_string())
            }
            _ => Err(format!("{items:?}")),
        }
    });
    assert!(message.contains("not-a-document"), "{message}");
    k.ok(&["delete", "overridepolicy", "-n", "shop", "not-a-document"]);

    // web moves to member2 and member3: its Secret follows; the ConfigMap stays in member1
    // for api.
    env.apply(
        k,
        "web-pp",
        &pinned_policy_yaml("shop", "web", &["member2", "member3"]),
    );
    env.wait("dependencies follow web", || {
        let cm = members_with(&env, "configmap", "shop", "conf")?;
        let secret = members_with(&env, "secret", "shop", "creds")?;
        if cm == MEMBERS && secret == ["member2", "member3"] {
            Ok(())
        } else {
            Err(format!("conf in {cm:?}, creds in {secret:?}"))
        }
    });
    let rb = k.get_json(&["rb", "-n", "shop", "conf-configmap"]);
    let required: Vec<&str> = rb["spec"]["requiredBy"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(required, ["api-deployment", "web-deployment"]);
    k.ok(&["delete", "deploy", "-n", "shop", "api"]);
    env.wait("conf leaves member1 with api", || {
        let cm = members_with(&env, "configmap", "shop", "conf")?;
        if cm == ["member2", "member3"] {
            Ok(())
        } else {
            Err(format!("conf in {cm:?}"))
        }
    });
}
