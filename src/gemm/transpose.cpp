// float transpose (transpose.h): 8 x 8 blocks in AVX2 registers (unpack /
// shuffle / permute), the generic tiled loop for edges and without AVX2.
#include "gemm/transpose.h"

#include <immintrin.h>

#include "kernels/cpu_features.h"
#include "kernels/isa_target.h"

namespace lstmop {
namespace detail {
namespace {

LSTMOP_TARGET_AVX2 inline void block_8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(src + k * lds);
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {
    r[4 * k + 0] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * k + 1] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(dst + k * ldd, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(dst + (k + 4) * ldd, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}

LSTMOP_TARGET_AVX2 void transpose_avx2(int64_t rows, int64_t cols, const float* src, int64_t lds,
                                       float* dst, int64_t ldd) {
  // 8 x 8 blocks within 8 x 256 tiles: a tile reads 8 source rows (a row
  // stride of 4 KiB puts them all in one 8-way L1 set, so not more; 32 x 32
  // tiles ran 5 GB/s there, these 30) along 256 columns.
  constexpr int64_t kRowTile = 8, kColTile = 256;
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  if (ldd % 256 == 0) {
    // A destination row stride of a multiple of 1 KiB (a weight gradient's
    // caller layout, 256 or 512 columns): the tiles above write 256
    // destination rows at that stride, which fall into a few cache sets
    // (a 512 x 1024 copy to a 2 KiB stride: 10 GB/s, to a padded one 66).
    // Instead 16 destination rows at a time, each written along its whole
    // length, the source read down its rows (31 GB/s there).
    const int64_t cols16 = cols8 / 16 * 16;
    for (int64_t c0 = 0; c0 < cols16; c0 += 16) {
      for (int64_t r = 0; r < rows8; r += 8) {
        block_8x8(src + r * lds + c0, lds, dst + c0 * ldd + r, ldd);
        block_8x8(src + r * lds + c0 + 8, lds, dst + (c0 + 8) * ldd + r, ldd);
      }
    }
    for (int64_t r = 0; r < rows8 && cols16 < cols8; r += 8) {
      block_8x8(src + r * lds + cols16, lds, dst + cols16 * ldd + r, ldd);
    }
  } else {
    for (int64_t r0 = 0; r0 < rows8; r0 += kRowTile) {
      const int64_t r1 = std::min(rows8, r0 + kRowTile);
      for (int64_t c0 = 0; c0 < cols8; c0 += kColTile) {
        const int64_t c1 = std::min(cols8, c0 + kColTile);
        for (int64_t c = c0; c < c1; c += 8) {
          for (int64_t r = r0; r < r1; r += 8) block_8x8(src + r * lds + c, lds, dst + c * ldd + r, ldd);
        }
      }
    }
  }
  // Edges: the last cols % 8 columns of every row, the last rows % 8 rows.
  if (cols8 < cols) transpose<float>(rows, cols - cols8, src + cols8, lds, dst + cols8 * ldd, ldd);
  if (rows8 < rows) {
    transpose<float>(rows - rows8, cols8, src + rows8 * lds, lds, dst + rows8, ldd);
  }
}

}  // namespace

void transpose(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
               int64_t ldd) {
  if (kernels::kernel_choice().transpose == kernels::Isa::Avx2) {
    transpose_avx2(rows, cols, src, lds, dst, ldd);
  } else {
    transpose<float>(rows, cols, src, lds, dst, ldd);
  }
}

}  // namespace detail
}  // namespace lstmop
