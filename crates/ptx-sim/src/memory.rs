//! Simulated global memory: a set of allocations in one flat 64-bit address space.
//!
//! Allocations start at [`GLOBAL_BASE`], are 256-byte aligned and separated by an unmapped gap,
//! so a pointer that runs off the end of a buffer faults instead of landing in the next one.
//! Shared memory is per block (in the interpreter); its generic addresses live in a separate
//! window at [`SHARED_WINDOW`], so `cvta` and generic loads and stores tell the two apart.
//!
//! The blocks (CTAs) of a thread block cluster reach each other's shared memory through
//! `shared::cluster` addresses, 32 bits like shared ones: an address below [`CLUSTER_WINDOW`]
//! (2^31) is an offset in the executing CTA's own shared memory (so every `shared::cta` address is
//! a `shared::cluster` address too, as in PTX), and `CLUSTER_WINDOW + rank * RANK_STRIDE + offset`
//! (bit 31 set, the rank in bits 24 to 30, the offset in bits 0 to 23) is byte `offset` of the
//! shared memory of the CTA of that rank in the cluster: `mapa` makes these. CTA rank 2's byte
//! 0x10 is 0x8200_0010. Their generic addresses are `SHARED_WINDOW` plus the same, as for shared
//! ones.

use std::cell::Cell;

use crate::error::SimError;

/// The first global address handed out.
pub(crate) const GLOBAL_BASE: u64 = 0x1_0000_0000;
/// Generic address of shared-memory offset 0 (the window is 4 GiB wide).
pub(crate) const SHARED_WINDOW: u64 = 0x7f00_0000_0000;
/// The first `shared::cluster` address that names a CTA by rank (see the module's docs).
pub(crate) const CLUSTER_WINDOW: u64 = 1 << 31;
/// The distance between two CTAs' shared memories in the cluster window (16 MiB, more than any
/// CTA's shared memory).
pub(crate) const RANK_STRIDE: u64 = 1 << 24;
/// Allocations never reach the shared window.
const GLOBAL_LIMIT: u64 = 0x7000_0000_0000;
const ALIGN: u64 = 256;
const GAP: u64 = 256;

struct Allocation {
    base: u64,
    data: Vec<u8>,
}

/// The device's global memory.
#[derive(Default)]
pub(crate) struct GlobalMemory {
    allocations: Vec<Allocation>,
    next: u64,
    /// The allocation `locate` found last: consecutive accesses mostly hit the same one.
    last_found: Cell<usize>,
}

impl GlobalMemory {
    /// A new allocation of `bytes` zeroed bytes; returns its address.
    pub(crate) fn alloc(&mut self, bytes: usize) -> Result<u64, SimError> {
        let base = self.next.max(GLOBAL_BASE);
        let end = base
            .checked_add(bytes as u64)
            .filter(|&e| e < GLOBAL_LIMIT)
            .ok_or(SimError::OutOfMemory { bytes })?;
        self.next = (end + GAP).next_multiple_of(ALIGN);
        self.allocations.push(Allocation { base, data: vec![0; bytes] });
        Ok(base)
    }

    /// Frees the allocation that starts at `base`. Addresses are never reused, so a stale pointer
    /// faults instead of reading someone else's buffer.
    pub(crate) fn free(&mut self, base: u64) -> Result<(), SimError> {
        let i = self
            .allocations
            .binary_search_by_key(&base, |a| a.base)
            .map_err(|_| SimError::HostAccess { addr: base, len: 0 })?;
        self.allocations.remove(i);
        Ok(())
    }

    /// The allocation index and offset holding `[addr, addr + len)`, if one holds all of it.
    pub(crate) fn locate(&self, addr: u64, len: usize) -> Option<(usize, usize)> {
        let holds = |a: &Allocation| {
            addr.checked_sub(a.base).filter(|&offset| {
                offset.checked_add(len as u64).is_some_and(|end| end <= a.data.len() as u64)
            })
        };
        let last = self.last_found.get();
        if let Some(offset) = self.allocations.get(last).and_then(holds) {
            return Some((last, offset as usize));
        }
        let i = self.allocations.partition_point(|a| a.base <= addr).checked_sub(1)?;
        let offset = holds(&self.allocations[i])?;
        self.last_found.set(i);
        Some((i, offset as usize))
    }

    /// The bytes of allocation number `alloc` (an index [`GlobalMemory::locate`] returned).
    pub(crate) fn bytes(&self, alloc: usize) -> &[u8] {
        &self.allocations[alloc].data
    }

    pub(crate) fn bytes_mut(&mut self, alloc: usize) -> &mut [u8] {
        &mut self.allocations[alloc].data
    }

    pub(crate) fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let (i, o) = self.locate(addr, len)?;
        Some(&self.allocations[i].data[o..o + len])
    }

    pub(crate) fn slice_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let (i, o) = self.locate(addr, len)?;
        Some(&mut self.allocations[i].data[o..o + len])
    }
}

/// Reads a little-endian value of `bytes.len()` (at most 8) bytes.
pub(crate) fn read_le(bytes: &[u8]) -> u64 {
    match bytes.len() {
        4 => u32::from_le_bytes(bytes.try_into().expect("4 bytes")) as u64,
        8 => u64::from_le_bytes(bytes.try_into().expect("8 bytes")),
        _ => bytes.iter().rev().fold(0, |acc, &b| (acc << 8) | b as u64),
    }
}

/// Writes the low `out.len()` bytes of `value`, little-endian.
pub(crate) fn write_le(out: &mut [u8], value: u64) {
    match out.len() {
        4 => return out.copy_from_slice(&(value as u32).to_le_bytes()),
        8 => return out.copy_from_slice(&value.to_le_bytes()),
        _ => {}
    }
    let len = out.len().min(8);
    out[..len].copy_from_slice(&value.to_le_bytes()[..len]);
}
