//! The WebAssembly plugin engine.
