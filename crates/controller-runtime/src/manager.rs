//! The manager of a process's controllers: one client of the host, one [`Tasks`] tree (each
//! component a child set, stopped in the order its owner chooses; the shared watches last),
//! one [`Reflector`] per watched kind shared by every controller that watches it, and the
//! controllers' metrics.

use std::any::Any;
use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use flotilla_tasks::Tasks;
use kube::Resource;
use kube::api::Api;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;

use crate::controller::{Controller, ControllerOptions};
use crate::metrics::ControllerMetrics;
use crate::reflector::{Reflector, ReflectorSpec};

/// The manager; share it as `Arc<Manager>`.
pub struct Manager {
    client: kube::Client,
    /// The shared watches' tasks.
    tasks: Tasks,
    reflectors: Mutex<HashMap<String, Box<dyn Any + Send + Sync>>>,
    metrics: Arc<ControllerMetrics>,
}

impl Manager {
    /// A manager of controllers reading the host through `client`: the root of their tasks.
    pub fn new(client: kube::Client) -> Arc<Self> {
        Self::with_tasks(client, Tasks::new())
    }

    /// A manager whose tasks are `tasks` (a child of a larger tree).
    pub fn with_tasks(client: kube::Client, tasks: Tasks) -> Arc<Self> {
        Arc::new(Self {
            client,
            tasks,
            reflectors: Mutex::default(),
            metrics: Arc::default(),
        })
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// A set of tasks for one component, stopped with the manager's (or alone).
    pub fn component_tasks(&self) -> Tasks {
        self.tasks.child()
    }

    /// The shared reflector of every `K` in the cluster (all of each object but its
    /// managedFields), started on first use.
    pub fn reflector<K>(&self) -> Reflector<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        self.reflector_with("all", ReflectorSpec::default)
    }

    /// The shared reflector named `variant` of `K` (a variant keeps only some objects, or
    /// some of each: see [`ReflectorSpec`]), started with `spec` on first use.
    pub fn reflector_with<K>(
        &self,
        variant: &str,
        spec: impl FnOnce() -> ReflectorSpec<K>,
    ) -> Reflector<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let key = format!("{}/{variant}", std::any::type_name::<K>());
        let mut reflectors = self.reflectors.lock();
        if let Some(existing) = reflectors
            .get(&key)
            .and_then(|r| r.downcast_ref::<Reflector<K>>())
        {
            return existing.clone();
        }
        let name = format!("{}-cache", K::plural(&()).to_lowercase());
        let name = if variant == "all" {
            name
        } else {
            format!("{name}-{variant}")
        };
        let reflector = Reflector::start(
            Api::<K>::all(self.client.clone()),
            spec(),
            &self.tasks,
            name,
        );
        reflectors.insert(key, Box::new(reflector.clone()));
        reflector
    }

    /// A controller named `name`, counted in the manager's metrics.
    pub fn controller<Key>(
        &self,
        name: &'static str,
        options: &ControllerOptions,
    ) -> Controller<Key>
    where
        Key: Clone + Eq + Hash + Send + Sync + Debug + 'static,
    {
        Controller::new(name, options, self.metrics.clone())
    }

    /// The controllers' metrics, for a controller that reports some itself.
    pub fn metrics(&self) -> &Arc<ControllerMetrics> {
        &self.metrics
    }

    /// The controllers' metrics in the Prometheus text format.
    pub fn metrics_text(&self) -> String {
        self.metrics.render()
    }

    /// Stops the shared watches (after every component that reads them has stopped).
    pub async fn stop(&self) {
        self.tasks.shutdown(flotilla_tasks::SHUTDOWN_GRACE).await;
    }
}

#[cfg(test)]
mod tests {
    // Test code: a panic is how a step reports failure.
    #![allow(clippy::unwrap_used)]

    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;
    use http_body_util::BodyExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    /// A client of an API that holds two ConfigMaps: LISTs answer them (and are counted),
    /// WATCHes stay open without events.
    fn fake_api(lists: Arc<AtomicUsize>) -> kube::Client {
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let lists = lists.clone();
            async move {
                let watch = req.uri().query().unwrap_or_default().contains("watch=true");
                let body = if watch {
                    http_body_util::StreamBody::new(futures::stream::pending::<
                        Result<http_body::Frame<Bytes>, Infallible>,
                    >())
                    .boxed()
                } else {
                    lists.fetch_add(1, Ordering::SeqCst);
                    let cm = |name: &str| {
                        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"}})
                    };
                    let list = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList",
                        "metadata": {"resourceVersion": "5"}, "items": [cm("a"), cm("b")]});
                    http_body_util::Full::new(Bytes::from(list.to_string()))
                        .map_err(|e: Infallible| match e {})
                        .boxed()
                };
                Ok::<_, Infallible>(http::Response::new(body))
            }
        });
        kube::Client::new(service, "default")
    }

    /// The names a subscriber was told of.
    type Seen = Arc<parking_lot::Mutex<Vec<String>>>;

    fn recorder() -> (Seen, impl Fn(&ConfigMap, bool) + Send + Sync) {
        let seen: Seen = Arc::default();
        let record = {
            let seen = seen.clone();
            move |cm: &ConfigMap, _deleted: bool| {
                seen.lock()
                    .push(cm.metadata.name.clone().unwrap_or_default());
            }
        };
        (seen, record)
    }

    #[tokio::test]
    async fn one_watch_per_kind_serves_every_subscriber_and_a_late_one_misses_nothing() {
        let lists = Arc::new(AtomicUsize::new(0));
        let manager = Manager::new(fake_api(lists.clone()));
        let first = manager.reflector::<ConfigMap>();
        let (seen_first, record) = recorder();
        first.subscribe(record);
        assert!(first.ready().await);
        // The first list is reported once it is in the store.
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while seen_first.lock().len() < 2 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();

        // A second controller asks for the same kind: the same store, no second watch, and
        // the objects already held are reported to it when it subscribes.
        let second = manager.reflector::<ConfigMap>();
        let (seen_second, record) = recorder();
        second.subscribe(record);
        let mut names = seen_second.lock().clone();
        names.sort();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(second.store().state().len(), 2);
        assert_eq!(lists.load(Ordering::SeqCst), 1, "one LIST for both");

        // Another variant of the kind is a watch of its own.
        let kept = manager.reflector_with::<ConfigMap>("only-a", || {
            ReflectorSpec::default().keep(|cm: &ConfigMap| cm.metadata.name.as_deref() == Some("a"))
        });
        assert!(kept.ready().await);
        assert_eq!(kept.store().state().len(), 1);
        assert_eq!(lists.load(Ordering::SeqCst), 2);
        manager.stop().await;
    }
}
