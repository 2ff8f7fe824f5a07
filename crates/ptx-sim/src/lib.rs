//! A PTX interpreter for the course's kernels (work in progress).
