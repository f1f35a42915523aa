// SPDX-License-Identifier: MIT
//! The guest mapping as rust-vmm's guest memory (vm-memory 0.10).
//!
//! [`ZvmmMemory`] implements `vm_memory::GuestMemory` over one region,
//! guest physical address 0 to the guest's length, backed by the
//! mapping libzvmm owns. Through it a device model reads and writes
//! guest memory with vm-memory's `Bytes` (`read_obj`, `write_slice`,
//! ...), and crates that take a `GuestMemory` or `GuestAddressSpace`
//! (virtio-queue, linux-loader) take it as it is.
//!
//! Two rules of the library hold here:
//!  - the mapping lives until the guest is closed, so a `ZvmmMemory`
//!    holds the guest (`&Guest` or `Arc<Guest>`): it cannot outlive it.
//!    It implements `GuestMemory` itself rather than handing out the
//!    `GuestMemoryMmap` inside, which is `Clone` and would carry the
//!    mapping past the close;
//!  - under demand and hybrid a VMM thread touches a range of guest
//!    memory only after `zvmm_guest_access()` covered it: call
//!    [`ZvmmMemory::access`] for the range before reading or writing it
//!    (a ring and its buffers, an initrd). Without it a read of a page
//!    the guest never touched waits for the serving thread, and from
//!    the serving thread itself never returns. Under prezero it only
//!    checks the range.
//!
//! A `ZvmmMemory` is made after [`Guest::prepare`]: before it the
//! mapping is not the VMM's to touch at all.

use std::fs::File;
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::sync::Arc;

use vm_memory::guest_memory::GuestMemoryIterator;
use vm_memory::mmap::MmapRegion;
use vm_memory::{FileOffset, GuestAddress, GuestMemory, GuestMemoryMmap, GuestRegionMmap};

use crate::{Error, Guest, Result};

mod sealed {
    pub trait Sealed {}
    impl Sealed for &crate::Guest {}
    impl Sealed for std::sync::Arc<crate::Guest> {}
}

/// What a [`ZvmmMemory`] holds its guest by: `&Guest` (the memory
/// borrows the guest) or `Arc<Guest>` (a `'static` memory for
/// `GuestMemoryAtomic` and threads). Sealed: the mapping's life rests on
/// the holder keeping the one guest alive.
pub trait GuestHolder: sealed::Sealed {
    fn guest(&self) -> &Guest;
}

impl GuestHolder for &Guest {
    fn guest(&self) -> &Guest {
        self
    }
}

impl GuestHolder for Arc<Guest> {
    fn guest(&self) -> &Guest {
        self
    }
}

/// A guest's memory as a `vm_memory::GuestMemory`; see the module.
#[derive(Debug)]
pub struct ZvmmMemory<G: GuestHolder> {
    // Declared first, dropped first: nothing of vm-memory's refers to
    // the mapping once the holder lets the guest go. The regions never
    // unmap (build_raw: not theirs).
    mem: GuestMemoryMmap,
    holder: G,
}

impl<G: GuestHolder> ZvmmMemory<G> {
    /// The guest's memory at guest physical address 0. EINVAL before
    /// [`Guest::prepare`] succeeded.
    pub fn new(holder: G) -> Result<ZvmmMemory<G>> {
        Self::build(holder, false)
    }

    /// The same, with the region's `file_offset()` set to a duplicate of
    /// the guest's file (for a vhost-user frontend that passes it to a
    /// backend). The library's rule for a second mapping of the file
    /// holds for whoever maps it (libzvmm(3), `zvmm_guest_layout()`):
    /// only ranges the guest already has or access() made ready, and
    /// unmapped before [`Guest::exit`].
    pub fn with_file(holder: G) -> Result<ZvmmMemory<G>> {
        Self::build(holder, true)
    }

