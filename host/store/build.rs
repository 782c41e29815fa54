//! `sqlx::migrate!` embeds the files of `migrations/` when this crate compiles; a new file
//! there must make it compile again, or the binaries would carry the old schema.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
