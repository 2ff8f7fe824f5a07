//! The interpreter: a [`Machine`] with global memory that launches kernels of a [`Module`].

use crate::error::{Fault, FaultSite, SimError};
use crate::memory::{GlobalMemory, SHARED_WINDOW, read_le, write_le};
use crate::ptx::{Instr, Kernel, MemBase, Module, Op, Operand, Space, Special, Symbol, Type};
use crate::stats::{LaunchStats, bank_conflicts, sectors};

/// Warp instructions one block may run before the launch is declared stuck.
const STEP_LIMIT: u64 = 1 << 32;
/// Warp instructions a warp runs before the scheduler moves on to the next warp.
const SLICE: u32 = 4096;
/// Largest shared memory per block (Hopper: 227 KiB).
const MAX_SHARED: u64 = 227 * 1024;
/// PTX's canonical NaN results.
const NAN32: u32 = 0x7fff_ffff;
const NAN64: u64 = 0x7fff_ffff_ffff_ffff;

/// A kernel argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    /// Raw bytes, for `.b8` array (struct) parameters.
    Bytes(Vec<u8>),
}

impl ParamValue {
    fn bytes(&self) -> Vec<u8> {
        match self {
            ParamValue::U32(v) => v.to_le_bytes().to_vec(),
            ParamValue::I32(v) => v.to_le_bytes().to_vec(),
            ParamValue::U64(v) => v.to_le_bytes().to_vec(),
            ParamValue::I64(v) => v.to_le_bytes().to_vec(),
            ParamValue::F32(v) => v.to_le_bytes().to_vec(),
            ParamValue::F64(v) => v.to_le_bytes().to_vec(),
            ParamValue::Bytes(b) => b.clone(),
        }
    }
}

/// A simulated device: global memory, and launches that run on it.
#[derive(Default)]
pub struct Machine {
    global: GlobalMemory,
}

impl Machine {
    pub fn new() -> Machine {
        Machine::default()
    }

    /// Allocates `bytes` zeroed bytes of global memory; returns the device address.
    pub fn alloc(&mut self, bytes: usize) -> Result<u64, SimError> {
        self.global.alloc(bytes)
    }

    /// Frees the allocation that [`Machine::alloc`] returned as `addr`.
    pub fn free(&mut self, addr: u64) -> Result<(), SimError> {
        self.global.free(addr)
    }

    /// Copies `len` bytes from device address `from` to device address `to` (device to device).
    pub fn copy(&mut self, from: u64, to: u64, len: usize) -> Result<(), SimError> {
        let bytes = self.read(from, len)?;
        self.write(to, &bytes)
    }

