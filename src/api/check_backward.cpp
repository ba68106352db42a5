// The backward's argument checks (checks.h): train, the forward's arguments,
// then the saved tensors and the incoming gradients.
#include "api/check_support.h"
#include "api/checks.h"

namespace lstmop {
namespace detail {

LstmProblem check_backward_args(const BackwardInputs& g, const TensorView& input,
                                const TensorList& hx, const TensorList& params, bool has_biases,
                                int64_t num_layers, double dropout, bool train, bool bidirectional,
                                bool batch_first, const TensorView& batch_sizes, bool read_values) {
  if (!train) {
    fail("train", "must be true: the backward needs the saved tensors i, j, f, o, h, c, tanhc of "
                  "a train=True forward, got train=false");
  }
  LstmProblem dims = check_forward_args(input, hx, params, has_biases, num_layers, dropout, train,
                                        bidirectional, batch_first, batch_sizes, read_values);
  // Every saved tensor is (D*L, T, B, H) but h, which is (D*L, T, B, R).
  const std::vector<int64_t> saved_shape{dims.slots, dims.T, dims.B, dims.H};
  const std::vector<int64_t> saved_h_shape{dims.slots, dims.T, dims.B, dims.R};
  const char* const h_meaning =
      dims.projections() ? " (D*L, T, B, proj_size)" : " (D*L, T, B, hidden_size)";
  const std::pair<const char*, const TensorView*> saved[] = {
      {"i", g.i}, {"j", g.j}, {"f", g.f}, {"o", g.o}, {"h", g.h}, {"c", g.c}, {"tanhc", g.tanhc}};
  for (const auto& e : saved) {
    const bool hidden = e.second == g.h;
    check_input_tensor(e.first, *e.second, dims, hidden ? saved_h_shape : saved_shape,
                       hidden ? h_meaning : " (D*L, T, B, hidden_size)", read_values,
                       " (saved by a train=True forward)");
  }
  const ForwardShapes fs = forward_shapes(dims);
  if (g.grad_y->defined) {
    check_input_tensor("grad_y", *g.grad_y, dims, fs.output, " (the output's shape)", read_values);
  }
  if (g.grad_hy->defined) {
    check_input_tensor("grad_hy", *g.grad_hy, dims, fs.hy,
                       dims.projections() ? " (D*L, B, proj_size)" : " (D*L, B, hidden_size)",
                       read_values);
  }
  if (g.grad_cy->defined) {
    check_input_tensor("grad_cy", *g.grad_cy, dims, fs.cy, " (D*L, B, hidden_size)", read_values);
  }
  return dims;
}

}  // namespace detail
}  // namespace lstmop
