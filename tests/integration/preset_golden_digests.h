// preset_golden_digests.h — golden digests of the first two batches of every preset pipeline, for
// preset_golden_test.cc (PresetGoldenTest): per tensor, its layout (dtype[shape]) and the XXH3-128 of its name,
// dtype, shape and bytes.
//
// The rule (issue 24, "Pipelines as data"): train224, train224_u8 and val224 are rewritten as lists of ops; their
// output stays bit for bit what these digests record until the speed work, and only after it may change, then within
// the fidelity tolerances (with exact_decode, val224 stays bit-identical to torchvision: ImageFolderTest.
// Val224MatchesTorchvisionWithinTolerance, WebDatasetTest.Val224WithExactDecodeIsBitIdenticalToTorchvisionOnTheSame
// Members). fmnist and fmnist_u8 are recorded too, for completeness. Re-record only deliberately (a change allowed
// by that rule, said in the commit): BATCHD_RECORD_GOLDEN=1 build/bin/imagefolder_tests
// --gtest_filter='PresetGoldenTest.*' prints the table below (the comparing test is then SKIPPED, never passed).
//
// Recorded: again for issue 39 (2026-11-28): the test photographs are now made by the project venv's Pillow 13.0.0
// (its own libjpeg-turbo 3.2.0 encodes them, and its resize runs Pillow 13's pass order), so their bytes, and with
// them the image presets' digests, changed; batchd's resize follows Pillow 13's pass order too. First recorded at
// commit cfba90fed3c76186533550835c7f24e3d7722229. On the project's build machine (Debian 12
// x86-64, AMD EPYC with AVX2/AVX-512; gcc 12.2, libjpeg-turbo 2.1.5, glibc 2.36), over the test data of
// tests/data/make_testdata.sh (imagefolder: 60 JPEGs cut from real photographs and one PNG; byte-identical when
// generated again with the same Pillow) and /usr/share/datasets/fashion-mnist (t10k); options: seed 24, epoch 0, shuffle, batch 16,
// rank 0 of 1; 2 workers (the test checks that 1 worker, and 3 workers in small chunks, give the same digests).
//
// Portability: the digests are exact on this machine image (the CI machine is the same kind), not across images.
// What could move them: libjpeg-turbo picks its SIMD code at run time (SSE2/AVX2), but when recorded the digests
// held with JSIMD_FORCENONE=1, JSIMD_FORCESSE2=1 and JSIMD_FORCEAVX2=1 alike (its ISLOW and IFAST IDCTs and
// upsamplers match its C code); another libjpeg-turbo version may decode differently;
// daemon/transforms/resample.cc is built twice (GCC target_clones "avx2" and "default", chosen at load time), but its
// arithmetic is fixed-point integer, so both agree; the Normalize step is float (x/255 - mean)/std through a table,
// built with the default -march (x86-64, no FMA contraction); train224's crop box uses glibc's libm (log, exp,
// sqrt, nearbyint), whose exp and log are picked at run time (FMA variants here), but the digests held with
// GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-FMA4,-AVX2 too (exp then resolves to __ieee754_exp_avx). No source is built
// with -march=native.
#pragma once

