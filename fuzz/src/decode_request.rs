//! The listener's first contact with a client's bytes: `offsetlab_wire::request::decode` on one
//! frame (size prefix removed). Whatever the bytes, it returns — a request or an error — without
//! panicking, aborting or allocating out of proportion to the input.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = offsetlab_wire::request::decode(bytes::Bytes::copy_from_slice(data));
    });
}
