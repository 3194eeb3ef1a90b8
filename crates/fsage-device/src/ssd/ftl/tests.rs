use super::image::{fnv1a, MAGIC, MAGIC_V1, MAGIC_V3};
use super::*;
use proptest::prelude::*;

fn small(user_pages: u32) -> FtlGeometry {
    FtlGeometry {
        dies: 4,
        blocks_per_die: 16,
        pages_per_block: 8,
        user_pages,
        gc_free_blocks: 2,
        slots_per_page: 1,
    }
}

#[test]
fn pages_stripe_over_the_dies_in_turn() {
    let mut f = Ftl::new(small(100)).unwrap();
    let dies: Vec<u32> = (0..8).map(|l| f.write(l).die).collect();
    assert_eq!(dies, [0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(f.die_of(5), Some(1));
    assert_eq!(f.die_of(50), None);
    f.check().unwrap();
}

#[test]
fn greedy_collection_picks_the_emptiest_block() {
    // One die: every collection's victim must be a closed block with the fewest valid
    // pages, so a collection that erased one block copied exactly that many.
    let geo = FtlGeometry {
        dies: 1,
        blocks_per_die: 36,
        pages_per_block: 8,
        user_pages: 256,
        gc_free_blocks: 2,
        slots_per_page: 1,
    };
    let mut f = Ftl::new(geo).unwrap();
    let (mut collections, mut partial) = (0, 0);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..20_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let lpn = (x % 256) as u32;
        let least = f.min_closed_valid(0);
        let p = f.write(lpn);
        if p.gc_erases == 1 {
            collections += 1;
            assert_eq!(Some(p.gc_copies), least, "write {i}");
            partial += usize::from(p.gc_copies > 0);
        }
    }
    assert!(collections > 100 && partial > 10, "{collections} {partial}");
    f.check().unwrap();
}

#[test]
fn a_saved_state_reads_back_identical_and_damage_is_refused() {
    let mut f = Ftl::new(small(150)).unwrap();
    for i in 0..2000u32 {
        f.write((i * 7919) % 150);
        if i % 13 == 0 {
            f.trim((i * 31) % 150);
        }
    }
    let bytes = f.to_bytes();
    let g = Ftl::from_bytes(&bytes).unwrap();
    assert_eq!(f, g);
    let mut bad = bytes.clone();
    let n = bad.len();
    bad[n - 3] ^= 1;
    assert!(Ftl::from_bytes(&bad)
        .unwrap_err()
        .message
        .contains("checksum"));
    assert!(Ftl::from_bytes(&bytes[..n - 1])
        .unwrap_err()
        .message
        .contains("truncated"));
    assert!(Ftl::from_bytes(b"hello").is_err());
}

#[test]
fn pages_are_mapped_discarded_or_never_written() {
    let mut f = Ftl::new(small(100)).unwrap();
    f.write(3);
    f.write(4);
    f.trim(4);
    f.trim(9);
    assert_eq!(f.page_state(3), PageState::Mapped(0));
    assert_eq!(f.page_state(4), PageState::Discarded);
    // A discard of a page never written: the drive knows it holds nothing all the same.
    assert_eq!(f.page_state(9), PageState::Discarded);
    assert_eq!(f.page_state(5), PageState::NeverWritten);
    // The third page written goes to the third die.
    f.write(4);
    assert_eq!(f.page_state(4), PageState::Mapped(2));
    assert_eq!(f.known_pages(), 3);
    // Written in logical order from erased, page l would be on die l mod 4.
    assert_eq!(
        (0..6).map(|l| f.die_in_lba_order(l)).collect::<Vec<_>>(),
        [0, 1, 2, 3, 0, 1]
    );
    let back = Ftl::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(back, f);
    assert_eq!(back.page_state(9), PageState::Discarded);
}

/// A state saved by version 1 (no discard bits) still loads: its mapped pages are known
/// written, the rest never written.
#[test]
fn a_version_1_state_still_loads() {
    let mut f = Ftl::new(small(100)).unwrap();
    for l in 0..10 {
        f.write(l);
    }
    f.trim(2);
    let v2 = f.to_bytes();
    let head = MAGIC.len() + 16;
    let words = (100usize).div_ceil(64) * 2;
    let body = &v2[head..v2.len() - 4 * words];
    let mut v1 = MAGIC_V1.to_vec();
    v1.extend_from_slice(&(body.len() as u64).to_le_bytes());
    v1.extend_from_slice(&fnv1a(body).to_le_bytes());
    v1.extend_from_slice(body);
    let g = Ftl::from_bytes(&v1).unwrap();
    assert_eq!(g.page_state(1), f.page_state(1));
    assert_eq!(g.page_state(2), PageState::NeverWritten);
    assert_eq!(g.known_pages(), 9);
}

/// A compressing drive's pages take 1 to 4 slots of a flash page: under random writes of
/// random sizes with collection running, the state stays consistent, a page never straddles
/// blocks, less compressible data collects more, and the state saves and loads (version 3).
#[test]
fn compressed_pages_pack_into_slots_and_survive_a_save() {
    let geo = FtlGeometry {
        slots_per_page: 4,
        ..small(200)
    };
    let wa = |max_slots: u32| {
        let mut f = Ftl::new(geo).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut copied = 0u64;
        let mut written = 0u64;
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = 1 + (x >> 40) as u32 % max_slots;
            let p = f.write_slots((x % 200) as u32, n);
            copied += p.gc_copies as u64;
            written += n as u64;
            if i % 97 == 0 {
                f.trim((x >> 20) as u32 % 200);
            }
        }
        f.check().unwrap();
        assert!((0..200).all(|l| f.slots_of(l) <= max_slots));
        let back = Ftl::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(back, f);
        assert_eq!(&f.to_bytes()[..12], MAGIC_V3);
        (written + copied) as f64 / written as f64
    };
    let (small_pages, whole_pages) = (wa(2), wa(4));
    assert!(small_pages < whole_pages, "{small_pages} vs {whole_pages}");
    // Without compression the state is still version 2.
    let mut f = Ftl::new(small(100)).unwrap();
    f.write(1);
    assert_eq!(&f.to_bytes()[..12], MAGIC);
}

#[test]
fn too_little_over_provisioning_is_refused() {
    let e = Ftl::new(small(4 * 16 * 8)).unwrap_err();
    assert!(e.message.contains("over-provisioning"), "{e}");
}

proptest! {
    /// Under any mix of writes and discards, with garbage collection running, no logical
    /// page is lost or duplicated: each written and not discarded maps to exactly one flash
    /// page holding it, and the rest are unmapped.
    #[test]
    fn no_page_lost_or_duplicated(ops in proptest::collection::vec((0u32..200, any::<bool>()), 1..3000)) {
        let mut f = Ftl::new(small(200)).unwrap();
        let mut live = std::collections::BTreeSet::new();
        for (lpn, discard) in ops {
            if discard {
                f.trim(lpn);
                live.remove(&lpn);
            } else {
                f.write(lpn);
                live.insert(lpn);
            }
        }
        f.check().map_err(|e| TestCaseError::fail(e.message))?;
        for l in 0..200u32 {
            prop_assert_eq!(f.die_of(l).is_some(), live.contains(&l));
        }
        prop_assert_eq!(f.mapped_pages(), live.len() as u64);
    }
}
