//! The general per-lane interpreter: every instruction the simulator supports, executed one lane
//! at a time straight from its parsed [`Instr`]. The fast paths in module `exec` cover the
//! instructions the course's kernels run most; everything else (and every instruction whose
//! modifiers the fast paths do not model) comes here.

use crate::decode::mask;
use crate::error::Fault;
use crate::exec::{Block, Lane, lanes};
use crate::half::{self, HalfFormat};
use crate::memory::SHARED_WINDOW;
use crate::ptx::{Instr, Op, Operand, Space, Type};
use crate::trace::AccessKind;

/// PTX's canonical NaN results.
const NAN32: u32 = 0x7fff_ffff;
const NAN64: u64 = 0x7fff_ffff_ffff_ffff;

/// An mbarrier's state word (see `Block::mbarrier`) after `arrivals` arrivals that announce
/// `expected_bytes` more transaction bytes, and `completed_bytes` bytes of finished copies.
fn mbarrier_update(word: u64, arrivals: u64, expected_bytes: u64, completed_bytes: u64) -> u64 {
    const FIELD: u64 = (1 << 21) - 1;
    let pending = (word & FIELD).wrapping_sub(arrivals) & FIELD;
    let count = (word >> 21) & FIELD;
    let bytes =
        ((word >> 42) & FIELD).wrapping_add(expected_bytes).wrapping_sub(completed_bytes) & FIELD;
    let phase = word >> 63;
    if pending == 0 && bytes == 0 {
        count | (count << 21) | ((phase ^ 1) << 63)
    } else {
        pending | (count << 21) | (bytes << 42) | (phase << 63)
    }
}

pub(crate) fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 { v as i64 } else { ((v << (64 - bits)) as i64) >> (64 - bits) }
}

fn arg(i: &Instr, n: usize) -> Lane<&Operand> {
    i.args.get(n).ok_or_else(|| Fault::Unsupported(format!("missing operand {n}")))
}

fn ty(i: &Instr) -> Lane<Type> {
    i.ty().ok_or_else(|| Fault::Unsupported(format!("`{}` without a type", i.text)))
}

pub(crate) fn f32_result(x: f32) -> u64 {
    if x.is_nan() { NAN32 as u64 } else { x.to_bits() as u64 }
}

pub(crate) fn f64_result(x: f64) -> u64 {
    if x.is_nan() { NAN64 } else { x.to_bits() }
}

fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() { 0.0f32.copysign(x) } else { x }
}

/// PTX `min.f32`/`max.f32`: a NaN operand is ignored unless both are NaN; -0 < +0.
fn fminmax(a: f64, b: f64, is_max: bool, nan_wins: bool) -> Option<f64> {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => None,
        (true, false) | (false, true) if nan_wins => None,
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ if a == b => {
            Some(if (a.is_sign_negative() && !is_max) || (!a.is_sign_negative() && is_max) {
                a
            } else {
                b
            })
        }
        _ => Some(if (a < b) != is_max { a } else { b }),
    }
}

