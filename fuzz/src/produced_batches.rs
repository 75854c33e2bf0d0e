//! What a Produce request's records go through before the log is touched:
//! `ProducedBatches::validate` (CRC, every record's bounds, offsets numbered from 0), and the
//! reading side, `Batch::parse` and its records.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(batch) = offsetlab_storage::batch::Batch::parse(data) {
            for r in batch.records() {
                std::hint::black_box(r);
            }
        }
        let _ = offsetlab_storage::ProducedBatches::validate(data.to_vec());
    });
}
