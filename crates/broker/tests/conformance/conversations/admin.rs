//! What an admin client asks a cluster about: log directories, leaders and reassignments,
//! ACLs, SCRAM users, client quotas, the cluster, its quorum and its features.

use super::{create_topic, s, topic, versions};
use crate::target::{Step, Target};
use bytes::Bytes;
use offsetlab_wire::kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use offsetlab_wire::kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use offsetlab_wire::kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use offsetlab_wire::kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use offsetlab_wire::kafka_protocol::messages::create_acls_request::AclCreation;
use offsetlab_wire::kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use offsetlab_wire::kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use offsetlab_wire::kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use offsetlab_wire::kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use offsetlab_wire::kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use offsetlab_wire::kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use offsetlab_wire::kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use offsetlab_wire::kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use offsetlab_wire::kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use offsetlab_wire::kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterPartitionReassignmentsRequest, AlterReplicaLogDirsRequest,
    AlterUserScramCredentialsRequest, ApiKey, BrokerId, CreateAclsRequest, DeleteAclsRequest,
    DescribeAclsRequest, DescribeClientQuotasRequest, DescribeClusterRequest, DescribeLogDirsRequest,
    DescribeQuorumRequest, DescribeTopicPartitionsRequest, DescribeUserScramCredentialsRequest,
    ElectLeadersRequest, ListPartitionReassignmentsRequest, UpdateFeaturesRequest,
};

pub fn log_dirs(t: &mut Target) -> Step<()> {
    let name = t.name("ld");
    create_topic(t, &name, 2, &[])?;
    super::produce_quietly(t, &name, 0, super::plain_batch(t, &[("a", "1"), ("b", "2")]))?;
    for v in versions(ApiKey::DescribeLogDirs) {
        t.ask(
            "named",
            v,
            DescribeLogDirsRequest::default().with_topics(Some(vec![
                DescribableLogDirTopic::default()
                    .with_topic(topic(&name))
                    .with_partitions(vec![0, 1, 9]),
                DescribableLogDirTopic::default()
                    .with_topic(topic(&t.name("ld-none")))
                    .with_partitions(vec![0]),
            ])),
        )?;
    }
    for v in versions(ApiKey::AlterReplicaLogDirs) {
        t.ask(
            "move",
            v,
            AlterReplicaLogDirsRequest::default().with_dirs(vec![AlterReplicaLogDir::default()
                .with_path(s("/nowhere"))
                .with_topics(vec![AlterReplicaLogDirTopic::default()
                    .with_name(topic(&name))
                    .with_partitions(vec![0])])]),
        )?;
    }
    Ok(())
}

