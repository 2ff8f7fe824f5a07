//! Embeds every shared header of `cuda/` (`*.cuh`) so NVRTC can resolve `#include "name.cuh"`.
use std::{env, fs, path::PathBuf};

fn main() {
    let cuda = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../cuda");
    println!("cargo:rerun-if-changed={}", cuda.display());
    let mut headers: Vec<PathBuf> = fs::read_dir(&cuda)
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    headers.retain(|p| p.extension().is_some_and(|e| e == "cuh"));
    headers.sort();
    let mut out = String::from("static SHARED_HEADERS: &[(&str, &str)] = &[\n");
    for path in &headers {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap().to_string_lossy();
        let path = fs::canonicalize(path).unwrap();
        out += &format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string());
    }
    out += "];\n";
    fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("shared_headers.rs"), out).unwrap();
}
