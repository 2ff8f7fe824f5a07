//! Operators as data, for every full reduction of the family: the built-in [`Operator`]s, their
//! element types ([`OperatorElement`], with the CPU forms of the kernels' arithmetic), what a
//! reduction returns ([`Reduced`]), the CPU [`reference`], and the launcher trait
//! ([`OperatorReduction`]) that reduce-multi-level's multi-pass form and reduce-atomic's
//! one-launch form implement (their kernels: `cuda/operators.cuh`). The shared tests are
//! `operator_suite` (feature `suite`).

use std::fmt::Debug;

use gpu_harness::{Device, DeviceView, Element, GpuError, Result};

use crate::ReductionPlan;

/// The words (32-bit) of the largest value a built-in operator's passes hand on: an argmin's
/// (value, index).
pub const MAX_VALUE_WORDS: usize = 4;

// ANCHOR: operator
/// What a full reduction combines the elements with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    Sum,
    Product,
    Min,
    Max,
    ArgMin,
    ArgMax,
    /// Logical and: whether every element is non-zero.
    All,
    /// Logical or: whether any element is non-zero.
    Any,
    BitAnd,
    BitOr,
    BitXor,
}
// ANCHOR_END: operator

/// What an operator's result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value of the element type (sum, product, min, max, bitwise).
    Value,
    /// A value and the index of its first occurrence (argmin, argmax).
    Arg,
    /// True or false (all, any).
    Logical,
}

impl Operator {
    pub const ALL: [Operator; 11] = [
        Operator::Sum,
        Operator::Product,
        Operator::Min,
        Operator::Max,
        Operator::ArgMin,
        Operator::ArgMax,
        Operator::All,
        Operator::Any,
        Operator::BitAnd,
        Operator::BitOr,
        Operator::BitXor,
    ];

    /// The name in kernel names: `reduce_<name>_<type>`.
    pub fn name(self) -> &'static str {
        match self {
            Operator::Sum => "sum",
            Operator::Product => "product",
            Operator::Min => "min",
            Operator::Max => "max",
            Operator::ArgMin => "argmin",
            Operator::ArgMax => "argmax",
            Operator::All => "all",
            Operator::Any => "any",
            Operator::BitAnd => "bit_and",
            Operator::BitOr => "bit_or",
            Operator::BitXor => "bit_xor",
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            Operator::ArgMin | Operator::ArgMax => Kind::Arg,
            Operator::All | Operator::Any => Kind::Logical,
            _ => Kind::Value,
        }
    }

    /// Whether an empty input has an answer (the identity); min, max, argmin and argmax have none.
    pub fn has_identity(self) -> bool {
        !matches!(self, Operator::Min | Operator::Max | Operator::ArgMin | Operator::ArgMax)
    }
}

/// What a reduction returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reduced<T> {
    Value(T),
    Arg { value: T, index: usize },
    Logical(bool),
}

/// The element types of the operators, with the CPU forms of the kernels' arithmetic (the tests'
/// references).
pub trait OperatorElement: Element + PartialOrd + Debug {
    /// Kernel-name suffix: `f32`, `f64`, `i32`, `u32`, `u64`, `u8`.
    const SUFFIX: &'static str;
    /// The operators this type has kernels for.
    const OPERATORS: &'static [Operator];
    /// Whether sums and products round (floats) rather than wrap (integers).
    const ROUNDS: bool;
    /// The value held in the first `size_of::<Self>()` bytes of `words`.
    fn from_words(words: &[u32]) -> Self;
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
    fn is_nan(self) -> bool;
    fn is_nonzero(self) -> bool;
    /// The bitwise operators (integers only).
    fn bits(op: Operator, a: Self, b: Self) -> Self;
    /// The identity of a [`Kind::Value`] operator that has one.
    fn identity(op: Operator) -> Self;
    fn to_f64(self) -> f64;
}

