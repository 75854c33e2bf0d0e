//! AlterClientQuotas (`kafka-configs.sh --alter --add-config producer_byte_rate=…`): the lab
//! throttles nobody and keeps no quotas, so every entry is refused (INVALID_REQUEST, saying so)
//! — after the checks Kafka makes first: a known entity type and quota key.

use crate::handlers::describe_client_quotas::ENTITY_TYPES;
use crate::str_bytes;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
use offsetlab_wire::kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};

/// The quota keys Kafka knows for clients and users.
const KEYS: &[&str] = &[
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
    "connection_creation_rate",
];

pub(crate) fn handle(r: &AlterClientQuotasRequest) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse::default().with_entries(
        r.entries
            .iter()
            .map(|e| {
                let why = if let Some(t) = e
                    .entity
                    .iter()
                    .find(|t| !ENTITY_TYPES.contains(&t.entity_type.as_str()))
                {
                    format!("Unhandled client quota entity type: {}", t.entity_type.as_str())
                } else if let Some(op) = e.ops.iter().find(|op| !KEYS.contains(&op.key.as_str())) {
                    format!("Invalid configuration key {}", op.key.as_str())
                } else {
                    "the lab throttles no client: it keeps no quotas".to_string()
                };
                EntryData::default()
                    .with_error_code(INVALID_REQUEST)
                    .with_error_message(Some(str_bytes(&why)))
                    .with_entity(
                        e.entity
                            .iter()
                            .map(|t| {
                                EntityData::default()
                                    .with_entity_type(t.entity_type.clone())
                                    .with_entity_name(t.entity_name.clone())
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}
