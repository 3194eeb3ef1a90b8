//! A kernel to boot and its modules. QEMU under TCG spends seconds decompressing a bzImage, so
//! the uncompressed kernel (vmlinux, taken out of the bzImage's payload) is booted instead when
//! its ELF has the PVH entry note, which lets QEMU start it directly.

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A kernel ready to boot.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// `uname -r` in the guest, e.g. `6.1.0-56-amd64`.
    pub release: String,
    /// What QEMU's `-kernel` is given: a vmlinux with a PVH note, or a bzImage.
    pub image: PathBuf,
    /// The `lib/modules/RELEASE` directory.
    pub modules: PathBuf,
}

impl Kernel {
    /// A kernel given by path (`--kernel PATH --modules DIR`), for kernels not from Debian's
    /// archive. The release is the modules directory's name.
    pub fn from_paths(image: &Path, modules: &Path) -> Result<Kernel> {
        if !image.is_file() {
            return Err(Error::input(format!(
                "{}: no such kernel image",
                image.display()
            )));
        }
        if !modules.is_dir() {
            return Err(Error::input(format!(
                "{}: no such modules directory (give lib/modules/RELEASE)",
                modules.display()
            )));
        }
        let release = modules
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Kernel {
            release,
            image: image.to_path_buf(),
            modules: modules.to_path_buf(),
        })
    }
}

/// Byte ranges of a bzImage's header fields (Documentation/arch/x86/boot.rst).
const SETUP_SECTS: usize = 0x1f1;
const HDRS: usize = 0x202;
const PAYLOAD_OFFSET: usize = 0x248;
const PAYLOAD_LENGTH: usize = 0x24c;

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    b.get(o..o + 4)
        .map(|x| u32::from_le_bytes(x.try_into().unwrap_or([0; 4])))
}

/// The compressed kernel inside a bzImage, or `None` when `b` is not one.
pub fn bzimage_payload(b: &[u8]) -> Option<&[u8]> {
    if b.get(HDRS..HDRS + 4) != Some(b"HdrS") {
        return None;
    }
    let setup = match *b.get(SETUP_SECTS)? {
        0 => 4,
        n => n as usize,
    };
    let start = (setup + 1) * 512 + u32_at(b, PAYLOAD_OFFSET)? as usize;
    let len = u32_at(b, PAYLOAD_LENGTH)? as usize;
    b.get(start..start + len)
}

/// Decompresses a bzImage's payload with the tool its magic names (xz for Debian's kernels,
/// gzip, zstd). `Ok(None)` when the format or its tool is missing: the bzImage boots as it is.
pub fn extract_vmlinux(bzimage: &Path) -> Result<Option<Vec<u8>>> {
    let b = std::fs::read(bzimage).map_err(|e| Error::io(bzimage, "cannot read the kernel", e))?;
    let Some(payload) = bzimage_payload(&b) else {
        return Ok(None);
    };
    // The payload is followed by the decompressed size; each tool is told to stop at the end of
    // its stream or to ignore what follows.
    let (tool, args): (&str, &[&str]) = if payload.starts_with(b"\xfd7zXZ\0") {
        ("xz", &["-dc", "--single-stream"])
    } else if payload.starts_with(&[0x1f, 0x8b]) {
        ("gzip", &["-dc", "-q"])
    } else if payload.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        ("zstd", &["-dcq"])
    } else {
        return Ok(None);
    };
    let Some(exe) = fsage_sys::find_cmd(tool) else {
        return Ok(None);
    };
    let mut child = Command::new(exe)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| Error::operation(format!("{tool}: cannot run: {e}")))?;
    let mut stdin = child.stdin.take();
    let data = payload.to_vec();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(&data);
        }
    });
    let out = child
        .wait_with_output()
        .map_err(|e| Error::operation(format!("{tool}: {e}")))?;
    let _ = feeder.join();
    // gzip exits 2 on the trailing size ("trailing garbage ignored"): judge by what came out.
    if out.stdout.starts_with(b"\x7fELF") {
        Ok(Some(out.stdout))
    } else {
        Ok(None)
    }
}

/// Does this ELF kernel have the PVH entry note (Xen note type 18, XEN_ELFNOTE_PHYS32_ENTRY)?
pub fn has_pvh_note(elf: &[u8]) -> bool {
    let u16_at = |o: usize| {
        elf.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
    };
    if elf.get(..5) != Some(b"\x7fELF\x02") {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    for i in 0..phnum {
        let h = phoff + i * phentsize;
        if u32_at(elf, h) != Some(4) {
            continue; // not PT_NOTE
        }
        let (Some(off), Some(size)) = (u64_at(h + 8), u64_at(h + 0x20)) else {
            continue;
        };
        let Some(mut notes) = elf.get(off..off + size) else {
            continue;
        };
        while notes.len() >= 12 {
            let namesz = u32_at(notes, 0).unwrap_or(0) as usize;
            let descsz = u32_at(notes, 4).unwrap_or(0) as usize;
            let ty = u32_at(notes, 8).unwrap_or(0);
            let name = notes.get(12..12 + namesz).unwrap_or(&[]);
            if name.starts_with(b"Xen") && ty == 18 {
                return true;
            }
            let next = 12 + namesz.next_multiple_of(4) + descsz.next_multiple_of(4);
            notes = notes.get(next..).unwrap_or(&[]);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_the_boot_header_has_no_payload() {
        assert!(bzimage_payload(&[0u8; 4096]).is_none());
    }

    #[test]
    fn payload_is_found_after_the_setup_sectors() {
        let mut b = vec![0u8; 8192];
        b[SETUP_SECTS] = 3;
        b[HDRS..HDRS + 4].copy_from_slice(b"HdrS");
        b[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4].copy_from_slice(&100u32.to_le_bytes());
        b[PAYLOAD_LENGTH..PAYLOAD_LENGTH + 4].copy_from_slice(&6u32.to_le_bytes());
        b[4 * 512 + 100..4 * 512 + 106].copy_from_slice(b"\xfd7zXZ\0");
        assert_eq!(bzimage_payload(&b).unwrap(), b"\xfd7zXZ\0");
    }

    #[test]
    fn pvh_note_is_found_in_a_note_segment() {
        let mut e = vec![0u8; 256];
        e[..5].copy_from_slice(b"\x7fELF\x02");
        e[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        e[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        e[64..68].copy_from_slice(&4u32.to_le_bytes());
        e[72..80].copy_from_slice(&160u64.to_le_bytes());
        e[96..104].copy_from_slice(&24u64.to_le_bytes());
        // namesz 4 ("Xen\0"), descsz 8, type 18.
        e[160..164].copy_from_slice(&4u32.to_le_bytes());
        e[164..168].copy_from_slice(&8u32.to_le_bytes());
        e[168..172].copy_from_slice(&18u32.to_le_bytes());
        e[172..176].copy_from_slice(b"Xen\0");
        assert!(has_pvh_note(&e));
        e[168..172].copy_from_slice(&17u32.to_le_bytes());
        assert!(!has_pvh_note(&e));
    }
}
