// bfloat16 operands, float accumulation (gemm.h: gemm_bf16_nt): oneDNN's
// matmul primitive, which picks its brgemm kernel with vdpbf16ps on a CPU with
// AVX512-BF16; the kernel table (cpu_features.h) says whether to use it.
#include <dnnl.h>

#include <algorithm>
#include <atomic>
#include <dnnl.hpp>
#include <new>
#include <vector>

#include "gemm/gemm.h"
#include "gemm/one_openmp_thread.h"
#include "lstmop/tensor.h"
#include "kernels/cpu_features.h"

namespace lstmop {
namespace detail {

bool bf16_gemm_available() { return kernels::kernel_choice().bf16_gemm; }

namespace {
std::atomic<int64_t> g_bf16_gemm_runs{0};
}  // namespace

int64_t bf16_gemm_runs() { return g_bf16_gemm_runs.load(); }

namespace {
// v's (rows, cols) with row stride ld, as stored where ld == cols, else
// copied dense into buffer.
const uint16_t* dense_copy(const uint16_t* v, int64_t rows, int64_t cols, int64_t ld,
                           std::vector<uint16_t>& buffer) {
  if (ld == cols) return v;
  buffer.resize(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) std::copy_n(v + r * ld, cols, buffer.data() + r * cols);
  return buffer.data();
}
}  // namespace

bool gemm_bf16(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, const uint16_t* a,
               int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!bf16_gemm_available()) return false;
  if (m <= 0 || n <= 0 || k <= 0) return false;
  using dnnl::memory;
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  try {
    // oneDNN 2.6's matmul with an odd k and an operand whose rows are not
    // dense (a row stride past its row) gives NaN in a row of C whose row of
    // op(A) holds an infinity, where the product is +-infinity: the fuzzer
    // found it (a bfloat16 w_ih with a padded row stride and an input of
    // infinities). Finite operands come out right; dense operands of every
    // shape probed do too. Such operands are copied dense first.
    const int64_t a_rows = ta == Transpose::No ? m : k, a_cols = ta == Transpose::No ? k : m;
    const int64_t b_rows = tb == Transpose::No ? k : n, b_cols = tb == Transpose::No ? n : k;
    thread_local std::vector<uint16_t> dense_a, dense_b;
    if (k % 2 != 0 && (lda != a_cols || ldb != b_cols)) {
      a = dense_copy(a, a_rows, a_cols, lda, dense_a);
      b = dense_copy(b, b_rows, b_cols, ldb, dense_b);
      lda = a_cols;
      ldb = b_cols;
    }
    OneOpenMpThread one_thread;
    // op(A) (m, k) and op(B) (k, n) as strided views of the stored matrices.
    const memory::desc a_md({m, k}, memory::data_type::bf16,
                            ta == Transpose::No ? memory::dims{lda, 1} : memory::dims{1, lda});
    const memory::desc b_md({k, n}, memory::data_type::bf16,
                            tb == Transpose::No ? memory::dims{ldb, 1} : memory::dims{1, ldb});
    const memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
    // Created per call: oneDNN's primitive cache makes a repeat ~40 us. The
    // scratchpad (the brgemm's copies of B) is ours, one buffer per calling
    // thread: oneDNN's own scratchpad in this build is shared by the primitives
    // of a thread and may not follow a primitive to another thread, and calls
    // run on two threads at once (the directions, split mode's halves).
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);  // C = A * B + C
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine,
                                          true);
    if (!pd) return false;
    const dnnl::matmul product(pd);
    thread_local std::vector<unsigned char> scratch;
    const memory::desc scratch_md = pd.scratchpad_desc();
    if (scratch.size() < scratch_md.get_size()) scratch.resize(scratch_md.get_size());
    dnnl::stream stream(engine);
    memory a_mem(a_md, engine, const_cast<uint16_t*>(a));
    memory b_mem(b_md, engine, const_cast<uint16_t*>(b));
    memory c_mem(c_md, engine, c);
    memory scratch_mem(scratch_md, engine, scratch.data());
    product.execute(stream, {{DNNL_ARG_SRC, a_mem},
                             {DNNL_ARG_WEIGHTS, b_mem},
                             {DNNL_ARG_DST, c_mem},
                             {DNNL_ARG_SCRATCHPAD, scratch_mem}});
    stream.wait();
    g_bf16_gemm_runs.fetch_add(1);
    return true;
  } catch (const dnnl::error&) {
    return false;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

void gemm_bf16_or_float(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k,
                        const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb,
                        float beta, float* c, int64_t ldc) {
  if (gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)) return;
  // The stored matrices widened (their values exactly), then the float GEMM.
  auto widened = [](const uint16_t* v, int64_t rows, int64_t cols, int64_t ld) {
    std::vector<float> out(static_cast<std::size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < cols; ++j) out[r * cols + j] = bfloat16_to_float(v[r * ld + j]);
    }
    return out;
  };
  const int64_t a_rows = ta == Transpose::No ? m : k, a_cols = ta == Transpose::No ? k : m;
  const int64_t b_rows = tb == Transpose::No ? k : n, b_cols = tb == Transpose::No ? n : k;
  const std::vector<float> wa = widened(a, a_rows, a_cols, lda);
  const std::vector<float> wb = widened(b, b_rows, b_cols, ldb);
  gemm(ta, tb, m, n, k, 1.0f, wa.data(), a_cols, wb.data(), b_cols, beta, c, ldc);
}

bool bf16_operands_normal(const uint16_t* v, int64_t rows, int64_t cols, int64_t ld) {
  // Exponent field of bfloat16 (8 bits, bias 127): 2^-60 is field 67.
  constexpr uint16_t kMinField = 127 - 60;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = v + r * ld;
    bool ok = true;
    for (int64_t j = 0; j < cols; ++j) {
      const uint16_t magnitude = static_cast<uint16_t>(row[j] & 0x7fff);
      ok &= magnitude == 0 || (magnitude >> 7) >= kMinField;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace detail
}  // namespace lstmop
