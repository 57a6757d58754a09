//! Features read off a slice's code, used to pick the questions that make sense for it
//! (a synchronization question only where the kernels synchronize).

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

use crate::model::{InterfaceGraph, NodeKind, PieceRole, SliceFeatures, SlicePiece};

struct Detectors {
    lds: Regex,
    barriers: Regex,
    atomics: Regex,
    warp: Regex,
    reductions: Regex,
    batched: Regex,
    strided: Regex,
    pointer_mode: Regex,
    ilp64: Regex,
    workspace: Regex,
    arg_checks: Regex,
    complex: Regex,
    indexed: Regex,
}

fn detectors() -> &'static Detectors {
    static D: OnceLock<Detectors> = OnceLock::new();
    D.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        Detectors {
            lds: r(r"\b__shared__\b|HIP_DYNAMIC_SHARED|\bextern\s+__shared__"),
            barriers: r(r"\b(__syncthreads|__threadfence\w*|__syncwarp|__builtin_amdgcn_s_barrier|__builtin_amdgcn_fence)\b"),
            atomics: r(r"\b(atomic[A-Z]\w*|__hip_atomic\w*|__atomic_\w+|rocblas_atomic\w*)\s*\("),
            warp: r(r"\b(__shfl\w*|__ballot\w*|__any|__all|__lane_id|warpSize|WARP_SIZE|WAVESIZE|__builtin_amdgcn_(ds_swizzle|mov_dpp|readfirstlane|ds_bpermute)\w*)\b|wavefront"),
            reductions: r(r"(?i)\breduc\w*|\bwf_reduction|\bblock_reduce|\brocblas_(dot|nrm2|asum|i?amax|i?amin)\w*_kernel"),
            batched: r(r"\bbatch_count\b|\b_batched\b|\bbatched\b"),
            strided: r(r"\bstride_[a-zA-Z]\w*|\bstrided_batched\b"),
            pointer_mode: r(r"\bpointer_mode\b|\brocblas_pointer_mode_(host|device)\b"),
            // Only code that splits 64-bit sizes into 32-bit launches: a `_64` name alone
            // (rocSOLVER's `_64` APIs run the same templates with 64-bit integers) has no
            // chunking to ask about.
            ilp64: r(r"\bc_(ILP64_)?i32_max\b|\bc_i64_grid\w*|\bint64_t\b[^;]*\bchunk"),
            workspace: r(r"\bdevice_malloc\b|\bworkspace\b|\bw_mem\b|\bsize_\w*workspace\w*|\bsetup_batched_array\b"),
            arg_checks: r(r"\w+_arg_check\w*\s*\(|\breturn\s+rocblas_status_invalid_\w+|\brocblas_status_invalid_(size|pointer|value|handle)\b|\breturn\s+rocblas_status_success\s*;"),
            complex: r(r"\brocblas_(float|double)_complex\b|\brocblas_complex_num\b|\bis_complex\b|\bconj\s*\("),
            // `incx`, `inc`, `lda`, `ldc_64`; not `include` or `increments`.
            indexed: r(r"\b(inc[a-zA-Z]?|ld[a-z])(_\w+)?\b"),
        }
    })
}

