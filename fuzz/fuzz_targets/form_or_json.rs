#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strongroom_fuzzing::form_or_json(data));