    fn build(holder: G, with_file: bool) -> Result<ZvmmMemory<G>> {
        let guest = holder.guest();
        if !guest.is_prepared() {
            return Err(Error::new("zvmm_guest_prepare", libc::EINVAL));
        }
        let layout = guest.layout();
        let size = usize::try_from(layout.bytes).map_err(|_| Error::new("zvmm_guest_layout", libc::EOVERFLOW))?;
        let mut builder = unsafe {
            // The mapping is libzvmm's (zvmm_guest_memory(): PROT_READ |
            // PROT_WRITE, MAP_SHARED of the guest's file) and stays
            // mapped until the guest is closed, which the holder keeps
            // from happening while self lives.
            vm_memory::mmap::MmapRegionBuilder::new(size)
                .with_raw_mmap_pointer(layout.addr)
                .with_mmap_prot(libc::PROT_READ | libc::PROT_WRITE)
                .with_mmap_flags(libc::MAP_SHARED)
        };
        if with_file {
            // A duplicate: the library's own fd is never to be closed,
            // and File closes what it holds.
            // A lease has no one file (its chunks are files of their own).
            let raw = layout.fd.ok_or_else(|| Error::new("zvmm_guest_layout", libc::EBADF))?;
            let fd = unsafe { libc::fcntl(raw.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
            if fd < 0 {
                return Err(Error::new(
                    "zvmm_guest_layout",
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EBADF),
                ));
            }
            let file = unsafe { File::from_raw_fd(fd) };
            builder = builder.with_file_offset(FileOffset::new(file, layout.offset));
        }
        let region: MmapRegion = builder
            .build()
            .map_err(|_| Error::new("zvmm_guest_memory", libc::EINVAL))?;
        let region = GuestRegionMmap::new(region, GuestAddress(0))
            .map_err(|_| Error::new("zvmm_guest_memory", libc::EINVAL))?;
        let mem = GuestMemoryMmap::from_regions(vec![region])
            .map_err(|_| Error::new("zvmm_guest_memory", libc::EINVAL))?;
        Ok(ZvmmMemory { mem, holder })
    }

    /// The guest this memory is of.
    pub fn guest(&self) -> &Guest {
        self.holder.guest()
    }

    /// Makes [@addr, @addr + @len) safe for this thread to read and
    /// write ([`Guest::access`]): under demand and hybrid, before a VMM
    /// thread touches the range. EINVAL when out of range.
    pub fn access(&self, addr: GuestAddress, len: usize) -> Result<()> {
        self.guest().access(addr.0, len as u64)
    }

    /// The whole memory made ready: under demand and hybrid every page
    /// the guest does not have yet is cleared now, at once.
    pub fn access_all(&self) -> Result<()> {
        let guest = self.guest();
        guest.access(0, guest.len())
    }

    /// The `GuestMemoryMmap` inside, for an API that wants that type.
    ///
    /// # Safety
    ///
    /// `GuestMemoryMmap` is `Clone`, and a clone (or an `Arc` of one of
    /// its regions) is not tied to the guest: the caller keeps every
    /// such copy from outliving this `ZvmmMemory`, whose guest unmaps
    /// the memory when closed.
    pub unsafe fn as_mmap(&self) -> &GuestMemoryMmap {
        &self.mem
    }
}

impl<G: GuestHolder> GuestMemory for ZvmmMemory<G> {
    type R = GuestRegionMmap;
    type I = GuestMemoryMmap;

    fn num_regions(&self) -> usize {
        self.mem.num_regions()
    }

    fn find_region(&self, addr: GuestAddress) -> Option<&GuestRegionMmap> {
        // After exit the mapping is PROT_NONE: an error, not a fault.
        if self.holder.guest().is_exited() {
            return None;
        }
        self.mem.find_region(addr)
    }

    fn iter(&self) -> <GuestMemoryMmap as GuestMemoryIterator<'_, GuestRegionMmap>>::Iter {
        self.mem.iter()
    }
}
