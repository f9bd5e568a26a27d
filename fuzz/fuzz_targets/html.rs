#![no_main]

// The call path lives in the library so the corpus replay test runs the same code.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = bindery::fuzzing::html(data);
});
