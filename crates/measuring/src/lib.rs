//! # measuring: the measuring core of the course
//!
//! What the tour and every crate's bench share, with nothing of the book's publishing (charts,
//! pages) or of the classroom:
//! - [`session`]: the one measuring path (prepare a step on a case, check it against the CPU, time
//!   it, record it beside the read and copy roofs measured in the same run);
//! - [`results`]: the results format, its one writer and its reader;
//! - [`tables`]: the tables of results, rendered once, written as Markdown (the book) or text (the
//!   tour and the benches).

pub mod results;
pub mod session;
pub mod tables;

pub use results::{
    Record, Results, gpu_slug, read_results, utc_date_today, workspace_root, write_results,
};
pub use session::{Failure, Session, find_entry};
pub use tables::Table;
