//! A writer of the kernel's initramfs format: cpio "newc" (ASCII headers, 4-byte alignment),
//! uncompressed, which the kernel unpacks as it is. Written here rather than shelling out to
//! `cpio`, which is not installed everywhere and cannot be told the exact modes and names.

use std::io::{self, Write};

/// Appends entries to a newc archive; [`CpioWriter::finish`] writes the trailer.
pub struct CpioWriter<W: Write> {
    out: W,
    written: u64,
    ino: u32,
}

const DIR: u32 = 0o040000;
const FILE: u32 = 0o100000;
const SYMLINK: u32 = 0o120000;

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> Self {
        CpioWriter {
            out,
            written: 0,
            ino: 1,
        }
    }

    /// A directory (its parents must come first, as the kernel does not make them).
    pub fn dir(&mut self, name: &str, mode: u32) -> io::Result<()> {
        self.entry(name, DIR | (mode & 0o7777), &[])
    }

    /// A regular file holding `data`.
    pub fn file(&mut self, name: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        self.entry(name, FILE | (mode & 0o7777), data)
    }

    /// A symbolic link to `target`.
    pub fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        self.entry(name, SYMLINK | 0o777, target.as_bytes())
    }

    /// Writes the trailer and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, &[])?;
        Ok(self.out)
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        let ino = self.ino;
        self.ino += 1;
        let namesize = name.len() + 1;
        let nlink = if mode & 0o170000 == DIR { 2 } else { 1 };
        let header = format!(
            "070701{ino:08x}{mode:08x}{uid:08x}{gid:08x}{nlink:08x}{mtime:08x}{size:08x}\
             {dmaj:08x}{dmin:08x}{rmaj:08x}{rmin:08x}{namesize:08x}{check:08x}",
            uid = 0,
            gid = 0,
            mtime = 0,
            size = data.len(),
            dmaj = 0,
            dmin = 0,
            rmaj = 0,
            rmin = 0,
            check = 0,
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0u8; 3][..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a newc archive back: (name, mode, data) of each entry before the trailer.
    fn parse(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut off = 0usize;
        let hex = |s: &[u8]| u32::from_str_radix(std::str::from_utf8(s).unwrap(), 16).unwrap();
        loop {
            assert_eq!(&b[..6], b"070701", "magic at {off}");
            let mode = hex(&b[14..22]);
            let size = hex(&b[54..62]) as usize;
            let namesize = hex(&b[94..102]) as usize;
            let name = std::str::from_utf8(&b[110..110 + namesize - 1])
                .unwrap()
                .to_string();
            let data_at = (110 + namesize).next_multiple_of(4);
            let data = b[data_at..data_at + size].to_vec();
            let next = (data_at + size).next_multiple_of(4);
            off += next;
            b = &b[next..];
            if name == "TRAILER!!!" {
                assert!(b.is_empty());
                return out;
            }
            out.push((name, mode, data));
        }
    }

    #[test]
    fn entries_read_back_with_their_modes_and_alignment() {
        let mut w = CpioWriter::new(Vec::new());
        w.dir("bin", 0o755).unwrap();
        w.file("bin/a", 0o755, b"12345").unwrap();
        w.symlink("bin/sh", "a").unwrap();
        w.file("init", 0o700, b"").unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let e = parse(&bytes);
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].0, "bin");
        assert_eq!(e[0].1, 0o040755);
        assert_eq!(e[1], ("bin/a".into(), 0o100755, b"12345".to_vec()));
        assert_eq!(e[2], ("bin/sh".into(), 0o120777, b"a".to_vec()));
        assert_eq!(e[3].1, 0o100700);
    }
}