macro_rules! float_element {
    ($t:ty, $suffix:literal, $words:expr) => {
        impl OperatorElement for $t {
            const SUFFIX: &'static str = $suffix;
            const OPERATORS: &'static [Operator] = &[
                Operator::Sum,
                Operator::Product,
                Operator::Min,
                Operator::Max,
                Operator::ArgMin,
                Operator::ArgMax,
                Operator::All,
                Operator::Any,
            ];
            const ROUNDS: bool = true;
            fn from_words(words: &[u32]) -> Self {
                $words(words)
            }
            fn wrapping_add(self, other: Self) -> Self {
                self + other
            }
            fn wrapping_mul(self, other: Self) -> Self {
                self * other
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_nonzero(self) -> bool {
                self != 0.0
            }
            fn bits(op: Operator, _: Self, _: Self) -> Self {
                unreachable!("{op:?} of {}", $suffix)
            }
            fn identity(op: Operator) -> Self {
                match op {
                    Operator::Product => 1.0,
                    _ => 0.0,
                }
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
float_element!(f32, "f32", |w: &[u32]| f32::from_bits(w[0]));
float_element!(f64, "f64", |w: &[u32]| f64::from_bits(u64::from(w[0]) | u64::from(w[1]) << 32));

macro_rules! integer_element {
    ($t:ty, $suffix:literal, $ops:expr, $words:expr) => {
        impl OperatorElement for $t {
            const SUFFIX: &'static str = $suffix;
            const OPERATORS: &'static [Operator] = $ops;
            const ROUNDS: bool = false;
            fn from_words(words: &[u32]) -> Self {
                $words(words)
            }
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            fn wrapping_mul(self, other: Self) -> Self {
                <$t>::wrapping_mul(self, other)
            }
            fn is_nan(self) -> bool {
                false
            }
            fn is_nonzero(self) -> bool {
                self != 0
            }
            fn bits(op: Operator, a: Self, b: Self) -> Self {
                match op {
                    Operator::BitAnd => a & b,
                    Operator::BitOr => a | b,
                    Operator::BitXor => a ^ b,
                    _ => unreachable!("{op:?} is not bitwise"),
                }
            }
            fn identity(op: Operator) -> Self {
                match op {
                    Operator::Product => 1,
                    Operator::BitAnd => !0,
                    _ => 0,
                }
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
const INTEGER_OPERATORS: &[Operator] = &Operator::ALL;
const U64_OPERATORS: &[Operator] = &[
    Operator::Sum,
    Operator::Product,
    Operator::Min,
    Operator::Max,
    Operator::ArgMin,
    Operator::ArgMax,
    Operator::BitAnd,
    Operator::BitOr,
    Operator::BitXor,
];
integer_element!(i32, "i32", INTEGER_OPERATORS, |w: &[u32]| w[0] as i32);
integer_element!(u32, "u32", INTEGER_OPERATORS, |w: &[u32]| w[0]);
integer_element!(u64, "u64", U64_OPERATORS, |w: &[u32]| u64::from(w[0]) | u64::from(w[1]) << 32);
integer_element!(u8, "u8", &[Operator::All, Operator::Any], |w: &[u32]| w[0] as u8);

/// The CPU reference of `op` over `values`, with the kernels' rules (float sums and products in
/// the element type, in order: the tests compare those with an f64 reference within a bound).
pub fn reference<T: OperatorElement>(op: Operator, values: &[T]) -> Option<Reduced<T>> {
    let better = |largest: bool| {
        move |best: (T, usize), (i, &x): (usize, &T)| {
            let wins = if best.0.is_nan() {
                false
            } else if x.is_nan() {
                true
            } else if largest {
                x > best.0
            } else {
                x < best.0
            };
            if wins { (x, i) } else { best }
        }
    };
    let first = *values.first()?;
    Some(match op.kind() {
        Kind::Logical => Reduced::Logical(if op == Operator::All {
            values.iter().all(|x| x.is_nonzero())
        } else {
            values.iter().any(|x| x.is_nonzero())
        }),
        Kind::Arg => {
            let (value, index) =
                values.iter().enumerate().fold((first, 0), better(op == Operator::ArgMax));
            Reduced::Arg { value, index }
        }
        Kind::Value => Reduced::Value(match op {
            Operator::Sum => values.iter().fold(T::identity(op), |a, &b| a.wrapping_add(b)),
            Operator::Product => values.iter().fold(T::identity(op), |a, &b| a.wrapping_mul(b)),
            Operator::Min | Operator::Max => {
                values.iter().enumerate().fold((first, 0), better(op == Operator::Max)).0
            }
            _ => values.iter().fold(T::identity(op), |a, &b| T::bits(op, a, b)),
        }),
    })
}

/// The answer for an empty input: the operator's identity, or an error where there is none.
pub fn empty<T: OperatorElement>(op: Operator) -> Result<Reduced<T>> {
    match op.kind() {
        _ if !op.has_identity() => {
            Err(GpuError::BadInput(format!("the {} of an empty input is undefined", op.name())))
        }
        Kind::Logical => Ok(Reduced::Logical(op == Operator::All)),
        _ => Ok(Reduced::Value(T::identity(op))),
    }
}

/// The result of `op` from the words of its Value as the kernels write it (an argmin's index in
/// words 2 and 3).
pub fn decode<T: OperatorElement>(op: Operator, words: &[u32]) -> Reduced<T> {
    match op.kind() {
        Kind::Value => Reduced::Value(T::from_words(words)),
        Kind::Arg => {
            let index = u64::from(words[2]) | u64::from(words[3]) << 32;
            Reduced::Arg { value: T::from_words(words), index: index as usize }
        }
        Kind::Logical => Reduced::Logical(words[0] != 0),
    }
}

/// The error for an operator `T` has no kernels for.
pub fn no_kernels<T: OperatorElement>(op: Operator) -> GpuError {
    GpuError::BadInput(format!(
        "there is no {} of {} here (its operators: {:?})",
        op.name(),
        T::SUFFIX,
        T::OPERATORS
    ))
}

/// A full reduction with the built-in operators (this crate's [`Reduce`], reduce-atomic's
/// one-launch form): what the shared tests (feature `suite`) and the benches call.
pub trait OperatorReduction<T: OperatorElement>: Sized {
    /// Loads the kernels of every operator of `T`.
    fn create(device: &Device) -> Result<Self>;
    /// The plan for `n` elements on this device.
    fn plan(&self, n: usize) -> ReductionPlan;
    /// Sizes the scratch buffers for `n` elements and fills them with [`crate::POISON_WORD`].
    fn poison_scratch(&mut self, n: usize) -> Result<()>;
    /// `op` over `input`: the identity of an empty input, or a [`GpuError::BadInput`] where there
    /// is none or `T` has no kernels for `op`.
    fn reduce(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<Reduced<T>>;
    /// Queues `op` over `input` (not empty); the result stays on the device (for timing).
    fn queue(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<()>;
}

/// A launcher of every element type (for tests generic over the types).
pub trait OperatorFamily: 'static {
    type For<T: OperatorElement>: OperatorReduction<T>;
}
