#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strongroom_fuzzing::csr(data));
