// Bf16MatmulStep (bf16_matmul_step.h): oneDNN matmul primitives with B in
// the layout the primitive prefers, one per row count, from a process-wide
// cache (a primitive's creation costs tens of microseconds even from
// oneDNN's own cache, a step a few).
#include "gemm/bf16_matmul_step.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <unordered_map>

#include "gemm/one_openmp_thread.h"

namespace lstmop {
namespace detail {
namespace {

using dnnl::memory;

std::atomic<int64_t> g_runs{0};

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::desc a_desc(int64_t m, int64_t k, int64_t lda) {
  return memory::desc({m, k}, memory::data_type::bf16, memory::dims{lda, 1});
}
memory::desc c_desc(int64_t m, int64_t n, int64_t ldc) {
  return memory::desc({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
}
// accumulate: C += A * B (oneDNN's sum post-op), else C = A * B.
dnnl::primitive_attr attributes(bool accumulate) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

// B's packed layout for (k, n): the one the primitive picks for the first
// row count asked, kept for the process so every later primitive of (k, n)
// reads the same packed B.
struct Product {
  dnnl::matmul primitive;
  std::size_t scratchpad_bytes = 0;
};

class Cache {
 public:
  static Cache& get() {
    static Cache* cache = new Cache();  // never destroyed: used until exit
    return *cache;
  }

  // B's packed desc for (k, n), made with row count m if new.
  memory::desc packed_b(int64_t m, int64_t k, int64_t n, int64_t lda, int64_t ldc,
                        bool accumulate) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto key = std::make_pair(k, n);
    auto it = packed_.find(key);
    if (it != packed_.end()) return it->second;
    const memory::desc any({k, n}, memory::data_type::bf16, memory::format_tag::any);
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(a_desc(m, k, lda), any, c_desc(m, n, ldc)), attributes(accumulate),
        cpu_engine());
    const memory::desc packed = pd.weights_desc();
    packed_.emplace(key, packed);
    return packed;
  }

  Product product(int64_t m, int64_t k, int64_t n, int64_t lda, int64_t ldc, bool accumulate,
                  const memory::desc& b) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto key = std::make_tuple(m, k, n, lda, ldc, accumulate);
    const auto it = products_.find(key);
    if (it != products_.end()) return it->second;
    if (products_.size() >= kMaxProducts) products_.clear();  // bounded, rebuilt on demand
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(a_desc(m, k, lda), b, c_desc(m, n, ldc)), attributes(accumulate),
        cpu_engine());
    // oneDNN's reference kernels (plain loops) would make every step many
    // times slower than lstmop's fused step: refused, the call keeps that.
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) {
      throw dnnl::error(dnnl_unimplemented, "only a reference matmul");
    }
    Product p;
    p.primitive = dnnl::matmul(pd);
    p.scratchpad_bytes = pd.scratchpad_desc().get_size();
    return products_.emplace(key, std::move(p)).first->second;
  }

 private:
  // Handed out by value (a primitive is a shared handle): clearing never
  // takes one from a call.
  static constexpr std::size_t kMaxProducts = 1024;
  std::mutex mutex_;
  std::map<std::pair<int64_t, int64_t>, memory::desc> packed_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool>, Product> products_;
};

}  // namespace

struct Bf16MatmulStep::Impl {
  int64_t k = 0, n = 0;
  memory::desc packed_desc;
  std::vector<unsigned char> packed;   // B in packed_desc's layout
  std::vector<unsigned char> scratch;  // the largest scratchpad of the products
  dnnl::reorder pack;                  // B as stored -> packed
  memory plain_b, packed_b, scratch_mem;
  dnnl::stream stream;
  // Per row count m: index + 1 into the products (0: not prepared).
  std::vector<int> index;
  struct Step {
    dnnl::matmul primitive;
    memory a, c;
    // The execution's arguments, built once: a and c are handles of the
    // objects in here, so a step only points them at its rows.
    std::unordered_map<int, memory> args;
  };
  std::vector<Step> steps;
};

