// CUDA for the book's highlighter. mdBook bundles highlight.js with C++ but no CUDA, and leaves a
// ```cuda listing plain. This file (book.toml: additional-js, loaded after mdBook's book.js has
// highlighted the page) registers `cuda` as C++ with CUDA's qualifiers, built-in variables and
// intrinsics, then highlights the page's CUDA listings. Offline: nothing is fetched.
(function () {
    'use strict';
    if (typeof hljs === 'undefined' || !hljs.getLanguage('cpp')) {
        return;
    }
    var qualifiers = [
        '__global__', '__device__', '__host__', '__shared__', '__constant__', '__managed__',
        '__restrict__', '__forceinline__', '__noinline__', '__launch_bounds__', '__align__',
        '__grid_constant__', '__cluster_dims__',
    ];
    var builtins = [
        // Built-in variables.
        'threadIdx', 'blockIdx', 'blockDim', 'gridDim', 'warpSize',
        // Barriers, fences and warp intrinsics.
        '__syncthreads', '__syncthreads_count', '__syncthreads_and', '__syncthreads_or', '__syncwarp',
        '__threadfence', '__threadfence_block', '__threadfence_system', '__nanosleep',
        '__shfl_sync', '__shfl_up_sync', '__shfl_down_sync', '__shfl_xor_sync', '__ballot_sync',
        '__any_sync', '__all_sync', '__match_any_sync', '__match_all_sync', '__activemask',
        '__reduce_add_sync', '__reduce_min_sync', '__reduce_max_sync',
        // Loads and stores with cache hints.
        '__ldg', '__ldcg', '__ldca', '__ldcs', '__ldlu', '__ldcv', '__stwb', '__stcg', '__stcs', '__stwt',
        // Atomics.
        'atomicAdd', 'atomicSub', 'atomicExch', 'atomicMin', 'atomicMax', 'atomicInc', 'atomicDec',
        'atomicCAS', 'atomicAnd', 'atomicOr', 'atomicXor',
        // Bit and arithmetic intrinsics.
        '__popc', '__popcll', '__clz', '__clzll', '__ffs', '__ffsll', '__brev', '__byte_perm', '__funnelshift_l',
        '__funnelshift_r', '__fmaf_rn', '__fadd_rn', '__fmul_rn', '__fdividef', '__expf', '__logf',
        '__float_as_int', '__int_as_float', '__float_as_uint', '__uint_as_float',
        // Half precision.
        '__half', '__half2', '__nv_bfloat16', '__nv_bfloat162', '__half2float', '__float2half',
        '__bfloat162float', '__float2bfloat16', '__low2float', '__high2float',
        // Vector types.
        'char2', 'char4', 'uchar2', 'uchar4', 'short2', 'short4', 'int2', 'int3', 'int4', 'uint2',
        'uint3', 'uint4', 'float2', 'float3', 'float4', 'double2', 'longlong2', 'ulonglong2', 'dim3',
        'make_int2', 'make_int4', 'make_uint2', 'make_uint4', 'make_float2', 'make_float4',
    ];
    hljs.registerLanguage('cuda', function (hljs) {
        // A fresh C++ definition (highlight.js keeps each language's defining function).
        var cuda = hljs.getLanguage('cpp').rawDefinition(hljs);
        var keywords = cuda.keywords;
        keywords.keyword += ' ' + qualifiers.join(' ');
        keywords.built_in += ' ' + builtins.join(' ');
        // `template <class T>`: a mode of its own, ended by its `>`. Without it, C++'s class mode
        // takes `class T>` for the start of a class and every word up to the next `{` for its name,
        // which leaves a templated device function's whole signature as plain names.
        cuda.contains.unshift({ beginKeywords: 'template', end: />/, keywords: keywords });
        cuda.name = 'CUDA';
        cuda.aliases = ['cu', 'cuh'];
        return cuda;
    });
    // book.js ran before this file and left these listings plain: highlight them now.
    Array.prototype.forEach.call(document.querySelectorAll('code.language-cuda'), function (block) {
        hljs.highlightBlock(block);
    });
})();
