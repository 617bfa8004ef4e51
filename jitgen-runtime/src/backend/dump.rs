//! What compiled code leaves behind for the tools that look at it: with
//! `JITGEN_DUMP_CODE=dir`, its machine code, its Cranelift IR and the
//! residual function it was translated from, as listed; with
//! `JITGEN_PERF_MAP`, its names for `perf report`.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The number and name under which the tools know one compiled function,
/// where `JITGEN_DUMP_CODE` or `JITGEN_PERF_MAP` is set: `N` counts the
/// process's compiled functions, its dump files are `code-N.*`, and its
/// symbol is `jitN_` followed by the residual function's name. The symbol
/// is also the function's name in its Cranelift module, which is the name
/// Cranelift itself writes to the perf map when `perf record` runs it (it
/// sets `PERF_BUILDID_DIR`): one name per address, not an anonymous one
/// beside it.
pub(crate) struct ToolName {
    n: usize,
    /// `jitN_name`, with spaces as underscores.
    pub symbol: String,
}

/// The tools' name for `f`'s code, where a tool is on (see [`ToolName`]).
pub(crate) fn tool_name(f: &crate::ir::function::ResidualFunction) -> Option<ToolName> {
    static NAMED: AtomicUsize = AtomicUsize::new(0);
    if std::env::var_os("JITGEN_DUMP_CODE").is_none() && std::env::var_os("JITGEN_PERF_MAP").is_none() {
        return None;
    }
    let n = NAMED.fetch_add(1, Ordering::Relaxed);
    Some(ToolName { n, symbol: format!("jit{n}_{}", f.name.replace(' ', "_")) })
}

/// With `JITGEN_DUMP_CODE=dir`, writes each compiled function's machine code
/// to `dir/code-N.bin` (for `objdump -D -b binary -m i386:x86-64`), its
/// Cranelift IR, as optimized, to `dir/code-N.clif`, and the residual
/// function it came from, as listed, to `dir/code-N.ir`.
pub(crate) fn dump_machine_code(
    ctx: &cranelift_codegen::Context,
    f: &crate::ir::function::ResidualFunction,
    name: &ToolName,
) {
    let Some(dir) = std::env::var_os("JITGEN_DUMP_CODE") else { return };
    let Some(code) = ctx.compiled_code() else { return };
    let n = name.n;
    let path = std::path::Path::new(&dir).join(format!("code-{n}.bin"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, code.code_buffer())) {
        eprintln!("jitgen: cannot write {}: {e}", path.display());
    }
    let _ = std::fs::write(std::path::Path::new(&dir).join(format!("code-{n}.clif")), ctx.func.display().to_string());
    let _ = std::fs::write(std::path::Path::new(&dir).join(format!("code-{n}.ir")), crate::ir::listing::listing(f));
}

/// With `JITGEN_PERF_MAP` set, names the code in `/tmp/perf-PID.map`, where
/// `perf report` finds the symbols of code it cannot read otherwise.
pub(crate) fn perf_map(addr: usize, size: usize, name: &ToolName) {
    if std::env::var_os("JITGEN_PERF_MAP").is_none() {
        return;
    }
    use std::io::Write;
    let path = format!("/tmp/perf-{}.map", std::process::id());
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
        let _ = writeln!(f, "{addr:x} {size:x} {}", name.symbol);
    }
}