Bf16MatmulStep::Bf16MatmulStep() = default;
Bf16MatmulStep::~Bf16MatmulStep() = default;

bool Bf16MatmulStep::prepare(int64_t k, int64_t n, Transpose tb,
                             const std::vector<int64_t>& row_counts, int64_t lda, int64_t ldc,
                             bool accumulate) {
  impl_.reset();
  if (k <= 0 || n <= 0 || row_counts.empty()) return false;
  try {
    auto impl = std::make_unique<Impl>();
    impl->k = k;
    impl->n = n;
    const int64_t max_m = *std::max_element(row_counts.begin(), row_counts.end());
    Cache& cache = Cache::get();
    impl->packed_desc = cache.packed_b(max_m, k, n, lda, ldc, accumulate);
    impl->packed.resize(impl->packed_desc.get_size());
    const dnnl::engine& engine = cpu_engine();
    impl->packed_b = memory(impl->packed_desc, engine, impl->packed.data());
    const memory::desc plain({k, n}, memory::data_type::bf16,
                             tb == Transpose::No ? memory::dims{n, 1} : memory::dims{1, k});
    impl->plain_b = memory(plain, engine, DNNL_MEMORY_NONE);
    impl->pack = dnnl::reorder(impl->plain_b, impl->packed_b);
    impl->index.assign(static_cast<std::size_t>(max_m + 1), 0);
    std::size_t scratch_bytes = 0;
    for (int64_t m : row_counts) {
      if (m <= 0) return false;
      if (impl->index[m] != 0) continue;
      const Product p = cache.product(m, k, n, lda, ldc, accumulate, impl->packed_desc);
      Impl::Step step;
      step.primitive = p.primitive;
      step.a = memory(a_desc(m, k, lda), engine, DNNL_MEMORY_NONE);
      step.c = memory(c_desc(m, n, ldc), engine, DNNL_MEMORY_NONE);
      scratch_bytes = std::max(scratch_bytes, p.scratchpad_bytes);
      impl->steps.push_back(std::move(step));
      impl->index[m] = static_cast<int>(impl->steps.size());
    }
    scratch_bytes = std::max<std::size_t>(scratch_bytes, 64);
    impl->scratch.resize(scratch_bytes);
    impl->stream = dnnl::stream(engine);
    impl->scratch_mem = memory(
        memory::desc({static_cast<int64_t>(scratch_bytes)}, memory::data_type::u8, memory::dims{1}),
        engine, impl->scratch.data());
    for (Impl::Step& step : impl->steps) {
      step.args = {{DNNL_ARG_SRC, step.a},
                   {DNNL_ARG_WEIGHTS, impl->packed_b},
                   {DNNL_ARG_DST, step.c},
                   {DNNL_ARG_SCRATCHPAD, impl->scratch_mem}};
    }
    impl_ = std::move(impl);
    return true;
  } catch (const dnnl::error&) {
    return false;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

void Bf16MatmulStep::set_b(const uint16_t* b) {
  OneOpenMpThread one_thread;
  impl_->plain_b.set_data_handle(const_cast<uint16_t*>(b));
  impl_->pack.execute(impl_->stream, impl_->plain_b, impl_->packed_b);
  impl_->stream.wait();
}

void Bf16MatmulStep::multiply(int64_t m, const uint16_t* a, float* c) const {
  OneOpenMpThread one_thread;
  Impl::Step& step = impl_->steps[static_cast<std::size_t>(impl_->index[m] - 1)];
  step.a.set_data_handle(const_cast<uint16_t*>(a));
  step.c.set_data_handle(c);
  step.primitive.execute(impl_->stream, step.args);
  impl_->stream.wait();
  g_runs.fetch_add(1, std::memory_order_relaxed);
}

int64_t bf16_matmul_step_runs() { return g_runs.load(); }

}  // namespace detail
}  // namespace lstmop
