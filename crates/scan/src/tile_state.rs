//! The device state of single-pass launches (`cuda/look_back.cuh`): one status word per tile and
//! the tile counter, reused from launch to launch. Any kernel built on the look-back header uses
//! it (the scans here, stream compaction).

use gpu_harness::{Device, DeviceBuffer, Launch, Result};

/// Epochs are 29 bits in a status word; 0 is never used, so a zeroed word reads as empty.
pub const MAX_EPOCH: u32 = (1 << 29) - 1;

// ANCHOR: tile_state
/// Tile status words and the tile counter of single-pass launches.
///
/// A launch tags the words it writes with its epoch, so the words of the launch before read as
/// empty and the array needs no clearing between launches: one launch per scan. The counter is
/// left at 0 by every launch (the block that draws the launch's last number resets it). The words
/// are cleared only when the epoch wraps around (every 2^29 - 1 launches) and after a failed
/// launch.
pub struct TileState {
    device: Device,
    status: DeviceBuffer<u64>,
    counter: DeviceBuffer<u32>,
    epoch: u32,
}

impl TileState {
    /// No tiles yet; the counter at 0.
    pub fn new(device: &Device) -> Result<Self> {
        Ok(TileState {
            device: device.clone(),
            status: device.alloc(0)?,
            counter: device.alloc(1)?,
            epoch: 0,
        })
    }

    /// Makes room for `tiles` status words (allocating, zeroed, only when they must grow).
    pub fn reserve(&mut self, tiles: usize) -> Result<()> {
        if self.status.len() < tiles {
            self.status = self.device.alloc(tiles)?;
        }
        Ok(())
    }

    /// Adds the state's arguments to a launch of a look-back kernel, `(status, counter, n, epoch)`,
    /// and queues it. The epoch moves on first; if the launch fails, the state is reset, so the
    /// next launch starts clean.
    pub fn run(&mut self, launch: Launch<'_>, n: u64) -> Result<()> {
        if self.epoch == MAX_EPOCH {
            self.status.fill_words(0)?;
            self.epoch = 0;
        }
        self.epoch += 1;
        let result =
            launch.arg(&mut self.status).arg(&mut self.counter).arg(n).arg(self.epoch).run();
        if result.is_err() {
            self.reset()?;
        }
        result
    }

    /// Clears the status words and the counter.
    pub fn reset(&mut self) -> Result<()> {
        self.status.fill_words(0)?;
        self.counter.fill_words(0)
    }

    /// The epoch of the last launch (0 before the first).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The status words, as the last launch left them (tests read them).
    pub fn status(&self) -> &DeviceBuffer<u64> {
        &self.status
    }

    /// The tile counter (0 between launches).
    pub fn counter(&self) -> &DeviceBuffer<u32> {
        &self.counter
    }
}
// ANCHOR_END: tile_state
