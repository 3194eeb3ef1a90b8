//! The nilfs2 superblock field fsage reads (blocks per segment) at the offset mkfs.nilfs2 writes
//! it, checked on a real image: mkfs needs the tool, not the kernel.

use fsage_measure::segments::nilfs_blocks_per_segment;
use fsage_testkit::{find_cmd, run_cmd, shm_tmp, skip};
use std::io::{Read, Seek, SeekFrom};

fn superblock(img: &std::path::Path) -> Vec<u8> {
    let mut f = std::fs::File::open(img).unwrap();
    f.seek(SeekFrom::Start(1024)).unwrap();
    let mut b = vec![0u8; 1024];
    f.read_exact(&mut b).unwrap();
    b
}

#[test]
fn mkfs_nilfs2_segments_are_read_from_the_superblock() {
    if find_cmd("mkfs.nilfs2").is_none() {
        skip(
            "mkfs_nilfs2_segments_are_read_from_the_superblock",
            "mkfs.nilfs2 not found (apt-get install nilfs-tools)",
        );
        return;
    }
    let dir = shm_tmp("fsage-lfs-sb-");
    for (opts, want) in [(&[][..], 2048u64), (&["-B", "1024"][..], 1024)] {
        let img = dir.path().join("ni.img");
        let _ = std::fs::remove_file(&img);
        std::fs::File::create(&img)
            .unwrap()
            .set_len(200 << 20)
            .unwrap();
        let p = img.to_string_lossy().into_owned();
        let mut args = vec!["-q", "-f"];
        args.extend_from_slice(opts);
        args.push(&p);
        run_cmd("mkfs.nilfs2", &args).unwrap();
        assert_eq!(nilfs_blocks_per_segment(&superblock(&img)), Some(want));
    }
}
