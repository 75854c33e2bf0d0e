//! What a Produce request's records go through before the log is touched: the produce
//! validator (`offsetlab_records::validate_produce`: each header read once, CRC, every record's
//! bounds, offsets numbered from 0, a compressed batch decompressed within its bound and
//! rewritten), `ProducedBatches::validate`, and the reading side, `Batch::parse` and its
//! records.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(batch) = offsetlab_records::Batch::parse(data) {
            for r in batch.records() {
                std::hint::black_box(r);
            }
        }
        let _ = offsetlab_records::ProducedBatches::validate(data.to_vec());
        let mut accept = |_: Option<&[u8]>, _: Option<&[u8]>, _: &[u8]| Ok(());
        if let Ok(v) = offsetlab_records::validate_produce(bytes::Bytes::copy_from_slice(data), &mut accept) {
            // What the validator kept validates again as it is.
            assert!(offsetlab_records::ProducedBatches::validate(v.batches.into_bytes()).is_ok());
        }
    });
}
