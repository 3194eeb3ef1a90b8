//! The FTL's state saved as bytes and read back: a versioned header, little-endian words and a
//! checksum, so that a truncated or foreign file is refused rather than misread.

use super::*;

impl Ftl {
    /// The state as bytes: a header naming the format and version, the state (little-endian
    /// 32-bit words: the geometry, counters, each die's free and open blocks, the closed blocks
    /// in their lists' order, valid and erase counts, the mapping, and (version 2) the bits of
    /// the pages written or discarded at some time), and a checksum, so that a truncated or
    /// foreign file is refused rather than misread. A 64 GiB drive of 4 KiB pages takes about
    /// 66 MiB.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w: Vec<u32> = Vec::with_capacity(self.l2p.len() + 3 * self.valid.len() + 64);
        let g = self.geo;
        // Version 3 (a compressing drive's): the slots per page after the geometry, and each
        // logical page's slots at the end. A drive without compression is saved as version 2.
        let v3 = g.slots_per_page > 1;
        w.extend([
            g.dies,
            g.blocks_per_die,
            g.pages_per_block,
            g.user_pages,
            g.gc_free_blocks,
        ]);
        if v3 {
            w.push(g.slots_per_page);
        }
        w.push(self.next_die);
        let c = self.counters;
        for x in [c.host_pages, c.gc_copies, c.erases, c.trimmed] {
            w.extend([x as u32, (x >> 32) as u32]);
        }
        for (d, die) in self.dies.iter().enumerate() {
            w.push(die.free.len() as u32);
            w.extend(&die.free);
            let (b, p) = die.open.unwrap_or((NONE, NONE));
            w.extend([b, p]);
            for list in &self.closed[d] {
                w.push(list.len() as u32);
                w.extend(list);
            }
        }
        w.extend(&self.valid);
        w.extend(&self.erase_counts);
        w.extend(&self.l2p);
        for &k in &self.known {
            w.extend([k as u32, (k >> 32) as u32]);
        }
        if v3 {
            w.extend((0..g.user_pages).map(|l| self.slots_of(l)));
        }
        let body: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut out = Vec::with_capacity(body.len() + 32);
        out.extend_from_slice(if v3 { MAGIC_V3 } else { MAGIC });
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&fnv1a(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Reads what [`Ftl::to_bytes`] wrote (version 2, or version 1, which did not keep which
    /// pages were discarded: its unmapped pages read back as never written), and checks every
    /// invariant of the result.
    pub fn from_bytes(bytes: &[u8]) -> crate::Result<Ftl> {
        let head = MAGIC.len() + 16;
        let version = match bytes.get(..MAGIC.len()) {
            Some(m) if m == MAGIC_V3 => 3,
            Some(m) if m == MAGIC => 2,
            Some(m) if m == MAGIC_V1 => 1,
            _ => return Err(Error::input("not an fsage FTL state (version 1, 2 or 3)")),
        };
        if bytes.len() < head {
            return Err(Error::input("truncated FTL state: no header"));
        }
        let len = u64::from_le_bytes(bytes[MAGIC.len()..MAGIC.len() + 8].try_into().unwrap());
        let sum = u64::from_le_bytes(bytes[MAGIC.len() + 8..head].try_into().unwrap());
        let body = &bytes[head..];
        if body.len() as u64 != len {
            return Err(Error::input(format!(
                "truncated FTL state: {} bytes of {len}",
                body.len()
            )));
        }
        if fnv1a(body) != sum {
            return Err(Error::input(
                "the FTL state's checksum does not match: the file is damaged",
            ));
        }
        let words: Vec<u32> = body
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut r = Words(&words);
        let bad = || Error::input("the FTL state is inconsistent");
        let mut geo = FtlGeometry {
            dies: r.one()?,
            blocks_per_die: r.one()?,
            pages_per_block: r.one()?,
            user_pages: r.one()?,
            gc_free_blocks: r.one()?,
            slots_per_page: 1,
        };
        if version >= 3 {
            geo.slots_per_page = r.one()?;
            if geo.slots_per_page < 2 {
                return Err(bad());
            }
        }
        geo.check()?;
        let mut f = Ftl::new(geo)?;
        f.next_die = r.one()?;
        let mut long = || -> crate::Result<u64> { Ok(r.one()? as u64 | (r.one()? as u64) << 32) };
        f.counters = FtlCounters {
            host_pages: long()?,
            gc_copies: long()?,
            erases: long()?,
            trimmed: long()?,
        };
        let ppb = geo.slots_per_block() as usize;
        for d in 0..geo.dies as usize {
            let n = r.one()? as usize;
            f.dies[d].free = r.take(n)?.to_vec();
            let (b, p) = (r.one()?, r.one()?);
            f.dies[d].open = (b != NONE).then_some((b, p));
            for v in 0..=ppb {
                let n = r.one()? as usize;
                let list = r.take(n)?.to_vec();
                for (i, &g) in list.iter().enumerate() {
                    *f.slot.get_mut(g as usize).ok_or_else(bad)? = i as u32;
                }
                f.closed[d][v] = list;
            }
        }
        let blocks = f.valid.len();
        f.valid = r.take(blocks)?.to_vec();
        f.erase_counts = r.take(blocks)?.to_vec();
        f.l2p = r.take(geo.user_pages as usize)?.to_vec();
        if version >= 2 {
            let words = r.take(2 * f.known.len())?;
            for (k, pair) in f.known.iter_mut().zip(words.chunks_exact(2)) {
                *k = pair[0] as u64 | (pair[1] as u64) << 32;
            }
        }
        let slots = if version >= 3 {
            r.take(geo.user_pages as usize)?.to_vec()
        } else {
            vec![1; geo.user_pages as usize]
        };
        if !r.0.is_empty() {
            return Err(bad());
        }
        for (lpn, &ppn) in f.l2p.iter().enumerate() {
            if ppn != NONE {
                let n = slots[lpn] as usize;
                let run = f
                    .p2l
                    .get_mut(ppn as usize..ppn as usize + n)
                    .filter(|_| (1..=geo.slots_per_page as usize).contains(&n))
                    .ok_or_else(bad)?;
                if run.iter().any(|&l| l != NONE) {
                    return Err(bad());
                }
                run.fill(lpn as u32);
                if version == 1 {
                    f.known[lpn / 64] |= 1 << (lpn % 64);
                }
            }
        }
        f.check()?;
        Ok(f)
    }
}

/// Reads words off the front of a slice, refusing to run past its end.
struct Words<'a>(&'a [u32]);

impl<'a> Words<'a> {
    fn take(&mut self, n: usize) -> crate::Result<&'a [u32]> {
        if n > self.0.len() {
            return Err(Error::input("the FTL state ends early"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    fn one(&mut self) -> crate::Result<u32> {
        Ok(self.take(1)?[0])
    }
}

pub(super) const MAGIC: &[u8; 12] = b"fsage-ftl v2";
pub(super) const MAGIC_V3: &[u8; 12] = b"fsage-ftl v3";
pub(super) const MAGIC_V1: &[u8; 12] = b"fsage-ftl v1";

/// FNV-1a, 64 bits: enough to catch a damaged file (not an adversary).
pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
