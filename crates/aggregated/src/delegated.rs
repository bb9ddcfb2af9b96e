//! Authorization delegated to the host: each decision is a SubjectAccessReview the host
//! answers with its RBAC, cached briefly (allowed and denied answers alike) so a watch or a
//! burst of proxied requests costs one review.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use flotilla_apimachinery::ApiError;
use flotilla_apiserver::authz::{Authorizer, RequestAttributes};
use flotilla_generic_store::UserInfo;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use parking_lot::Mutex;

const TTL: Duration = Duration::from_secs(10);
const MAX_ENTRIES: usize = 10_000;

type Key = (
    String,
    Vec<String>,
    String,
    bool,
    String,
    String,
    String,
    String,
    String,
    String,
);

/// A decision: allowed, or denied with the host's reason, and when it was made.
type Decision = (Instant, Result<(), String>);

pub struct DelegatedAuthorizer {
    reviews: Api<SubjectAccessReview>,
    cache: Mutex<HashMap<Key, Decision>>,
}

impl DelegatedAuthorizer {
    pub fn new(host: kube::Client) -> Self {
        Self {
            reviews: Api::all(host),
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn key(user: &UserInfo, a: &RequestAttributes) -> Key {
        (
            user.name.clone(),
            user.groups.clone(),
            a.verb.clone(),
            a.resource_request,
            a.api_group.clone(),
            a.resource.clone(),
            a.subresource.clone(),
            a.namespace.clone(),
            a.name.clone(),
            a.path.clone(),
        )
    }

    async fn review(
        &self,
        user: &UserInfo,
        a: &RequestAttributes,
    ) -> Result<Result<(), String>, ApiError> {
        let mut spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            groups: Some(user.groups.clone()),
            uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone().into_iter().collect()),
            ..Default::default()
        };
        if a.resource_request {
            spec.resource_attributes = Some(ResourceAttributes {
                verb: Some(a.verb.clone()),
                group: Some(a.api_group.clone()),
                resource: Some(a.resource.clone()),
                subresource: (!a.subresource.is_empty()).then(|| a.subresource.clone()),
                namespace: (!a.namespace.is_empty()).then(|| a.namespace.clone()),
                name: (!a.name.is_empty()).then(|| a.name.clone()),
                ..Default::default()
            });
        } else {
            spec.non_resource_attributes = Some(NonResourceAttributes {
                path: Some(a.path.clone()),
                verb: Some(a.verb.clone()),
            });
        }
        let review = SubjectAccessReview {
            spec,
            ..Default::default()
        };
        let answer = self
            .reviews
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| {
                ApiError::internal(format!(
                    "authorization is delegated to the host, which did not answer: {e}"
                ))
            })?;
        let status = answer.status.unwrap_or_default();
        Ok(if status.allowed {
            Ok(())
        } else {
            Err(status.reason.unwrap_or_default())
        })
    }
}

#[async_trait::async_trait]
impl Authorizer for DelegatedAuthorizer {
    async fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Result<(), ApiError> {
        if user.groups.iter().any(|g| g == "system:masters") {
            return Ok(());
        }
        if crate::search::authorized_by_handler(attrs) {
            // The merged-read handler authorizes the request it carries instead.
            return Ok(());
        }
        let key = Self::key(user, attrs);
        let cached = self
            .cache
            .lock()
            .get(&key)
            .filter(|(at, _)| at.elapsed() < TTL)
            .map(|(_, r)| r.clone());
        let decision = match cached {
            Some(d) => d,
            None => {
                let d = self.review(user, attrs).await?;
                let mut cache = self.cache.lock();
                if cache.len() >= MAX_ENTRIES {
                    cache.retain(|_, (at, _)| at.elapsed() < TTL);
                }
                cache.insert(key, (Instant::now(), d.clone()));
                d
            }
        };
        decision.map_err(|reason| {
            let rbac = attrs.as_rbac(user);
            flotilla_rbac::forbidden_error(&rbac, &reason)
        })
    }
}