pub fn partitions_admin(t: &mut Target) -> Step<()> {
    let name = t.name("pa");
    create_topic(t, &name, 2, &[])?;
    let node = BrokerId(t.ctx.node);
    for v in versions(ApiKey::ElectLeaders) {
        let req = ElectLeadersRequest::default()
            .with_timeout_ms(30_000)
            .with_topic_partitions(Some(vec![
                TopicPartitions::default()
                    .with_topic(topic(&name))
                    .with_partitions(vec![0, 1, 7]),
                TopicPartitions::default()
                    .with_topic(topic(&t.name("pa-none")))
                    .with_partitions(vec![0]),
            ]));
        t.ask("preferred", v, req.clone())?;
        if v >= 1 {
            t.ask("unclean", v, req.with_election_type(1))?;
        }
    }
    for v in versions(ApiKey::ListPartitionReassignments) {
        t.ask(
            "all",
            v,
            ListPartitionReassignmentsRequest::default()
                .with_timeout_ms(30_000)
                .with_topics(None),
        )?;
        t.ask(
            "named",
            v,
            ListPartitionReassignmentsRequest::default()
                .with_timeout_ms(30_000)
                .with_topics(Some(vec![ListPartitionReassignmentsTopics::default()
                    .with_name(topic(&name))
                    .with_partition_indexes(vec![0, 7])])),
        )?;
    }
    for v in versions(ApiKey::AlterPartitionReassignments) {
        let req = |parts: Vec<ReassignablePartition>| {
            AlterPartitionReassignmentsRequest::default()
                .with_timeout_ms(30_000)
                .with_topics(vec![ReassignableTopic::default()
                    .with_name(topic(&name))
                    .with_partitions(parts)])
        };
        t.ask(
            "to the same broker",
            v,
            req(vec![ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(Some(vec![node]))]),
        )?;
        t.ask(
            "to a broker that is not there",
            v,
            req(vec![ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(Some(vec![BrokerId(42)]))]),
        )?;
        t.ask(
            "cancel none",
            v,
            req(vec![ReassignablePartition::default()
                .with_partition_index(1)
                .with_replicas(None)]),
        )?;
        t.ask(
            "unknown partition",
            v,
            req(vec![ReassignablePartition::default()
                .with_partition_index(7)
                .with_replicas(Some(vec![node]))]),
        )?;
    }
    for v in versions(ApiKey::DescribeTopicPartitions) {
        t.ask(
            "named",
            v,
            DescribeTopicPartitionsRequest::default()
                .with_response_partition_limit(2000)
                .with_topics(vec![
                    TopicRequest::default().with_name(topic(&name)),
                    TopicRequest::default().with_name(topic(&t.name("pa-none"))),
                ]),
        )?;
        t.ask(
            "paged",
            v,
            DescribeTopicPartitionsRequest::default()
                .with_response_partition_limit(1)
                .with_topics(vec![TopicRequest::default().with_name(topic(&name))]),
        )?;
        t.ask(
            "from a cursor",
            v,
            DescribeTopicPartitionsRequest::default()
                .with_response_partition_limit(1)
                .with_cursor(Some(
                    Cursor::default()
                        .with_topic_name(topic(&name))
                        .with_partition_index(1),
                ))
                .with_topics(vec![TopicRequest::default().with_name(topic(&name))]),
        )?;
    }
    Ok(())
}

pub fn acls(t: &mut Target) -> Step<()> {
    let name = t.name("acl");
    for v in versions(ApiKey::DescribeAcls) {
        t.ask(
            "describe any",
            v,
            DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_pattern_type_filter(1)
                .with_operation(1)
                .with_permission_type(1),
        )?;
    }
    for v in versions(ApiKey::CreateAcls) {
        t.ask(
            "create",
            v,
            CreateAclsRequest::default().with_creations(vec![AclCreation::default()
                .with_resource_type(2)
                .with_resource_name(s(&name))
                .with_resource_pattern_type(3)
                .with_principal(s("User:alice"))
                .with_host(s("*"))
                .with_operation(3)
                .with_permission_type(3)]),
        )?;
    }
    for v in versions(ApiKey::DeleteAcls) {
        t.ask(
            "delete",
            v,
            DeleteAclsRequest::default().with_filters(vec![DeleteAclsFilter::default()
                .with_resource_type_filter(2)
                .with_resource_name_filter(Some(s(&name)))
                .with_pattern_type_filter(3)
                .with_operation(1)
                .with_permission_type(1)]),
        )?;
    }
    Ok(())
}

pub fn scram(t: &mut Target) -> Step<()> {
    let user = t.name("alice");
    for v in versions(ApiKey::DescribeUserScramCredentials) {
        t.ask(
            "describe all",
            v,
            DescribeUserScramCredentialsRequest::default().with_users(None),
        )?;
        t.ask(
            "describe one",
            v,
            DescribeUserScramCredentialsRequest::default()
                .with_users(Some(vec![UserName::default().with_name(s(&user))])),
        )?;
    }
    for v in versions(ApiKey::AlterUserScramCredentials) {
        t.ask(
            "upsert",
            v,
            AlterUserScramCredentialsRequest::default().with_upsertions(vec![
                ScramCredentialUpsertion::default()
                    .with_name(s(&user))
                    .with_mechanism(1)
                    .with_iterations(4096)
                    .with_salt(Bytes::from_static(b"salt-salt-salt"))
                    .with_salted_password(Bytes::from_static(&[7u8; 32])),
            ]),
        )?;
        t.ask(
            "delete",
            v,
            AlterUserScramCredentialsRequest::default().with_deletions(vec![
                ScramCredentialDeletion::default()
                    .with_name(s(&user))
                    .with_mechanism(1),
            ]),
        )?;
        t.ask(
            "bad mechanism",
            v,
            AlterUserScramCredentialsRequest::default().with_deletions(vec![
                ScramCredentialDeletion::default()
                    .with_name(s(&user))
                    .with_mechanism(9),
            ]),
        )?;
    }
    Ok(())
}

