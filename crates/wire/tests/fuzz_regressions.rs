//! Inputs the fuzzer found (docs/FUZZING.md), decoded again on every test run. The first ones
//! made the unpatched `kafka-protocol` 0.18.0 allocate 100–160 GB and abort the process; with
//! the vendored fix each must come back as an error or a request, never an abort.

#[test]
fn the_fuzzers_findings_decode_without_aborting() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("the regressions directory") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("input");
        let _ = offsetlab_wire::request::decode(bytes::Bytes::from(bytes));
        seen += 1;
    }
    assert!(seen >= 5, "{seen} inputs in {}", dir.display());
}
