//! LZ4 for the embedded store's large values and log records (issue 35).
//!
//! Why: sled rewrites whole leaf nodes, and the nodes' bytes follow the size of the values
//! in them, not their count (`benches/sled_shapes.rs`: one 2.7 KB value cost ~17 KB
//! written per turn, one 300 B value ~7.5 KB). A task's value is its record with its
//! step's events, which are snapshots of the same task, and a session chunk repeats the
//! ids of its messages: JSON that LZ4 shrinks by half or more for a few microseconds. The
//! log's records carry the same JSON, so they are packed the same way.
//!
//! A packed value is [`LZ4`] ‖ the uncompressed length (u32 LE) ‖ the LZ4 block. The byte
//! cannot start anything stored before (JSON starts with `{`, a task value's events tag is
//! 1, a log record's version is 1), so every older value still reads as it is, and a value
//! is packed only when that makes it smaller.

use crate::StoreError;
use std::borrow::Cow;

/// The first byte of a packed value.
pub(crate) const LZ4: u8 = 2;

/// Values shorter than this stay as they are: LZ4 gains little on them, and reading and
/// writing them is most of what a store does.
const PACK_FROM: usize = 256;

/// A packed value never unpacks past this: a damaged length must not ask for gigabytes.
/// Far above any value a step can hold (the request body limit is megabytes).
const MAX_UNPACKED: usize = 1 << 30;

/// `plain`, packed when it is long enough and packing makes it shorter.
pub(crate) fn pack(plain: Vec<u8>) -> Vec<u8> {
    if plain.len() < PACK_FROM || plain.len() > MAX_UNPACKED {
        return plain;
    }
    let mut packed = Vec::with_capacity(1 + lz4_flex::block::get_maximum_output_size(plain.len()) + 4);
    packed.push(LZ4);
    packed.extend_from_slice(&lz4_flex::compress_prepend_size(&plain));
    if packed.len() >= plain.len() {
        return plain;
    }
    packed
}

/// The plain bytes of a value that [`pack`] may have packed: borrowed when it was not.
pub(crate) fn unpack<'a>(value: &'a [u8], what: &str) -> Result<Cow<'a, [u8]>, StoreError> {
    let Some(block) = value.strip_prefix(&[LZ4]) else {
        return Ok(Cow::Borrowed(value));
    };
    let corrupt = |why: &str| StoreError::Corrupt(format!("{what}: packed value {why}"));
    let length = block.get(..4).ok_or_else(|| corrupt("cut short"))?;
    let length = u32::from_le_bytes(length.try_into().map_err(|_| corrupt("cut short"))?) as usize;
    if length > MAX_UNPACKED {
        return Err(corrupt("longer than any value"));
    }
    let plain = lz4_flex::decompress(&block[4..], length).map_err(|_| corrupt("does not decompress"))?;
    match plain.len() == length {
        true => Ok(Cow::Owned(plain)),
        false => Err(corrupt("of the wrong length")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_json_is_packed_and_reads_back() {
        let json = format!("{{\"history\":[{}]}}", vec![r#"{"id":"0b3f…","text":"hello"}"#; 40].join(","));
        let packed = pack(json.clone().into_bytes());
        assert_eq!(packed[0], LZ4);
        assert!(packed.len() * 3 < json.len(), "{} of {}", packed.len(), json.len());
        assert_eq!(unpack(&packed, "test").unwrap().as_ref(), json.as_bytes());
    }

    #[test]
    fn short_or_incompressible_values_stay_as_they_are() {
        assert_eq!(pack(b"{\"a\":1}".to_vec()), b"{\"a\":1}");
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let noise = [b"{".as_slice(), &noise].concat();
        assert_eq!(pack(noise.clone()), noise, "packing would not make it shorter");
        assert!(matches!(unpack(b"{}", "test").unwrap(), Cow::Borrowed(_)), "plain values are not copied");
    }

    #[test]
    fn a_damaged_packed_value_is_corrupt_never_misread() {
        let packed = pack(vec![b'{'; 4096]);
        let cut = &packed[..packed.len() - 3];
        for damaged in [&packed[..3], cut] {
            let err = unpack(damaged, "task value").unwrap_err();
            assert!(matches!(err, StoreError::Corrupt(ref m) if m.starts_with("task value: packed value")), "{err:?}");
        }
        let mut huge = packed.clone();
        huge[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(unpack(&huge, "test").is_err(), "a damaged length asks for no gigabytes");
    }
}