namespace batchd::testing {

struct GoldenDigest {
  const char* preset;    // PresetGoldenTest's label: "train224", "val224+exact_decode", ...
  int batch;             // 0, 1
  const char* tensor;    // "image", "label", "index"
  const char* layout;    // "float32[16,3,224,224]"
  const char* xxh3_128;  // 32 hex digits
};

inline constexpr GoldenDigest kPresetGolden[] = {
    {"train224", 0, "image", "float32[16,3,224,224]", "ebdd8ecd6e41d61a9c6a0dbf4ae4b87d"},
    {"train224", 0, "index", "int64[16]", "8173914851ba290663f5a185b8900b73"},
    {"train224", 0, "label", "int64[16]", "9f33fc8156b438319390f310539f5230"},
    {"train224", 1, "image", "float32[16,3,224,224]", "35e881a3feb250e290f3719e369fd4af"},
    {"train224", 1, "index", "int64[16]", "b17932fe0880bff2a12091b49f2eebb0"},
    {"train224", 1, "label", "int64[16]", "848cad68472c13cc562625e5dfe768d8"},
    {"train224_u8", 0, "image", "uint8[16,3,224,224]", "3d33af3ca2fa223acf27e906a2a85c1f"},
    {"train224_u8", 0, "index", "int64[16]", "8173914851ba290663f5a185b8900b73"},
    {"train224_u8", 0, "label", "int64[16]", "9f33fc8156b438319390f310539f5230"},
    {"train224_u8", 1, "image", "uint8[16,3,224,224]", "f0df3a4f8be973c64057c2aeddff4c6b"},
    {"train224_u8", 1, "index", "int64[16]", "b17932fe0880bff2a12091b49f2eebb0"},
    {"train224_u8", 1, "label", "int64[16]", "848cad68472c13cc562625e5dfe768d8"},
    {"val224", 0, "image", "float32[16,3,224,224]", "1b506af073276b51fa24637740a7ddac"},
    {"val224", 0, "index", "int64[16]", "8173914851ba290663f5a185b8900b73"},
    {"val224", 0, "label", "int64[16]", "9f33fc8156b438319390f310539f5230"},
    {"val224", 1, "image", "float32[16,3,224,224]", "6e1db95d785926d8096b086e40b244e2"},
    {"val224", 1, "index", "int64[16]", "b17932fe0880bff2a12091b49f2eebb0"},
    {"val224", 1, "label", "int64[16]", "848cad68472c13cc562625e5dfe768d8"},
    {"val224+exact_decode", 0, "image", "float32[16,3,224,224]", "ea1ef6323152472b38a0af674e5f99d0"},
    {"val224+exact_decode", 0, "index", "int64[16]", "8173914851ba290663f5a185b8900b73"},
    {"val224+exact_decode", 0, "label", "int64[16]", "9f33fc8156b438319390f310539f5230"},
    {"val224+exact_decode", 1, "image", "float32[16,3,224,224]", "ac9350c89d0b17b961d9ac8e999e4428"},
    {"val224+exact_decode", 1, "index", "int64[16]", "b17932fe0880bff2a12091b49f2eebb0"},
    {"val224+exact_decode", 1, "label", "int64[16]", "848cad68472c13cc562625e5dfe768d8"},
    {"fmnist", 0, "image", "float32[16,1,28,28]", "bccad59ac2b76e6dcb37e61fb755b988"},
    {"fmnist", 0, "index", "int64[16]", "7e841b4847f09d811a3db3bda77f6971"},
    {"fmnist", 0, "label", "int64[16]", "eb12a15e61a97e4e4d22fdfafa3e9490"},
    {"fmnist", 1, "image", "float32[16,1,28,28]", "201588841cedb131ce6713bf6f28536a"},
    {"fmnist", 1, "index", "int64[16]", "44d0505b7252c2124236d398a08c68f8"},
    {"fmnist", 1, "label", "int64[16]", "3aef3735061cc2520e2b6188c36209c8"},
    {"fmnist_u8", 0, "image", "uint8[16,1,28,28]", "83a324518a792386aa4dc1b9a5a5ab5e"},
    {"fmnist_u8", 0, "index", "int64[16]", "7e841b4847f09d811a3db3bda77f6971"},
    {"fmnist_u8", 0, "label", "int64[16]", "eb12a15e61a97e4e4d22fdfafa3e9490"},
    {"fmnist_u8", 1, "image", "uint8[16,1,28,28]", "13742f2df92ab7bbfea8c51c94dd13d3"},
    {"fmnist_u8", 1, "index", "int64[16]", "44d0505b7252c2124236d398a08c68f8"},
    {"fmnist_u8", 1, "label", "int64[16]", "3aef3735061cc2520e2b6188c36209c8"},
};

}  // namespace batchd::testing
