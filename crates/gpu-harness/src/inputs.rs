//! The inputs the tour and the benches measure steps on, made once and shared.
//!
//! Steps measured one after another at a case read the same input: [`cached`] keeps the last
//! [`KEPT`] inputs made, keyed by their Rust type, the case's element count and kind of input
//! (`50%`, `all-equal`) and the seed, so each is drawn and uploaded once. The tour measures case
//! by case and a bench step by step at every case of its family; keeping three serves both.
//! [`random_input`] is the common input: random values on the host and their copy on the device.

use std::any::{Any, TypeId};
use std::fmt::Display;
use std::sync::{Arc, Mutex};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::bf16::f32_to_bf16;
use crate::{Case, Checked, Device, DeviceBuffer, Element, Result};

/// How many inputs [`cached`] keeps (one per case of a family, which has at most three).
pub const KEPT: usize = 3;

/// What identifies a made input: its type, element count, kind of input and seed.
type Key = (TypeId, u64, Option<String>, u64);

/// The input of type `T` for `case` drawn from `seed`: the kept one if it was made on this device,
/// else `make()`, kept in place of the oldest. Whoever makes a `T` must draw it the same way (every
/// family's `Input<f32>` is [`uniform_f32_input`]), or give it a type of its own.
pub fn cached<T: Any + Send + Sync>(
    device: &Device,
    case: &Case,
    seed: u64,
    make: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    type Kept = (Device, Key, Arc<dyn Any + Send + Sync>);
    static MADE: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
    let key: Key = (TypeId::of::<T>(), case.n(), case.variant.clone(), seed);
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, input)) =
        made.iter().find(|(owner, k, _)| owner.is_same(device) && *k == key)
    {
        return Ok(input.clone().downcast::<T>().expect("the key holds the type"));
    }
    if made.len() >= KEPT {
        made.remove(0); // free the oldest before making the next
    }
    let input = Arc::new(make()?);
    made.push((device.clone(), key, input.clone()));
    Ok(input)
}

/// Random values on the host and their copy on the device.
pub struct Input<T: Element> {
    pub host: Vec<T>,
    pub device: DeviceBuffer<T>,
    /// The case it was made for, and the seed that replays it (for messages).
    pub case: String,
    pub seed: u64,
}

impl<T: Element> Input<T> {
    /// The outcome of a check: correct, or wrong with `why` and how to replay the input.
    pub fn outcome(&self, step: &str, wrong: Option<impl Display>) -> Checked {
        match wrong {
            None => Checked::Correct,
            Some(why) => Checked::Wrong(format!(
                "{step}: {why} (input {} from seed {})",
                self.case, self.seed
            )),
        }
    }
}

/// The one draw of every family's f32 values: uniform in [-1, 1). The cache holds one
/// `Input<f32>` per case and seed, so every family must draw them this way.
pub fn uniform_f32(rng: &mut SmallRng) -> f32 {
    rng.random_range(-1.0f32..1.0)
}

/// The f32 input of `case` (values from [`uniform_f32`]), kept by [`cached`].
pub fn uniform_f32_input(device: &Device, case: &Case, seed: u64) -> Result<Arc<Input<f32>>> {
    random_input(device, case, seed, uniform_f32)
}

/// The bf16 input of `case`: [`uniform_f32`]'s values rounded to bf16 ([`f32_to_bf16`]), kept by
/// [`cached`] as a type of its own (an `Input<u16>` of another family may hold other words).
pub struct UniformBf16(pub Input<u16>);

/// The bf16 input of `case` ([`UniformBf16`]), kept by [`cached`].
pub fn uniform_bf16_input(device: &Device, case: &Case, seed: u64) -> Result<Arc<UniformBf16>> {
    cached(device, case, seed, || {
        let host = random_values(case.elements()?, seed, |rng| f32_to_bf16(uniform_f32(rng)));
        Ok(UniformBf16(Input {
            device: device.upload(&host)?,
            host,
            case: case.label.clone(),
            seed,
        }))
    })
}

/// The input of `case`'s element count, each value drawn by `draw` (see [`random_values`]), kept by
/// [`cached`].
pub fn random_input<T: Element>(
    device: &Device,
    case: &Case,
    seed: u64,
    draw: impl Fn(&mut SmallRng) -> T + Sync,
) -> Result<Arc<Input<T>>> {
    cached(device, case, seed, || {
        let host = random_values(case.elements()?, seed, draw);
        Ok(Input { device: device.upload(&host)?, host, case: case.label.clone(), seed })
    })
}

/// `n` values drawn by `draw` on every core: chunk `i` of 2^22 values from a generator seeded by
/// `seed` and `i`, so the values depend on the seed alone.
pub fn random_values<T: Send + Default + Clone>(
    n: usize,
    seed: u64,
    draw: impl Fn(&mut SmallRng) -> T + Sync,
) -> Vec<T> {
    let mut values = vec![T::default(); n];
    fill_in_parallel(&mut values, seed, |rng, chunk| chunk.iter_mut().for_each(|x| *x = draw(rng)));
    values
}

/// Fills `data` chunk by chunk on every core, chunk `i` from a generator seeded by `seed` and `i`.
pub fn fill_in_parallel<T: Send>(
    data: &mut [T],
    seed: u64,
    fill: impl Fn(&mut SmallRng, &mut [T]) + Sync,
) {
    const CHUNK: usize = 1 << 22;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_core = data.len().div_ceil(CHUNK).div_ceil(cores).max(1) * CHUNK;
    let fill = &fill;
    std::thread::scope(|scope| {
        for (group, part) in data.chunks_mut(per_core).enumerate() {
            scope.spawn(move || {
                for (index, chunk) in part.chunks_mut(CHUNK).enumerate() {
                    let chunk_index = (group * per_core / CHUNK + index) as u64;
                    let mut rng = SmallRng::seed_from_u64(
                        seed ^ (chunk_index + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    );
                    fill(&mut rng, chunk);
                }
            });
        }
    });
}
