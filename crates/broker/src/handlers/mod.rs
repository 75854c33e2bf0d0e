//! One handler per API key, named as Kafka names the API. Each takes the [`crate::broker::Broker`]
//! and the decoded request and returns the response; the ones that wait (Fetch, JoinGroup,
//! SyncGroup) are async, the rest run on a blocking thread ([`crate::apis`]).

pub(crate) mod add_offsets_to_txn;
pub(crate) mod add_partitions_to_txn;
pub(crate) mod api_versions;
pub(crate) mod create_partitions;
pub(crate) mod create_topics;
pub(crate) mod delete_groups;
pub(crate) mod delete_records;
pub(crate) mod delete_topics;
pub(crate) mod describe_acls;
pub(crate) mod describe_configs;
pub(crate) mod describe_groups;
pub(crate) mod describe_log_dirs;
pub(crate) mod describe_topic_partitions;
pub(crate) mod describe_user_scram_credentials;
pub(crate) mod elect_leaders;
pub(crate) mod end_txn;
pub(crate) mod fetch;
pub(crate) mod find_coordinator;
pub(crate) mod heartbeat;
pub(crate) mod incremental_alter_configs;
pub(crate) mod init_producer_id;
pub(crate) mod join_group;
pub(crate) mod leave_group;
pub(crate) mod list_groups;
pub(crate) mod list_offsets;
pub(crate) mod list_partition_reassignments;
pub(crate) mod metadata;
pub(crate) mod offset_commit;
pub(crate) mod offset_delete;
pub(crate) mod offset_fetch;
pub(crate) mod produce;
pub(crate) mod sync_group;
pub(crate) mod txn_offset_commit;
