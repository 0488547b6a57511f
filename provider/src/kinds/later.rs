//! The namespaced kinds at `v1beta1`: each is its `v1alpha1` kind behind
//! the version step. The cloud's wire names are v1alpha1's (fakecloud's
//! API did not change when ours did), so a call takes the step down
//! (`forProvider`, a create body, an update patch) and an observation
//! takes it up: drift, late initialisation and `status.atProvider` are all
//! computed in v1beta1's names, and the cloud calls are the ones the
//! v1alpha1 kinds already make. A kind whose cloud changes with its API
//! would implement `CloudKind` on the new parameters directly instead.

use crossplane_types::conversion::VersionStep;
use runtime::ExternalError;
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// An older kind's observation, serialized in a later version's shape: the
/// later kind's `status.atProvider`, and what its drift is computed on.
pub struct Upgraded<O> {
    /// The cloud's model, as the older kind reads it.
    pub inner: O,
    step: &'static VersionStep,
}

impl<O> Upgraded<O> {
    pub fn new(inner: O, step: &'static VersionStep) -> Self {
        Self { inner, step }
    }
}

impl<O: Serialize> Serialize for Upgraded<O> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = serde_json::to_value(&self.inner).map_err(serde::ser::Error::custom)?;
        self.step.up(value).serialize(serializer)
    }
}

/// `params` (a later version's) as the older version's parameters.
pub fn older<New: Serialize, Old: DeserializeOwned>(
    params: &New,
    step: &'static VersionStep,
) -> Result<Old, ExternalError> {
    let value = serde_json::to_value(params)
        .map_err(|e| ExternalError::InvalidSpec(format!("cannot read forProvider: {e}")))?;
    serde_json::from_value(step.down(value)).map_err(|e| {
        ExternalError::InvalidSpec(format!("forProvider has no {} equivalent: {e}", step.older))
    })
}

/// A JSON object taken down a step: still an object, since a step only
/// moves fields inside one.
pub fn down_map(
    map: serde_json::Map<String, Value>,
    step: &'static VersionStep,
) -> serde_json::Map<String, Value> {
    match step.down(Value::Object(map)) {
        Value::Object(map) => map,
        _ => unreachable!("a step moves fields inside an object"),
    }
}

/// Implements `CloudKind` on a later version's parameters by way of the
/// older version's, with the later version's own top-level field names
/// (checked against the older kind's in this module's tests).
macro_rules! later_version {
    ([$($generics:tt)*] $new:ty => $old:ty, $step:expr,
     steering: [$($steering:literal),*], create_only: [$($create_only:literal),*]) => {
        impl<$($generics)*> runtime::CloudKind<crate::cloud::FakecloudConnect> for $new {
            type Observation = $crate::kinds::later::Upgraded<
                <$old as runtime::CloudKind<crate::cloud::FakecloudConnect>>::Observation,
            >;

            const STEERING_FIELDS: &'static [&'static str] = &[$($steering),*];

            const CREATE_ONLY_FIELDS: &'static [&'static str] = &[$($create_only),*];

            const SENSITIVE_FIELDS: &'static [&'static str] =
                <$old as runtime::CloudKind<crate::cloud::FakecloudConnect>>::SENSITIVE_FIELDS;

            const TAGS: Option<runtime::TagsField> =
                <$old as runtime::CloudKind<crate::cloud::FakecloudConnect>>::TAGS;

            async fn observe(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
                external_name: &str,
            ) -> Result<Option<Self::Observation>, runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                Ok(older
                    .observe(session, external_name)
                    .await?
                    .map(|o| $crate::kinds::later::Upgraded::new(o, $step)))
            }

            async fn details_before_create(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
            ) -> Result<runtime::Details, runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                older.details_before_create(session).await
            }

            async fn create(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
                external_name: Option<&str>,
                desired: serde_json::Value,
                idempotency_key: &str,
            ) -> Result<runtime::Created<Self::Observation>, runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                let created = older
                    .create(session, external_name, $step.down(desired), idempotency_key)
                    .await?;
                Ok(runtime::Created {
                    external_name: created.external_name,
                    connection_details: created.connection_details,
                    observed: created
                        .observed
                        .map(|o| $crate::kinds::later::Upgraded::new(o, $step)),
                })
            }

            async fn find_tagged(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
                tags: &[(&'static str, String)],
            ) -> Result<Vec<String>, runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                older.find_tagged(session, tags).await
            }

            async fn update(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
                external_name: &str,
                patch: serde_json::Map<String, serde_json::Value>,
            ) -> Result<runtime::Details, runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                older
                    .update(session, external_name, $crate::kinds::later::down_map(patch, $step))
                    .await
            }

            async fn delete(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
                external_name: &str,
            ) -> Result<(), runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                older.delete(session, external_name).await
            }

            async fn write_only_drift(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
            ) -> Result<serde_json::Map<String, serde_json::Value>, runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                older.write_only_drift(session).await
            }

            fn readiness(observed: &Self::Observation) -> runtime::Readiness {
                <$old as runtime::CloudKind<crate::cloud::FakecloudConnect>>::readiness(&observed.inner)
            }

            async fn connection_details(
                &self,
                session: &runtime::Session<'_, fakecloud::client::Client>,
                observed: &Self::Observation,
            ) -> Result<runtime::Details, runtime::ExternalError> {
                let older: $old = $crate::kinds::later::older(self, $step)?;
                older.connection_details(session, &observed.inner).await
            }
        }
    };
}

