//! ioctls whose argument is a buffer of variable length (a header followed by as many records as
//! the caller has room for: FIEMAP, GETFSMAP, btrfs TREE_SEARCH_V2), through rustix's `Ioctl`
//! trait. Fixed-size arguments use rustix's own `Getter`, `Setter` and `Updater` directly; an
//! ioctl whose answer is its return value (`LOOP_CTL_GET_FREE`) uses [`call_returning`].

use rustix::ioctl::{Ioctl, IoctlOutput, Opcode};
use std::ffi::c_void;
use std::io;
use std::marker::PhantomData;
use std::os::fd::AsFd;

pub use rustix::ioctl::{opcode, Direction, Getter, Opcode as IoctlOpcode, Setter, Updater};

/// An ioctl that reads and writes the caller's buffer in place.
struct InPlace<'a> {
    opcode: Opcode,
    ptr: *mut c_void,
    _buf: PhantomData<&'a mut [u8]>,
}

// SAFETY: the pointer is valid for the lifetime of the borrow it came from; `call_in_place`'s
// caller guarantees it is large enough for what the opcode makes the kernel access.
unsafe impl Ioctl for InPlace<'_> {
    type Output = ();
    const IS_MUTATING: bool = true;
    fn opcode(&self) -> Opcode {
        self.opcode
    }
    fn as_ptr(&mut self) -> *mut c_void {
        self.ptr
    }
    unsafe fn output_from_ptr(_: IoctlOutput, _: *mut c_void) -> rustix::io::Result<()> {
        Ok(())
    }
}

/// Calls ioctl `opcode` on `fd` with a pointer to `buf`.
///
/// # Safety
/// `buf` must be at least as large as the structure `opcode` makes the kernel read or write
/// (its header and the records its header says there is room for), and laid out as the kernel
/// expects (u64 words keep it 8-byte aligned).
pub unsafe fn call_in_place<T: Copy>(
    fd: impl AsFd,
    opcode: Opcode,
    buf: &mut [T],
) -> io::Result<()> {
    let call = InPlace {
        opcode,
        ptr: buf.as_mut_ptr().cast(),
        _buf: PhantomData,
    };
    // SAFETY: see the function's contract.
    Ok(unsafe { rustix::ioctl::ioctl(fd, call) }?)
}

/// An ioctl without argument whose answer is its return value (rustix's `NoArg` drops it).
struct Returning<const OPCODE: Opcode>;

// SAFETY: no argument is passed; the kernel reads and writes no memory of ours.
unsafe impl<const OPCODE: Opcode> Ioctl for Returning<OPCODE> {
    type Output = IoctlOutput;
    const IS_MUTATING: bool = false;
    fn opcode(&self) -> Opcode {
        OPCODE
    }
    fn as_ptr(&mut self) -> *mut c_void {
        std::ptr::null_mut()
    }
    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// Calls ioctl `OPCODE`, which takes no argument, on `fd` and returns what the call returned
/// (`LOOP_CTL_GET_FREE`: the number of a free loop device).
///
/// # Safety
/// `OPCODE` must be an ioctl that takes no argument on the file `fd` refers to.
pub unsafe fn call_returning<const OPCODE: Opcode>(fd: impl AsFd) -> io::Result<IoctlOutput> {
    // SAFETY: see the function's contract.
    Ok(unsafe { rustix::ioctl::ioctl(fd, Returning::<OPCODE>) }?)
}
