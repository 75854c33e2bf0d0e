//! ListPartitionReassignments (`kafka-reassign-partitions.sh --list`): one broker, one replica
//! per partition — nothing is ever being reassigned, so the list is empty (Kafka lists only the
//! partitions that are moving).

use offsetlab_wire::kafka_protocol::messages::ListPartitionReassignmentsResponse;

pub(crate) fn handle() -> ListPartitionReassignmentsResponse {
    ListPartitionReassignmentsResponse::default()
}