pub fn quotas(t: &mut Target) -> Step<()> {
    let client = t.name("client");
    for v in versions(ApiKey::DescribeClientQuotas) {
        t.ask(
            "describe client",
            v,
            DescribeClientQuotasRequest::default().with_components(vec![ComponentData::default()
                .with_entity_type(s("client-id"))
                .with_match_type(0)
                .with_match(Some(s(&client)))]),
        )?;
        t.ask(
            "describe bad entity",
            v,
            DescribeClientQuotasRequest::default().with_components(vec![ComponentData::default()
                .with_entity_type(s("planet"))
                .with_match_type(1)]),
        )?;
    }
    for v in versions(ApiKey::AlterClientQuotas) {
        let entry = |key: &str, value: f64| {
            EntryData::default()
                .with_entity(vec![EntityData::default()
                    .with_entity_type(s("client-id"))
                    .with_entity_name(Some(s(&client)))])
                .with_ops(vec![OpData::default().with_key(s(key)).with_value(value)])
        };
        t.ask(
            "validate only",
            v,
            AlterClientQuotasRequest::default()
                .with_validate_only(true)
                .with_entries(vec![entry("producer_byte_rate", 1024.0)]),
        )?;
        t.ask(
            "unknown key",
            v,
            AlterClientQuotasRequest::default().with_entries(vec![entry("speed_of_light", 1.0)]),
        )?;
        t.ask(
            "set",
            v,
            AlterClientQuotasRequest::default().with_entries(vec![entry("producer_byte_rate", 1024.0)]),
        )?;
    }
    Ok(())
}

pub fn cluster(t: &mut Target) -> Step<()> {
    for v in versions(ApiKey::DescribeCluster) {
        t.ask(
            "describe",
            v,
            DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
        )?;
        if v >= 1 {
            t.ask(
                "controllers",
                v,
                DescribeClusterRequest::default().with_endpoint_type(2),
            )?;
            t.ask(
                "bad endpoint type",
                v,
                DescribeClusterRequest::default().with_endpoint_type(9),
            )?;
        }
        if v >= 2 {
            t.ask(
                "fenced too",
                v,
                DescribeClusterRequest::default().with_include_fenced_brokers(true),
            )?;
        }
    }
    for v in versions(ApiKey::DescribeQuorum) {
        t.ask(
            "metadata quorum",
            v,
            DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
                .with_topic_name(topic("__cluster_metadata"))
                .with_partitions(vec![PartitionData::default().with_partition_index(0)])]),
        )?;
    }
    for v in versions(ApiKey::UpdateFeatures) {
        let update = |feature: &str, level: i16| {
            let u = FeatureUpdateKey::default()
                .with_feature(s(feature))
                .with_max_version_level(level);
            if v >= 1 {
                u.with_upgrade_type(1)
            } else {
                u
            }
        };
        t.ask(
            "unknown feature",
            v,
            UpdateFeaturesRequest::default()
                .with_timeout_ms(30_000)
                .with_validate_only(v >= 1)
                .with_feature_updates(vec![update("no.such.version", 1)]),
        )?;
        if v >= 1 {
            t.ask(
                "validate only",
                v,
                UpdateFeaturesRequest::default()
                    .with_timeout_ms(30_000)
                    .with_validate_only(true)
                    .with_feature_updates(vec![update("transaction.version", 2)]),
            )?;
        }
    }
    Ok(())
}