use apis::kinds::{database_instance, nodegroup, subnet, vpc};
use crossplane_types::Scope;

later_version!(
    [] vpc::v1beta1::VpcParameters => vpc::VpcParameters,
    &vpc::v1beta1::VERSIONS.steps[0],
    steering: ["region"], create_only: ["cidrBlock"]
);
later_version!(
    [S: Scope] subnet::v1beta1::SubnetParameters<S> => subnet::SubnetParameters<S>,
    &subnet::v1beta1::VERSIONS.steps[0],
    steering: ["region"], create_only: ["vpcId", "cidrBlock", "availabilityZone"]
);
later_version!(
    [S: Scope] nodegroup::v1beta1::NodeGroupParameters<S> => nodegroup::NodeGroupParameters<S>,
    &nodegroup::v1beta1::VERSIONS.steps[0],
    steering: ["region", "clusterName"], create_only: ["subnetIds", "nodeRole", "instanceTypes"]
);
later_version!(
    [S: Scope] database_instance::v1beta1::DatabaseInstanceParameters<S>
        => database_instance::DatabaseInstanceParameters<S>,
    &database_instance::v1beta1::VERSIONS.steps[0],
    steering: ["region", "adminPasswordSecretRef"],
    create_only: ["engine", "adminUsername", "subnetIds"]
);

#[cfg(test)]
mod tests {
    use crossplane_types::Namespaced;
    use crossplane_types::conversion::VersionStep;
    use runtime::CloudKind;
    use serde_json::{Map, Value};

    use super::*;
    use crate::cloud::FakecloudConnect;

    /// `fields` (top-level keys of the older version) in the newer
    /// version's names.
    fn up(step: &VersionStep, fields: &[&str]) -> Vec<String> {
        let object: Map<String, Value> = fields
            .iter()
            .map(|f| ((*f).to_owned(), Value::Bool(true)))
            .collect();
        let mut names: Vec<String> = step
            .up(Value::Object(object))
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    fn sorted(fields: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = fields.iter().map(|f| (*f).to_owned()).collect();
        names.sort();
        names
    }

    fn same_fields<New, Old>(step: &VersionStep)
    where
        New: CloudKind<FakecloudConnect>,
        Old: CloudKind<FakecloudConnect>,
    {
        assert_eq!(sorted(New::STEERING_FIELDS), up(step, Old::STEERING_FIELDS));
        assert_eq!(
            sorted(New::CREATE_ONLY_FIELDS),
            up(step, Old::CREATE_ONLY_FIELDS)
        );
    }

    #[test]
    fn each_later_kind_names_the_older_kinds_fields_in_its_own_names() {
        same_fields::<vpc::v1beta1::VpcParameters, vpc::VpcParameters>(
            &vpc::v1beta1::VERSIONS.steps[0],
        );
        same_fields::<
            subnet::v1beta1::SubnetParameters<Namespaced>,
            subnet::SubnetParameters<Namespaced>,
        >(&subnet::v1beta1::VERSIONS.steps[0]);
        same_fields::<
            nodegroup::v1beta1::NodeGroupParameters<Namespaced>,
            nodegroup::NodeGroupParameters<Namespaced>,
        >(&nodegroup::v1beta1::VERSIONS.steps[0]);
        same_fields::<
            database_instance::v1beta1::DatabaseInstanceParameters<Namespaced>,
            database_instance::DatabaseInstanceParameters<Namespaced>,
        >(&database_instance::v1beta1::VERSIONS.steps[0]);
    }

    #[test]
    fn an_observation_reads_in_the_later_versions_names() {
        let step = &vpc::v1beta1::VERSIONS.steps[0];
        let observed = serde_json::json!({"region": "r", "enableDnsSupport": true, "instanceTenancy": "default"});
        let upgraded = Upgraded::new(observed, step);
        assert_eq!(
            serde_json::to_value(&upgraded).unwrap(),
            serde_json::json!({"region": "r", "dns": {"resolution": true}, "tenancy": "default"})
        );
    }

    #[test]
    fn parameters_go_down_to_the_older_version() {
        let new: vpc::v1beta1::VpcParameters = serde_json::from_value(serde_json::json!({
            "region": "r", "dns": {"hostnames": true}, "tenancy": "dedicated"
        }))
        .unwrap();
        let old: vpc::VpcParameters = older(&new, &vpc::v1beta1::VERSIONS.steps[0]).unwrap();
        assert_eq!(old.enable_dns_hostnames, Some(true));
        assert_eq!(old.enable_dns_support, None);
        assert_eq!(old.instance_tenancy, Some(vpc::InstanceTenancy::Dedicated));
    }
}
