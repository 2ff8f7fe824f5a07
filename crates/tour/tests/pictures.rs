//! The book's pictures of what a warp does are what the chapters' kernels draw: each is drawn
//! afresh on the CPU simulator (`tour --pictures`'s code) and compared byte for byte with the
//! committed file, so a picture never disagrees with its kernel. And a student's kernel is drawn
//! beside the reference's: reduce-interleaved's sequential addressing answered with reduce-naive's
//! divergent modulo shows idle lanes in every warp, where the reference's whole warps skip. Needs
//! NVRTC, no GPU; the committed pictures are compared where NVRTC is the release the counters'
//! snapshots were recorded with (CI's), as those snapshots are.

use std::path::PathBuf;
use std::process::ExitCode;

use gpu_harness::KernelSource;
use gpu_harness::compile::{Target, compile};
use gpu_test::{TestResult, TestSuite, counters_comparable};
use report::pictures::{LaneState, LaunchTrace, TraceOptions, beside, lane_states, lanes_picture};

#[path = "../src/steps.rs"]
#[allow(dead_code, unused_imports)]
mod steps;

#[path = "../src/pictures.rs"]
#[allow(dead_code)]
mod pictures;

fn main() -> ExitCode {
    TestSuite::new()
        .cpu(
            "pictures::name_steps_of_the_registry_and_their_chapters",
            pictures_name_steps_of_the_registry,
        )
        // Drawn from the PTX of the NVRTC the counters' snapshots were recorded with (CI's).
        .nvrtc_if(
            "pictures::committed_pictures_are_what_the_kernels_draw",
            counters_comparable,
            committed_pictures_are_what_the_kernels_draw,
        )
        .nvrtc(
            "pictures::a_divergent_submission_is_drawn_beside_the_reference",
            divergent_submission_beside_reference,
        )
        .run()
}

fn root() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    dir.canonicalize().unwrap_or(dir)
}

fn pictures_name_steps_of_the_registry() -> TestResult {
    let course = course::registry();
    for picture in pictures::pictures() {
        assert!(
            course.crates().any(|c| c == picture.chapter),
            "{}: no chapter {}",
            picture.file,
            picture.chapter
        );
        for panel in &picture.panels {
            assert!(
                course.steps().any(|s| s.crate_name == panel.crate_name && s.name() == panel.step),
                "{}: no step {}/{}",
                picture.file,
                panel.crate_name,
                panel.step
            );
            assert_eq!(
                panel.access.is_some(),
                picture.kind != pictures::Kind::Lanes,
                "{}",
                picture.file
            );
            panel
                .case
                .parse::<gpu_harness::Case>()
                .map_err(|e| format!("{}: {e}", picture.file))?;
        }
    }
    Ok(())
}

fn committed_pictures_are_what_the_kernels_draw() -> TestResult {
    let root = root();
    let files = pictures::book_pictures(&root, &[])?;
    assert_eq!(files.len(), pictures::pictures().len());
    let stale: Vec<String> = files
        .iter()
        .filter(|(path, svg)| std::fs::read_to_string(path).ok().as_deref() != Some(svg.as_str()))
        .map(|(path, _)| path.strip_prefix(&root).unwrap_or(path).display().to_string())
        .collect();
    assert!(
        stale.is_empty(),
        "out of date (run `cargo run --release -- --pictures`): {}",
        stale.join(", ")
    );
    // Every picture is shown by its chapter.
    let course = course::registry();
    for picture in pictures::pictures() {
        let chapter = course
            .families
            .iter()
            .flat_map(|f| &f.chapters)
            .find(|c| c.crate_name == picture.chapter);
        let page = root.join("book/src").join(&chapter.expect("a chapter").file);
        let text = std::fs::read_to_string(&page)?;
        assert!(
            text.contains(&format!("../pictures/{}", picture.file)),
            "{} does not show {}",
            page.display(),
            picture.file
        );
    }
    Ok(())
}

/// reduce-naive's tree, written where sequential addressing belongs.
const DIVERGENT_MODULO: &str = "    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }";

