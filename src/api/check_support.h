// Internal: the pieces every argument check of api/ is made of. Messages start
// with the argument's name and give the expected and the actual value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lstmop/lstm.h"
#include "plan/lstm_problem.h"

namespace lstmop {
namespace detail {

// Throws the Error: `name` starts the message; the argument is its part
// before any parenthesised description: "params[1] (weight_hh, layer 0,
// forward)" is argument "params[1]".
[[noreturn]] void fail(const std::string& name, const std::string& rest);

bool is_floating(DType d);
// a * b into *r; false on int64 overflow.
bool mul_ok(int64_t a, int64_t b, int64_t* r);
// A double as printed by an ostream ("0.5", "nan").
std::string number(double v);
// "2-D [3, 4]".
std::string with_dims(const std::vector<int64_t>& sizes);

// Structure every tensor argument must have, whatever its role: defined, one
// stride per size, sizes >= 0, element count and addressed extent in int64.
void check_view(const std::string& name, const TensorView& v, const char* what_if_undefined);
// With read_values, a view with elements must have data.
void check_data(const std::string& name, const TensorView& v, bool read_values);
void check_dtype(const std::string& name, const TensorView& v, DType expected);
void check_shape(const std::string& name, const TensorView& v, const std::vector<int64_t>& expected,
                 const std::string& meaning);
// A floating input tensor of a known shape: structure, dtype, shape, data.
void check_input_tensor(const std::string& name, const TensorView& v, const LstmProblem& problem,
                        const std::vector<int64_t>& expected, const std::string& meaning,
                        bool read_values, const char* what_if_undefined = "");

}  // namespace detail
}  // namespace lstmop
