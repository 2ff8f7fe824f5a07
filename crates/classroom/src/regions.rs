//! Solution regions: the parts of a kernel (or a launcher) a student writes.
//!
//! A region is marked with comments that mdBook treats as anchors, so the book's listings, which
//! include code by anchor, never show them:
//!
//! ```text
//! // ANCHOR: solution add the block's values into sdata[0], a tree of pairs with a barrier per round
//! for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
//!     ...
//! }
//! // ANCHOR_END: solution
//! // ANCHOR: stub sdata[0] = sdata[0]; // (optional lines of code the starter puts in its place)
//! ```
//!
//! A starter copy replaces each region, and the `stub` lines right after it, with a `TODO` that
//! says what to write (the text after `ANCHOR: solution`) followed by the stub lines as code: what
//! is left still compiles, so a missing solution fails the tests, not the build.

/// What a region's opening marker starts with.
const BEGIN: &str = "ANCHOR: solution";
/// A region's closing marker.
const END: &str = "ANCHOR_END: solution";
/// What a stub line starts with.
const STUB: &str = "ANCHOR: stub";

/// One solution region of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// 1-based line of the opening marker.
    pub line: usize,
    /// The crate whose assignment this region is, where the file does not say it (a shared
    /// header): `// ANCHOR: solution(reduce-shuffle) ...`.
    pub owner: Option<String>,
    /// What the student writes (the opening marker's text).
    pub task: String,
    /// The solution's lines, as written.
    pub solution: Vec<String>,
    /// The stub's lines of code (may be empty).
    pub stub: Vec<String>,
}

/// The comment text of a marker line (`// ANCHOR: ...` with any indentation), if it is one.
fn marker(line: &str) -> Option<&str> {
    line.trim_start().strip_prefix("//").map(str::trim)
}

/// `(reduce-shuffle) combine ...` into its owner and its task.
fn split_owner(text: &str) -> (Option<String>, String) {
    if let Some(rest) = text.strip_prefix('(') {
        if let Some((owner, task)) = rest.split_once(')') {
            return (Some(owner.trim().to_string()), task.trim().to_string());
        }
    }
    (None, text.trim().to_string())
}

/// The regions of `text`, or an error naming the line of a marker out of place.
pub fn regions(text: &str) -> Result<Vec<Region>, String> {
    let mut found = Vec::new();
    let mut open: Option<Region> = None;
    let mut after_end = false;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let comment = marker(line);
        if let Some(task) = comment.and_then(|c| c.strip_prefix(BEGIN)) {
            if open.is_some() {
                return Err(format!("line {number}: a solution region opens inside another"));
            }
            let (owner, task) = split_owner(task);
            open =
                Some(Region { line: number, owner, task, solution: Vec::new(), stub: Vec::new() });
            after_end = false;
        } else if comment == Some(END) {
            let region = open.take().ok_or(format!("line {number}: `{END}` closes no region"))?;
            found.push(region);
            after_end = true;
        } else if let Some(stub) = comment.and_then(|c| c.strip_prefix(STUB)) {
            match (after_end, found.last_mut()) {
                (true, Some(region)) => {
                    region.stub.push(stub.strip_prefix(' ').unwrap_or(stub).to_string())
                }
                _ => return Err(format!("line {number}: a stub line must follow a region's end")),
            }
        } else {
            after_end = false;
            if let Some(region) = open.as_mut() {
                region.solution.push(line.to_string());
            }
        }
    }
    match open {
        Some(region) => Err(format!("line {}: a solution region is never closed", region.line)),
        None => Ok(found),
    }
}

/// `text` with every region replaced by its task as a `TODO` comment and its stub as code, at the
/// indentation of the region's opening marker.
pub fn starter_text(text: &str) -> Result<String, String> {
    starter_text_for(text, |_| true)
}

/// Like [`starter_text`], for the regions whose owner `stub` accepts (`None`: the file's own
/// crate); the other regions stay solved.
pub fn starter_text_for(text: &str, stub: impl Fn(Option<&str>) -> bool) -> Result<String, String> {
    regions(text)?; // reject a malformed file before rewriting it
    let mut out = String::new();
    let mut inside = false;
    let mut stubbing = false;
    for line in text.lines() {
        let comment = marker(line);
        let indent = &line[..line.len() - line.trim_start().len()];
        if let Some(task) = comment.and_then(|c| c.strip_prefix(BEGIN)) {
            let (owner, task) = split_owner(task);
            inside = true;
            stubbing = stub(owner.as_deref());
            if stubbing {
                out += &format!("{indent}// TODO(student): {task}\n");
            } else {
                out += line;
                out += "\n";
            }
        } else if comment == Some(END) {
            inside = false;
            if !stubbing {
                out += line;
                out += "\n";
            }
        } else if let Some(code) = comment.and_then(|c| c.strip_prefix(STUB)) {
            if stubbing {
                out += &format!("{indent}{}\n", code.strip_prefix(' ').unwrap_or(code));
            } else {
                out += line;
                out += "\n";
            }
        } else if !inside || !stubbing {
            out += line;
            out += "\n";
        }
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "int f(int x)\n{\n    // ANCHOR: solution double x\n    x = 2 * x;\n    \
                          // ANCHOR_END: solution\n    // ANCHOR: stub x = x + 0;\n    return \
                          x;\n}\n";

    #[test]
    fn finds_regions_with_their_task_and_stub() {
        let found = regions(KERNEL).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 3);
        assert_eq!(found[0].task, "double x");
        assert_eq!(found[0].owner, None);
        assert_eq!(found[0].solution, ["    x = 2 * x;"]);
        assert_eq!(found[0].stub, ["x = x + 0;"]);
    }

    #[test]
    fn a_starter_keeps_the_stub_and_the_todo() {
        assert_eq!(
            starter_text(KERNEL).unwrap(),
            "int f(int x)\n{\n    // TODO(student): double x\n    x = x + 0;\n    return x;\n}\n"
        );
        assert_eq!(starter_text("no regions").unwrap(), "no regions");
    }

    #[test]
    fn regions_of_other_owners_stay_solved() {
        let header = "// ANCHOR: solution(a) one\nx;\n// ANCHOR_END: solution\n// ANCHOR: \
                      solution(b) two\ny;\n// ANCHOR_END: solution\n";
        assert_eq!(regions(header).unwrap()[1].owner.as_deref(), Some("b"));
        let only_b = starter_text_for(header, |owner| owner == Some("b")).unwrap();
        assert_eq!(
            only_b,
            "// ANCHOR: solution(a) one\nx;\n// ANCHOR_END: solution\n// TODO(student): two\n"
        );
    }

    #[test]
    fn malformed_regions_are_errors() {
        assert!(
            regions("// ANCHOR: solution a\n// ANCHOR: solution b\n")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(regions("// ANCHOR_END: solution\n").unwrap_err().contains("closes no region"));
        assert!(regions("// ANCHOR: solution a\nx\n").unwrap_err().contains("never closed"));
        assert!(regions("x\n// ANCHOR: stub y\n").unwrap_err().contains("must follow"));
    }
}
