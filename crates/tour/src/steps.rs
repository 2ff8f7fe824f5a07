//! The code of every step the registry (`course.toml`) lists: each technique crate's `steps()`, and
//! the peers. One line per crate; a test checks that this list and the registry name the same
//! steps.

use gpu_harness::StepEntry;

/// Every step the workspace's crates offer.
pub fn entries() -> Vec<StepEntry> {
    [
        reduce_naive::steps(),
        reduce_interleaved::steps(),
        reduce_first_add::steps(),
        reduce_unroll::steps(),
        reduce_shuffle::steps(),
        reduce_multi_level::steps(),
        reduce_atomic::steps(),
        reduce_numerics::steps(),
        reduction::measured::peers(),
        scan::steps(),
        compact::steps(),
        histogram::steps(),
        transpose::steps(),
        softmax::steps(),
        norms::steps(),
        batch_stats::steps(),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry and the code name the same steps: every registry step has code, and every
    /// step in code is in the registry. Adding a step means adding it to both.
    #[test]
    fn registry_and_code_name_the_same_steps() {
        let entries = entries();
        let course = course::registry();
        let mut problems = Vec::new();
        // PyTorch's peers have no code here: scripts/torch_reductions.py measures them.
        for step in course.steps().filter(|s| s.timed_by_tour()) {
            if measuring::find_entry(&entries, &step).is_none() {
                problems.push(format!(
                    "course.toml lists {}/{}, which no crate's steps() offers",
                    step.crate_name,
                    step.name()
                ));
            }
        }
        for entry in &entries {
            let listed =
                course.steps().any(|s| s.crate_name == entry.crate_name && s.name() == entry.step);
            if !listed {
                problems.push(format!(
                    "{entry:?} is offered by its crate but not listed in course.toml"
                ));
            }
            let twice = entries
                .iter()
                .filter(|e| e.crate_name == entry.crate_name && e.step == entry.step)
                .count();
            if twice > 1 {
                problems.push(format!("{entry:?} is offered {twice} times"));
            }
        }
        assert!(
            problems.is_empty(),
            "the registry and the code disagree:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn the_tour_links_every_crate_of_the_registry() {
        let entries = entries();
        // A chapter with no steps (reduce-multi-gpu, several GPUs) is measured by its own bench.
        let measured = course::registry()
            .families
            .iter()
            .flat_map(|f| &f.chapters)
            .filter(|c| !c.steps.is_empty());
        for chapter in measured {
            let name = &chapter.crate_name;
            assert!(
                entries.iter().any(|e| e.crate_name == *name),
                "{name} is not in the tour's entries()"
            );
        }
    }
}