    /// Copies `bytes` to device address `addr`.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), SimError> {
        let out = self.global.slice_mut(addr, bytes.len()).ok_or(SimError::HostAccess { addr, len: bytes.len() })?;
        out.copy_from_slice(bytes);
        Ok(())
    }

    /// Copies `len` bytes from device address `addr`.
    pub fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, SimError> {
        self.global.slice(addr, len).map(<[u8]>::to_vec).ok_or(SimError::HostAccess { addr, len })
    }

    /// Runs `kernel` of `module` over `grid` blocks of `block` threads with `shared_bytes` of
    /// dynamic shared memory. Blocks run one after another, in order of their linear index.
    pub fn launch(
        &mut self,
        module: &Module,
        kernel: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        params: &[ParamValue],
    ) -> Result<LaunchStats, SimError> {
        let k = module.kernel(kernel).ok_or_else(|| SimError::NoSuchKernel(kernel.to_string()))?;
        let bad = |reason: String| SimError::BadLaunch { kernel: kernel.to_string(), reason };
        let threads = block.0 as u64 * block.1 as u64 * block.2 as u64;
        if threads == 0 || threads > 1024 {
            return Err(bad(format!("block {block:?} has {threads} threads (1 to 1024 allowed)")));
        }
        if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 || grid.1 > 65535 || grid.2 > 65535 {
            return Err(bad(format!("grid {grid:?} is empty or too large")));
        }
        let shared_total = k.dynamic_shared_offset as u64 + shared_bytes as u64;
        if shared_total > MAX_SHARED {
            return Err(bad(format!("{shared_total} bytes of shared memory (at most {MAX_SHARED})")));
        }
        if params.len() != k.params.len() {
            return Err(bad(format!("{} parameters declared, {} given", k.params.len(), params.len())));
        }
        let mut param_buf = Vec::new();
        let mut param_offsets = Vec::new();
        for (i, (decl, value)) in k.params.iter().zip(params).enumerate() {
            let bytes = value.bytes();
            if bytes.len() != decl.size as usize {
                return Err(bad(format!(
                    "parameter {i} (`{}`) is {} bytes, the value given is {value:?} ({} bytes)",
                    decl.name,
                    decl.size,
                    bytes.len()
                )));
            }
            let offset = param_buf.len().next_multiple_of(decl.align.max(1) as usize);
            param_buf.resize(offset, 0);
            param_buf.extend_from_slice(&bytes);
            param_offsets.push(offset as u64);
        }
        let mut stats = LaunchStats::default();
        let nthreads = threads as usize;
        let mut ctx = Block {
            kernel: k,
            ctaid: (0, 0, 0),
            nctaid: grid,
            ntid: block,
            nthreads,
            nregs: k.num_regs as usize,
            regs: vec![0; nthreads * k.num_regs as usize],
            pc: vec![0; nthreads],
            status: vec![Status::Running; nthreads],
            shared: vec![0; shared_total as usize],
            params: &param_buf,
            param_offsets: &param_offsets,
            global: &mut self.global,
            stats: &mut stats,
            trace: Vec::with_capacity(32),
        };
        for z in 0..grid.2 {
            for y in 0..grid.1 {
                for x in 0..grid.0 {
                    ctx.ctaid = (x, y, z);
                    ctx.regs.fill(0);
                    ctx.pc.fill(0);
                    ctx.status.fill(Status::Running);
                    ctx.shared.fill(0);
                    ctx.run().map_err(|f| ctx.site(f))?;
                }
            }
        }
        Ok(stats)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Running,
    AtBarrier,
    Exited,
}

/// A fault in a thread (block-linear index) at an instruction.
struct LaneFault {
    thread: usize,
    pc: usize,
    fault: Fault,
}

type Lane<T> = Result<T, Fault>;

/// The state of one block while it runs.
struct Block<'a> {
    kernel: &'a Kernel,
    ctaid: (u32, u32, u32),
    nctaid: (u32, u32, u32),
    ntid: (u32, u32, u32),
    nthreads: usize,
    nregs: usize,
    regs: Vec<u64>,
    pc: Vec<u32>,
    status: Vec<Status>,
    shared: Vec<u8>,
    params: &'a [u8],
    param_offsets: &'a [u64],
    global: &'a mut GlobalMemory,
    stats: &'a mut LaunchStats,
    /// The memory accesses of the current warp instruction: (is shared, address, size).
    trace: Vec<(bool, u64, u32)>,
}

/// Where a resolved address lives.
#[derive(Clone, Copy)]
enum Loc {
    Shared(usize),
    Global(u64),
    Param(usize),
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
}

fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 { v as i64 } else { ((v << (64 - bits)) as i64) >> (64 - bits) }
}

fn arg(i: &Instr, n: usize) -> Lane<&Operand> {
    i.args.get(n).ok_or_else(|| Fault::Unsupported(format!("missing operand {n}")))
}

fn ty(i: &Instr) -> Lane<Type> {
    i.ty().ok_or_else(|| Fault::Unsupported(format!("`{}` without a type", i.text)))
}

fn lanes(m: u32) -> impl Iterator<Item = usize> {
    (0..32).filter(move |i| m & (1 << i) != 0)
}

fn f32_result(x: f32) -> u64 {
    if x.is_nan() { NAN32 as u64 } else { x.to_bits() as u64 }
}

fn f64_result(x: f64) -> u64 {
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
        _ if a == b => Some(if (a.is_sign_negative() && !is_max) || (!a.is_sign_negative() && is_max) { a } else { b }),
        _ => Some(if (a < b) != is_max { a } else { b }),
    }
}