impl Block<'_> {
    /// Executes `i` one lane at a time for the lanes in `exec` (of those in `active`), with the
    /// warp-wide instructions (shuffles, votes) done here too.
    pub(crate) fn per_lane_warp(
        &mut self,
        i: &Instr,
        lo: usize,
        active: u32,
        exec: u32,
    ) -> Result<(), (usize, Fault)> {
        let first = lo + exec.trailing_zeros().min(31) as usize;
        match i.op {
            Op::Trap if exec != 0 => Err((first, Fault::Trap)),
            Op::Shfl => self.shfl(i, lo, exec),
            Op::Vote => self.vote(i, lo, exec),
            Op::Match => self.match_lanes(i, lo, exec),
            Op::Activemask => {
                for l in lanes(exec) {
                    self.set(lo + l, &i.args[0], active as u64).map_err(|f| (lo + l, f))?;
                }
                Ok(())
            }
            _ => {
                for l in lanes(exec) {
                    let t = lo + l;
                    self.lane(i, t).map_err(|f| (t, f))?;
                }
                self.count_distributed();
                Ok(())
            }
        }
    }

    fn unsupported<T>(&self, i: &Instr) -> Lane<T> {
        Err(Fault::Unsupported(i.text.clone()))
    }

    /// Rejects rounding modes other than round-to-nearest-even on float arithmetic.
    fn check_rn(&self, i: &Instr) -> Lane<()> {
        if ["rz", "rm", "rp", "approx"].iter().any(|m| i.has(m)) {
            self.unsupported(i)
        } else {
            Ok(())
        }
    }

    /// One lane's share of a lane-independent instruction.
    fn lane(&mut self, i: &Instr, t: usize) -> Lane<()> {
        match i.op {
            Op::Mov => self.mov(i, t),
            Op::Add
            | Op::Sub
            | Op::Mul
            | Op::Div
            | Op::Rem
            | Op::Min
            | Op::Max
            | Op::And
            | Op::Or
            | Op::Xor => self.binary(i, t),
            Op::Shl | Op::Shr => {
                let ty = ty(i)?;
                let bits = ty.bits();
                let a = self.get(t, arg(i, 1)?, ty)?;
                let b = self.get(t, arg(i, 2)?, Type::U(32))?;
                let r = match (i.op, ty) {
                    (Op::Shl, _) => {
                        if b >= bits as u64 {
                            0
                        } else {
                            a << b
                        }
                    }
                    (_, Type::S(_)) => (sext(a, bits) >> b.min(bits as u64 - 1)) as u64,
                    _ => {
                        if b >= bits as u64 {
                            0
                        } else {
                            a >> b
                        }
                    }
                };
                self.set(t, arg(i, 0)?, r & mask(bits))
            }
            Op::Mad | Op::Fma => self.mad(i, t),
            Op::Neg
            | Op::Abs
            | Op::Not
            | Op::Popc
            | Op::Clz
            | Op::Brev
            | Op::Sqrt
            | Op::Rcp
            | Op::Ex2 => self.unary(i, t),
            Op::Selp => {
                let ty = ty(i)?;
                let c = self.get(t, arg(i, 3)?, Type::Pred)?;
                let v = self.get(t, arg(i, if c != 0 { 1 } else { 2 })?, ty)?;
                self.set(t, arg(i, 0)?, v)
            }
            Op::Setp => self.setp_lane(i, t),
            Op::Cvt => self.cvt(i, t),
            Op::Cvta => {
                let ty = ty(i)?;
                let a = self.get(t, arg(i, 1)?, ty)?;
                let r = match (i.space, i.has("to")) {
                    (Space::Global, _) => a,
                    (Space::Shared | Space::SharedCluster, false) => a.wrapping_add(SHARED_WINDOW),
                    (Space::Shared | Space::SharedCluster, true) => a.wrapping_sub(SHARED_WINDOW),
                    _ => return self.unsupported(i),
                };
                self.set(t, arg(i, 0)?, r & mask(ty.bits()))
            }
            Op::Ld | Op::St => self.ld_st(i, t),
            Op::Atom | Op::Red => self.atom(i, t),
            Op::Mbarrier => self.mbarrier(i, t),
            Op::Cp => self.bulk_copy(i, t),
            Op::Mapa => self.mapa(i, t),
            Op::Getctarank => self.getctarank(i, t),
            Op::Bfi => {
                let ty = ty(i)?;
                let bits = ty.bits();
                let a = self.get(t, arg(i, 1)?, ty)?;
                let b = self.get(t, arg(i, 2)?, ty)?;
                let pos = self.get(t, arg(i, 3)?, Type::U(32))? & 0xff;
                let len = self.get(t, arg(i, 4)?, Type::U(32))? & 0xff;
                let mut f = b;
                for k in 0..len {
                    if pos + k < bits as u64 {
                        let bit = (a >> k) & 1;
                        f = (f & !(1 << (pos + k))) | (bit << (pos + k));
                    }
                }
                self.set(t, arg(i, 0)?, f)
            }
            Op::Prmt => {
                // The default mode only: each selector nibble picks one of the 8 bytes of {b, a}
                // (a's bytes first); its top bit replicates that byte's sign bit instead.
                if ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"].iter().any(|m| i.has(m)) {
                    return self.unsupported(i);
                }
                let a = self.get(t, arg(i, 1)?, Type::B(32))?;
                let b = self.get(t, arg(i, 2)?, Type::B(32))?;
                let c = self.get(t, arg(i, 3)?, Type::B(32))?;
                let bytes = (b << 32) | a;
                let mut d = 0u64;
                for k in 0..4 {
                    let selector = (c >> (4 * k)) & 0xf;
                    let byte = (bytes >> (8 * (selector & 7))) & 0xff;
                    let byte = if selector & 8 == 0 {
                        byte
                    } else if byte & 0x80 != 0 {
                        0xff
                    } else {
                        0
                    };
                    d |= byte << (8 * k);
                }
                self.set(t, arg(i, 0)?, d)
            }
            Op::Shf => {
                // Funnel shift of the 64 bits {b (high), a (low)}: `.l` keeps the high 32 bits of
                // the left shift, `.r` the low 32 bits of the right shift (arithmetic for `.s32`).
                let a = self.get(t, arg(i, 1)?, Type::B(32))?;
                let b = self.get(t, arg(i, 2)?, Type::B(32))?;
                let c = self.get(t, arg(i, 3)?, Type::U(32))?;
                let n = if i.has("clamp") {
                    c.min(32)
                } else if i.has("wrap") {
                    c & 31
                } else {
                    return self.unsupported(i);
                };
                let high = if i.has("s32") { sext(b, 32) as u64 } else { b };
                let wide = (high << 32) | a;
                let d = if i.has("l") {
                    (wide << n) >> 32
                } else if i.has("r") {
                    ((wide as i64) >> n) as u64
                } else {
                    return self.unsupported(i);
                };
                self.set(t, arg(i, 0)?, d & 0xffff_ffff)
            }
            Op::Bfind => {
                // The bit position of the most significant 1 (for negative signed values, 0), or
                // 0xffffffff when there is none; `.shiftamt` gives the left shift that brings it to
                // the top instead.
                let ty = ty(i)?;
                let bits = ty.bits();
                let a = self.get(t, arg(i, 1)?, ty)?;
                let a =
                    if matches!(ty, Type::S(_)) && sext(a, bits) < 0 { !a & mask(bits) } else { a };
                let d = match a {
                    0 => 0xffff_ffff,
                    _ if i.has("shiftamt") => (a.leading_zeros() - (64 - bits)) as u64,
                    _ => (63 - a.leading_zeros()) as u64,
                };
                self.set(t, arg(i, 0)?, d)
            }
            Op::Bfe => {
                let ty = ty(i)?;
                let bits = ty.bits() as u64;
                let a = self.get(t, arg(i, 1)?, ty)?;
                let pos = self.get(t, arg(i, 2)?, Type::U(32))? & 0xff;
                let len = self.get(t, arg(i, 3)?, Type::U(32))? & 0xff;
                let signed = matches!(ty, Type::S(_));
                let sbit =
                    if signed && len > 0 { (a >> (pos + len - 1).min(bits - 1)) & 1 } else { 0 };
                let mut d = 0u64;
                for k in 0..bits {
                    let bit = if k < len && pos + k < bits { (a >> (pos + k)) & 1 } else { sbit };
                    d |= bit << k;
                }
                self.set(t, arg(i, 0)?, d)
            }
            _ => self.unsupported(i),
        }
    }

    fn mov(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        match (arg(i, 0)?, arg(i, 1)?) {
            (Operand::Vector(parts), src) => {
                let v = self.get(t, src, ty)?;
                let w = ty.bits() / parts.len() as u32;
                for (k, p) in parts.iter().enumerate() {
                    self.set(t, p, (v >> (w * k as u32)) & mask(w))?;
                }
                Ok(())
            }
            (dst, Operand::Vector(parts)) => {
                let w = ty.bits() / parts.len() as u32;
                let mut v = 0u64;
                for (k, p) in parts.iter().enumerate() {
                    v |= self.get(t, p, Type::B(w))? << (w * k as u32);
                }
                self.set(t, dst, v)
            }
            (dst, src) => {
                let v = self.get(t, src, ty)?;
                self.set(t, dst, v)
            }
        }
    }

    fn binary(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        let bits = ty.bits();
        let a = self.get(t, arg(i, 1)?, ty)?;
        let b = self.get(t, arg(i, 2)?, ty)?;
        let r = match ty {
            Type::F(32) => {
                self.check_rn(i)?;
                let ftz = i.has("ftz");
                let (mut x, mut y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
                if ftz {
                    (x, y) = (ftz32(x), ftz32(y));
                }
                let r = match i.op {
                    Op::Add => x + y,
                    Op::Sub => x - y,
                    Op::Mul => x * y,
                    Op::Div if i.has("rn") => x / y,
                    Op::Min | Op::Max => {
                        match fminmax(x as f64, y as f64, i.op == Op::Max, i.has("NaN")) {
                            Some(v) => v as f32,
                            None => f32::NAN,
                        }
                    }
                    _ => return self.unsupported(i),
                };
                let r = if ftz { ftz32(r) } else { r };
                let r =
                    if i.has("sat") { if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) } } else { r };
                f32_result(r)
            }
            Type::F(64) => {
                self.check_rn(i)?;
                let (x, y) = (f64::from_bits(a), f64::from_bits(b));
                let r = match i.op {
                    Op::Add => x + y,
                    Op::Sub => x - y,
                    Op::Mul => x * y,
                    Op::Div if i.has("rn") => x / y,
                    Op::Min | Op::Max => {
                        fminmax(x, y, i.op == Op::Max, i.has("NaN")).unwrap_or(f64::NAN)
                    }
                    _ => return self.unsupported(i),
                };
                f64_result(r)
            }
            Type::F(16) | Type::Bf16 | Type::F16x2 | Type::Bf16x2 => {
                let op: fn(f64, f64, f64) -> f64 = match i.op {
                    Op::Add => |x, y, _| x + y,
                    Op::Sub => |x, y, _| x - y,
                    Op::Mul => |x, y, _| x * y,
                    _ => return self.unsupported(i),
                };
                self.half_arithmetic(i, ty, a, b, 0, op)?
            }
            Type::F(_) => return self.unsupported(i),
            _ => {
                let signed = matches!(ty, Type::S(_));
                let (sa, sb) = (sext(a, bits), sext(b, bits));
                match i.op {
                    Op::Add if i.has("sat") => {
                        (sa.saturating_add(sb).clamp(i32::MIN as i64, i32::MAX as i64)) as u64
                    }
                    Op::Sub if i.has("sat") => {
                        (sa.saturating_sub(sb).clamp(i32::MIN as i64, i32::MAX as i64)) as u64
                    }
                    Op::Add => a.wrapping_add(b),
                    Op::Sub => a.wrapping_sub(b),
                    Op::Mul => return self.mul(i, t, ty, a, b, None),
                    Op::Div | Op::Rem if b == 0 => return Err(Fault::DivisionByZero),
                    Op::Div if signed => sa.wrapping_div(sb) as u64,
                    Op::Rem if signed => sa.wrapping_rem(sb) as u64,
                    Op::Div => a / b,
                    Op::Rem => a % b,
                    Op::Min if signed => sa.min(sb) as u64,
                    Op::Max if signed => sa.max(sb) as u64,
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                    Op::And => a & b,
                    Op::Or => a | b,
                    Op::Xor => a ^ b,
                    _ => return self.unsupported(i),
                }
            }
        };
        self.set(t, arg(i, 0)?, r & mask(bits))
    }

    /// `mul` and `mad` on integers: `.lo`, `.hi`, `.wide`, plus an optional addend.
    fn mul(
        &mut self,
        i: &Instr,
        t: usize,
        ty: Type,
        a: u64,
        b: u64,
        c: Option<&Operand>,
    ) -> Lane<()> {
        let bits = ty.bits();
        let signed = matches!(ty, Type::S(_));
        let product: i128 = if signed {
            sext(a, bits) as i128 * sext(b, bits) as i128
        } else {
            a as i128 * b as i128
        };
        let (value, out_bits) = if i.has("wide") {
            (product as u64, bits * 2)
        } else if i.has("hi") {
            ((product >> bits) as u64, bits)
        } else {
            (product as u64, bits)
        };
        let out_ty = if signed { Type::S(out_bits) } else { Type::U(out_bits) };
        let value = match c {
            Some(c) => value.wrapping_add(self.get(t, c, out_ty)?),
            None => value,
        };
        self.set(t, arg(i, 0)?, value & mask(out_bits))
    }

    fn mad(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        let a = self.get(t, arg(i, 1)?, ty)?;
        let b = self.get(t, arg(i, 2)?, ty)?;
        match ty {
            Type::F(16) | Type::Bf16 | Type::F16x2 | Type::Bf16x2 if i.op == Op::Fma => {
                let c = self.get(t, arg(i, 3)?, ty)?;
                let r = self.half_arithmetic(i, ty, a, b, c, |x, y, z| x.mul_add(y, z))?;
                self.set(t, arg(i, 0)?, r)
            }
            Type::F(32) => {
                self.check_rn(i)?;
                let c = self.get(t, arg(i, 3)?, ty)?;
                let ftz = i.has("ftz");
                let f = |v: u64| {
                    let x = f32::from_bits(v as u32);
                    if ftz { ftz32(x) } else { x }
                };
                let r = f(a).mul_add(f(b), f(c));
                let r = if ftz { ftz32(r) } else { r };
                let r =
                    if i.has("sat") { if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) } } else { r };
                self.set(t, arg(i, 0)?, f32_result(r))
            }
            Type::F(64) => {
                self.check_rn(i)?;
                let c = self.get(t, arg(i, 3)?, ty)?;
                let r = f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c));
                self.set(t, arg(i, 0)?, f64_result(r))
            }
            Type::F(_) | Type::Pred => self.unsupported(i),
            _ if i.op == Op::Mad => {
                let c = arg(i, 3)?.clone();
                self.mul(i, t, ty, a, b, Some(&c))
            }
            _ => self.unsupported(i),
        }
    }

    fn unary(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        let bits = ty.bits();
        let a = self.get(t, arg(i, 1)?, ty)?;
        let sign = 1u64 << (bits - 1).min(63);
        let r = match (i.op, ty) {
            (Op::Not, Type::Pred) => a ^ 1,
            (Op::Not, _) => !a,
            (Op::Neg, Type::F(_)) => a ^ sign,
            (Op::Abs, Type::F(_)) => a & !sign,
            (Op::Neg, _) => a.wrapping_neg(),
            (Op::Abs, _) => sext(a, bits).unsigned_abs(),
            (Op::Popc, _) => a.count_ones() as u64,
            (Op::Clz, _) => (a.leading_zeros() - (64 - bits)) as u64,
            (Op::Brev, _) => a.reverse_bits() >> (64 - bits),
            (Op::Sqrt | Op::Rcp, Type::F(32)) if i.has("rn") => {
                let x = f32::from_bits(a as u32);
                f32_result(if i.op == Op::Sqrt { x.sqrt() } else { 1.0 / x })
            }
            (Op::Sqrt | Op::Rcp, Type::F(64)) if i.has("rn") => {
                let x = f64::from_bits(a);
                f64_result(if i.op == Op::Sqrt { x.sqrt() } else { 1.0 / x })
            }
            // 2^x, computed in f64 and rounded to f32: the hardware's approximation is within 2 ulp
            // of it, so a kernel that uses ex2.approx must not depend on its last bits. `.ftz`
            // flushes a subnormal input or result to zero of the same sign.
            (Op::Ex2, Type::F(32)) if i.has("approx") => {
                let flush =
                    |v: f32| if i.has("ftz") && v.is_subnormal() { 0.0f32.copysign(v) } else { v };
                let x = flush(f32::from_bits(a as u32));
                f32_result(flush(f64::from(x).exp2() as f32))
            }
            _ => return self.unsupported(i),
        };
        self.set(t, arg(i, 0)?, r & mask(bits))
    }

    fn setp_lane(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        let bits = ty.bits();
        let cmp = i.mods.first().map(String::as_str).unwrap_or_default();
        let a = self.get(t, arg(i, 1)?, ty)?;
        let b = self.get(t, arg(i, 2)?, ty)?;
        let r = match ty {
            Type::F(_) => {
                let (x, y) = if bits == 32 {
                    (f32::from_bits(a as u32) as f64, f32::from_bits(b as u32) as f64)
                } else {
                    (f64::from_bits(a), f64::from_bits(b))
                };
                let unordered = x.is_nan() || y.is_nan();
                match cmp {
                    "eq" => !unordered && x == y,
                    "ne" => !unordered && x != y,
                    "lt" => !unordered && x < y,
                    "le" => !unordered && x <= y,
                    "gt" => !unordered && x > y,
                    "ge" => !unordered && x >= y,
                    "equ" => unordered || x == y,
                    "neu" => unordered || x != y,
                    "ltu" => unordered || x < y,
                    "leu" => unordered || x <= y,
                    "gtu" => unordered || x > y,
                    "geu" => unordered || x >= y,
                    "num" => !unordered,
                    "nan" => unordered,
                    _ => return self.unsupported(i),
                }
            }
            _ => {
                let signed = matches!(ty, Type::S(_));
                let ord = if signed { sext(a, bits).cmp(&sext(b, bits)) } else { a.cmp(&b) };
                use std::cmp::Ordering::*;
                match cmp {
                    "eq" => ord == Equal,
                    "ne" => ord != Equal,
                    "lt" => ord == Less,
                    "lo" => a < b,
                    "le" => ord != Greater,
                    "ls" => a <= b,
                    "gt" => ord == Greater,
                    "hi" => a > b,
                    "ge" => ord != Less,
                    "hs" => a >= b,
                    _ => return self.unsupported(i),
                }
            }
        };
        let (mut p, mut q) = (r, !r);
        if let Some(boolop) = i.mods.get(1).filter(|m| ["and", "or", "xor"].contains(&m.as_str())) {
            let c = self.get(t, arg(i, 3)?, Type::Pred)? != 0;
            let f = |x: bool| match boolop.as_str() {
                "and" => x && c,
                "or" => x || c,
                _ => x ^ c,
            };
            (p, q) = (f(p), f(q));
        }
        match arg(i, 0)?.clone() {
            Operand::Pair(dp, dq) => {
                self.set(t, &Operand::Reg(dp), p as u64)?;
                self.set(t, &Operand::Reg(dq), q as u64)
            }
            d => self.set(t, &d, p as u64),
        }
    }

    fn cvt(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let (Some(&dst), Some(&src)) = (i.types.first(), i.types.get(1)) else {
            return self.unsupported(i);
        };
        let a = self.get(t, arg(i, 1)?, src)?;
        let sat = i.has("sat");
        let int_range = |ty: Type| -> (i128, i128) {
            match ty {
                Type::S(b) => (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1),
                _ => (0, (1i128 << ty.bits()) - 1),
            }
        };
        let half = |ty: Type| match ty {
            Type::F(16) => Some(HalfFormat::F16),
            Type::Bf16 => Some(HalfFormat::Bf16),
            _ => None,
        };
        let float = |ty: Type| matches!(ty, Type::F(32) | Type::F(64)) || half(ty).is_some();
        let r = match (dst, src) {
            // Conversions between the 16-bit formats and f32/f64: widening is exact; narrowing
            // rounds to nearest even (the only rounding NVRTC's headers use).
            (d, s) if (half(d).is_some() || half(s).is_some()) && float(d) && float(s) => {
                if ["rz", "rm", "rp", "rna", "sat", "relu", "satfinite"].iter().any(|m| i.has(m)) {
                    return self.unsupported(i);
                }
                let x = match (half(s), s) {
                    (Some(format), _) => format.value(a),
                    (None, Type::F(32)) => {
                        let x = f32::from_bits(a as u32);
                        (if i.has("ftz") { ftz32(x) } else { x }) as f64
                    }
                    _ => f64::from_bits(a),
                };
                match (half(d), d) {
                    (Some(format), _) => format.round(x),
                    (None, Type::F(32)) => f32_result(x as f32),
                    _ => f64_result(x),
                }
            }
            // Two f32 into a pair (`cvt.rn.bf16x2.f32 d, a, b`): a rounded into the upper half of
            // d, b into the lower.
            (Type::F16x2 | Type::Bf16x2, Type::F(32)) => {
                if ["rz", "rm", "rp", "rna", "sat", "relu", "satfinite"].iter().any(|m| i.has(m)) {
                    return self.unsupported(i);
                }
                let format = if dst == Type::Bf16x2 { HalfFormat::Bf16 } else { HalfFormat::F16 };
                let b = self.get(t, arg(i, 2)?, src)?;
                let round = |bits: u64| {
                    let x = f32::from_bits(bits as u32);
                    format.round((if i.has("ftz") { ftz32(x) } else { x }) as f64)
                };
                (round(a) << 16) | round(b)
            }
            (Type::F(16) | Type::Bf16 | Type::F16x2 | Type::Bf16x2, _)
            | (_, Type::F(16) | Type::Bf16 | Type::F16x2 | Type::Bf16x2)
            | (Type::Pred, _)
            | (_, Type::Pred) => return self.unsupported(i),
            (Type::F(db), Type::F(sb)) => {
                let x = if sb == 32 { f32::from_bits(a as u32) as f64 } else { f64::from_bits(a) };
                let x = if i.has("ftz") && sb == 32 { ftz32(x as f32) as f64 } else { x };
                let x = match round_to_integer(i, x) {
                    Some(rounded) => rounded,
                    None if db < sb && ["rz", "rm", "rp"].iter().any(|m| i.has(m)) => {
                        return self.unsupported(i);
                    }
                    None => x,
                };
                let x = if sat { if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) } } else { x };
                if db == 32 { f32_result(x as f32) } else { f64_result(x) }
            }
            (Type::F(db), _) => {
                if ["rz", "rm", "rp"].iter().any(|m| i.has(m)) {
                    return self.unsupported(i);
                }
                let signed = matches!(src, Type::S(_));
                let v = if signed { sext(a, src.bits()) as f64 } else { a as f64 };
                // Converting through f64 would round twice for 64-bit sources: go direct.
                let as32 = if signed { sext(a, src.bits()) as f32 } else { a as f32 };
                if db == 32 { f32_result(as32) } else { f64_result(v) }
            }
            (_, Type::F(sb)) => {
                let x = if sb == 32 { f32::from_bits(a as u32) as f64 } else { f64::from_bits(a) };
                let Some(x) = round_to_integer(i, x) else {
                    return self.unsupported(i);
                };
                let (lo, hi) = int_range(dst);
                if x.is_nan() {
                    0
                } else {
                    (x.clamp(lo as f64, hi as f64) as i128).clamp(lo, hi) as u64
                }
            }
            _ => {
                let v: i128 =
                    if matches!(src, Type::S(_)) { sext(a, src.bits()) as i128 } else { a as i128 };
                let v = if sat {
                    let (lo, hi) = int_range(dst);
                    v.clamp(lo, hi)
                } else {
                    v
                };
                v as u64
            }
        };
        // Integer results narrower than the register are sign- or zero-extended by readers.
        self.set(t, arg(i, 0)?, r & mask(dst.bits()))
    }

    fn ld_st(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        let size = ty.bytes();
        let (mem, data) =
            if i.op == Op::Ld { (arg(i, 1)?, arg(i, 0)?) } else { (arg(i, 0)?, arg(i, 1)?) };
        let addr = self.address(t, mem)?;
        let total = size * i.vec;
        let base = self.resolve(i.space, addr, total, true)?;
        if self.recording {
            let kind = if i.op == Op::Ld { AccessKind::Load } else { AccessKind::Store };
            self.record_lane(t, i.space, addr, total, kind);
        }
        let items: Vec<Operand> = match data {
            Operand::Vector(v) => v.clone(),
            other => vec![other.clone()],
        };
        if items.len() != i.vec as usize {
            return self.unsupported(i);
        }
        for (k, item) in items.iter().enumerate() {
            let loc = base.plus(k * size as usize);
            if i.op == Op::Ld {
                let v = self.load(loc, size as usize);
                let v = if matches!(ty, Type::S(_)) { sext(v, ty.bits()) as u64 } else { v };
                self.set(t, item, v)?;
            } else {
                let v = self.get(t, item, ty)?;
                self.store(loc, size as usize, v)?;
            }
        }
        Ok(())
    }

    fn atom(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        let size = ty.bytes();
        let red = i.op == Op::Red;
        let first_src = if red { 1 } else { 2 };
        let addr = self.address(t, arg(i, first_src - 1)?)?;
        // Atomics are counted as atomics, not as memory requests: the access is not traced.
        let loc = self.resolve(i.space, addr, size, false)?;
        self.count_atomic(loc);
        if self.recording {
            self.record_lane(t, i.space, addr, size, AccessKind::Atomic);
        }
        let old = self.load(loc, size as usize);
        let b = self.get(t, arg(i, first_src)?, ty)?;
        let bits = ty.bits();
        let signed = matches!(ty, Type::S(_));
        let op = ["add", "min", "max", "inc", "dec", "cas", "exch", "and", "or", "xor"]
            .into_iter()
            .find(|m| i.has(m))
            .unwrap_or_default();
        let new = match (op, ty) {
            ("add", Type::F(32)) => f32_result(ftz32(
                ftz32(f32::from_bits(old as u32)) + ftz32(f32::from_bits(b as u32)),
            )),
            ("add", Type::F(64)) => f64_result(f64::from_bits(old) + f64::from_bits(b)),
            (_, Type::F(_)) => return self.unsupported(i),
            ("add", _) => old.wrapping_add(b),
            ("min", _) if signed => sext(old, bits).min(sext(b, bits)) as u64,
            ("max", _) if signed => sext(old, bits).max(sext(b, bits)) as u64,
            ("min", _) => old.min(b),
            ("max", _) => old.max(b),
            ("inc", _) => {
                if old >= b {
                    0
                } else {
                    old + 1
                }
            }
            ("dec", _) => {
                if old == 0 || old > b {
                    b
                } else {
                    old - 1
                }
            }
            ("cas", _) => {
                let c = self.get(t, arg(i, 3)?, ty)?;
                if old == b { c } else { old }
            }
            ("exch", _) => b,
            ("and", _) => old & b,
            ("or", _) => old | b,
            ("xor", _) => old ^ b,
            _ => return self.unsupported(i),
        };
        self.store(loc, size as usize, new & mask(bits))?;
        if !red {
            self.set(t, arg(i, 0)?, old)?;
        }
        Ok(())
    }

    /// `mbarrier.init`, `.arrive` (with or without `.expect_tx`) and `.try_wait.parity` /
    /// `.test_wait.parity` on a barrier object in shared memory. The simulator keeps the object's
    /// state in its 8 bytes: the arrivals still expected in this phase (bits 0..21), the count
    /// each phase starts with (21..42), the transaction bytes still expected (42..63, wrapping)
    /// and the phase's parity (bit 63). A phase completes when both pending counts are 0; the
    /// next phase starts with the full count. Bulk copies complete at once (see `bulk_copy`), so
    /// a wait that is reached in program order after its copy never spins.
    fn mbarrier(&mut self, i: &Instr, t: usize) -> Lane<()> {
        const FIELD: u64 = (1 << 21) - 1;
        let shared = |i: &Instr| i.has("shared") || i.mods.iter().any(|m| m == "shared::cta");
        if !shared(i) {
            return self.unsupported(i);
        }
        if i.has("init") {
            let loc = self.resolve(Space::Shared, self.address(t, arg(i, 0)?)?, 8, false)?;
            let count = self.get(t, arg(i, 1)?, Type::U(32))? & FIELD;
            return self.store(loc, 8, count | (count << 21));
        }
        if i.has("try_wait") || i.has("test_wait") {
            if !i.has("parity") {
                return self.unsupported(i);
            }
            let loc = self.resolve(Space::Shared, self.address(t, arg(i, 1)?)?, 8, false)?;
            let parity = self.get(t, arg(i, 2)?, Type::U(32))? & 1;
            let phase = self.load(loc, 8) >> 63;
            // The phase of that parity has completed when the barrier's current one differs.
            return self.set(t, arg(i, 0)?, u64::from(phase != parity));
        }
        if i.has("arrive") {
            let loc = self.resolve(Space::Shared, self.address(t, arg(i, 1)?)?, 8, false)?;
            let tx = if i.has("expect_tx") { self.get(t, arg(i, 2)?, Type::U(32))? } else { 0 };
            let old = self.load(loc, 8);
            let word = mbarrier_update(old, 1, tx, 0);
            self.store(loc, 8, word)?;
            return self.set(t, arg(i, 0)?, old);
        }
        self.unsupported(i)
    }

    /// `mapa.shared::cluster.{u32,u64} d, a, rank`: the `shared::cluster` address of the byte that
    /// shared address `a` names, in the shared memory of the cluster's CTA of rank `rank` (see
    /// module `memory` for the encoding); `mapa.{u32,u64}` does the same for generic addresses.
    fn mapa(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let ty = ty(i)?;
        let a = self.get(t, arg(i, 1)?, ty)?;
        let rank = self.get(t, arg(i, 2)?, Type::U(32))?;
        let d = match i.space {
            Space::SharedCluster => self.cluster_address(a, rank)?,
            Space::Generic => SHARED_WINDOW + self.cluster_address(shared_of_generic(a)?, rank)?,
            _ => return self.unsupported(i),
        };
        self.set(t, arg(i, 0)?, d & mask(ty.bits()))
    }

    /// `getctarank.shared::cluster.{u32,u64} d, a` (and `getctarank.{u32,u64}` of a generic
    /// address): the rank of the cluster's CTA whose shared memory `a` is in.
    fn getctarank(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let a = self.get(t, arg(i, 1)?, ty(i)?)?;
        let address = match i.space {
            Space::SharedCluster => a,
            Space::Generic => shared_of_generic(a)?,
            _ => return self.unsupported(i),
        };
        let (rank, _) = self.split_cluster_address(address)?;
        self.set(t, arg(i, 0)?, rank as u64)
    }

    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [to], [from], size,
    /// [barrier]` (an optional trailing L2 cache hint is ignored): copies at once, then counts
    /// `size` transaction bytes on the barrier. One global request of `size / 32` sectors.
    fn bulk_copy(&mut self, i: &Instr, t: usize) -> Lane<()> {
        let from_global = i.mods.windows(2).any(|w| w[0].starts_with("shared") && w[1] == "global");
        if !(i.has("async")
            && i.has("bulk")
            && from_global
            && i.has("mbarrier::complete_tx::bytes"))
        {
            return self.unsupported(i);
        }
        let to = self.address(t, arg(i, 0)?)?;
        let from = self.address(t, arg(i, 1)?)?;
        let size = self.get(t, arg(i, 2)?, Type::U(32))?;
        let barrier = self.address(t, arg(i, 3)?)?;
        if size == 0 || size % 16 != 0 || to % 16 != 0 || from % 16 != 0 {
            return Err(Fault::Unsupported(format!(
                "a bulk copy of {size} bytes from {from:#x} to shared {to:#x}: size and addresses \
                 must be multiples of 16"
            )));
        }
        self.copy_to_shared(from, to, size)?;
        let loc = self.resolve(Space::Shared, barrier, 8, false)?;
        let word = mbarrier_update(self.load(loc, 8), 0, 0, size);
        self.store(loc, 8, word)
    }

    fn shfl(&mut self, i: &Instr, lo: usize, exec: u32) -> Result<(), (usize, Fault)> {
        let mode = ["down", "up", "bfly", "idx"].into_iter().find(|m| i.has(m));
        let mut results = [(0u64, false); 32];
        for l in lanes(exec) {
            let t = lo + l;
            let at = |f: Fault| (t, f);
            let (Some(mode), Some(a), Some(b), Some(c)) =
                (mode, i.args.get(1), i.args.get(2), i.args.get(3))
            else {
                return Err(at(Fault::Unsupported(i.text.clone())));
            };
            let bval = self.get(t, b, Type::U(32)).map_err(at)? as u32 & 31;
            let cv = self.get(t, c, Type::U(32)).map_err(at)? as u32;
            let (cval, seg) = (cv & 31, (cv >> 8) & 31);
            let lane = l as u32;
            let max_lane = (lane & seg) | (cval & !seg);
            let min_lane = lane & seg;
            let (j, ok) = match mode {
                "up" => (lane.wrapping_sub(bval), lane >= bval && lane - bval >= max_lane),
                "down" => (lane + bval, lane + bval <= max_lane),
                "bfly" => (lane ^ bval, (lane ^ bval) <= max_lane),
                _ => {
                    let j = min_lane | (bval & !seg);
                    (j, j <= max_lane)
                }
            };
            let j = if ok { j } else { lane };
            if exec & (1 << j) == 0 {
                return Err(at(Fault::ShuffleFromInactiveLane { source_lane: j }));
            }
            results[l] = (self.get(lo + j as usize, a, Type::B(32)).map_err(at)?, ok);
        }
        for l in lanes(exec) {
            let t = lo + l;
            let (v, ok) = results[l];
            match &i.args[0] {
                Operand::Pair(d, p) => {
                    self.set(t, &Operand::Reg(*d), v).map_err(|f| (t, f))?;
                    self.set(t, &Operand::Reg(*p), ok as u64).map_err(|f| (t, f))?;
                }
                d => self.set(t, d, v).map_err(|f| (t, f))?,
            }
        }
        Ok(())
    }

    /// `match.any.sync`: each lane gets the mask of the executing lanes holding its value;
    /// `match.all.sync`: every lane gets the executing lanes if all hold the same value (predicate
    /// true), else 0 (predicate false).
    fn match_lanes(&mut self, i: &Instr, lo: usize, exec: u32) -> Result<(), (usize, Fault)> {
        let first = lo + exec.trailing_zeros().min(31) as usize;
        let (Some(ty), Some(src), Some(dst)) = (i.ty(), i.args.get(1), i.args.first()) else {
            return Err((first, Fault::Unsupported(i.text.clone())));
        };
        let mut values = [0u64; 32];
        for l in lanes(exec) {
            values[l] = self.get(lo + l, src, ty).map_err(|f| (lo + l, f))?;
        }
        let same = |l: usize| {
            lanes(exec).filter(|&k| values[k] == values[l]).fold(0u32, |acc, k| acc | 1 << k)
        };
        let all = exec == 0 || same(exec.trailing_zeros() as usize) == exec;
        for l in lanes(exec) {
            let t = lo + l;
            let (mask, predicate) = if i.has("any") {
                (same(l), None)
            } else if i.has("all") {
                (if all { exec } else { 0 }, Some(all))
            } else {
                return Err((t, Fault::Unsupported(i.text.clone())));
            };
            match (dst, predicate) {
                (Operand::Pair(d, p), Some(predicate)) => {
                    self.set(t, &Operand::Reg(*d), mask as u64).map_err(|f| (t, f))?;
                    self.set(t, &Operand::Reg(*p), predicate as u64).map_err(|f| (t, f))?;
                }
                (d, _) => self.set(t, d, mask as u64).map_err(|f| (t, f))?,
            }
        }
        Ok(())
    }

    /// Rounds `op` of the 16-bit elements of `a`, `b`, `c` (type `ty`: `.f16`, `.bf16` or a pair)
    /// back to the type; round to nearest even only.
    fn half_arithmetic(
        &self,
        i: &Instr,
        ty: Type,
        a: u64,
        b: u64,
        c: u64,
        op: impl Fn(f64, f64, f64) -> f64,
    ) -> Lane<u64> {
        if ["rz", "rm", "rp", "ftz", "sat", "relu", "approx"].iter().any(|m| i.has(m)) {
            return self.unsupported(i);
        }
        let (format, pair) = match ty {
            Type::F(16) => (HalfFormat::F16, false),
            Type::F16x2 => (HalfFormat::F16, true),
            Type::Bf16 => (HalfFormat::Bf16, false),
            _ => (HalfFormat::Bf16, true),
        };
        Ok(half::lanewise(format, pair, a, b, c, op))
    }

    fn vote(&mut self, i: &Instr, lo: usize, exec: u32) -> Result<(), (usize, Fault)> {
        let first = lo + exec.trailing_zeros().min(31) as usize;
        let Some(src) = i.args.get(1) else {
            return Err((first, Fault::Unsupported(i.text.clone())));
        };
        let mut ballot = 0u32;
        for l in lanes(exec) {
            if self.get(lo + l, src, Type::Pred).map_err(|f| (lo + l, f))? != 0 {
                ballot |= 1 << l;
            }
        }
        let v = if i.has("ballot") {
            ballot as u64
        } else if i.has("all") {
            (ballot == exec) as u64
        } else if i.has("any") {
            (ballot != 0) as u64
        } else if i.has("uni") {
            (ballot == exec || ballot == 0) as u64
        } else {
            return Err((first, Fault::Unsupported(i.text.clone())));
        };
        for l in lanes(exec) {
            self.set(lo + l, &i.args[0], v).map_err(|f| (lo + l, f))?;
        }
        Ok(())
    }
}

/// The `shared::cluster` address of generic address `a`, which must be in the shared window.
fn shared_of_generic(a: u64) -> Lane<u64> {
    a.checked_sub(SHARED_WINDOW)
        .filter(|&offset| offset < 1 << 32)
        .ok_or(Fault::NotSharedAddress { addr: a })
}

/// `x` rounded to an integer by `cvt`'s integer rounding modifier (`.rni`, `.rzi`, `.rmi`, `.rpi`),
/// or `None` when the instruction has none of them.
fn round_to_integer(i: &Instr, x: f64) -> Option<f64> {
    if i.has("rni") {
        Some(x.round_ties_even())
    } else if i.has("rzi") {
        Some(x.trunc())
    } else if i.has("rmi") {
        Some(x.floor())
    } else if i.has("rpi") {
        Some(x.ceil())
    } else {
        None
    }
}
