//! Fuzz target: module-image sniffing and the cubin (ELF) / fatbin header checks
//! that run before the driver, which takes a bare pointer, reads an image. They must
//! never panic or read out of bounds, whatever the bytes; anything that does not
//! start like an ELF file or a fatbin is PTX.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxicuda_driver::__fuzz::image_kind;

fuzz_target!(|data: &[u8]| {
    match image_kind(data) {
        Ok("cubin") => assert!(data.starts_with(b"\x7fELF")),
        Ok("fatbin") => assert!(data.starts_with(&0xBA55_ED50u32.to_le_bytes())),
        Ok(kind) => {
            assert_eq!(kind, "ptx");
            assert!(!data.starts_with(b"\x7fELF"));
        }
        Err(e) => assert!(
            matches!(e, oxicuda_driver::CudaError::InvalidImage(_)),
            "{e:?}"
        ),
    }
});