impl Block<'_> {
    fn site(&self, f: LaneFault) -> SimError {
        let t = f.thread as u32;
        let (bx, by) = (self.ntid.0, self.ntid.1);
        let instr = self.kernel.instrs.get(f.pc);
        SimError::Fault {
            site: Box::new(FaultSite {
                kernel: self.kernel.name.clone(),
                block: self.ctaid,
                thread: (t % bx, (t / bx) % by, t / (bx * by)),
                instruction: instr.map_or_else(|| "(end of kernel)".to_string(), |i| i.text.clone()),
                ptx_line: instr.map_or(0, |i| i.line),
            }),
            fault: f.fault,
        }
    }

    /// Runs the block to completion.
    fn run(&mut self) -> Result<(), LaneFault> {
        let nwarps = self.nthreads.div_ceil(32);
        let mut steps: u64 = 0;
        loop {
            let mut progressed = false;
            for w in 0..nwarps {
                for _ in 0..SLICE {
                    if !self.step_warp(w)? {
                        break;
                    }
                    progressed = true;
                    steps += 1;
                }
            }
            if steps > STEP_LIMIT {
                return Err(LaneFault { thread: 0, pc: 0, fault: Fault::StepLimit(STEP_LIMIT) });
            }
            let running = self.status.iter().filter(|&&s| s == Status::Running).count();
            let waiting = self.status.iter().filter(|&&s| s == Status::AtBarrier).count();
            if running == 0 && waiting == 0 {
                return Ok(());
            }
            if running == 0 {
                // Every thread still alive waits at a barrier: release them.
                self.stats.barriers += 1;
                for t in 0..self.nthreads {
                    if self.status[t] == Status::AtBarrier {
                        self.status[t] = Status::Running;
                        self.pc[t] += 1;
                    }
                }
            } else if !progressed {
                let thread = self.status.iter().position(|&s| s == Status::Running).unwrap_or(0);
                return Err(LaneFault { thread, pc: self.pc[thread] as usize, fault: Fault::Deadlock });
            }
        }
    }

    /// Executes one warp instruction of warp `w`; false when the warp cannot run now.
    fn step_warp(&mut self, w: usize) -> Result<bool, LaneFault> {
        let lo = w * 32;
        let hi = (lo + 32).min(self.nthreads);
        let mut min_pc = u32::MAX;
        for t in lo..hi {
            if self.status[t] == Status::Running && self.pc[t] < min_pc {
                min_pc = self.pc[t];
            }
        }
        if min_pc == u32::MAX {
            return Ok(false);
        }
        let mut active = 0u32;
        for t in lo..hi {
            if self.status[t] == Status::Running && self.pc[t] == min_pc {
                active |= 1 << (t - lo);
            }
        }
        let pc = min_pc as usize;
        let kernel = self.kernel;
        let Some(instr) = kernel.instrs.get(pc) else {
            // Falling off the end of the kernel is an exit.
            for l in lanes(active) {
                self.status[lo + l] = Status::Exited;
            }
            return Ok(true);
        };
        let mut exec = active;
        if let Some((p, negated)) = instr.guard {
            for l in lanes(active) {
                let v = self.regs[(lo + l) * self.nregs + p as usize] & 1 != 0;
                if v == negated {
                    exec &= !(1 << l);
                }
            }
        }
        self.stats.warp_instructions += 1;
        self.stats.active_lanes += active.count_ones() as u64;
        self.trace.clear();
        let advance =
            self.execute(instr, lo, active, exec).map_err(|(thread, fault)| LaneFault { thread, pc, fault })?;
        if advance {
            for l in lanes(active) {
                if self.status[lo + l] == Status::Running && self.pc[lo + l] == min_pc {
                    self.pc[lo + l] += 1;
                }
            }
        }
        if !self.trace.is_empty() {
            self.account_memory();
        }
        Ok(true)
    }

    fn account_memory(&mut self) {
        let shared: Vec<(u64, u32)> = self.trace.iter().filter(|a| a.0).map(|a| (a.1, a.2)).collect();
        let global: Vec<(u64, u32)> = self.trace.iter().filter(|a| !a.0).map(|a| (a.1, a.2)).collect();
        if !shared.is_empty() {
            self.stats.shared_accesses += 1;
            self.stats.shared_bank_conflicts += bank_conflicts(&shared);
        }
        if !global.is_empty() {
            self.stats.global_requests += 1;
            self.stats.global_sectors += sectors(&global);
        }
    }

    // ----- operands -------------------------------------------------------------------------

    fn reg(&self, t: usize, r: u32) -> u64 {
        self.regs[t * self.nregs + r as usize]
    }

    fn set(&mut self, t: usize, op: &Operand, v: u64) -> Lane<()> {
        match op {
            Operand::Reg(r) => {
                self.regs[t * self.nregs + *r as usize] = v;
                Ok(())
            }
            Operand::Sink => Ok(()),
            other => Err(Fault::Unsupported(format!("destination operand {other:?}"))),
        }
    }

    /// Reads `op` for thread `t` as a value of type `ty` (raw bits, masked to the width).
    fn get(&self, t: usize, op: &Operand, ty: Type) -> Lane<u64> {
        let bits = ty.bits();
        let v = match *op {
            Operand::Reg(r) => self.reg(t, r),
            Operand::NotReg(r) => (self.reg(t, r) & 1) ^ 1,
            Operand::Imm(v) => match ty {
                Type::F(32) => (v as f32).to_bits() as u64,
                Type::F(64) => (v as f64).to_bits(),
                _ => v as u64,
            },
            Operand::F32(b) => match ty {
                Type::F(64) => (f32::from_bits(b) as f64).to_bits(),
                _ => b as u64,
            },
            Operand::F64(b) => match ty {
                Type::F(32) => (f64::from_bits(b) as f32).to_bits() as u64,
                _ => b,
            },
            Operand::Special(s) => self.special(t, s),
            Operand::Symbol(Symbol::Shared(o)) => o as u64,
            ref other => return Err(Fault::Unsupported(format!("source operand {other:?}"))),
        };
        Ok(v & mask(bits))
    }

    fn special(&self, t: usize, s: Special) -> u64 {
        let dim = |v: (u32, u32, u32), d: u8| match d {
            0 => v.0,
            1 => v.1,
            _ => v.2,
        } as u64;
        let (bx, by) = (self.ntid.0 as usize, self.ntid.1 as usize);
        let tid = (t % bx, (t / bx) % by, t / (bx * by));
        let lane = (t % 32) as u32;
        match s {
            Special::Tid(d) => [tid.0, tid.1, tid.2][d as usize] as u64,
            Special::Ntid(d) => dim(self.ntid, d),
            Special::Ctaid(d) => dim(self.ctaid, d),
            Special::Nctaid(d) => dim(self.nctaid, d),
            Special::LaneId => lane as u64,
            Special::WarpId => (t / 32) as u64,
            Special::NWarpId => self.nthreads.div_ceil(32) as u64,
            Special::SmId | Special::GridId => 0,
            Special::NSmId => 1,
            Special::LaneMaskEq => 1u64 << lane,
            Special::LaneMaskLt => (1u64 << lane) - 1,
            Special::LaneMaskLe => (1u64 << (lane + 1)) - 1,
            Special::LaneMaskGt => (!((1u64 << (lane + 1)) - 1)) & 0xffff_ffff,
            Special::LaneMaskGe => (!((1u64 << lane) - 1)) & 0xffff_ffff,
            Special::Clock | Special::Clock64 => self.stats.warp_instructions,
        }
    }

    /// The address of a memory operand (before resolving its state space).
    fn address(&self, t: usize, op: &Operand) -> Lane<u64> {
        let Operand::Mem { base, offset } = op else {
            return Err(Fault::Unsupported(format!("expected a memory operand, found {op:?}")));
        };
        let b = match *base {
            MemBase::Reg(r) => self.reg(t, r),
            MemBase::Symbol(Symbol::Shared(o)) => o as u64,
            MemBase::Symbol(Symbol::Param(i)) => self.param_offsets[i],
            MemBase::Symbol(Symbol::Global(_)) => {
                return Err(Fault::Unsupported("module-level .global variables".into()));
            }
            MemBase::Absolute => 0,
        };
        Ok(b.wrapping_add(*offset as u64))
    }

    /// Checks and resolves an access of `size` bytes at `addr` in `space`, and traces it.
    fn resolve(&mut self, space: Space, addr: u64, size: u32) -> Lane<Loc> {
        let (shared, offset) = match space {
            Space::Shared => (true, addr),
            Space::Global => (false, addr),
            Space::Generic if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&addr) => {
                (true, addr - SHARED_WINDOW)
            }
            Space::Generic => (false, addr),
            Space::Param => {
                let end = addr.checked_add(size as u64).filter(|&e| e <= self.params.len() as u64);
                return match end {
                    Some(_) => Ok(Loc::Param(addr as usize)),
                    None => Err(Fault::OutOfBounds { space: "param", addr, size }),
                };
            }
            Space::Local => return Err(Fault::Unsupported("local memory".into())),
            Space::Const => return Err(Fault::Unsupported("constant memory".into())),
        };
        let name = if shared { "shared" } else { "global" };
        if offset % size as u64 != 0 {
            return Err(Fault::Misaligned { space: name, addr, size });
        }
        if shared {
            if offset.checked_add(size as u64).is_none_or(|e| e > self.shared.len() as u64) {
                return Err(Fault::OutOfBounds { space: name, addr, size });
            }
            self.trace.push((true, offset, size));
            Ok(Loc::Shared(offset as usize))
        } else {
            if self.global.slice(offset, size as usize).is_none() {
                return Err(Fault::OutOfBounds { space: name, addr, size });
            }
            self.trace.push((false, offset, size));
            Ok(Loc::Global(offset))
        }
    }

    fn load(&self, loc: Loc, size: usize) -> u64 {
        match loc {
            Loc::Shared(o) => read_le(&self.shared[o..o + size]),
            Loc::Param(o) => read_le(&self.params[o..o + size]),
            Loc::Global(a) => self.global.slice(a, size).map_or(0, read_le),
        }
    }

    fn store(&mut self, loc: Loc, size: usize, v: u64) -> Lane<()> {
        match loc {
            Loc::Shared(o) => write_le(&mut self.shared[o..o + size], v),
            Loc::Global(a) => match self.global.slice_mut(a, size) {
                Some(out) => write_le(out, v),
                None => return Err(Fault::OutOfBounds { space: "global", addr: a, size: size as u32 }),
            },
            Loc::Param(o) => {
                return Err(Fault::Unsupported(format!("store to kernel parameter space at offset {o}")));
            }
        }
        Ok(())
    }

    // ----- instructions ---------------------------------------------------------------------

    /// Executes `instr` for the lanes in `exec` (of those in `active`); returns whether the
    /// active lanes move on to the next instruction.
    fn execute(&mut self, i: &Instr, lo: usize, active: u32, exec: u32) -> Result<bool, (usize, Fault)> {
        let first = lo + exec.trailing_zeros().min(31) as usize;
        match i.op {
            Op::Bra => {
                let Some(Operand::Label(target)) = i.args.first() else {
                    return Err((first, Fault::Unsupported("indirect branch".into())));
                };
                self.stats.branches += 1;
                if exec != 0 && exec != active {
                    self.stats.divergent_branches += 1;
                }
                for l in lanes(exec) {
                    self.pc[lo + l] = *target as u32;
                }
                for l in lanes(active & !exec) {
                    self.pc[lo + l] += 1;
                }
                Ok(false)
            }
            Op::Ret | Op::Exit => {
                for l in lanes(exec) {
                    self.status[lo + l] = Status::Exited;
                }
                Ok(true)
            }
            Op::Trap if exec != 0 => Err((first, Fault::Trap)),
            Op::Bar | Op::Barrier if i.has("warp") => Ok(true),
            Op::Bar | Op::Barrier => {
                if i.has("arrive") || i.has("red") || i.args.len() > 1 {
                    return Err((first, Fault::Unsupported(i.text.clone())));
                }
                for l in lanes(exec) {
                    self.status[lo + l] = Status::AtBarrier;
                }
                Ok(true)
            }
            Op::Membar | Op::Fence => Ok(true),
            Op::Shfl => self.shfl(i, lo, exec).map(|()| true),
            Op::Vote => self.vote(i, lo, exec).map(|()| true),
            Op::Activemask => {
                for l in lanes(exec) {
                    self.set(lo + l, &i.args[0], active as u64).map_err(|f| (lo + l, f))?;
                }
                Ok(true)
            }
            _ => {
                for l in lanes(exec) {
                    let t = lo + l;
                    self.lane(i, t).map_err(|f| (t, f))?;
                }
                Ok(true)
            }
        }
    }

    fn unsupported<T>(&self, i: &Instr) -> Lane<T> {
        Err(Fault::Unsupported(i.text.clone()))
    }

    /// Rejects rounding modes other than round-to-nearest-even on float arithmetic.
    fn check_rn(&self, i: &Instr) -> Lane<()> {
        if ["rz", "rm", "rp", "approx"].iter().any(|m| i.has(m)) { self.unsupported(i) } else { Ok(()) }
    }

    /// One lane's share of a lane-independent instruction.
    fn lane(&mut self, i: &Instr, t: usize) -> Lane<()> {
        match i.op {
            Op::Mov => self.mov(i, t),
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Rem | Op::Min | Op::Max | Op::And | Op::Or | Op::Xor => {
                self.binary(i, t)
            }
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
            Op::Neg | Op::Abs | Op::Not | Op::Popc | Op::Clz | Op::Brev | Op::Sqrt | Op::Rcp => self.unary(i, t),
            Op::Selp => {
                let ty = ty(i)?;
                let c = self.get(t, arg(i, 3)?, Type::Pred)?;
                let v = self.get(t, arg(i, if c != 0 { 1 } else { 2 })?, ty)?;
                self.set(t, arg(i, 0)?, v)
            }
            Op::Setp => self.setp(i, t),
            Op::Cvt => self.cvt(i, t),
            Op::Cvta => {
                let ty = ty(i)?;
                let a = self.get(t, arg(i, 1)?, ty)?;
                let r = match (i.space, i.has("to")) {
                    (Space::Global, _) => a,
                    (Space::Shared, false) => a.wrapping_add(SHARED_WINDOW),
                    (Space::Shared, true) => a.wrapping_sub(SHARED_WINDOW),
                    _ => return self.unsupported(i),
                };
                self.set(t, arg(i, 0)?, r & mask(ty.bits()))
            }
            Op::Ld | Op::St => self.ld_st(i, t),
            Op::Atom | Op::Red => self.atom(i, t),
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
            Op::Bfe => {
                let ty = ty(i)?;
                let bits = ty.bits() as u64;
                let a = self.get(t, arg(i, 1)?, ty)?;
                let pos = self.get(t, arg(i, 2)?, Type::U(32))? & 0xff;
                let len = self.get(t, arg(i, 3)?, Type::U(32))? & 0xff;
                let signed = matches!(ty, Type::S(_));
                let sbit = if signed && len > 0 { (a >> (pos + len - 1).min(bits - 1)) & 1 } else { 0 };
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
                    Op::Min | Op::Max => match fminmax(x as f64, y as f64, i.op == Op::Max, i.has("NaN")) {
                        Some(v) => v as f32,
                        None => f32::NAN,
                    },
                    _ => return self.unsupported(i),
                };
                let r = if ftz { ftz32(r) } else { r };
                let r = if i.has("sat") { if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) } } else { r };
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
                    Op::Min | Op::Max => fminmax(x, y, i.op == Op::Max, i.has("NaN")).unwrap_or(f64::NAN),
                    _ => return self.unsupported(i),
                };
                f64_result(r)
            }
            Type::F(_) => return self.unsupported(i),
            _ => {
                let signed = matches!(ty, Type::S(_));
                let (sa, sb) = (sext(a, bits), sext(b, bits));
                match i.op {
                    Op::Add if i.has("sat") => (sa.saturating_add(sb).clamp(i32::MIN as i64, i32::MAX as i64)) as u64,
                    Op::Sub if i.has("sat") => (sa.saturating_sub(sb).clamp(i32::MIN as i64, i32::MAX as i64)) as u64,
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
    fn mul(&mut self, i: &Instr, t: usize, ty: Type, a: u64, b: u64, c: Option<&Operand>) -> Lane<()> {
        let bits = ty.bits();
        let signed = matches!(ty, Type::S(_));
        let product: i128 = if signed { sext(a, bits) as i128 * sext(b, bits) as i128 } else { a as i128 * b as i128 };
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
                let r = if i.has("sat") { if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) } } else { r };
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
            _ => return self.unsupported(i),
        };
        self.set(t, arg(i, 0)?, r & mask(bits))
    }

    fn setp(&mut self, i: &Instr, t: usize) -> Lane<()> {
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
        let r = match (dst, src) {
            (Type::F(16), _) | (_, Type::F(16)) | (Type::Pred, _) | (_, Type::Pred) => return self.unsupported(i),
            (Type::F(db), Type::F(sb)) => {
                let x = if sb == 32 { f32::from_bits(a as u32) as f64 } else { f64::from_bits(a) };
                let x = if i.has("ftz") && sb == 32 { ftz32(x as f32) as f64 } else { x };
                let x = match round_to_integer(i, x) {
                    Some(rounded) => rounded,
                    None if db < sb && ["rz", "rm", "rp"].iter().any(|m| i.has(m)) => return self.unsupported(i),
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
                if x.is_nan() { 0 } else { (x.clamp(lo as f64, hi as f64) as i128).clamp(lo, hi) as u64 }
            }
            _ => {
                let v: i128 = if matches!(src, Type::S(_)) { sext(a, src.bits()) as i128 } else { a as i128 };
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
        let (mem, data) = if i.op == Op::Ld { (arg(i, 1)?, arg(i, 0)?) } else { (arg(i, 0)?, arg(i, 1)?) };
        let addr = self.address(t, mem)?;
        let total = size * i.vec;
        let base = self.resolve(i.space, addr, total)?;
        let items: Vec<Operand> = match data {
            Operand::Vector(v) => v.clone(),
            other => vec![other.clone()],
        };
        if items.len() != i.vec as usize {
            return self.unsupported(i);
        }
        for (k, item) in items.iter().enumerate() {
            let loc = match base {
                Loc::Shared(o) => Loc::Shared(o + k * size as usize),
                Loc::Global(a) => Loc::Global(a + (k * size as usize) as u64),
                Loc::Param(o) => Loc::Param(o + k * size as usize),
            };
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
        let loc = self.resolve(i.space, addr, size)?;
        self.trace.pop(); // atomics are counted separately
        self.stats.atomics += 1;
        let old = self.load(loc, size as usize);
        let b = self.get(t, arg(i, first_src)?, ty)?;
        let bits = ty.bits();
        let signed = matches!(ty, Type::S(_));
        let op = ["add", "min", "max", "inc", "dec", "cas", "exch", "and", "or", "xor"]
            .into_iter()
            .find(|m| i.has(m))
            .unwrap_or_default();
        let new = match (op, ty) {
            ("add", Type::F(32)) => {
                f32_result(ftz32(ftz32(f32::from_bits(old as u32)) + ftz32(f32::from_bits(b as u32))))
            }
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

    fn shfl(&mut self, i: &Instr, lo: usize, exec: u32) -> Result<(), (usize, Fault)> {
        let mode = ["down", "up", "bfly", "idx"].into_iter().find(|m| i.has(m));
        let mut results = [(0u64, false); 32];
        for l in lanes(exec) {
            let t = lo + l;
            let at = |f: Fault| (t, f);
            let (Some(mode), Some(a), Some(b), Some(c)) = (mode, i.args.get(1), i.args.get(2), i.args.get(3)) else {
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
