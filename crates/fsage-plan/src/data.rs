//! What the bytes fsage writes hold: the same choice for the workload engine (`bench run
//! --data`) and for aging in write mode (`age --data`). A drive that compresses (a SandForce
//! controller) or deduplicates gives a different result for each, and a benchmark compared with
//! a published one should write what that one wrote.
//!
//! - `incompressible`: pseudo-random bytes (fsage's default).
//! - `zeros`: every byte 0.
//! - `filebench`: what Filebench 1.5 writes. Its I/O flowops take their buffer from the thread's
//!   memory (`tf_mem`), which `flowop_start()` in `flowop.c` sets to 0 and into which only reads
//!   of file data land; its preallocated files are written from a 1 MiB `malloc` it never
//!   initialises, which glibc serves with fresh (zero) pages. So: zeros, and the engine lets
//!   reads land in the buffer writes are taken from, as Filebench does.
//! - `N%` (0 to 100): as fio's `buffer_compress_percentage`: each 4 KiB block is pseudo-random
//!   bytes followed by zeros, the zeros N% of the block, so that a compressor takes away about
//!   N% of it (fio's default chunk is 512 bytes; fsage's is the 4 KiB page an SSD maps).

use crate::Rng;
use serde::{Deserialize, Serialize};

/// The unit a compressibility percentage applies to: one 4 KiB page.
pub const CHUNK: usize = 4096;

/// What written bytes hold (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DataPattern {
    #[default]
    Incompressible,
    Zeros,
    Filebench,
    /// Percent (0 to 100) of each 4 KiB block that is zeros after its random bytes.
    Compressible(u8),
}

impl DataPattern {
    /// Parses `incompressible`, `zeros`, `filebench` or `N%` (0 to 100).
    pub fn parse(s: &str) -> Result<DataPattern, BadDataPattern> {
        let t = s.trim();
        Ok(match t {
            "incompressible" => DataPattern::Incompressible,
            "zeros" => DataPattern::Zeros,
            "filebench" => DataPattern::Filebench,
            _ => {
                let pct = t
                    .strip_suffix('%')
                    .and_then(|n| n.trim().parse::<u8>().ok())
                    .filter(|&n| n <= 100);
                match pct {
                    Some(n) => DataPattern::Compressible(n),
                    None => return Err(BadDataPattern { given: t.into() }),
                }
            }
        })
    }

    /// As [`DataPattern::parse`] reads it.
    pub fn name(&self) -> String {
        match self {
            DataPattern::Incompressible => "incompressible".into(),
            DataPattern::Zeros => "zeros".into(),
            DataPattern::Filebench => "filebench".into(),
            DataPattern::Compressible(n) => format!("{n}%"),
        }
    }

    pub fn is_incompressible(&self) -> bool {
        *self == DataPattern::Incompressible
    }

    /// Whether reads may land in the memory writes are taken from: Filebench's own behaviour
    /// (one thread memory for both), and harmless for random data; for zeros and a given
    /// compressibility the written bytes must stay what was asked.
    pub fn reads_share_the_write_buffer(&self) -> bool {
        matches!(self, DataPattern::Incompressible | DataPattern::Filebench)
    }

    /// Fills `buf` with this pattern, block by block from its start (random bytes from `rng`).
    pub fn fill(&self, buf: &mut [u8], rng: &mut Rng) {
        let random = |b: &mut [u8], rng: &mut Rng| {
            for c in b.chunks_mut(8) {
                c.copy_from_slice(&rng.next_u64().to_le_bytes()[..c.len()]);
            }
        };
        match *self {
            DataPattern::Incompressible => random(buf, rng),
            DataPattern::Zeros | DataPattern::Filebench => buf.fill(0),
            DataPattern::Compressible(pct) => {
                for block in buf.chunks_mut(CHUNK) {
                    let keep = CHUNK * (100 - pct as usize) / 100;
                    let keep = keep.min(block.len());
                    random(&mut block[..keep], rng);
                    block[keep..].fill(0);
                }
            }
        }
    }
}

/// A text that names no data pattern (the caller names the flag or the file and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{given:?} is not a data pattern: give incompressible, zeros, filebench or a compressible \
     share such as 50% (0% to 100%)"
)]
pub struct BadDataPattern {
    /// The text given, trimmed.
    pub given: String,
}

impl std::fmt::Display for DataPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for DataPattern {
    type Err = BadDataPattern;
    fn from_str(s: &str) -> Result<DataPattern, BadDataPattern> {
        DataPattern::parse(s)
    }
}

impl Serialize for DataPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for DataPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DataPattern, D::Error> {
        let s = String::deserialize(d)?;
        DataPattern::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_are_refused() {
        for s in ["incompressible", "zeros", "filebench", "0%", "50%", "100%"] {
            let p = DataPattern::parse(s).unwrap();
            assert_eq!(p.name(), s);
            let j = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<DataPattern>(&j).unwrap(), p);
        }
        for bad in ["random", "101%", "-1%", "50", "%", "50.5%"] {
            let e = DataPattern::parse(bad).unwrap_err().to_string();
            assert!(e.contains("incompressible, zeros, filebench"), "{e}");
        }
    }

    /// The share of zero bytes in each 4 KiB block is the percentage asked (the compressor's
    /// view is tested where the engine writes, with zstd).
    #[test]
    fn each_block_is_random_then_the_asked_share_of_zeros() {
        let mut rng = Rng::new(3);
        for pct in [0u8, 25, 50, 75, 100] {
            let mut b = vec![0xffu8; 3 * CHUNK + 100];
            DataPattern::Compressible(pct).fill(&mut b, &mut rng);
            for block in b.chunks(CHUNK).take(3) {
                let keep = CHUNK * (100 - pct as usize) / 100;
                assert!(block[keep..].iter().all(|&x| x == 0), "{pct}%");
                // Random bytes: hardly any zero among them.
                let zeros = block[..keep].iter().filter(|&&x| x == 0).count();
                assert!(zeros * 64 <= keep.max(64), "{pct}%: {zeros} of {keep}");
            }
        }
        let mut z = vec![1u8; 5000];
        DataPattern::Filebench.fill(&mut z, &mut rng);
        assert!(z.iter().all(|&x| x == 0));
    }
}
