// SPDX-License-Identifier: MIT
//! Links libzvmm. Where from, first found:
//!  - ZVMM_LIB_DIR: a directory holding libzvmm.so (a build tree);
//!  - `pkg-config --libs-only-L zvmm`, run as a command so that
//!    PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR pick an installed tree
//!    (a DESTDIR install: PKG_CONFIG_SYSROOT_DIR=/tmp/x
//!    PKG_CONFIG_PATH=/tmp/x/usr/lib/pkgconfig);
//!  - the linker's default directories.

use std::env;
use std::path::Path;
use std::process::Command;

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let tool = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(&tool)
        .args(args)
        .arg("zvmm")
        .output()
        .map_err(|e| format!("{}: {}", tool, e))?;
    if !out.status.success() {
        return Err(format!(
            "{} {} zvmm: {}",
            tool,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn main() {
    for var in [
        "ZVMM_LIB_DIR",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    println!("cargo:rerun-if-changed=build.rs");

    if let Ok(dir) = env::var("ZVMM_LIB_DIR") {
        if !Path::new(&dir).is_dir() {
            panic!("ZVMM_LIB_DIR={} is no directory", dir);
        }
        println!("cargo:rustc-link-search=native={}", dir);
        // A crate that depends on this one reads it as DEP_ZVMM_LIB_DIR
        // (for an rpath, say): the library this one linked.
        println!("cargo:lib_dir={}", dir);
    } else {
        match pkg_config(&["--libs-only-L"]) {
            Ok(flags) => {
                for dir in flags.split_whitespace().filter_map(|f| f.strip_prefix("-L")) {
                    println!("cargo:rustc-link-search=native={}", dir);
                    println!("cargo:lib_dir={}", dir);
                }
            }
            // An installation in the linker's own directories links
            // without pkg-config; anything else fails at link time with
            // this warning above the linker's error.
            Err(e) => println!(
                "cargo:warning=libzvmm not found through pkg-config ({}); \
                 set PKG_CONFIG_PATH (and PKG_CONFIG_SYSROOT_DIR for a DESTDIR \
                 install) or ZVMM_LIB_DIR",
                e
            ),
        }
    }
    println!("cargo:rustc-link-lib=dylib=zvmm");
}
