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
// Recorded: again for issue 43 (2026-11-28): the shuffle became a keyed Feistel permutation taken one index at a
// time (streams/index_permutation.h), so the shuffled streams read other samples first; the tensors of a given
// sample are unchanged. Before that, for issue 39 (2026-11-28): the test photographs are now made by the project venv's Pillow 13.0.0
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
// daemon/transforms/kernels/resample.cc is built twice (GCC target_clones "avx2" and "default", chosen at load time),
// but its arithmetic is fixed-point integer, so both agree; the Normalize step is float (x/255 - mean)/std through a
// table, built with the default -march (x86-64, no FMA contraction); train224's crop box uses glibc's libm (log, exp,
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
    {"train224", 0, "image", "float32[16,3,224,224]", "840da035d46bf6b2275e0796e51b2630"},
    {"train224", 0, "index", "int64[16]", "7e8fa415fc9487518791efbc165088be"},
    {"train224", 0, "label", "int64[16]", "79a1aaa5a46971785893328ccf4e236a"},
    {"train224", 1, "image", "float32[16,3,224,224]", "915b94f294d55f70827a4af9e2882767"},
    {"train224", 1, "index", "int64[16]", "52411d60d465e22a612dde809350714c"},
    {"train224", 1, "label", "int64[16]", "69f448fb657bf955da8ebbdb9ad9bd95"},
    {"train224_u8", 0, "image", "uint8[16,3,224,224]", "344f7d60af971ec6bfa16f1d229a300d"},
    {"train224_u8", 0, "index", "int64[16]", "7e8fa415fc9487518791efbc165088be"},
    {"train224_u8", 0, "label", "int64[16]", "79a1aaa5a46971785893328ccf4e236a"},
    {"train224_u8", 1, "image", "uint8[16,3,224,224]", "3674e2fdac94aad0091f7ce2b1612be5"},
    {"train224_u8", 1, "index", "int64[16]", "52411d60d465e22a612dde809350714c"},
    {"train224_u8", 1, "label", "int64[16]", "69f448fb657bf955da8ebbdb9ad9bd95"},
    {"val224", 0, "image", "float32[16,3,224,224]", "2a722a33dd84d6486b2b897ea2ca2c6e"},
    {"val224", 0, "index", "int64[16]", "7e8fa415fc9487518791efbc165088be"},
    {"val224", 0, "label", "int64[16]", "79a1aaa5a46971785893328ccf4e236a"},
    {"val224", 1, "image", "float32[16,3,224,224]", "e24b4ab1392de5ba40bc35bb90bb3371"},
    {"val224", 1, "index", "int64[16]", "52411d60d465e22a612dde809350714c"},
    {"val224", 1, "label", "int64[16]", "69f448fb657bf955da8ebbdb9ad9bd95"},
    {"val224+exact_decode", 0, "image", "float32[16,3,224,224]", "8c90e2e945dd09508daf0a93ead6e3b9"},
    {"val224+exact_decode", 0, "index", "int64[16]", "7e8fa415fc9487518791efbc165088be"},
    {"val224+exact_decode", 0, "label", "int64[16]", "79a1aaa5a46971785893328ccf4e236a"},
    {"val224+exact_decode", 1, "image", "float32[16,3,224,224]", "598e35f8b1a94ab05e5ad4d0dc41d205"},
    {"val224+exact_decode", 1, "index", "int64[16]", "52411d60d465e22a612dde809350714c"},
    {"val224+exact_decode", 1, "label", "int64[16]", "69f448fb657bf955da8ebbdb9ad9bd95"},
    {"fmnist", 0, "image", "float32[16,1,28,28]", "fcc028de7bc7159d7089f960537556e0"},
    {"fmnist", 0, "index", "int64[16]", "1a95f0e84b1adcfac4392ebb2a7be017"},
    {"fmnist", 0, "label", "int64[16]", "e0f625104043cd3b746ab6cb4de5ad01"},
    {"fmnist", 1, "image", "float32[16,1,28,28]", "2b4be5f325151c07f5b5eebfccf4af4c"},
    {"fmnist", 1, "index", "int64[16]", "79e33b770ea952352559083bf9c5aaaa"},
    {"fmnist", 1, "label", "int64[16]", "29edaf336aaf78e34547e006eb08a967"},
    {"fmnist_u8", 0, "image", "uint8[16,1,28,28]", "f5d3ab918c1601e062bf14d912108072"},
    {"fmnist_u8", 0, "index", "int64[16]", "1a95f0e84b1adcfac4392ebb2a7be017"},
    {"fmnist_u8", 0, "label", "int64[16]", "e0f625104043cd3b746ab6cb4de5ad01"},
    {"fmnist_u8", 1, "image", "uint8[16,1,28,28]", "70205903fc8e089932f9699c219bdd6f"},
    {"fmnist_u8", 1, "index", "int64[16]", "79e33b770ea952352559083bf9c5aaaa"},
    {"fmnist_u8", 1, "label", "int64[16]", "29edaf336aaf78e34547e006eb08a967"},
};

}  // namespace batchd::testing