/// `reduce_interleaved` of `code` run over 16 blocks of 256 threads on the simulator, block 0
/// traced.
fn trace_of(code: String) -> Result<LaunchTrace, String> {
    let source = KernelSource { file: "reduce_interleaved.cu", code: code.leak() };
    let image =
        compile(&source, Target::Ptx { major: 9, minor: 0 }, &[("BLOCK_SIZE", "256".to_string())])
            .map_err(|e| e.to_string())?;
    let module = ptx_sim::parse(String::from_utf8_lossy(&image.bytes).trim_end_matches('\0'))
        .map_err(|e| e.to_string())?;
    let mut machine = ptx_sim::Machine::new();
    let n = 16 * 256;
    let input = machine.alloc(n * 4).map_err(|e| e.to_string())?;
    let bytes: Vec<u8> = (0..n).flat_map(|i| ((i % 7) as f32).to_le_bytes()).collect();
    machine.write(input, &bytes).map_err(|e| e.to_string())?;
    let partials = machine.alloc(16 * 4).map_err(|e| e.to_string())?;
    machine.set_tracing(Some(TraceOptions::default()));
    let params = [
        ptx_sim::ParamValue::U64(input),
        ptx_sim::ParamValue::U64(partials),
        ptx_sim::ParamValue::U32(n as u32),
    ];
    machine
        .launch(&module, "reduce_interleaved", (16, 1, 1), (256, 1, 1), 1024, &params)
        .map_err(|e| e.to_string())?;
    machine.take_traces().pop().ok_or_else(|| "no trace".to_string())
}

/// Lanes that idle while their warp works, in the rounds of the tree (phases 1 to 8).
fn idle_lanes(trace: &LaunchTrace) -> usize {
    lane_states(trace).iter().skip(1).take(8).flatten().filter(|s| **s == LaneState::Idles).count()
}

fn divergent_submission_beside_reference() -> TestResult {
    let reference = std::fs::read_to_string(root().join("cuda/reduce_interleaved.cu"))?;
    let regions = classroom::regions::regions(&reference)?;
    let sequential = regions.last().expect("sequential addressing's region").solution.join("\n");
    assert!(reference.contains(&sequential));
    let student = reference.replace(&sequential, DIVERGENT_MODULO);
    let (theirs, ours) = (trace_of(student)?, trace_of(reference)?);
    // The reference: whole warps drop out; only warp 0 idles lanes, in the rounds of fewer than 32
    // threads (16, 8, 4, 2, 1 working: 16 + 24 + 28 + 30 + 31 idle). The divergent modulo: every
    // warp idles half its lanes in round 1, three quarters in round 2, ...
    assert_eq!(idle_lanes(&ours), 16 + 24 + 28 + 30 + 31);
    assert!(idle_lanes(&theirs) > 5 * idle_lanes(&ours), "{} idle lanes", idle_lanes(&theirs));
    let round_1 = &lane_states(&theirs)[1];
    assert!(
        (0..256)
            .all(|t| round_1[t] == if t % 2 == 0 { LaneState::Works } else { LaneState::Idles })
    );
    // Drawn as `cargo course pictures` draws it: the student's picture above the book's.
    let mine =
        lanes_picture("Yours", &[("yours: interleaved (reduce_interleaved)".to_string(), &theirs)]);
    let book = std::fs::read_to_string(
        root().join(pictures::FOLDER).join("reduce-interleaved-lanes.svg"),
    )?;
    let both =
        beside(("Yours, drawn from your kernel", &mine), ("The reference solution's", &book));
    assert_eq!(both.matches("<svg ").count(), 3, "one picture holding two");
    let (top, bottom) =
        both.split_at(both.find("The reference solution").expect("the second heading"));
    assert!(
        top.contains("yours: interleaved") && bottom.contains("interleaved (reduce_interleaved")
    );
    // Orange lanes (idle in a working warp): many in the student's picture.
    let orange = |svg: &str| svg.matches("fill=\"#b34700\"").count();
    assert!(orange(top) > 100, "{} idle runs drawn", orange(top));
    Ok(())
}