/// Reads the features of a slice from its pieces, its graph and its API names.
///
/// Device features (LDS, barriers, atomics, wavefront intrinsics) are read off the
/// target and its helpers when `target` names them, since a question about them names
/// that kernel; otherwise off every kernel and device helper shown.
pub fn features_of(
    pieces: &[SlicePiece],
    g: &InterfaceGraph,
    apis: &[String],
    target: Option<&BTreeSet<&str>>,
) -> SliceFeatures {
    let d = detectors();
    let device: String = pieces
        .iter()
        .filter(|p| match target {
            Some(names) => names.contains(p.name.as_str()) && p.role != PieceRole::Declaration,
            None => matches!(p.role, PieceRole::Kernel | PieceRole::DeviceHelper),
        })
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let all: String = pieces
        .iter()
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let names = apis.join(" ");
    let files: BTreeSet<(&str, &str)> = pieces
        .iter()
        .filter(|p| p.role != PieceRole::Declaration)
        .map(|p| (p.lib.as_str(), p.file.as_str()))
        .collect();
    SliceFeatures {
        lds: d.lds.is_match(&device),
        barriers: d.barriers.is_match(&device),
        atomics: d.atomics.is_match(&device),
        warp_intrinsics: d.warp.is_match(&device),
        // A reduction question is about the target kernel's own combining: a comment
        // or a host helper elsewhere in the slice that says "reduce" is no premise
        // (sygst's substitution kernel shares one solved value, it combines none).
        reductions: d.reductions.is_match(&device),
        batched: names.contains("_batched") || d.batched.is_match(&all),
        strided_batched: names.contains("_strided_batched") || d.strided.is_match(&all),
        pointer_mode: d.pointer_mode.is_match(&all),
        ilp64: d.ilp64.is_match(&all),
        workspace: d.workspace.is_match(&all),
        arg_checks: d.arg_checks.is_match(&all),
        complex: d.complex.is_match(&all),
        indexed: d.indexed.is_match(&device),
        multi_file: files.len() > 1,
        opaque: g.nodes.iter().any(|n| n.kind == NodeKind::Opaque),
        kernels: pieces
            .iter()
            .filter(|p| p.role == PieceRole::Kernel)
            .count() as u32,
        files: files.len() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApiFunction, GraphNode};

    fn piece(role: PieceRole, file: &str, text: &str) -> SlicePiece {
        SlicePiece {
            role,
            name: "x".into(),
            lib: "l".into(),
            file: file.into(),
            start: 1,
            end: 1,
            sha256: String::new(),
            depth: 1,
            tokens: 1,
            text: text.into(),
            part: Default::default(),
        }
    }

    #[test]
    fn device_features_come_from_device_code_only() {
        let g = InterfaceGraph {
            api: ApiFunction {
                name: "rocx_sdot".into(),
                family: "dot".into(),
                precision: "s".into(),
                variants: vec![],
                file: "h".into(),
                line: 1,
            },
            lib: "l".into(),
            version: "1".into(),
            nodes: vec![GraphNode {
                id: "o".into(),
                name: "tensile".into(),
                kind: NodeKind::Opaque,
                lib: "l".into(),
                file: String::new(),
                line: 0,
                start_line: 0,
                end_line: 0,
                depth: 2,
                note: None,
            }],
            edges: vec![],
        };
        let pieces = [
            piece(PieceRole::Host, "a.cpp", "// __syncthreads in a host comment\nif(handle->pointer_mode == rocblas_pointer_mode_host)"),
            piece(PieceRole::Kernel, "b.hpp", "__shared__ float s[64];\n__syncthreads();\nsum = wf_reduction(sum);"),
            piece(PieceRole::Host, "c.cpp", "for(int64_t b_base = 0; b_base < batch_count; b_base += c_i64_grid_YZ_chunk)"),
        ];
        let f = features_of(&pieces, &g, &["rocx_sdot_batched_64".to_string()], None);
        assert!(f.lds && f.barriers && f.reductions && f.pointer_mode && f.batched && f.ilp64);
        assert!(!f.atomics && !f.warp_intrinsics && !f.complex);
        assert!(f.multi_file && f.opaque);
        assert_eq!((f.kernels, f.files), (1, 3));
        // "reduce" in host code is no reduction in the kernel.
        let host_word = [
            piece(PieceRole::Host, "a.cpp", "// reduce compilation times"),
            piece(PieceRole::Kernel, "b.hpp", "x[tid] -= a * b[ty];"),
        ];
        let f = features_of(&host_word, &g, &["rocx_strsm".to_string()], None);
        assert!(!f.reductions);
        // Aimed at a kernel without barriers, the slice has none to ask about.
        let other = BTreeSet::from(["y"]);
        let f = features_of(&pieces, &g, &["rocx_sdot".to_string()], Some(&other));
        assert!(!f.lds && !f.barriers && f.pointer_mode);
        // A `_64` name without chunking code has no 64-bit splitting to ask about.
        let f = features_of(&pieces[..2], &g, &["rocx_sdot_64".to_string()], None);
        assert!(!f.ilp64);
        // Memory addressed through increments or leading dimensions, not scalars only.
        let scalars = [piece(
            PieceRole::Kernel,
            "r.cpp",
            "// see the include\nrotg_calc(*a, *b, *c, *s);",
        )];
        assert!(!features_of(&scalars, &g, &["rocx_srotg".to_string()], None).indexed);
        for index in ["x[tid * incx]", "A[i + j * lda]", "y[k * incy_64]"] {
            let strided = [piece(PieceRole::Kernel, "d.cpp", index)];
            assert!(
                features_of(&strided, &g, &["rocx_sdot".to_string()], None).indexed,
                "{index}"
            );
        }
    }
}
