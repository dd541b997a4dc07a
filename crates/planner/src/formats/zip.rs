//! A stored (uncompressed) ZIP archive, enough for a handful of text files:
//! the page builds the launch bundle with it, with no crate to ship.
//!
//! Layout from PKWARE's APPNOTE.TXT (6.3.10): a local header and the data per
//! file, then the central directory and its end record. Every date is
//! 1980-01-01 00:00, so the same files give the same bytes.

/// CRC-32 (ISO-HDLC, reflected polynomial 0xEDB88320), as ZIP and gzip use it.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// The archive of `(path, contents)` pairs, in order.
pub fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (path, data) in files {
        let offset = out.len() as u32;
        let crc = crc32(data);
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common_fields(&mut out, path, data, crc);
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(data);

        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // made by: version 2.0
        common_fields(&mut central, path, data, crc);
        central.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
        central.extend_from_slice(&(0o100644u32 << 16).to_le_bytes()); // external: rw-r--r--
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(path.as_bytes());
    }
    let directory_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // this disk, the directory's disk
    let count = files.len() as u16;
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&directory_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // comment length
    out
}

/// Version needed, flags (bit 11: UTF-8 names), method 0, DOS time and date,
/// CRC, sizes, name length and extra length: shared by both headers.
fn common_fields(out: &mut Vec<u8>, path: &str, data: &[u8], crc: u32) {
    out.extend_from_slice(&20u16.to_le_bytes());
    out.extend_from_slice(&(1u16 << 11).to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // 00:00:00
    out.extend_from_slice(&0x21u16.to_le_bytes()); // 1980-01-01
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&(path.len() as u16).to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        // The CRC catalogue's check value for CRC-32/ISO-HDLC over "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn one_file_has_the_sizes_of_appnote() {
        // Local header 30 + name, central entry 46 + name, end record 22 (APPNOTE 4.3.7, 4.3.12, 4.3.16).
        let z = archive(&[("a.txt", b"hello")]);
        assert_eq!(z.len(), 30 + 5 + 5 + 46 + 5 + 22);
        let central = 30 + 5 + 5;
        assert_eq!(&z[central..central + 4], b"PK\x01\x02");
        assert_eq!(
            &z[central + 46..central + 51],
            b"a.txt",
            "the name follows the 46-byte entry"
        );
        assert_eq!(
            u32::from_le_bytes(z[central + 16..central + 20].try_into().unwrap()),
            crc32(b"hello")
        );
    }

    #[test]
    fn empty_archive_is_the_22_byte_end_record() {
        // APPNOTE 4.3.16: an empty archive is only the end of central directory record.
        let z = archive(&[]);
        assert_eq!(z.len(), 22);
        assert_eq!(&z[..4], b"PK\x05\x06");
    }
}
