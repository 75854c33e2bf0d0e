//! What the Kafka listener asks of the lab ([`Change`]), and what a successful batch reports ([`Applied`]).

use super::*;

/// One change the Kafka listener asks of the lab.
pub enum Change {
    Command(Command),
    /// A client's record batches for one partition, validated: appended to the log as they
    /// came and recorded in the history as a `send … stored=` line.
    Produced {
        topic: String,
        partition: i32,
        client: String,
        batches: ProducedBatches,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Command(c) => c.fmt(f),
            Change::Produced {
                topic,
                partition,
                client,
                batches,
            } => write!(
                f,
                "send {topic} partition={partition} client={client} ({} records as produced)",
                batches.records()
            ),
        }
    }
}

/// What a successful batch produced.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub applied: usize,
    /// The lines as the lab understood them, in canonical form (what an export writes).
    pub lines: Vec<String>,
    pub version: u64,
    /// The narrative events the batch emitted.
    pub events: Vec<Event>,
    /// Offset reset plans (dry runs and executions), for the blast-radius view.
    pub reset_plans: Vec<ResetPlan>,
}
